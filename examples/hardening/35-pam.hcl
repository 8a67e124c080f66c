# PAM on Debian (pam.yml, pam_debian.yml): no cached credentials,
# passwdqc's password strength, faillock's lockout (Debian 12's PAM is
# 1.5: faillock, not tally2), and key logins allowed once a password has
# expired. pam-auth-update writes /etc/pam.d/common-* from the profiles
# in /usr/share/pam-configs: it runs once, at the end, when one changed.
resource_group "pam" {
  only_if = node.os_hardening.enabled && node.os_hardening.pam_enabled

  # The role's lineinfile with backrefs: no_pass_expiry added to
  # pam_unix's account line, whatever its other words. First, so that
  # pam-auth-update, run by the package below and at the end, finds it
  # and keeps it (it merges options added to its modules' lines).
  file_line "no_pass_expiry" {
    path     = "/etc/pam.d/common-account"
    match    = "^(account\\s.*pam_unix\\.so.*?)(\\s+no_pass_expiry)?\\s*$"
    line     = "$1 no_pass_expiry"
    backrefs = true
  }

  package "libpam-ccreds" {
    action = "remove"
  }

  package "libpam-passwdqc" {
    action = node.os_hardening.auth_pam_passwdqc_enable ? "install" : "remove"
  }

  file "/usr/share/pam-configs/passwdqc" {
    only_if = node.os_hardening.auth_pam_passwdqc_enable
    content = <<-EOT
      Name: passwdqc password strength enforcement
      Default: yes
      Priority: 1024
      Conflicts: cracklib
      Password-Type: Primary
      Password:
        requisite     pam_passwdqc.so ${node.os_hardening.auth_pam_passwdqc_options}
    EOT
    owner   = "root"
    group   = "root"
    mode    = "0644"
    notifies "run" {
      resource = "execute[pam-auth-update]"
    }
  }

  file "/usr/share/pam-configs/tally2" {
    action = "delete"
  }

  directory "/var/run/faillock" {
    owner = "root"
    group = "root"
    mode  = "0755"
  }

  ini_setting "faillock" {
    for_each = {
      deny        = node.os_hardening.auth_retries
      unlock_time = node.os_hardening.auth_lockout_time
    }
    path  = "/etc/security/faillock.conf"
    key   = each.key
    value = tostring(each.value)
  }
  file_line "faillock even_deny_root" {
    path  = "/etc/security/faillock.conf"
    line  = "even_deny_root"
    match = "^#?\\s*even_deny_root\\s*$"
  }

  file "faillock profiles" {
    for_each = {
      faillock          = "Name: faillock boilerplate\nDefault: yes\nPriority: 1024\nAuth-Type: Primary\nAuth:\n  required           pam_faillock.so preauth\nAccount-Type: Primary\nAccount:\n  required           pam_faillock.so\n"
      faillock_authfail = "Name: faillock lockout after failed attempts enforcement\nDefault: yes\nPriority: 0\nAuth-Type: Primary\nAuth:\n  required           pam_faillock.so authfail\n"
    }
    path    = "/usr/share/pam-configs/${each.key}"
    content = each.value
    owner   = "root"
    group   = "root"
    mode    = "0644"
    action  = node.os_hardening.auth_retries > 0 ? "create" : "delete"
    notifies "run" {
      resource = "execute[pam-auth-update]"
    }
  }

  execute "pam-auth-update" {
    command     = "pam-auth-update --package"
    environment = { DEBIAN_FRONTEND = "noninteractive" }
    # It rewrites the common-* files from the profiles: file_line above
    # plans common-account, and this has the last word on it.
    writes = [for f in ["account", "auth", "password", "session", "session-noninteractive"] : "/etc/pam.d/common-${f}"]
    action = "nothing"
  }
}
