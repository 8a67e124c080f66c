package fleet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/trust"
)

// SSH is the system ssh client, run with toque's own master connections:
// one per host and route, started explicitly (ssh -M -N -f) on a socket in
// toque's own private directory (ControlDir). A master stays up after the
// command for ControlPersist (DefaultPersist unless the inventory's
// options say otherwise), and the next command reuses it while nothing
// that decided whether to trust it has changed: the route (ssh -G), the
// inventory's options and the known_hosts files. With ControlPersist=no
// it is closed (ssh -O exit) when the command ends.
// Everything the user's ssh configuration says (Match, Include, ProxyJump,
// certificates, agents) applies, except what toque must own: the master
// and its socket, batch mode (no prompt, ever) and strict host key
// checking unless the inventory's options say otherwise.
type SSH struct {
	// Binary is the ssh client; "" is "ssh", found in PATH.
	Binary string
	// ConfigFile is given to ssh as -F; "" for the user's configuration.
	ConfigFile string
	// ControlDir holds the masters' sockets, logs and what toque knows
	// of each (ControlDir).
	ControlDir string
	// ConnectTimeout bounds connecting to a host (ConnectTimeout, unless
	// the inventory's options set it); 0 is 10 seconds.
	ConnectTimeout time.Duration
	Logger         hclog.Logger

	inputsOnce sync.Once
	inputs     string // resolveInputs
}

// maxSocketPath is below the smallest limit of a Unix socket's path
// (104 bytes on BSDs, 108 on Linux), with room for ssh's temporary suffix
// while it binds (".XXXXXXXXXXXXXXXX", 17 bytes).
const maxSocketPath = 104 - 18

// DefaultPersist is how long a master toque started stays up after the
// last command that used it (ssh's ControlPersist), unless the
// inventory's options set ControlPersist: a plan, its review and its
// apply, or a run of plans, connect to each host once.
const DefaultPersist = "10m"

// ControlDir is toque's private directory (0700) for the masters'
// sockets: $XDG_RUNTIME_DIR/toque-fleet when $XDG_RUNTIME_DIR is set, else
// toque-fleet-UID in the temporary directory, else in /tmp, the first
// whose path is short enough for a socket. It is made when missing, and
// refused when it is not a directory of this user's that only this user
// may open: another user could reach the hosts through its masters.
func ControlDir(runtimeDir string) (string, error) {
	var dirs []string
	if filepath.IsAbs(runtimeDir) {
		dirs = append(dirs, filepath.Join(runtimeDir, "toque-fleet"))
	}
	own := fmt.Sprintf("toque-fleet-%d", os.Getuid())
	dirs = append(dirs, filepath.Join(os.TempDir(), own), filepath.Join("/tmp", own))
	var whys []string
	for _, d := range dirs {
		if len(d)+1+16 > maxSocketPath {
			continue
		}
		// The directories above it too: in a parent another user may
		// write (a TMPDIR without the sticky bit), the directory could be
		// swapped after it was checked, with sockets that answer.
		if err := trust.Ancestors(filepath.Dir(d)); err != nil {
			whys = append(whys, err.Error())
			continue
		}
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			whys = append(whys, err.Error())
			continue
		}
		if err := checkPrivateDir(d); err != nil {
			whys = append(whys, err.Error())
			continue
		}
		return d, nil
	}
	why := ""
	if len(whys) > 0 {
		why = ": " + strings.Join(whys, "; ")
	}
	return "", fmt.Errorf("found no private directory with a path short enough for ssh's control sockets ($XDG_RUNTIME_DIR, $TMPDIR, /tmp)%s", why)
}

// checkPrivateDir checks that d is a directory (not a link to one) of
// this user's, with no permission for anyone else.
func checkPrivateDir(d string) error {
	st, err := os.Lstat(d)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", d)
	}
	if uid, ok := fileOwner(st); ok && uid != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to this user (%d)", d, uid, os.Getuid())
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s may be opened by other users (mode %04o): make it 0700", d, st.Mode().Perm())
	}
	return nil
}

// fileOwner is the user owning a file.
func fileOwner(st os.FileInfo) (int, bool) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid), true
	}
	return 0, false
}

