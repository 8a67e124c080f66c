# Rendered by toque from web.conf.tpl: do not edit.
listen ${port};
worker_processes ${workers};
%{ if port == 443 ~}
ssl on;
%{ endif ~}
include upstreams.conf;
