#!/bin/sh
# Stands in for a Java daemon's control script: like the real thing, it
# only works with JAVA_HOME set to its JDK. The "daemon" is a pid file
# under $DAEMON_STATE.
if [ ! -f "$JAVA_HOME/release" ]; then
  echo "java-based-daemon-ctl.sh: JAVA_HOME is not a JDK: '$JAVA_HOME'" >&2
  exit 2
fi
: "${DAEMON_STATE:?DAEMON_STATE is not set}"
case "$1" in
  -start)
    mkdir -p "$DAEMON_STATE" && echo "started with JAVA_HOME=$JAVA_HOME" > "$DAEMON_STATE/daemon.pid" ;;
  -test-started)
    test -f "$DAEMON_STATE/daemon.pid" ;;
  *)
    echo "usage: java-based-daemon-ctl.sh -start | -test-started" >&2
    exit 2 ;;
esac
