# Written by toque from examples/service/hello.conf.tpl: a change here
# restarts toque-hello.service, which reads it when it starts.
GREETING=${greeting}