// Route is how ssh reaches one host: the alias, the options toque gives
// it, and its effective settings (ssh -G).
type Route struct {
	Alias   string
	Options []Option
	// Settings is what ssh -G prints: each setting (lower case) with its
	// values, in order.
	Settings map[string][]string
	// Defaults are toque's defaults for what the configuration leaves
	// unset (ConnectTimeout, ServerAliveInterval).
	Defaults []Option
	// Key names the master's socket: the first 16 hex digits of the
	// sha256 of the alias, the options and ssh -G's output. OpenSSH's own
	// %C hashes only the local host, the host name, the port and the user,
	// so two aliases of one host through different ProxyJumps would share
	// a master; this does not.
	Key string
}

// Get is a setting's first value, "" when unset.
func (r *Route) Get(name string) string {
	if v := r.Settings[strings.ToLower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (s *SSH) binary() string {
	if s.Binary == "" {
		return "ssh"
	}
	return s.Binary
}

func (s *SSH) timeout() time.Duration {
	if s.ConnectTimeout <= 0 {
		return 10 * time.Second
	}
	return s.ConnectTimeout
}

// base is ssh's first arguments: the configuration file.
func (s *SSH) base() []string {
	argv := []string{s.binary()}
	if s.ConfigFile != "" {
		argv = append(argv, "-F", s.ConfigFile)
	}
	return argv
}

func optionArgs(opts []Option) []string {
	var out []string
	for _, o := range opts {
		out = append(out, "-o", o.Name+"="+o.Value)
	}
	return out
}

// run runs ssh with argv (after the binary), any exit status being a
// result rather than an error.
func (s *SSH) run(ctx context.Context, spec shellexec.Spec) (*shellexec.Result, error) {
	begin := time.Now()
	res, err := shellexec.Run(ctx, spec)
	if s.Logger != nil && s.Logger.IsDebug() {
		code := -1
		if res != nil {
			code = res.ExitCode
		}
		op := "command"
		for _, a := range spec.Argv {
			switch a {
			case "-G":
				op = "resolve"
			case "-M":
				op = "master"
			case "-O":
				op = "control"
			}
		}
		s.Logger.Debug("ssh ran", "op", op, "exit", code, "took", time.Since(begin))
	}
	var ee *shellexec.ExitError
	if errors.As(err, &ee) && res != nil {
		return res, nil
	}
	return res, err
}

// fixedOptions are the options toque always gives ssh: they win over the
// inventory's and the configuration's (ssh takes the first value it is
// given for each).
var fixedOptions = []Option{
	{"BatchMode", "yes"},
	{"RequestTTY", "no"},
	{"RemoteCommand", "none"},
	{"PermitLocalCommand", "no"},
	{"ClearAllForwardings", "yes"},
	// A user's "Host * ForwardAgent yes" must not hand their agent (or
	// X display) to every host of a fleet: one compromised host would
	// reach the others.
	{"ForwardAgent", "no"},
	{"ForwardX11", "no"},
	{"ForwardX11Trusted", "no"},
}

// options is what toque gives ssh for a route, after ControlPath: its
// fixed options, the inventory's, then strict host key checking and
// DefaultPersist unless the inventory says otherwise, and the defaults
// the configuration leaves unset.
func (r *Route) options() []Option {
	out := append([]Option(nil), fixedOptions...)
	out = append(out, r.Options...)
	out = append(out, Option{"StrictHostKeyChecking", "yes"}, Option{"ControlPersist", DefaultPersist})
	return append(out, r.Defaults...)
}

// persists says whether the route's master outlives the command.
func (r *Route) persists() bool {
	switch strings.ToLower(r.Get("controlpersist")) {
	case "", "no", "false":
		return false
	}
	return true
}

// Resolve asks ssh for the alias's effective settings (ssh -G, with the
// options toque will give it), which also checks that ssh can read its
// configuration. Settings the configuration leaves unset get toque's
// defaults: ConnectTimeout, and ServerAliveInterval so that a dropped
// connection is noticed within a minute.
func (s *SSH) Resolve(ctx context.Context, alias string, opts []Option) (*Route, error) {
	r := &Route{Alias: alias, Options: opts, Settings: map[string][]string{}}
	out, ok := s.cachedResolve(alias, r.options())
	if !ok {
		argv := append(s.base(), optionArgs(r.options())...)
		argv = append(argv, "-G", "--", alias)
		res, err := s.run(ctx, shellexec.Spec{Argv: argv, Timeout: 30 * time.Second})
		if err != nil {
			return nil, &ConnectError{Alias: alias, Class: FailOther, Detail: "cannot run ssh: " + err.Error()}
		}
		if res.ExitCode != 0 {
			return nil, &ConnectError{Alias: alias, Class: FailConfig, Detail: lastLines(res.Stderr, 4)}
		}
		out = res.Stdout
		s.keepResolve(alias, r.options(), out)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", alias)
	for _, o := range opts {
		fmt.Fprintf(h, "%s=%s\x00", o.Name, o.Value)
	}
	h.Write([]byte(out))
	r.Key = hex.EncodeToString(h.Sum(nil))[:16]
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k != "" {
			r.Settings[k] = append(r.Settings[k], v)
		}
	}
	if v := r.Get("connecttimeout"); v == "" || v == "none" {
		secs := strconv.Itoa(int((s.timeout() + time.Second - 1) / time.Second))
		r.Defaults = append(r.Defaults, Option{"ConnectTimeout", secs})
		r.Settings["connecttimeout"] = []string{secs}
	}
	if v := r.Get("serveraliveinterval"); v == "" || v == "0" {
		r.Defaults = append(r.Defaults, Option{"ServerAliveInterval", "15"}, Option{"ServerAliveCountMax", "4"})
		r.Settings["serveraliveinterval"], r.Settings["serveralivecountmax"] = []string{"15"}, []string{"4"}
	}
	return r, nil
}

// Failure classifies why ssh could not reach a host.
type Failure string

// The failures ssh reports, as classified from the master's log (never
// from ssh's exit status, 255 for all of them).
const (
	FailConfig         Failure = "ssh configuration"   // ssh -G failed: a configuration it cannot read
	FailResolve        Failure = "cannot resolve"      // the host name does not resolve
	FailRefused        Failure = "connection refused"  // nothing listens on the port
	FailTimeout        Failure = "timed out"           // no answer within ConnectTimeout
	FailUnreachable    Failure = "network unreachable" // no route to the host
	FailAuth           Failure = "authentication"      // the host accepts none of the keys
	FailHostKeyUnknown Failure = "host key unknown"    // not in known_hosts
	FailHostKeyChanged Failure = "host key changed"    // another key than known_hosts holds
	FailClosed         Failure = "closed by the host"  // the host closed the connection while setting it up
	FailOther          Failure = "ssh failed"          // anything else: Detail holds ssh's words
)

// ConnectError is a host ssh could not reach. Detail is what ssh said
// (escaped by the views before printing).
type ConnectError struct {
	Alias  string
	Class  Failure
	Detail string
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Alias, e.Class, e.Detail)
}

// classify reads the master's log (ssh -v -E) for why it failed.
func classify(log string) (Failure, string) {
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "debug") || strings.HasPrefix(l, "OpenSSH_") {
			continue
		}
		lines = append(lines, l)
	}
	all := strings.Join(lines, "\n")
	has := func(s string) bool { return strings.Contains(all, s) }
	detail := lastLines(all, 3)
	switch {
	case has("REMOTE HOST IDENTIFICATION HAS CHANGED"):
		key, where := "another key", ""
		for _, l := range lines {
			if strings.HasPrefix(l, "SHA256:") {
				key = "key " + strings.TrimSuffix(l, ".")
			}
			if w, ok := strings.CutPrefix(l, "Offending "); ok {
				where = " (" + w + ")"
			}
		}
		return FailHostKeyChanged, fmt.Sprintf("the host presented %s, not the one known_hosts holds for it%s, so ssh refused it (REMOTE HOST IDENTIFICATION HAS CHANGED). If the host was reinstalled, check its new key and replace the old one (ssh-keygen -R); otherwise someone may be in the way", key, where)
	case has("host key is known for") || has("Host key verification failed") || has("No matching host key"):
		return FailHostKeyUnknown, detail
	case has("Could not resolve hostname") || has("Name or service not known") || has("nodename nor servname"):
		return FailResolve, detail
	case has("Connection refused"):
		return FailRefused, detail
	case has("timed out") || has("Connection timed out") || has("Operation timed out"):
		return FailTimeout, detail
	case has("Network is unreachable") || has("No route to host"):
		return FailUnreachable, detail
	case has("Permission denied") || has("Too many authentication failures"):
		return FailAuth, detail
	case has("Connection closed by") || has("Connection reset by") || has("kex_exchange_identification"):
		return FailClosed, detail
	}
	if detail == "" {
		detail = "ssh exited without saying why"
	}
	return FailOther, detail
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Conn is an open master connection to one host.
type Conn struct {
	ssh    *SSH
	Route  *Route
	socket string
	log    string
	// known is where toque keeps, beside a master that persists, the key
	// it verified and the trust stamp it was verified under.
	known string
	// HostKey is the key the host presented and ssh verified, as ssh
	// names it: "ssh-ed25519 SHA256:…".
	HostKey string
	// Reused is set when the master was up already, started by an
	// earlier command.
	Reused bool
	// Platform is the host's platform (GOOS/GOARCH) as a command over
	// this master found it (Remember), "" when none did: a host cannot
	// change under a live connection.
	Platform string
	// stamp is the trust stamp the master was verified under, "" when it
	// does not persist.
	stamp string

	mu     sync.Mutex
	closed bool
}

