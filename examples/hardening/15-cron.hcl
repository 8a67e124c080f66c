# cron.yml: cron's files and directories for root alone.
resource_group "cron" {
  only_if = node.os_hardening.enabled && node.os_hardening.cron_enabled

  directory "cron" {
    for_each = toset(["/etc/cron.hourly", "/etc/cron.daily", "/etc/cron.weekly", "/etc/cron.monthly", "/etc/cron.d"])
    path     = each.key
    owner    = "root"
    group    = "root"
    mode     = "og-rwx"
    only_if  = "test -d ${each.key}"
  }
  file "/etc/crontab" {
    only_if = fileexists("/etc/crontab")
    owner   = "root"
    group   = "root"
    mode    = "og-rwx"
  }
}

# ctrlaltdel.yml: off by default.
service "ctrl-alt-del.target" {
  only_if = node.os_hardening.enabled && node.os_hardening.ctrlaltdel_disabled
  action  = "mask"
}
