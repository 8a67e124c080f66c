package packages

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// aptProvider manages packages with apt and dpkg: dpkg-query for what is
// installed, apt-cache policy for what the repositories offer, apt-get -s
// to predict, apt-get to change. Every command runs non-interactively
// (DEBIAN_FRONTEND=noninteractive) in the C locale, whose messages it
// parses.
type aptProvider struct {
	// env is added to every child's environment. Tests point apt and dpkg
	// at a throwaway root with it (APT_CONFIG, DPKG_ADMINDIR); it is empty
	// in production, where the command lines are exactly those below.
	env map[string]string
	// readTimeout bounds each reading command.
	readTimeout time.Duration
}

func newAptProvider() *aptProvider { return &aptProvider{readTimeout: 2 * time.Minute} }

func (p *aptProvider) Name() string { return "apt" }

func (p *aptProvider) CompareVersions(a, b string) int { return compareDebVersions(a, b) }

func (p *aptProvider) ValidVersion(v string) error {
	_, err := parseDebVersion(v)
	return err
}

// readLimit is how much output a reading command may print: enough for
// apt-cache policy of thousands of packages; more is an error, never a
// silently cut reading.
const readLimit = 64 << 20

// spec is the shellexec.Spec of one apt or dpkg command.
func (p *aptProvider) spec(argv []string, timeout time.Duration, logger hclog.Logger) shellexec.Spec {
	env := map[string]string{
		"LC_ALL":                   "C",
		"DEBIAN_FRONTEND":          "noninteractive",
		"APT_LISTCHANGES_FRONTEND": "none",
	}
	for k, v := range p.env {
		env[k] = v
	}
	return shellexec.Spec{Argv: argv, Env: env, Timeout: timeout, OutputLimit: readLimit, Logger: logger}
}

// read runs a command that only reads; returns lists its allowed exit
// codes (nil: 0).
func (p *aptProvider) read(ctx context.Context, argv []string, returns ...int) (*shellexec.Result, error) {
	s := p.spec(argv, p.readTimeout, nil)
	s.Returns = returns
	res, err := shellexec.Run(ctx, s)
	if err != nil {
		return res, commandError(argv, res, err)
	}
	if res.Truncated {
		return res, fmt.Errorf("%s printed more than %d MiB; toque will not act on a cut reading", argv[0], readLimit>>20)
	}
	return res, nil
}

// commandError words a failed command: what ran, how it ended, and the
// end of what it said.
func commandError(argv []string, res *shellexec.Result, err error) error {
	var ee *shellexec.ExitError
	if errors.As(err, &ee) && res != nil {
		return fmt.Errorf("%s exited with status %d: %s", strings.Join(argv, " "), res.ExitCode, hostexec.Tail(res, 12))
	}
	return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
}

// dpkgQueryFormat is one line per package instance: name with its
// architecture, name, version, selection (hold) and state. db:Status-Status
// is the package's real state: dpkg-query exits 0 for a removed package
// whose configuration files remain (config-files) and for one a failed
// install left unpacked.
const dpkgQueryFormat = `${binary:Package}\t${Package}\t${Architecture}\t${Version}\t${db:Status-Want}\t${db:Status-Status}\n`

// Installed asks dpkg-query about every name at once.
func (p *aptProvider) Installed(ctx context.Context, names []string) (map[string]*PackageInfo, error) {
	out := make(map[string]*PackageInfo, len(names))
	for _, n := range names {
		out[n] = &PackageInfo{Name: n}
	}
	if len(names) == 0 {
		return out, nil
	}
	// Exit 1: some name is not in the database (it is then simply absent).
	res, err := p.read(ctx, append([]string{"dpkg-query", "-W", "-f=" + dpkgQueryFormat, "--"}, names...), 0, 1)
	if err != nil {
		return nil, err
	}
	parseDpkgQuery(res.Stdout, out)
	return out, nil
}

// Offered asks apt-cache policy about every package at once.
func (p *aptProvider) Offered(ctx context.Context, infos []*PackageInfo) error {
	if len(infos) == 0 {
		return nil
	}
	byName := make(map[string]*PackageInfo, len(infos))
	argv := []string{"apt-cache", "policy"}
	for _, info := range infos {
		if byName[info.Name] == nil {
			argv = append(argv, info.Name)
		}
		byName[info.Name] = info
	}
	res, err := p.read(ctx, argv)
	if err != nil {
		return err
	}
	parsePolicy(res.Stdout, byName)
	return nil
}

