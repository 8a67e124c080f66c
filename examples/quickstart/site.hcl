# The quickstart: a tiny static site laid out under a scratch directory.
# Run it as the README's first lines do, which keep toque's own state
# (TOQUE_STATE_DIR, TOQUE_HOST_LOCK) in the same scratch directory.
#
# Attribute blocks are written at compile time and read at plan time, so
# the override below wins wherever it stands.
default "site" {
  root  = env("QUICKSTART_ROOT", "/tmp/toque-quickstart/site")
  title = "toque quickstart"
  port  = 8080
}

override "site" {
  port = 9090
}

directory "root" {
  path      = node.site.root
  mode      = "0755"
  recursive = true # make its parents too: QUICKSTART_ROOT may name any new path
}

directory "www" {
  path = "${node.site.root}/www"
  mode = "0755"
}

file "index" {
  path    = "${node.site.root}/www/index.html"
  content = "<h1>${node.site.title} on ${host.hostname}</h1>\n"
  mode    = "0644"
}

file "config" {
  path    = "${node.site.root}/site.conf"
  content = templatefile("site.conf.tpl", { port = node.site.port, root = node.site.root })
  mode    = "0640"
}

link "current" {
  target_file = "${node.site.root}/current"
  to          = "${node.site.root}/www"
}
