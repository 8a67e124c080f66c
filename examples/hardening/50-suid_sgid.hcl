# SUID and SGID bits (suid_sgid.yml): removed from the blacklisted
# programs this host has (the role's follow: true and failed_when: false).
resource_group "suid_sgid" {
  only_if = node.os_hardening.enabled && node.os_hardening.security_suid_sgid_enforce

  file "suid_sgid" {
    for_each = toset([
      for p in concat(node.os_hardening.security_suid_sgid_system_blacklist, node.os_hardening.security_suid_sgid_blacklist) : p if fileexists(p)
    ])
    path                  = each.key
    mode                  = "a-s"
    manage_symlink_source = true
  }

  # os_security_suid_sgid_remove_from_unknown: every other SUID or SGID
  # program but the whitelisted ones. Which they are is known only to
  # find, so the plan shows the command and whether it finds one.
  execute "suid_sgid unknown" {
    command     = "find / -xdev \\( -perm -4000 -o -perm -2000 \\) -type f ! -path '/proc/*' 2>/dev/null | grep -vxF -e \"$KEEP\" | xargs -r chmod a-s"
    environment = { KEEP = join("\n", concat(node.os_hardening.security_suid_sgid_system_whitelist, node.os_hardening.security_suid_sgid_whitelist)) }
    only_if = [
      node.os_hardening.security_suid_sgid_remove_from_unknown,
      "find / -xdev \\( -perm -4000 -o -perm -2000 \\) -type f ! -path '/proc/*' 2>/dev/null | grep -vxF -e \"$KEEP\" | grep -q .",
    ]
  }
}