// parseDpkgQuery fills infos from dpkg-query lines (dpkgQueryFormat). A
// name without an architecture matches its instances of any architecture;
// an installed one wins over one that is not.
func parseDpkgQuery(text string, infos map[string]*PackageInfo) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			continue
		}
		bin, name, arch, version, want, status := f[0], f[1], f[2], f[3], f[4], f[5]
		for _, key := range []string{bin, name, name + ":" + arch} {
			info := infos[key]
			if info == nil {
				continue
			}
			st := dpkgState(status)
			if info.State == PkgInstalled && st != PkgInstalled {
				continue
			}
			info.State, info.Held = st, want == "hold"
			info.Installed = ""
			if st != PkgAbsent {
				info.Installed = version
			}
		}
	}
}

// dpkgState maps dpkg's db:Status-Status to a PackageState.
func dpkgState(status string) PackageState {
	switch status {
	case "installed", "triggers-awaited", "triggers-pending":
		// Configured; triggers only postpone work for another package.
		return PkgInstalled
	case "config-files":
		return PkgConfigFiles
	case "half-installed", "unpacked", "half-configured":
		return PkgBroken
	}
	return PkgAbsent
}

var (
	policyHeader  = regexp.MustCompile(`^(\S+):$`)
	policyVersion = regexp.MustCompile(`^ (?:\*\*\*| {3}) (\S+) (-?\d+)$`)
	policySource  = regexp.MustCompile(`^ {8}\s*-?\d+ (.+)$`)
)

// parsePolicy fills the candidate and the versions on offer from apt-cache
// policy. A version whose only source is the dpkg status file is installed
// but no repository offers it: it is not on offer.
func parsePolicy(text string, infos map[string]*PackageInfo) {
	var cur *PackageInfo
	var version string
	offered := false
	flush := func() {
		if cur != nil && version != "" && offered {
			cur.Versions = append(cur.Versions, version)
		}
		version, offered = "", false
	}
	for _, line := range strings.Split(text, "\n") {
		if m := policyHeader.FindStringSubmatch(line); m != nil {
			flush()
			cur = infos[m[1]]
			continue
		}
		if cur == nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "  Candidate: "):
			if c := strings.TrimPrefix(line, "  Candidate: "); c != "(none)" {
				cur.Candidate = c
			}
		case policyVersion.MatchString(line):
			flush()
			version = policyVersion.FindStringSubmatch(line)[1]
		case version != "" && policySource.MatchString(line):
			src := policySource.FindStringSubmatch(line)[1]
			if !strings.HasSuffix(src, "/dpkg/status") {
				offered = true
			}
		}
	}
	flush()
}

// Inspect reads a .deb's control fields with dpkg-deb, and hashes it.
func (p *aptProvider) Inspect(ctx context.Context, file string) (*PackageFile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading the package file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("reading the package file %s: %w", file, err)
	}
	res, err := p.read(ctx, []string{"dpkg-deb", "--field", file, "Package", "Version", "Architecture"})
	if err != nil {
		return nil, err
	}
	pf := &PackageFile{SHA256: hex.EncodeToString(h.Sum(nil))}
	for _, line := range strings.Split(res.Stdout, "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Package":
			pf.Name = strings.TrimSpace(v)
		case "Version":
			pf.Version = strings.TrimSpace(v)
		case "Architecture":
			pf.Arch = strings.TrimSpace(v)
		}
	}
	if pf.Name == "" || pf.Version == "" {
		return nil, fmt.Errorf("%s is not a Debian package: dpkg-deb found no Package and Version fields", file)
	}
	return pf, nil
}