// Connect gives the host's master connection: the one an earlier command
// left up when it may be reused (see SSH), else a new one, started and
// waited for (ssh -f returns once authenticated). Its failure is a
// *ConnectError.
func (s *SSH) Connect(ctx context.Context, r *Route) (*Conn, error) {
	return s.connect(ctx, r, true)
}

func (s *SSH) connect(ctx context.Context, r *Route, reuse bool) (*Conn, error) {
	base := filepath.Join(s.ControlDir, r.Key)
	c := &Conn{ssh: s, Route: r, socket: base, log: base + ".log", known: base + ".known"}
	// One toque at a time looks at, or starts, a route's master.
	unlock, err := lockFile(base + ".lock")
	if err != nil {
		return nil, &ConnectError{Alias: r.Alias, Class: FailOther, Detail: err.Error()}
	}
	defer unlock()
	stamp := ""
	if r.persists() {
		stamp = trustStamp(r)
	}
	if reuse && stamp != "" && c.reuse(stamp) {
		return c, nil
	}
	if _, err := os.Lstat(c.socket); err == nil {
		// A master that may not be reused (another trust stamp, or
		// gone): end it, so that ssh cannot go on without one.
		c.exit()
		os.Remove(c.socket)
	}
	os.Remove(c.known)
	os.Remove(c.log)
	if err := s.start(ctx, c); err != nil {
		return nil, err
	}
	if stamp != "" {
		c.stamp = stamp
		if err := writeKnown(c.known, stamp, c.HostKey, ""); err != nil && s.Logger != nil {
			s.Logger.Warn("the master cannot be reused: cannot write what toque knows of it", "host", r.Alias, "error", err)
		}
	}
	return c, nil
}

