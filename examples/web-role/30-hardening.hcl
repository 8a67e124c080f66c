# The hardening baseline, guarded once for the whole group (Ansible's
# `block: … when:`): the plan shows the guard once, and skips or runs
# every resource of the group with it. Each resource keeps its own
# address; its own guards, if it had any, would come after the group's.
resource_group "hardening" {
  only_if = node.web.hardening

  notifies "run" {
    resource = "execute[reload]"
  }

  file "security.conf" {
    path    = "${node.web.root}/sites/00-security.conf"
    content = "server_tokens off;\nadd_header X-Content-Type-Options nosniff;\n"
    mode    = "0640"
  }

  file "robots" {
    path    = "${node.web.root}/www/robots.txt"
    content = "User-agent: *\nDisallow: /private/\n"
  }
}
