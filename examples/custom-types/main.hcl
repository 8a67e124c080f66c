# custom-types: resources of two types written in HCL (types.hcl).
#
#   toque -chdir=examples/custom-types plan -out=/tmp/custom-types.plan
#   toque apply /tmp/custom-types.plan
#
# Everything lives under CUSTOM_TYPES_ROOT (default /tmp/toque-custom-types),
# so no root is needed. APP_PORT changes an kv_setting; SITE_PORT the
# site's configuration (and so its reload).
default "demo" {
  root      = env("CUSTOM_TYPES_ROOT", "/tmp/toque-custom-types")
  app_port  = env("APP_PORT", "8080")
  site_port = tonumber(env("SITE_PORT", "8081"))
}

directory "root" {
  path      = node.demo.root
  recursive = true # make its parents too: the scratch root may be any new path
}

kv_setting "port" {
  path  = "${node.demo.root}/app.ini"
  value = node.demo.app_port
}

kv_setting "log_level" {
  path  = "${node.demo.root}/app.ini"
  value = "info"
}

web_site "blog" {
  root  = node.demo.root
  port  = node.demo.site_port
  title = "The blog"
}
