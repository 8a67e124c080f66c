# dev-sec's ssh_hardening (the collection's other role) for the server:
# sshd_config written whole from the role's variables, checked by sshd
# itself before it replaces the file (verify, the role's `validate: sshd
# -t -f %s`), the weak Diffie-Hellman moduli removed, and sshd reloaded
# when its configuration changed.
default "ssh_hardening" {
  enabled                 = true
  server_ports            = [22]
  listen_to               = ["0.0.0.0"]
  permit_root_login       = "no"
  password_authentication = false
  max_auth_tries          = 2
  max_sessions            = 10
  client_alive_interval   = 300
  client_alive_count      = 3
  allow_tcp_forwarding    = "no"
  allow_agent_forwarding  = false
  x11_forwarding          = false
  log_level               = "VERBOSE"
  kex                     = ["sntrup761x25519-sha512@openssh.com", "curve25519-sha256@libssh.org", "diffie-hellman-group-exchange-sha256"]
  ciphers                 = ["chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com", "aes128-gcm@openssh.com", "aes256-ctr", "aes192-ctr", "aes128-ctr"]
  macs                    = ["hmac-sha2-512-etm@openssh.com", "hmac-sha2-256-etm@openssh.com", "umac-128-etm@openssh.com", "hmac-sha2-512", "hmac-sha2-256"]
  moduli_minimum          = 2048
}

resource_group "ssh_hardening" {
  only_if = node.ssh_hardening.enabled

  template "/etc/ssh/sshd_config" {
    source    = "sshd_config.tpl"
    variables = { ssh = node.ssh_hardening }
    owner     = "root"
    group     = "root"
    mode      = "0600"
    verify    = ["/usr/sbin/sshd -t -f %s"]
    notifies "reload" {
      resource = "service[ssh]"
    }
  }

  # The role's "remove all small primes": moduli below the minimum go.
  execute "ssh moduli" {
    command = "awk '$5 >= ${node.ssh_hardening.moduli_minimum}' /etc/ssh/moduli > /etc/ssh/moduli.toque && mv /etc/ssh/moduli.toque /etc/ssh/moduli"
    only_if = "awk '$5 < ${node.ssh_hardening.moduli_minimum} { found = 1 } END { exit !found }' /etc/ssh/moduli"
    writes  = ["/etc/ssh/moduli"]
  }

  service "ssh" {
    action = "nothing"
  }
}
