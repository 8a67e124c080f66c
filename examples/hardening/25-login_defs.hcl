# login.defs (login_defs.yml): the role templates the whole file; Debian's
# package owns it, so toque sets the role's keys, each on its own line,
# and keeps the rest as Debian ships it.
resource_group "login_defs" {
  only_if = node.os_hardening.enabled && node.os_hardening.login_defs_enabled

  file_line "login_defs" {
    for_each = {
      for k, v in merge({
        PASS_MAX_DAYS        = node.os_hardening.auth_pw_max_age
        PASS_MIN_DAYS        = node.os_hardening.auth_pw_min_age
        PASS_WARN_AGE        = node.os_hardening.auth_pw_warn_age
        LOGIN_RETRIES        = node.os_hardening.auth_retries
        LOGIN_TIMEOUT        = node.os_hardening.auth_timeout
        UMASK                = node.os_hardening.env_umask
        UID_MIN              = node.os_hardening.auth_uid_min
        UID_MAX              = node.os_hardening.auth_uid_max
        SYS_UID_MIN          = node.os_hardening.auth_sys_uid_min
        SYS_UID_MAX          = node.os_hardening.auth_sys_uid_max
        GID_MIN              = node.os_hardening.auth_gid_min
        GID_MAX              = node.os_hardening.auth_gid_max
        SYS_GID_MIN          = node.os_hardening.auth_sys_gid_min
        SYS_GID_MAX          = node.os_hardening.auth_sys_gid_max
        DEFAULT_HOME         = node.os_hardening.auth_allow_homeless ? "yes" : "no"
        CHFN_RESTRICT        = node.os_hardening.chfn_restrict
        ENV_PATH             = join(":", concat(["PATH=/usr/local/bin:/usr/bin:/bin"], node.os_hardening.env_extra_user_paths))
        LOG_OK_LOGINS        = "yes"
        MD5_CRYPT_ENAB       = "no"
        ENCRYPT_METHOD       = "SHA512"
        SHA_CRYPT_MIN_ROUNDS = node.os_hardening.sha_crypt_min_rounds
        SHA_CRYPT_MAX_ROUNDS = node.os_hardening.sha_crypt_max_rounds
      }, node.os_hardening.login_defs) : k => v if v != ""
    }
    path  = "/etc/login.defs"
    line  = "${each.key} ${each.value}"
    match = "^\\s*${each.key}\\s"
  }

  # The role writes CHFN_RESTRICT only when it is set: unset, chfn lets
  # users change nothing.
  file_line "login_defs CHFN_RESTRICT" {
    only_if = node.os_hardening.chfn_restrict == ""
    path    = "/etc/login.defs"
    match   = "^\\s*CHFN_RESTRICT\\s"
    action  = "delete"
  }
}
