# auditd.yml: the audit daemon, its configuration (auditd.conf's keys,
# the rest as Debian ships it), and journald's audit socket masked.
resource_group "auditd" {
  only_if = node.os_hardening.enabled && node.os_hardening.auditd_enabled

  package "auditd" {}

  # The editors below edit the auditd.conf the package ships: the plan
  # reads it from the package's .deb and shows each edit as a diff of it.
  ini_setting "auditd.conf" {
    for_each = {
      write_logs              = node.os_hardening.auditd_write_logs ? "yes" : "no"
      log_file                = node.os_hardening.auditd_log_file
      log_format              = node.os_hardening.auditd_log_format
      log_group               = node.os_hardening.auditd_log_group
      priority_boost          = 4
      flush                   = node.os_hardening.auditd_flush
      freq                    = node.os_hardening.auditd_freq
      num_logs                = node.os_hardening.auditd_num_logs
      name_format             = node.os_hardening.auditd_name_format
      max_log_file            = node.os_hardening.auditd_max_log_file
      max_log_file_action     = node.os_hardening.auditd_max_log_file_action
      space_left              = node.os_hardening.auditd_space_left
      space_left_action       = node.os_hardening.auditd_space_left_action
      action_mail_acct        = node.os_hardening.auditd_action_mail_acct
      admin_space_left        = node.os_hardening.auditd_admin_space_left
      admin_space_left_action = node.os_hardening.auditd_admin_space_left_action
      disk_full_action        = node.os_hardening.auditd_disk_full_action
      disk_error_action       = node.os_hardening.auditd_disk_error_action
      tcp_listen_queue        = 5
      tcp_max_per_addr        = 1
      tcp_client_max_idle     = 0
      enable_krb5             = "no"
      krb5_principal          = "auditd"
    }
    path  = "/etc/audit/auditd.conf"
    key   = each.key
    value = tostring(each.value)
    notifies "restart" {
      resource = "service[auditd]"
    }
  }

  # The kernel's audit records go to auditd alone.
  service "systemd-journald-audit.socket" {
    action = ["stop", "disable", "mask"]
    notifies "restart" {
      resource = "service[systemd-journald]"
    }
  }
  service "systemd-journald" {}

  # A container cannot run auditd: the kernel's audit belongs to its host.
  service "auditd" {
    not_if = node.os_hardening.container
  }
}
