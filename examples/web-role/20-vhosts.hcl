# One site per entry of node.web.vhosts: for_each over a map makes one
# instance of each block per key (template[vhost]["example.com"]), and
# none for an empty map. Removing a site from the map removes its
# instances from the plan (toque does not delete what it no longer
# manages: add a delete resource for that, as in Chef).
#
# A site serves TLS when its certificate has been deployed
# (ROOT/tls/NAME.pem, by another role, or by hand): a data block reads
# what is there when the plan is made, the plan shows that read and its
# answer, and apply refuses the plan if a certificate came or went since.

data "files" "certificates" {
  glob = "${node.web.root}/tls/*.pem"
}

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
    cert    = "${node.web.root}/tls/${each.key}.pem"
    tls     = contains(keys(data.files.certificates.result), "${node.web.root}/tls/${each.key}.pem")
  }
  # One notifies on a for_each block: one edge per site. The reload runs
  # once however many sites change.
  notifies "run" {
    resource = "execute[reload]"
  }
}
