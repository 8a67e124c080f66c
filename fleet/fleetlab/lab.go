// Package fleetlab makes a fleet of real hosts on this machine, for
// toque fleet's tests, benchmarks and examples/fleet: each host is a
// network namespace joined to a "lab" network namespace by a veth pair,
// with its own sshd (a config, a host key and authorized keys of the
// lab's), its own host name and machine id (a UTS namespace), and its own
// mount namespace where /etc, /var, /srv, /run, /root, /home and /opt
// are overlays on the machine's: what an apply writes there stays in
// that host. The ssh client side (toque fleet) runs in the lab's network
// namespace (Lab.Command), so nothing is reachable from, or added to, the
// machine's own network; the lab's ssh configuration, known_hosts and key
// are files of its directory, never the machine's ~/.ssh.
//
// It needs root, util-linux (unshare, nsenter), iproute2, overlayfs and
// openssh-server. Every process it starts, it ends by its pid (Close),
// and so the processes left in its namespaces (masters, a host's
// commands).
//
// It is test support: not part of toque.
package fleetlab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Overlays are the directories each host gets its own copy of.
var Overlays = []string{"/etc", "/var", "/srv", "/run", "/root", "/home", "/opt"}

// Lab is the lab network and its hosts.
type Lab struct {
	// Dir holds everything: the key, known_hosts, ssh_config, and a
	// directory per host.
	Dir string
	// SSHConfig, KnownHosts and Key are the client's files.
	SSHConfig, KnownHosts, Key string
	Hosts                      []*Host

	net     *exec.Cmd // holds the lab's network namespace
	mu      sync.Mutex
	aliases []alias
	common  []string
}

// alias is an entry of the ssh configuration.
type alias struct {
	name, addr string
	extra      []string
}

// Host is one host of the lab.
type Host struct {
	lab *Lab
	// Alias is its name in the lab's ssh configuration; Hostname its host
	// name; Addr its address; MachineID its /etc/machine-id.
	Alias, Hostname, Addr, MachineID string
	Index                            int
	Dir                              string

	holder *exec.Cmd // holds its namespaces
	sshd   *exec.Cmd
	mu     sync.Mutex
}

// Start makes a lab of hosts named by aliases (at most 250) under dir.
func Start(dir string, aliases []string) (l *Lab, err error) {
	if len(aliases) > 250 {
		return nil, errors.New("fleetlab: at most 250 hosts")
	}
	for _, o := range Overlays {
		if strings.HasPrefix(dir+"/", o+"/") {
			return nil, fmt.Errorf("fleetlab: %s is under %s, which each host overlays: use a directory in /tmp", dir, o)
		}
	}
	for _, tool := range []string{"unshare", "nsenter", "ip", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("fleetlab: %s is not installed", tool)
		}
	}
	if _, err := os.Stat(SSHD); err != nil {
		return nil, fmt.Errorf("fleetlab: %s is not installed (openssh-server)", SSHD)
	}
	l = &Lab{Dir: dir, SSHConfig: filepath.Join(dir, "ssh_config"), KnownHosts: filepath.Join(dir, "known_hosts"), Key: filepath.Join(dir, "id_ed25519")}
	defer func() {
		if err != nil {
			l.Close()
			l = nil
		}
	}()
	// sshd reads the authorized keys as the user logging in.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fleetlab", "-f", l.Key).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fleetlab: ssh-keygen: %v: %s", err, out)
	}
	l.net = exec.Command("unshare", "--net", "--", "sleep", "infinity")
	if err := l.net.Start(); err != nil {
		return nil, fmt.Errorf("fleetlab: unshare: %w", err)
	}
	if err := waitNetns(l.net.Process.Pid); err != nil {
		return nil, err
	}
	if out, err := l.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fleetlab: the lab network: %v: %s", err, out)
	}
	l.Hosts = make([]*Host, len(aliases))
	errs := make([]error, len(aliases))
	var wg sync.WaitGroup
	for i, a := range aliases {
		h := &Host{lab: l, Alias: a, Hostname: a, Index: i + 1, Addr: fmt.Sprintf("10.231.%d.2", i+1),
			MachineID: fmt.Sprintf("%032x", uint64(0x70717565)<<32|uint64(i+1)), Dir: filepath.Join(dir, "hosts", a)}
		l.Hosts[i] = h
		l.aliases = append(l.aliases, alias{name: a, addr: h.Addr})
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = h.start()
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := l.writeKnownHosts(); err != nil {
		return nil, err
	}
	return l, l.WriteSSHConfig()
}

