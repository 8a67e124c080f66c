# webserver: Debian's nginx on a fresh host, in ONE plan and ONE apply.
#
# It changes the host and installs packages from Debian's (or Ubuntu's)
# own repositories: run it as root on a Debian or Ubuntu machine (or
# container) where systemd runs and apt can reach its mirror. See
# README.md for what the plan shows and why it is exact.
#
#   toque -chdir=examples/webserver plan -out=/tmp/web.plan
#   toque apply /tmp/web.plan
#   curl -s http://localhost:8080/     # hello from toque
#   toque -chdir=examples/webserver plan   # No changes.
#
# The bootstrap order every configuration-management role has: the
# package, then its configuration, then its service, with a notification
# from the configuration to the service. toque plans what the package will
# bring from the very .debs apt will install (fetched into toque's cache,
# pinned by sha256), so the template shows its diff against the file
# nginx-common ships, the page's directory and the service are planned
# without an earlier apply, and apply installs exactly those .debs.
default "web" {
  port     = 8080
  docroot  = "/srv/www/example"
  greeting = env("WEB_GREETING", "hello from toque")
}

package "nginx" {}

# nginx-common's configuration file for the default site: the plan shows
# the diff against the file the package ships.
template "/etc/nginx/sites-available/default" {
  source = "default.tpl"
  variables = {
    port    = node.web.port
    docroot = node.web.docroot
  }
  notifies "reload" {
    resource = "service[nginx]"
  }
}

directory "/srv/www/example" {
  recursive = true
}

file "/srv/www/example/index.html" {
  content = "<p>${node.web.greeting}</p>\n"
}

# The unit nginx ships: planned from the .deb (it has ExecReload, so the
# template's reload is allowed). Whether its maintainer script already
# enabled and started it is known at apply; enable and start then do
# nothing, or what is left.
service "nginx" {
  action = ["enable", "start"]
}