// Sources lists the repositories apt-cache policy reads.
func (p *aptProvider) Sources(ctx context.Context) ([]string, error) {
	res, err := p.read(ctx, []string{"apt-cache", "policy"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(res.Stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[len(f)-1] != "Packages" {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		out = append(out, props.RedactURL(strings.Join(f[1:len(f)-1], " ")))
	}
	return uniqueNames(out), nil
}

// args is the apt-get command line of op: simulate adds -s (apt then
// predicts exactly what the same command would do, without the lock).
//
// The recipe's options come first and toque's own after them, so that
// toque's win where both set the same thing (apt reads its command line
// in order, the last setting of an item winning): an option the checks
// missed cannot turn the simulation, whose -s is the last option, into
// an install.
//
// Configuration files the administrator changed are kept
// (--force-confdef --force-confold: dpkg's default where the package
// has one, the installed file otherwise), or replaced with
// OverwriteConfig (--force-confnew); either way dpkg never asks.
// DPkg::Lock::Timeout makes apt wait for the lock another process holds.
func (p *aptProvider) args(op *PackageOp, simulate bool) []string {
	argv := []string{"apt-get"}
	argv = append(argv, op.Options...)
	argv = append(argv, "-q", "-y")
	secs := int(op.LockTimeout / time.Second)
	argv = append(argv, "-o", "DPkg::Lock::Timeout="+strconv.Itoa(secs))
	if op.OverwriteConfig {
		argv = append(argv, "-o", "Dpkg::Options::=--force-confnew")
	} else {
		argv = append(argv, "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold")
	}
	if op.Verb == "install" {
		// The plan names exact versions; an older one is a downgrade
		// the plan shows as such.
		argv = append(argv, "--allow-downgrades")
	}
	if op.Archives != "" && !simulate {
		// The .debs the plan read, and nothing else: apt takes them from
		// this directory of toque's (never its own cache) and downloads
		// nothing.
		argv = append(argv, "-o", "Dir::Cache::Archives="+strings.TrimSuffix(op.Archives, "/")+"/", "--no-download")
	}
	if simulate {
		argv = append(argv, "-s")
	}
	argv = append(argv, op.Verb)
	for _, t := range op.Targets {
		switch {
		case t.File != "":
			argv = append(argv, t.File)
		case t.Version != "":
			argv = append(argv, t.Name+"="+t.Version)
		default:
			argv = append(argv, t.Name)
		}
	}
	return argv
}

var (
	simInst = regexp.MustCompile(`^Inst (\S+) (?:\[(\S+)\] )?\((\S+)(.*)`)
	// simArch is the architecture that ends an Inst line's parentheses:
	// "(2.0 Debian:12/stable [amd64])".
	simArch = regexp.MustCompile(`\[([a-z0-9-]+)\]\)`)
	simRemv = regexp.MustCompile(`^(Remv|Purg) (\S+)(?: \[(\S+)\])?`)
)

// Simulate runs the op's command line with -s and reads apt's Inst, Remv
// and Purg lines.
func (p *aptProvider) Simulate(ctx context.Context, op *PackageOp) (*PackageOutcome, error) {
	argv := p.args(op, true)
	res, err := shellexec.Run(ctx, p.spec(argv, p.readTimeout, nil))
	if err != nil {
		return nil, aptRefusal(argv, res, err)
	}
	out := &PackageOutcome{}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		line := sc.Text()
		if m := simInst.FindStringSubmatch(line); m != nil {
			c := PackageChange{Name: m[1], From: m[2], To: m[3]}
			if a := simArch.FindStringSubmatch(m[4]); a != nil {
				c.Arch = a[1]
			}
			out.Changes = append(out.Changes, c)
		} else if m := simRemv.FindStringSubmatch(line); m != nil {
			out.Changes = append(out.Changes, PackageChange{Name: m[2], From: m[3], Purge: m[1] == "Purg"})
		}
	}
	return out, nil
}

// aptRefusal words apt refusing a simulated op: its E: lines and the
// block that explains them (unmet dependencies), not its progress.
func aptRefusal(argv []string, res *shellexec.Result, err error) error {
	var ee *shellexec.ExitError
	if !errors.As(err, &ee) || res == nil {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	var keep []string
	explaining := false
	for _, line := range strings.Split(res.Stdout+"\n"+res.Stderr, "\n") {
		switch {
		case strings.HasPrefix(line, "E: "), strings.HasPrefix(line, "W: "):
			keep = append(keep, line)
		case strings.HasPrefix(line, "The following packages have unmet dependencies"),
			strings.HasPrefix(line, "The following held packages will be changed"),
			strings.Contains(line, "is not available, but is referred to"),
			strings.HasPrefix(line, "Package ") && strings.Contains(line, "has no installation candidate"):
			keep = append(keep, line)
			explaining = true
		case explaining && strings.HasPrefix(line, " "):
			keep = append(keep, line)
		default:
			explaining = false
		}
	}
	if len(keep) == 0 {
		return commandError(argv, res, err)
	}
	return fmt.Errorf("apt refuses it (%s, status %d):\n%s", strings.Join(argv, " "), res.ExitCode, strings.Join(keep, "\n"))
}

// lockHolder is apt's "It is held by process 1234 (apt-get)", and
// lockPath the path in its final "Unable to acquire the dpkg frontend lock
// (PATH)".
var (
	lockHolder = regexp.MustCompile(`Could not get lock (\S+?)\.? It is held by process (\d+) \(([^)]*)\)`)
	lockPath   = regexp.MustCompile(`lock \((/[^)]+)\)`)
)

// LockError is a package manager that could not get its lock in time:
// nothing was changed.
type LockError struct {
	// Lock names the lock with its file ("the dnf lock /var/lib/dnf/…");
	// "" is dpkg's, with Path.
	Lock   string
	Path   string // the lock file
	Holder string // "process 1234 (apt-get)", or "another process"
	Waited time.Duration
}

func (e *LockError) Error() string {
	lock := "the dpkg lock"
	if e.Path != "" {
		lock += " " + e.Path
	}
	if e.Lock != "" {
		lock = e.Lock
	}
	return fmt.Sprintf("%s is held by %s: toque waited %s (lock_timeout) and changed nothing; let it finish, or raise lock_timeout", lock, e.Holder, e.Waited)
}

// lockErrorOf reads apt's output about a lock it did not get, and, when
// apt did not say who holds it (it says so only while it waits), asks the
// kernel (lockHolderOf).
func lockErrorOf(out string, waited time.Duration) *LockError {
	e := &LockError{Holder: "another process", Waited: waited}
	if m := lockHolder.FindAllStringSubmatch(out, -1); m != nil {
		last := m[len(m)-1]
		e.Path, e.Holder = last[1], fmt.Sprintf("process %s (%s)", last[2], last[3])
		return e
	}
	if m := lockPath.FindStringSubmatch(out); m != nil {
		e.Path = m[1]
		if h := lockHolderOf(m[1]); h != "" {
			e.Holder = h
		}
	}
	return e
}

// lockHolderOf names the process holding an fcntl lock on path (as dpkg
// and apt lock), "" when none does or it cannot be told: F_GETLK says its
// pid, /proc its name.
func lockHolderOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK || lk.Pid <= 0 {
		return ""
	}
	name := "?"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", lk.Pid)); err == nil {
		name = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("process %d (%s)", lk.Pid, name)
}

// Change runs op's apt-get command line. While apt waits for the lock it
// says so in the log, naming the holder; a lock it never got is an error
// that names it and says nothing was changed.
func (p *aptProvider) Change(ctx context.Context, env *resources.Env, op *PackageOp) error {
	log := env.Log()
	argv := p.args(op, false)
	s := p.spec(argv, op.Timeout, log)
	s.OutputLimit = 0
	waiting := false
	s.Output = func(_, line string) {
		if !waiting && strings.HasPrefix(line, "Waiting for cache lock") {
			waiting = true
			holder := "another process"
			if m := lockHolder.FindStringSubmatch(line); m != nil {
				holder = fmt.Sprintf("process %s (%s)", m[2], m[3])
			}
			log.Info("waiting for the package database lock", "holder", holder, "up to", op.LockTimeout)
		}
	}
	log.Info("running apt-get", "command", strings.Join(argv, " "))
	res, err := shellexec.Run(ctx, s)
	if err == nil {
		return nil
	}
	all := ""
	if res != nil {
		all = res.Stdout + "\n" + res.Stderr
	}
	if strings.Contains(all, "Unable to acquire the dpkg frontend lock") || strings.Contains(all, "Could not get lock") {
		return lockErrorOf(all, op.LockTimeout)
	}
	var te *shellexec.TimeoutError
	if errors.As(err, &te) {
		return fmt.Errorf("%s did not finish within %s (timeout) and was stopped: %s", strings.Join(argv, " "), op.Timeout, hostexec.Tail(te.Result, 12))
	}
	return commandError(argv, res, err)
}