// SSHD is the ssh daemon's path.
var SSHD = "/usr/sbin/sshd"

// waitNetns waits until pid has left the machine's network namespace
// (unshare has unshared it).
func waitNetns(pid int) error {
	self, _ := os.Readlink("/proc/self/ns/net")
	for i := 0; i < 500; i++ {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err == nil && ns != self {
			// unshare execs sleep once the namespaces are made.
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "sleep" {
				return nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("fleetlab: process %d did not enter its namespaces", pid)
}

// Command is a command run in the lab's network namespace (where the
// hosts are reachable), in the machine's mount namespace.
func (l *Lab) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(l.net.Process.Pid), "-n", "--", name}, args...)...)
}

// Host finds a host by alias.
func (l *Lab) Host(alias string) *Host {
	for _, h := range l.Hosts {
		if h.Alias == alias {
			return h
		}
	}
	return nil
}

// AddAlias adds an ssh alias for addr, with extra lines of ssh
// configuration (User deploy), and writes the configuration again.
func (l *Lab) AddAlias(name, addr string, extra ...string) error {
	l.mu.Lock()
	l.aliases = append(l.aliases, alias{name: name, addr: addr, extra: extra})
	l.mu.Unlock()
	return l.WriteSSHConfig()
}

// SetAddr points an alias at another address (a host moved, or a
// mistake), and writes the configuration again.
func (l *Lab) SetAddr(name, addr string) error {
	l.mu.Lock()
	for i := range l.aliases {
		if l.aliases[i].name == name {
			l.aliases[i].addr = addr
		}
	}
	l.mu.Unlock()
	return l.WriteSSHConfig()
}

// SetCommon sets lines of ssh configuration every host gets (KexAlgorithms
// curve25519-sha256), and writes the configuration again.
func (l *Lab) SetCommon(lines ...string) error {
	l.mu.Lock()
	l.common = lines
	l.mu.Unlock()
	return l.WriteSSHConfig()
}

