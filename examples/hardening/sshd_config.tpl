# Managed by toque (examples/hardening, dev-sec's ssh_hardening).
%{ for p in ssh.server_ports ~}
Port ${p}
%{ endfor ~}
%{ for a in ssh.listen_to ~}
ListenAddress ${a}
%{ endfor ~}
HostKey /etc/ssh/ssh_host_rsa_key
HostKey /etc/ssh/ssh_host_ecdsa_key
HostKey /etc/ssh/ssh_host_ed25519_key
KexAlgorithms ${join(",", ssh.kex)}
Ciphers ${join(",", ssh.ciphers)}
MACs ${join(",", ssh.macs)}
LogLevel ${ssh.log_level}
SyslogFacility AUTH
LoginGraceTime 30s
PermitRootLogin ${ssh.permit_root_login}
StrictModes yes
MaxAuthTries ${ssh.max_auth_tries}
MaxSessions ${ssh.max_sessions}
PubkeyAuthentication yes
IgnoreRhosts yes
HostbasedAuthentication no
PasswordAuthentication ${ssh.password_authentication ? "yes" : "no"}
PermitEmptyPasswords no
KbdInteractiveAuthentication no
UsePAM yes
ClientAliveInterval ${ssh.client_alive_interval}
ClientAliveCountMax ${ssh.client_alive_count}
AllowTcpForwarding ${ssh.allow_tcp_forwarding}
AllowAgentForwarding ${ssh.allow_agent_forwarding ? "yes" : "no"}
X11Forwarding ${ssh.x11_forwarding ? "yes" : "no"}
PermitUserEnvironment no
Compression no
UseDNS no
PrintMotd no
PrintLastLog no
Banner none
Subsystem sftp internal-sftp -l INFO -f LOCAL6