// start starts the master and reads which host key ssh verified.
func (s *SSH) start(ctx context.Context, c *Conn) error {
	r := c.Route
	argv := append(s.base(), "-o", "ControlPath="+c.socket)
	argv = append(argv, optionArgs(r.options())...)
	// -v: the log says which host key was verified (and why connecting
	// failed); -E keeps it out of the terminal.
	argv = append(argv, "-v", "-E", c.log, "-M", "-N", "-f", "--", r.Alias)
	res, err := s.run(ctx, shellexec.Spec{Argv: argv, Timeout: 3*s.timeout() + 30*time.Second})
	logText, _ := os.ReadFile(c.log)
	if err != nil {
		os.Remove(c.log)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		class, detail := classify(string(logText))
		if class == FailOther {
			detail = err.Error()
		}
		return &ConnectError{Alias: r.Alias, Class: class, Detail: detail}
	}
	if res.ExitCode != 0 {
		os.Remove(c.log)
		class, detail := classify(string(logText) + "\n" + res.Stderr)
		return &ConnectError{Alias: r.Alias, Class: class, Detail: detail}
	}
	for _, l := range strings.Split(string(logText), "\n") {
		if k, ok := strings.CutPrefix(l, "debug1: Server host key: "); ok {
			c.HostKey = strings.TrimSpace(k)
		}
	}
	if c.HostKey == "" {
		c.exit()
		os.Remove(c.log)
		return &ConnectError{Alias: r.Alias, Class: FailOther, Detail: "ssh connected but its log does not say which host key it verified"}
	}
	// The master logs each session (-v) for as long as it persists, and
	// appends: what it logged while connecting is read.
	os.Truncate(c.log, 0)
	return nil
}

