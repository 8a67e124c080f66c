# Core dumps (limits.yml, profile.yml): off unless
# security_kernel_enable_core_dump, in which case the files go.
resource_group "no_core_dumps" {
  only_if = node.os_hardening.enabled && node.os_hardening.limits_enabled && !node.os_hardening.security_kernel_enable_core_dump

  directory "/etc/security/limits.d" {
    owner = "root"
    group = "root"
    mode  = "0755"
  }
  file "/etc/security/limits.d/10.hardcore.conf" {
    content = "# Prevent core dumps for all users. These are usually not needed and may contain sensitive information\n*\thard\tcore\t0\n"
    owner   = "root"
    group   = "root"
    mode    = "0440"
  }
  directory "/etc/systemd/coredump.conf.d" {
    owner = "root"
    group = "root"
    mode  = "0755"
  }
  file "/etc/systemd/coredump.conf.d/custom.conf" {
    content = "[Coredump]\nStorage=none\n"
    owner   = "root"
    group   = "root"
    mode    = "0644"
  }
}

resource_group "core_dumps" {
  only_if = node.os_hardening.enabled && node.os_hardening.limits_enabled && node.os_hardening.security_kernel_enable_core_dump

  file "no hardcore" {
    path   = "/etc/security/limits.d/10.hardcore.conf"
    action = "delete"
  }
  directory "no coredump.conf.d" {
    path      = "/etc/systemd/coredump.conf.d"
    recursive = true
    action    = "delete"
  }
}
