# web-config: a template renders a web server's configuration and, when (and
# only when) the rendered file changes, a reload runs once at the end.
#
#   toque -chdir=examples/web-config plan -out=/tmp/web.plan
#   toque apply /tmp/web.plan
#
# Everything lives under WEB_CONFIG_ROOT (default /tmp/toque-web-config), so
# no root is needed. The "reload" appends a line to reload.log there, so you
# can count reloads. WEB_PORT and WEB_UPSTREAMS change what is rendered.
default "web" {
  root      = env("WEB_CONFIG_ROOT", "/tmp/toque-web-config")
  port      = tonumber(env("WEB_PORT", "8080"))
  workers   = 4
  upstreams = split(",", env("WEB_UPSTREAMS", "app-1:9000,app-2:9000"))
}

directory "root" {
  path      = node.web.root
  mode      = "0755"
  recursive = true # make its parents too: the scratch root may be any new path
}

directory "etc" {
  path = "${node.web.root}/etc"
  mode = "0755"
}

# A template file, found next to this recipe (in a cookbook: templates/).
template "web.conf" {
  path   = "${node.web.root}/etc/web.conf"
  source = "web.conf.tpl"
  mode   = "0644"
  variables = {
    port    = node.web.port
    workers = node.web.workers
  }
  notifies "run" {
    resource = "execute[reload-web]"
    timing   = "delayed"
  }
}

# An inline template: its ${…} see the variables, node and host.
template "upstreams.conf" {
  path             = "${node.web.root}/etc/upstreams.conf"
  variables        = { servers = node.web.upstreams }
  content_template = "# upstreams for ${host.hostname}\n%{for s in servers}server ${s};\n%{endfor}"
  notifies "run" {
    resource = "execute[reload-web]"
  }
}

# A file that notifies nothing: changing it never reloads.
file "motd" {
  path    = "${node.web.root}/etc/motd"
  content = "web server on ${host.hostname}\n"
}

# Runs only when notified; delayed notifications run it once per apply.
execute "reload-web" {
  command = "echo reload >> '${node.web.root}/reload.log'"
  action  = "nothing"
}
