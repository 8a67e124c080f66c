# One site per entry of node.web.vhosts: for_each over a map makes one
# instance of each block per key (template[vhost]["example.com"]), and
# none for an empty map. Removing a site from the map removes its
# instances from the plan (toque does not delete what it no longer
# manages: add a delete resource for that, as in Chef).
#
# When data blocks land (issue 23, item 4), for_each reads them the same
# way: anything known when the plan is made can drive it.

directory "docroot" {
  for_each = node.web.vhosts
  path     = "${node.web.root}/www/${each.key}"
}

file "index" {
  for_each = node.web.vhosts
  path     = "${node.web.root}/www/${each.key}/index.html"
  content  = "<h1>${each.key}</h1>\n"
}

template "vhost" {
  for_each = node.web.vhosts
  path     = "${node.web.root}/sites/${each.key}.conf"
  source   = "vhost.conf.tpl"
  variables = {
    name    = each.key
    port    = try(each.value.port, node.web.listen)
    aliases = try(each.value.aliases, [])
    docroot = "${node.web.root}/www/${each.key}"
  }
  # One notifies on a for_each block: one edge per site. The reload runs
  # once however many sites change.
  notifies "run" {
    resource = "execute[reload]"
  }
}
