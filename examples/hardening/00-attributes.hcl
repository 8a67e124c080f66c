# dev-sec's os-hardening baseline (Ansible devsec.hardening.os_hardening,
# Chef os-hardening), ported to toque for Debian 12 (bookworm).
#
# NEEDS ROOT AND CHANGES THE HOST: it edits /etc, remounts /proc, /dev/shm
# and /run, sets kernel parameters, removes SUID bits and installs and
# removes packages. Try it in a throwaway container first:
# ./container (README.md) boots a fresh Debian 12 and applies it there.
#
# These are the role's variables and their defaults, named as the role
# names them without the os_ prefix: override them as you would the
# role's, with -attr 'os_hardening.auth_pw_max_age=90' or -attr-file.
default "os_hardening" {
  enabled = true # os_hardening_enabled: false plans nothing

  # Containers share the host's kernel: its kernel-wide parameters, its
  # /dev and its audit daemon are the host's business (the role skips its
  # sysctls in containers too). /run/systemd/container is systemd's mark.
  container = fileexists("/run/systemd/container")

  # login.defs (os_auth_*, os_env_umask, os_sha_crypt_*)
  login_defs_enabled   = true
  auth_pw_max_age      = 60
  auth_pw_min_age      = 7
  auth_pw_warn_age     = 7
  auth_retries         = 5
  auth_lockout_time    = 600
  auth_timeout         = 60
  auth_allow_homeless  = false
  auth_uid_min         = 1000
  auth_uid_max         = 60000
  auth_sys_uid_min     = 100
  auth_sys_uid_max     = 999
  auth_gid_min         = 1000
  auth_gid_max         = 60000
  auth_sys_gid_min     = 100
  auth_sys_gid_max     = 999
  chfn_restrict        = ""
  env_umask            = "027"
  env_extra_user_paths = []
  sha_crypt_min_rounds = 640000
  sha_crypt_max_rounds = 640000
  login_defs           = {} # any other KEY = "VALUE" of login.defs

  # limits and profile: no core dumps unless this is true
  limits_enabled                   = true
  profile_enabled                  = true
  security_kernel_enable_core_dump = false
  security_auto_logout             = 0 # TMOUT; 0 is no timeout

  securetty_enabled = true
  auth_root_ttys    = ["console", "tty1", "tty2", "tty3", "tty4", "tty5", "tty6"]

  ctrlaltdel_disabled = false

  # minimize_access: writable files in the users' paths, the account
  # databases, su, and the mount options below
  minimize_access_enabled = true
  env_user_paths          = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
  security_users_allow    = [] # "change_user" keeps su usable by everyone
  shadow_perms            = { owner = "root", group = "shadow", mode = "0640" }
  passwd_perms            = { owner = "root", group = "root", mode = "0644" }
  proc_mnt_options        = ["rw", "nosuid", "nodev", "noexec", "relatime"]
  hidepid_option          = "2" # 0, 1 or 2 (2: users see only their processes)

  # The role's os_mnt_*: a mount point's options in fstab and now, and its
  # directory's mode. An entry enabled with no device takes the one mounted.
  mounts = {
    "/dev"           = { enabled = true, device = "udev", fstype = "devtmpfs", options = ["rw", "nosuid", "noexec"], mode = "0755" }
    "/dev/shm"       = { enabled = true, device = "tmpfs", fstype = "tmpfs", options = ["rw", "nosuid", "nodev", "noexec"], mode = "1777" }
    "/run"           = { enabled = true, device = "tmpfs", fstype = "tmpfs", options = ["rw", "nosuid", "nodev"], mode = "0755" }
    "/boot"          = { enabled = false, options = ["rw", "nosuid", "nodev", "noexec"], mode = "0700" }
    "/home"          = { enabled = false, options = ["rw", "nosuid", "nodev"], mode = "0755" }
    "/tmp"           = { enabled = false, options = ["rw", "nosuid", "nodev", "noexec"], mode = "1777" }
    "/var"           = { enabled = false, options = ["rw", "nosuid", "nodev"], mode = "0755" }
    "/var/log"       = { enabled = false, options = ["rw", "nosuid", "nodev", "noexec"], mode = "0755" }
    "/var/log/audit" = { enabled = false, options = ["rw", "nosuid", "nodev", "noexec"], mode = "0700" }
    "/var/tmp"       = { enabled = false, options = ["rw", "nosuid", "nodev", "noexec"], mode = "1777" }
  }

  cron_enabled = true

  # modprobe: file systems and protocols nothing may load
  modprobe_enabled     = true
  unused_filesystems   = ["cramfs", "freevxfs", "jffs2", "hfs", "hfsplus", "squashfs", "udf", "vfat", "dccp", "rds", "sctp", "tipc"]
  filesystem_whitelist = []

  # PAM: passwdqc, faillock, no password expiry for key logins
  pam_enabled               = true
  auth_pam_passwdqc_enable  = true
  auth_pam_passwdqc_options = "min=disabled,disabled,16,12,8"

  # SUID and SGID bits (the role's vars/main.yml lists, and yours)
  security_suid_sgid_enforce             = true
  security_suid_sgid_blacklist           = []
  security_suid_sgid_whitelist           = []
  security_suid_sgid_remove_from_unknown = false
  security_suid_sgid_system_blacklist = [
    "/usr/bin/rcp", "/usr/bin/rlogin", "/usr/bin/rsh",
    "/usr/libexec/openssh/ssh-keysign", "/usr/lib/openssh/ssh-keysign",
    "/sbin/netreport", "/usr/sbin/usernetctl", "/usr/sbin/userisdnctl", "/usr/sbin/pppd",
    "/usr/bin/lockfile", "/usr/bin/mail-lock", "/usr/bin/mail-unlock", "/usr/bin/mail-touchlock", "/usr/bin/dotlockfile",
    "/usr/bin/arping", "/usr/sbin/uuidd", "/usr/bin/mtr", "/usr/lib/evolution/camel-lock-helper-1.2",
    "/usr/lib/pt_chown", "/usr/lib/eject/dmcrypt-get-device", "/usr/lib/mc/cons.saver",
  ]
  security_suid_sgid_system_whitelist = [
    "/bin/mount", "/bin/ping", "/bin/su", "/usr/bin/su", "/bin/umount", "/sbin/pam_timestamp_check", "/sbin/unix_chkpwd",
    "/usr/bin/at", "/usr/bin/gpasswd", "/usr/bin/locate", "/usr/bin/newgrp", "/usr/bin/passwd", "/usr/bin/ssh-agent",
    "/usr/libexec/utempter/utempter", "/usr/sbin/lockdev", "/usr/sbin/sendmail.sendmail", "/usr/bin/expiry",
    "/bin/ping6", "/usr/bin/traceroute6.iputils", "/sbin/mount.nfs", "/sbin/umount.nfs", "/sbin/mount.nfs4", "/sbin/umount.nfs4",
    "/usr/bin/crontab", "/usr/bin/wall", "/usr/bin/write", "/usr/bin/screen", "/usr/bin/mlocate",
    "/usr/bin/chage", "/usr/bin/chfn", "/usr/bin/chsh", "/bin/fusermount", "/usr/bin/pkexec", "/usr/bin/sudo", "/usr/bin/sudoedit",
    "/usr/sbin/postdrop", "/usr/sbin/postqueue", "/usr/sbin/suexec", "/usr/lib/squid/ncsa_auth", "/usr/lib/squid/pam_auth",
    "/usr/kerberos/bin/ksu", "/usr/sbin/ccreds_validate", "/usr/bin/Xorg", "/usr/bin/X",
    "/usr/lib/dbus-1.0/dbus-daemon-launch-helper", "/usr/lib/vte/gnome-pty-helper", "/usr/lib/libvte9/gnome-pty-helper",
    "/usr/lib/libvte-2.90-9/gnome-pty-helper",
  ]

  # sysctl: every key in /etc/sysctl.d/90-dev-sec.conf (the role's
  # sysctl_config, its Debian sysctl_custom_config; sysctl_overwrite is
  # this map: set a key to change it, to null to leave it out). A key
  # this kernel lacks is skipped, as the role's ignoreerrors does.
  sysctl_enabled = true
  sysctl = {
    "fs.protected_hardlinks"                     = 1
    "fs.protected_symlinks"                      = 1
    "fs.protected_fifos"                         = 1
    "fs.protected_regular"                       = 2
    "fs.suid_dumpable"                           = 0
    "kernel.core_uses_pid"                       = 1
    "kernel.kptr_restrict"                       = 2
    "kernel.kexec_load_disabled"                 = 1
    "kernel.sysrq"                               = 0
    "kernel.randomize_va_space"                  = 2
    "kernel.yama.ptrace_scope"                   = 2
    "kernel.unprivileged_userns_clone"           = 0 # CVE-2021-33909 (Debian's kernels)
    "kernel.unprivileged_bpf_disabled"           = 1 # CVE-2021-33910
    "net.ipv4.ip_forward"                        = 0
    "net.ipv6.conf.all.forwarding"               = 0
    "net.ipv4.conf.all.rp_filter"                = 1
    "net.ipv4.conf.default.rp_filter"            = 1
    "net.ipv4.icmp_echo_ignore_broadcasts"       = 1
    "net.ipv4.icmp_ignore_bogus_error_responses" = 1
    "net.ipv4.icmp_ratelimit"                    = 100
    "net.ipv4.icmp_ratemask"                     = 88089
    "net.ipv4.tcp_timestamps"                    = 0
    "net.ipv4.conf.all.arp_ignore"               = 1
    "net.ipv4.conf.all.arp_announce"             = 2
    "net.ipv4.tcp_rfc1337"                       = 1
    "net.ipv4.tcp_syncookies"                    = 1
    "net.ipv4.conf.all.shared_media"             = 1
    "net.ipv4.conf.default.shared_media"         = 1
    "net.ipv4.conf.all.accept_source_route"      = 0
    "net.ipv4.conf.default.accept_source_route"  = 0
    "net.ipv6.conf.all.accept_source_route"      = 0
    "net.ipv6.conf.default.accept_source_route"  = 0
    "net.ipv4.conf.all.send_redirects"           = 0
    "net.ipv4.conf.default.send_redirects"       = 0
    "net.ipv4.conf.all.log_martians"             = 1
    "net.ipv4.conf.default.log_martians"         = 1
    "net.ipv4.conf.default.accept_redirects"     = 0
    "net.ipv4.conf.all.accept_redirects"         = 0
    "net.ipv4.conf.all.secure_redirects"         = 0
    "net.ipv4.conf.default.secure_redirects"     = 0
    "net.ipv6.conf.default.accept_redirects"     = 0
    "net.ipv6.conf.all.accept_redirects"         = 0
    "net.ipv6.conf.all.accept_ra"                = 0
    "net.ipv6.conf.default.accept_ra"            = 0
    "net.ipv6.conf.default.router_solicitations" = 0
    "net.ipv6.conf.all.router_solicitations"     = 0
    "net.ipv6.conf.default.accept_ra_rtr_pref"   = 0
    "net.ipv6.conf.default.accept_ra_pinfo"      = 0
    "net.ipv6.conf.default.accept_ra_defrtr"     = 0
    "net.ipv6.conf.default.autoconf"             = 0
    "net.ipv6.conf.all.autoconf"                 = 0
    "net.ipv6.conf.default.dad_transmits"        = 0
    "net.ipv6.conf.default.max_addresses"        = 1
    "vm.mmap_min_addr"                           = 65536
    "vm.mmap_rnd_bits"                           = 32
    "vm.mmap_rnd_compat_bits"                    = 16
  }

  # user_accounts: system accounts get no shell and no password; homes
  # are private; no .rhosts, .netrc or hosts.equiv
  user_accounts_enabled         = true
  ignore_users                  = ["vagrant", "kitchen"]
  always_ignore_users           = ["root", "sync", "shutdown", "halt"]
  nologin_shell_path            = "/usr/sbin/nologin"
  chmod_rootuser_home_folder    = true
  chmod_home_folders            = true
  ignore_home_folder_users      = []
  user_pw_ageing                = true
  rootuser_pw_ageing            = false
  users_without_password_ageing = []
  rhosts_enabled                = true
  netrc_enabled                 = true
  netrc_whitelist_user          = []

  # apt: packages with known security issues, purged
  apt_enabled             = true
  security_packages_clean = true
  security_packages_list  = ["xinetd", "inetd", "ypserv", "telnet-server", "rsh-server", "prelink"]

  # auditd
  auditd_enabled                 = true
  auditd_flush                   = "INCREMENTAL"
  auditd_freq                    = 20
  auditd_max_log_file            = 6
  auditd_max_log_file_action     = "keep_logs"
  auditd_write_logs              = true
  auditd_log_file                = "/var/log/audit/audit.log"
  auditd_log_format              = "RAW"
  auditd_admin_space_left        = 50
  auditd_space_left              = 75
  auditd_space_left_action       = "SYSLOG"
  auditd_admin_space_left_action = "SUSPEND"
  auditd_disk_full_action        = "SUSPEND"
  auditd_disk_error_action       = "SUSPEND"
  auditd_action_mail_acct        = "root"
  auditd_log_group               = "root"
  auditd_num_logs                = 5
  auditd_name_format             = "NONE"
}

# What Ohai reads as node['filesystem']: the role's mount facts, read
# here once, when the recipes are compiled. (The accounts are a data
# block: 60-user_accounts.hcl.)
default "etc" {
  # mount point => what is mounted there, bottom to top
  mounts = {
    for l in split("\n", trimspace(file("/proc/self/mounts"))) : split(" ", l)[1] => {
      device = split(" ", l)[0], fstype = split(" ", l)[2]
    }...
  }
}
