# profile.yml and securetty.yml: no core dumps by soft limit (with
# limits.hcl's hard one), the logout timeout, and root's consoles.
resource_group "profile" {
  only_if = node.os_hardening.enabled && node.os_hardening.profile_enabled

  file "/etc/profile.d/pinerolo_profile.sh" {
    content = "# Disable core dumps via soft limits for all users. Compliance to this setting is voluntary and can be modified by users up to a hard limit. This setting is a sane default.\nulimit -S -c 0 > /dev/null 2>&1\n"
    owner   = "root"
    group   = "root"
    mode    = "0750"
    action  = node.os_hardening.security_kernel_enable_core_dump ? "delete" : "create"
  }
  file "/etc/profile.d/tmout.sh" {
    content = "# Logout Timeout\nexport TMOUT=${node.os_hardening.security_auto_logout}\nreadonly TMOUT\n"
    owner   = "root"
    group   = "root"
    mode    = "0644"
  }
}

resource_group "securetty" {
  only_if = node.os_hardening.enabled && node.os_hardening.securetty_enabled

  file "/etc/securetty" {
    content = "# A list of TTYs, from which root can log in\n# see `man securetty` for reference\n${join("\n", node.os_hardening.auth_root_ttys)}\n"
    owner   = "root"
    group   = "root"
    mode    = "0400"
  }
}
