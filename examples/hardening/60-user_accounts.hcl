# user_accounts.yml, rhosts.yml, netrc.yml, over the accounts of
# /etc/passwd (node.etc.passwd, 00-attributes.hcl).
resource_group "user_accounts" {
  only_if = node.os_hardening.enabled && node.os_hardening.user_accounts_enabled

  # System accounts: no login shell, and a locked password.
  user "system" {
    for_each = {
      for name, u in node.etc.passwd : name => u
      if u.uid > 0 && u.uid <= node.os_hardening.auth_sys_uid_max && !contains(concat(node.os_hardening.always_ignore_users, node.os_hardening.ignore_users), name)
    }
    username = each.key
    shell    = node.os_hardening.nologin_shell_path
    action   = ["modify", "lock"]
  }

  # Password ageing, for the regular accounts (and root's, if
  # rootuser_pw_ageing): toque's user has no ageing properties, so chage,
  # unless the account ages so already, or its password is locked.
  execute "password ageing" {
    for_each = {
      for name, u in node.etc.passwd : name => u
      if !contains(node.os_hardening.users_without_password_ageing, name) && (u.uid == 0 ? node.os_hardening.rootuser_pw_ageing : (
        node.os_hardening.user_pw_ageing && u.uid >= node.os_hardening.auth_uid_min && u.uid <= node.os_hardening.auth_uid_max &&
        !contains(concat(node.os_hardening.always_ignore_users, node.os_hardening.ignore_users), name)
      ))
    }
    command = ["chage", "--mindays", tostring(node.os_hardening.auth_pw_min_age), "--maxdays", tostring(node.os_hardening.auth_pw_max_age), "--warndays", tostring(node.os_hardening.auth_pw_warn_age), each.key]
    not_if  = "getent shadow '${each.key}' | grep -Eq '^[^:]*:[!*]|^[^:]*:[^:]*:[^:]*:${node.os_hardening.auth_pw_min_age}:${node.os_hardening.auth_pw_max_age}:${node.os_hardening.auth_pw_warn_age}:'"
  }

  # Private homes: root's, and the regular accounts'.
  directory "home" {
    for_each = {
      for name, u in node.etc.passwd : name => u
      if u.uid == 0 ? node.os_hardening.chmod_rootuser_home_folder : (
        node.os_hardening.chmod_home_folders && u.uid >= node.os_hardening.auth_uid_min && u.uid <= node.os_hardening.auth_uid_max &&
        !contains(concat(node.os_hardening.always_ignore_users, node.os_hardening.ignore_users, node.os_hardening.ignore_home_folder_users), name)
      )
    }
    path  = each.value.home
    owner = each.key
    mode  = "0700"
  }
}

resource_group "rhosts" {
  only_if = node.os_hardening.enabled && node.os_hardening.rhosts_enabled

  file "rhosts" {
    for_each = toset([for u in values(node.etc.passwd) : "${u.home}/.rhosts"])
    path     = each.key
    action   = "delete"
  }
  file "/etc/hosts.equiv" {
    action = "delete"
  }
}

resource_group "netrc" {
  only_if = node.os_hardening.enabled && node.os_hardening.netrc_enabled

  file "netrc" {
    for_each = toset([for name, u in node.etc.passwd : "${u.home}/.netrc" if !contains(node.os_hardening.netrc_whitelist_user, name)])
    path     = each.key
    action   = "delete"
  }
}
