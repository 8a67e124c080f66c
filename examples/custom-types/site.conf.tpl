# ${name}: rendered by toque from examples/custom-types/site.conf.tpl
listen ${port}
root   ${root}