// WriteSSHConfig writes the lab's ssh configuration: its aliases, then
// what every host shares (root, the lab's key and known_hosts, nothing
// of the machine's).
func (l *Lab) WriteSSHConfig() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, a := range l.aliases {
		fmt.Fprintf(&b, "Host %s\n  HostName %s\n", a.name, a.addr)
		for _, e := range a.extra {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	b.WriteString("Host *\n")
	for _, c := range l.common {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	fmt.Fprintf(&b, `  User root
  IdentityFile %s
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  ConnectTimeout 5
`, l.Key, l.KnownHosts)
	return os.WriteFile(l.SSHConfig, []byte(b.String()), 0o644)
}

// writeKnownHosts lists every host's key under its address.
func (l *Lab) writeKnownHosts() error {
	var b strings.Builder
	for _, h := range l.Hosts {
		pub, err := os.ReadFile(h.hostKey() + ".pub")
		if err != nil {
			return err
		}
		f := strings.Fields(string(pub))
		fmt.Fprintf(&b, "%s %s %s\n", h.Addr, f[0], f[1])
	}
	return os.WriteFile(l.KnownHosts, []byte(b.String()), 0o644)
}

// ForgetHostKey removes a host from known_hosts.
func (l *Lab) ForgetHostKey(h *Host) error {
	data, err := os.ReadFile(l.KnownHosts)
	if err != nil {
		return err
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(line, h.Addr+" ") {
			keep = append(keep, line)
		}
	}
	return os.WriteFile(l.KnownHosts, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
}

// RememberHostKeys writes known_hosts again from the hosts' keys.
func (l *Lab) RememberHostKeys() error { return l.writeKnownHosts() }

// Close stops the hosts and the lab, and ends every process left in
// their namespaces.
func (l *Lab) Close() {
	nets := map[string]bool{}
	if l.net != nil && l.net.Process != nil {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", l.net.Process.Pid)); err == nil {
			nets[ns] = true
		}
	}
	for _, h := range l.Hosts {
		if h == nil || h.holder == nil || h.holder.Process == nil {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", h.holder.Process.Pid)); err == nil {
			nets[ns] = true
		}
	}
	for _, h := range l.Hosts {
		if h != nil {
			h.stopSSHD()
			stop(h.holder)
		}
	}
	stop(l.net)
	// Masters (ssh -f), a host's commands still running: whatever is
	// still in the lab's namespaces was started by it.
	killIn(nets)
}

// killIn kills, by pid, every process in one of the network namespaces.
func killIn(nets map[string]bool) {
	if len(nets) == 0 {
		return
	}
	for round := 0; round < 50; round++ {
		ents, _ := os.ReadDir("/proc")
		left := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil || !nets[ns] {
				continue
			}
			left++
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if left == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stop(c *exec.Cmd) {
	if c == nil || c.Process == nil {
		return
	}
	c.Process.Kill()
	c.Wait()
}

func (h *Host) hostKey() string { return filepath.Join(h.Dir, "ssh_host_ed25519_key") }

func (h *Host) pid() string { return strconv.Itoa(h.holder.Process.Pid) }

// start makes the host's namespaces, network, overlays and sshd.
func (h *Host) start() error {
	l := h.lab
	for _, d := range []string{h.Dir, filepath.Join(h.Dir, "upper"), filepath.Join(h.Dir, "work")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.Alias, "-f", h.hostKey()).CombinedOutput(); err != nil {
		return fmt.Errorf("fleetlab: %s: ssh-keygen: %v: %s", h.Alias, err, out)
	}
	pub, err := os.ReadFile(l.Key + ".pub")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "authorized_keys"), pub, 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
AuthorizedKeysFile %s
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
PidFile none
LogLevel ERROR
PermitRootLogin prohibit-password
MaxStartups 100:30:200
MaxSessions 100
`, h.Addr, h.hostKey(), filepath.Join(h.Dir, "authorized_keys"))
	if err := os.WriteFile(filepath.Join(h.Dir, "sshd_config"), []byte(cfg), 0o644); err != nil {
		return err
	}
	h.holder = exec.Command("unshare", "--net", "--mount", "--uts", "--propagation", "private", "--", "sleep", "infinity")
	if err := h.holder.Start(); err != nil {
		return fmt.Errorf("fleetlab: %s: unshare: %w", h.Alias, err)
	}
	if err := waitNetns(h.holder.Process.Pid); err != nil {
		return err
	}
	veth := fmt.Sprintf("h%d", h.Index)
	lab := fmt.Sprintf("10.231.%d.1/24", h.Index)
	if out, err := l.Command("sh", "-c", fmt.Sprintf("ip link add %s type veth peer name eth0 netns %s && ip addr add %s dev %s && ip link set %s up",
		veth, h.pid(), lab, veth, veth)).CombinedOutput(); err != nil {
		return fmt.Errorf("fleetlab: %s: veth: %v: %s", h.Alias, err, out)
	}
	var setup strings.Builder
	fmt.Fprintf(&setup, "set -e\nip link set lo up\nip addr add %s/24 dev eth0\nip link set eth0 up\nhostname %s\n", h.Addr, h.Hostname)
	for _, d := range Overlays {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		up, wk := filepath.Join(h.Dir, "upper", d), filepath.Join(h.Dir, "work", d)
		fmt.Fprintf(&setup, "mkdir -p %s %s\nmount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s %s\n", up, wk, d, up, wk, d)
	}
	// Its own identity; an empty shell rc (a heavy one costs every ssh
	// command); sshd's privilege separation directory, in its /run.
	fmt.Fprintf(&setup, "echo %s > /etc/machine-id\necho %s > /etc/hostname\n: > /root/.bashrc\n: > /root/.profile\nmkdir -p /run/sshd\nchmod 755 /run/sshd\n", h.MachineID, h.Hostname)
	if out, err := h.Exec(setup.String()); err != nil {
		return fmt.Errorf("fleetlab: %s: setup: %v: %s", h.Alias, err, out)
	}
	return h.startSSHD()
}

// Exec runs a shell script as root inside the host (its network, mount
// and UTS namespaces), and returns its combined output.
func (h *Host) Exec(script string) (string, error) {
	out, err := exec.Command("nsenter", "-t", h.pid(), "-n", "-m", "-u", "--", "sh", "-c", script).CombinedOutput()
	return string(out), err
}

// ExecCommand is a command run inside the host.
func (h *Host) ExecCommand(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", h.pid(), "-n", "-m", "-u", "--", name}, args...)...)
}

// startSSHD starts the host's sshd and waits until it listens.
func (h *Host) startSSHD() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	log, err := os.OpenFile(filepath.Join(h.Dir, "sshd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	c := exec.Command("nsenter", "-t", h.pid(), "-n", "-m", "-u", "--", SSHD, "-D", "-e", "-f", filepath.Join(h.Dir, "sshd_config"))
	c.Stdout, c.Stderr = log, log
	if err := c.Start(); err != nil {
		return fmt.Errorf("fleetlab: %s: sshd: %w", h.Alias, err)
	}
	h.sshd = c
	for i := 0; i < 1000; i++ {
		if h.listening() {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	logText, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	return fmt.Errorf("fleetlab: %s: sshd does not listen: %s", h.Alias, logText)
}

// listening reports whether something listens on the host's port 22.
func (h *Host) listening() bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%s/net/tcp", h.pid()))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], ":0016") && f[3] == "0A" {
			return true
		}
	}
	return false
}

func (h *Host) stopSSHD() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sshd != nil {
		stop(h.sshd)
		h.sshd = nil
	}
}

// StopSSHD stops the host's sshd: connecting is refused.
func (h *Host) StopSSHD() { h.stopSSHD() }

// StartSSHD starts it again.
func (h *Host) StartSSHD() error { return h.startSSHD() }

// NewHostKey gives the host a new host key (as a reinstalled host has),
// restarting its sshd; known_hosts keeps the old one.
func (h *Host) NewHostKey() error {
	h.stopSSHD()
	os.Remove(h.hostKey())
	os.Remove(h.hostKey() + ".pub")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.Alias, "-f", h.hostKey()).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return h.startSSHD()
}

// CopyHostKey gives the host other's host key (a cloned machine),
// restarting its sshd.
func (h *Host) CopyHostKey(other *Host) error {
	h.stopSSHD()
	for _, suffix := range []string{"", ".pub"} {
		data, err := os.ReadFile(other.hostKey() + suffix)
		if err != nil {
			return err
		}
		if err := os.WriteFile(h.hostKey()+suffix, data, 0o600); err != nil {
			return err
		}
	}
	return h.startSSHD()
}

// DropConnections kills the host's sshd processes serving connections
// (not the listener): every connection to the host ends at once, as when
// a network drops, while what they ran goes on.
func (h *Host) DropConnections() int {
	h.mu.Lock()
	listener := 0
	if h.sshd != nil {
		listener = h.sshd.Process.Pid
	}
	h.mu.Unlock()
	n := 0
	for _, pid := range children(listener) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.HasPrefix(string(comm), "sshd") {
			syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	return n
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	if pid == 0 {
		return nil
	}
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// ReadFile reads a file as the host sees it.
func (h *Host) ReadFile(path string) (string, error) {
	out, err := h.ExecCommand("cat", "--", path).Output()
	return string(out), err
}
