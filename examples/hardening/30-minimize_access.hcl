# minimize_access.yml: no file in the users' paths that group or others
# may write, the account databases root's, su for root's group only, and
# /proc, /dev, /dev/shm and /run mounted with the role's options, now and
# in fstab.
resource_group "minimize_access" {
  only_if = node.os_hardening.enabled && node.os_hardening.minimize_access_enabled

  # The role finds the files, then changes each; this is Chef's cookbook,
  # which runs when find finds one (the plan shows the guard's verdict).
  execute "minimize_access" {
    for_each = toset(concat(node.os_hardening.env_user_paths, node.os_hardening.env_extra_user_paths))
    command  = "find -L '${each.key}' -perm /go+w -type f -exec chmod go-w {} +"
    only_if  = "test -d '${each.key}' && find -L '${each.key}' -perm /go+w -type f | grep -q ."
  }

  file "shadow" {
    for_each = toset([for p in ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"] : p if fileexists(p)])
    path     = each.key
    owner    = node.os_hardening.shadow_perms.owner
    group    = node.os_hardening.shadow_perms.group
    mode     = node.os_hardening.shadow_perms.mode
  }

  file "passwd" {
    for_each = toset([for p in ["/etc/passwd", "/etc/group", "/etc/passwd-", "/etc/group-"] : p if fileexists(p)])
    path     = each.key
    owner    = node.os_hardening.passwd_perms.owner
    group    = node.os_hardening.passwd_perms.group
    mode     = node.os_hardening.passwd_perms.mode
  }

  file "/bin/su" {
    only_if = !contains(node.os_hardening.security_users_allow, "change_user")
    owner   = "root"
    group   = "root"
    mode    = "0750"
  }

  mount "/proc" {
    device  = "proc"
    fstype  = "proc"
    options = concat(node.os_hardening.proc_mnt_options, ["hidepid=${node.os_hardening.hidepid_option}"])
    pass    = 0
    action  = ["mount", "enable"]
  }

  # The role's os_mnt_* that are enabled and mounted (with what is
  # mounted, unless they say); /dev is the host's in a container.
  mount "hardened" {
    for_each = {
      for p, m in node.os_hardening.mounts : p => m
      if m.enabled && contains(keys(node.etc.mounts), p) && (p != "/dev" || !node.os_hardening.container)
    }
    mount_point = each.key
    device      = try(each.value.device, reverse(node.etc.mounts[each.key])[0].device)
    fstype      = try(each.value.fstype, reverse(node.etc.mounts[each.key])[0].fstype)
    options     = each.value.options
    pass        = 0
    action      = ["mount", "enable"]
  }

  # Every one of them that exists, enabled or not, as the role does;
  # decided at apply, as /var/log/audit may be auditd's, of this plan.
  directory "mount points" {
    for_each = node.os_hardening.mounts
    path     = each.key
    owner    = "root"
    group    = "root"
    mode     = each.value.mode
    only_if  = lazy("test -d ${each.key}")
  }
}
