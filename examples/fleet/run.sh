#!/bin/sh
# examples/fleet: plan a change for a fleet, review it grouped, apply it
# in batches (a canary first) and plan again, against five hosts this
# script makes on this machine and removes when it ends.
#
# Needs: Linux, root, Go, util-linux (unshare, nsenter), iproute2,
# overlayfs and the OpenSSH server binary (Debian and Ubuntu:
# apt-get install openssh-server iproute2). Tried on Debian 12. The
# machine's own sshd is neither used nor started.
#
#   sudo examples/fleet/run.sh
#
# Each host is a network namespace with its own sshd, and its own mount
# namespace whose /etc, /var, /srv, /run, /root, /home and /opt are
# overlays (examples/fleet/lab): what the apply writes (/srv/fleet-example)
# stays in that host. Everything else — the toque build, the lab's ssh key,
# configuration and known_hosts, the fleet plan and its result file,
# toque's local state — is in a scratch directory under /tmp, removed at
# the end (KEEP=1 keeps it). Your ~/.ssh is not read.
set -eu
if [ "$(id -u)" != 0 ]; then
	echo "run.sh: needs root: the example's hosts are network and mount namespaces, each with its own sshd" >&2
	exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d /tmp/toque-fleet-example-XXXXXX)
chmod 0755 "$scratch" # sshd reads the lab's authorized keys as the user logging in
if [ "${KEEP:-}" = 1 ]; then
	echo "run.sh: keeping $scratch" >&2
else
	trap 'rm -rf "$scratch"' EXIT
fi

# A static toque is both the orchestrator and the agent it ships to the
# hosts (make release builds them for linux/amd64 and linux/arm64).
(cd "$repo" && CGO_ENABLED=0 go build -o "$scratch/bin/toque" . && go build -o "$scratch/bin/lab" ./examples/fleet/lab)
mkdir -p "$scratch/work" "$scratch/home" "$scratch/run"
cp -R "$here/fleet.hcl" "$here/site" "$scratch/work/"

export PATH="$scratch/bin:$PATH" HOME="$scratch/home" XDG_RUNTIME_DIR="$scratch/run" \
	TOQUE_STATE_DIR="$scratch/state" TOQUE_HOST_LOCK="$scratch/run/apply.lock"
cd "$scratch/work"
lab -dir "$scratch" -hosts web-01,web-02,web-03,web-04,db-01 -- sh -eu -c '
step() { printf "\n\$ %s\n" "$*"; "$@"; }
step toque fleet hosts
step toque fleet plan -out=fleet.plan
step toque fleet show -markdown fleet.plan
step toque fleet apply fleet.plan
step toque fleet plan -detailed-exitcode # 0: no host has anything left to do
'
