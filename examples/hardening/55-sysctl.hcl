# Kernel parameters (sysctl.yml), set now and kept in one file,
# /etc/sysctl.d/90-dev-sec.conf. A key this kernel lacks is skipped (the
# role's ignoreerrors), and so is, in a container, every key but the
# network's: those are the container's own (its network namespace), the
# others its host's.
resource_group "sysctl" {
  only_if = node.os_hardening.enabled && node.os_hardening.sysctl_enabled

  sysctl "dev-sec" {
    for_each  = { for k, v in node.os_hardening.sysctl : k => v if v != null }
    key       = each.key
    value     = each.value
    conf_file = "90-dev-sec.conf"
    only_if   = fileexists("/proc/sys/${replace(each.key, ".", "/")}") && (startswith(each.key, "net.") || !node.os_hardening.container)
  }

  file "/etc/sysctl.d/90-dev-sec.conf" {
    owner = "root"
    group = "root"
    mode  = "0440"
  }
}
