# user_accounts.yml, rhosts.yml, netrc.yml, over the host's accounts as
# the plan reads them (data "users": /etc/passwd and /etc/shadow, what
# Ohai calls node['etc']['passwd']). The plan carries the answer, and
# apply refuses it as stale if an account changed since.
data "users" "local" {}

resource_group "user_accounts" {
  only_if = node.os_hardening.enabled && node.os_hardening.user_accounts_enabled

  # System accounts: no login shell, and a locked password.
  user "system" {
    for_each = {
      for name, u in data.users.local.result : name => u
      if u.uid > 0 && u.uid <= node.os_hardening.auth_sys_uid_max && !contains(concat(node.os_hardening.always_ignore_users, node.os_hardening.ignore_users), name)
    }
    username = each.key
    shell    = node.os_hardening.nologin_shell_path
    action   = ["modify", "lock"]
  }

  # Password ageing (chage's min, max and warn days), for the regular
  # accounts (and root's, if rootuser_pw_ageing) whose password is not
  # locked: the plan shows each account's change.
  user "ageing" {
    for_each = {
      for name, u in data.users.local.result : name => u
      if u.locked == false && !contains(node.os_hardening.users_without_password_ageing, name) && (u.uid == 0 ? node.os_hardening.rootuser_pw_ageing : (
        node.os_hardening.user_pw_ageing && u.uid >= node.os_hardening.auth_uid_min && u.uid <= node.os_hardening.auth_uid_max &&
        !contains(concat(node.os_hardening.always_ignore_users, node.os_hardening.ignore_users), name)
      ))
    }
    username  = each.key
    min_days  = node.os_hardening.auth_pw_min_age
    max_days  = node.os_hardening.auth_pw_max_age
    warn_days = node.os_hardening.auth_pw_warn_age
    action    = "manage"
  }

  # Private homes: root's, and the regular accounts'.
  directory "home" {
    for_each = {
      for name, u in data.users.local.result : name => u
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
    for_each = toset([for u in values(data.users.local.result) : "${u.home}/.rhosts"])
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
    for_each = toset([for name, u in data.users.local.result : "${u.home}/.netrc" if !contains(node.os_hardening.netrc_whitelist_user, name)])
    path     = each.key
    action   = "delete"
  }
}
