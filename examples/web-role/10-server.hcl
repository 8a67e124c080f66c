# The server every site shares: its directories, its main configuration
# (which includes every site's), and the reload the sites notify.

directory "root" {
  path      = node.web.root
  recursive = true # WEB_ROLE_ROOT may name any new path
}

directory "layout" {
  for_each = toset(["sites", "www", "run"])
  path     = "${node.web.root}/${each.key}"
}

template "server.conf" {
  path   = "${node.web.root}/server.conf"
  source = "server.conf.tpl"
  variables = {
    root  = node.web.root
    sites = keys(node.web.vhosts)
  }
  notifies "run" {
    resource = "execute[reload]"
  }
}

# Stands in for `nginx -s reload`: runs once at the end of an apply in
# which a configuration changed, and never otherwise.
execute "reload" {
  command = "date > ${node.web.root}/run/reloaded"
  action  = "nothing"
}
