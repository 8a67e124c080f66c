# One recipe for a web server on both families: Debian and Ubuntu (apt),
# RHEL, its rebuilds, Fedora and Amazon Linux (dnf). What differs between
# the families is data — node.web.families, keyed by host.platform_family
# as Chef's Ohai names it — and the repository types, each declared with
# a count that is 1 on its family and 0 on the other. Everything else is
# one block: `package` uses the host's package manager.

default "web" {
  # What differs per family: the package, where its configuration goes,
  # the service, the user it runs as.
  families = {
    debian = { package = "nginx", conf_dir = "/etc/nginx/conf.d", service = "nginx", user = "www-data" }
    rhel   = { package = "nginx", conf_dir = "/etc/nginx/conf.d", service = "nginx", user = "nginx" }
    fedora = { package = "nginx", conf_dir = "/etc/nginx/conf.d", service = "nginx", user = "nginx" }
    amazon = { package = "nginx", conf_dir = "/etc/nginx/conf.d", service = "nginx", user = "nginx" }
  }
  # An extra repository to install from: apt's uri and distribution, and
  # dnf's baseurl. Empty: the distribution's own repositories.
  apt_uri          = ""
  apt_distribution = "./"
  dnf_baseurl      = ""
  port             = 8080
  # Start and enable the service (a host that boots systemd).
  manage_service = true
}

# Debian and Ubuntu: the repository, and apt's lists read once it changes.
apt_repository "web" {
  count        = host.platform_family == "debian" && node.web.apt_uri != "" ? 1 : 0
  uri          = node.web.apt_uri
  distribution = node.web.apt_distribution
  trusted      = true # a repository you control; give key and checksum otherwise
  notifies "update" {
    resource = "apt_update[web]"
    timing   = "immediately"
  }
}

apt_update "web" {
  count  = host.platform_family == "debian" ? 1 : 0
  action = "nothing"
}

# RHEL, Fedora, Amazon Linux: the repository, and dnf's metadata cache
# refreshed once it changes.
yum_repository "web" {
  count       = contains(["rhel", "fedora", "amazon"], host.platform_family) && node.web.dnf_baseurl != "" ? 1 : 0
  description = "web server packages"
  baseurl     = node.web.dnf_baseurl
  gpgcheck    = false # a repository you control; give gpgkey otherwise
  notifies "update" {
    resource = "dnf_makecache[web]"
    timing   = "immediately"
  }
}

dnf_makecache "web" {
  count  = contains(["rhel", "fedora", "amazon"], host.platform_family) ? 1 : 0
  action = "nothing"
}

# Both families: the same blocks, the family's values.
package "web" {
  package_name = node.web.families[host.platform_family].package
}

# The package makes this directory, but a plan cannot know that yet (it
# does not read a package's files); declaring it keeps the plan whole.
directory "conf" {
  path      = node.web.families[host.platform_family].conf_dir
  recursive = true
}

file "site" {
  path    = "${node.web.families[host.platform_family].conf_dir}/toque-site.conf"
  content = <<-CONF
    # Managed by toque (examples/both-families) on ${host.platform} ${host.platform_version}.
    server {
      listen ${node.web.port};
      root /srv/www;
    }
  CONF
  mode    = "0644"
  notifies "restart" {
    resource = "service[web]"
  }
}

service "web" {
  count        = node.web.manage_service ? 1 : 0
  service_name = node.web.families[host.platform_family].service
  action       = ["enable", "start"]
}