// reuse takes up the master an earlier command left, when it was
// verified under stamp and answers on its socket.
func (c *Conn) reuse(stamp string) bool {
	data, err := os.ReadFile(c.known)
	if err != nil {
		return false
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 || lines[0] != stamp || lines[1] == "" {
		return false
	}
	if !masterAnswers(c.socket) {
		return false
	}
	c.HostKey, c.Reused, c.stamp = lines[1], true, stamp
	if len(lines) > 2 {
		c.Platform = lines[2]
	}
	if st, err := os.Stat(c.log); err == nil && st.Size() > 1<<20 {
		os.Truncate(c.log, 0)
	}
	return true
}

// masterAnswers says whether an ssh master listens on socket: it greets
// each client first with a hello message (PROTOCOL.mux: a length, then
// MUX_MSG_HELLO, 0x00000001).
func masterAnswers(socket string) bool {
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	var hello [8]byte
	if _, err := io.ReadFull(conn, hello[:]); err != nil {
		return false
	}
	return bytes.Equal(hello[4:], []byte{0, 0, 0, 1})
}

// trustStamp digests what ssh verified the host key against: the
// known_hosts files and the revoked keys, as ssh -G names them. "" when
// it cannot be known (a KnownHostsCommand, a file that cannot be read):
// then no master is reused.
func trustStamp(r *Route) string {
	if v := r.Get("knownhostscommand"); v != "" && v != "none" {
		return ""
	}
	h := sha256.New()
	for _, name := range []string{"userknownhostsfile", "globalknownhostsfile", "revokedhostkeys"} {
		for _, v := range r.Settings[name] {
			for _, path := range strings.Fields(v) {
				if path == "none" {
					continue
				}
				data, err := os.ReadFile(path)
				switch {
				case errors.Is(err, os.ErrNotExist):
					fmt.Fprintf(h, "%s\x00absent\x00", path)
				case err != nil:
					return ""
				default:
					fmt.Fprintf(h, "%s\x00%d\x00", path, len(data))
					h.Write(data)
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Remember records, beside a master that persists, the host's platform a
// command over it found, for the next commands to use it: unless the
// master was replaced meanwhile (another stamp or host key).
func (c *Conn) Remember(platform string) {
	if c.stamp == "" || c.Platform == platform {
		return
	}
	unlock, err := lockFile(c.socket + ".lock")
	if err != nil {
		return
	}
	defer unlock()
	data, err := os.ReadFile(c.known)
	if err != nil || !strings.HasPrefix(string(data), c.stamp+"\n"+c.HostKey+"\n") {
		return
	}
	if writeKnown(c.known, c.stamp, c.HostKey, platform) == nil {
		c.Platform = platform
	}
}

// writeKnown records, beside a master, the stamp it was verified under,
// the host key and the host's platform when known.
func writeKnown(path, stamp, hostKey, platform string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(stamp+"\n"+hostKey+"\n"+platform+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// lockFile takes an exclusive lock on path (made when missing) until the
// function it returns is called.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot lock the master's socket: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot lock the master's socket: %w", err)
	}
	return func() { f.Close() }, nil
}

// Exec is one remote command's outcome.
type Exec struct {
	// ExitCode is the remote command's exit status.
	ExitCode int
	Stderr   string
}

// LostError is a connection that ended while a command ran (or before one
// could start): the command may or may not have run to its end.
type LostError struct {
	Alias  string
	Detail string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%s: the connection was lost: %s", e.Alias, e.Detail)
}

// Run runs script with /bin/sh on the host, through the master: stdin is
// its standard input, its standard output goes to stdout. A remote exit
// status, 255 included, is the command's; the connection failing is a
// *LostError, told apart by asking the master whether it is still up.
func (c *Conn) Run(ctx context.Context, script string, stdin []byte, stdout io.Writer) (*Exec, error) {
	argv := c.ssh.base()
	argv = append(argv,
		"-o", "ControlPath="+c.socket,
		"-o", "ControlMaster=no",
		"-o", "BatchMode=yes",
		// Should the master be gone, ssh would connect on its own; this
		// makes that attempt fail at once instead.
		"-o", "ProxyCommand=/bin/false",
		"-o", "RemoteCommand=none",
		"-T", "--", c.Route.Alias, "exec /bin/sh -c "+shQuote(script))
	if stdin == nil {
		stdin = []byte{}
	}
	res, err := c.ssh.run(ctx, shellexec.Spec{Argv: argv, Stdin: stdin, Stdout: stdout, OutputLimit: 1 << 20})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: cannot run ssh: %w", c.Route.Alias, err)
	}
	if res.ExitCode == 255 && !c.alive(ctx) {
		return nil, &LostError{Alias: c.Route.Alias, Detail: c.lostWhy(res.Stderr)}
	}
	return &Exec{ExitCode: res.ExitCode, Stderr: res.Stderr}, nil
}

// alive asks the master whether it is up.
func (c *Conn) alive(ctx context.Context) bool {
	argv := append(c.ssh.base(), "-o", "ControlPath="+c.socket, "-O", "check", "--", c.Route.Alias)
	res, err := c.ssh.run(context.WithoutCancel(ctx), shellexec.Spec{Argv: argv, Timeout: 10 * time.Second})
	return err == nil && res.ExitCode == 0
}

// lostWhy is what the master's log and the session said about its end.
func (c *Conn) lostWhy(stderr string) string {
	logText, _ := os.ReadFile(c.log)
	_, detail := classify(string(logText))
	if detail == "ssh exited without saying why" {
		detail = ""
	}
	if s := lastLines(strings.TrimSpace(stderr), 2); s != "" {
		if detail != "" {
			detail += "; "
		}
		detail += s
	}
	if detail == "" {
		detail = "the master connection ended"
	}
	return detail
}

// Kill ends the master at once, as a dropped connection would (tests).
func (c *Conn) Kill() error {
	return c.exit()
}

// exit asks the master to exit (ssh -O exit).
func (c *Conn) exit() error {
	argv := append(c.ssh.base(), "-o", "ControlPath="+c.socket, "-O", "exit", "--", c.Route.Alias)
	_, err := c.ssh.run(context.Background(), shellexec.Spec{Argv: argv, Timeout: 10 * time.Second})
	return err
}

// Close is the end of the command's use of the master: one that persists
// stays up for the next command; one that does not is closed (ssh -O
// exit), and its log removed.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	// A master persists only when a later command could reuse it: with
	// no trust stamp (a KnownHostsCommand, an unreadable known_hosts) it
	// never will, and an authenticated connection would idle for nothing.
	if c.Route.persists() && c.stamp != "" {
		return
	}
	unlock, err := lockFile(c.socket + ".lock")
	if err == nil {
		defer unlock()
	}
	if err := c.exit(); err != nil && c.ssh.Logger != nil {
		c.ssh.Logger.Warn("closing the master connection", "host", c.Route.Alias, "error", err)
	}
	// The master removes its socket as it exits, which may be after ssh
	// -O exit returns.
	os.Remove(c.socket)
	os.Remove(c.log)
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%_-+=:,./", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Settings lists a route's settings as ssh -G gives them, sorted by name.
func (r *Route) SettingNames() []string {
	names := make([]string, 0, len(r.Settings))
	for k := range r.Settings {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
