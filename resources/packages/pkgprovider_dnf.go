package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// dnfProvider manages packages with dnf and rpm, on RHEL, CentOS, Rocky,
// AlmaLinux, Fedora and Amazon Linux (dnf 4): rpm -q for what is
// installed, dnf repoquery for what the repositories offer, dnf
// --assumeno to predict, dnf -y to change. Every command runs in the C
// locale, whose messages it parses.
//
// Reading never refreshes dnf's metadata: repoquery and the simulation
// run with -C (--cacheonly), as apt-cache reads apt's lists as they are,
// so two readings agree unless something refreshed the cache in between
// (dnf_makecache, or another dnf): a moved candidate makes the plan
// stale. Apply runs with every repository's metadata_expire set to never,
// so dnf installs from the metadata the plan read instead of refreshing
// it first (it still downloads the packages). A repository whose
// metadata was never cached offers nothing until dnf_makecache runs.
//
// rpm has no state between installed and not installed (no dpkg-style
// half-installed or config-files): a removed package's changed
// configuration files are left as FILE.rpmsave, and purge is remove.
type dnfProvider struct {
	// env is added to every child's environment. Tests put wrappers first
	// on PATH with it that run the real rpm and dnf inside a mount
	// namespace; it is empty in production, where the command lines are
	// exactly those below.
	env map[string]string
	// readTimeout bounds each reading command.
	readTimeout time.Duration
	// lockPoll is how often Change tries dnf again while another process
	// holds its lock.
	lockPoll time.Duration
}

func newDnfProvider() *dnfProvider {
	return &dnfProvider{readTimeout: 2 * time.Minute, lockPoll: time.Second}
}

func (p *dnfProvider) Name() string { return "dnf" }

func (p *dnfProvider) CompareVersions(a, b string) int { return compareRPMVersions(a, b) }

func (p *dnfProvider) ValidVersion(v string) error {
	_, err := parseRPMVersion(v)
	return err
}

// MatchesPin says whether version v is what a pin asks for: a pin may
// leave out the epoch or the release, as dnf's NAME-VERSION does
// (rpmPinMatches).
func (p *dnfProvider) MatchesPin(pin, v string) bool { return rpmPinMatches(pin, v) }

// spec is the shellexec.Spec of one rpm or dnf command.
func (p *dnfProvider) spec(argv []string, timeout time.Duration, logger hclog.Logger) shellexec.Spec {
	env := map[string]string{"LC_ALL": "C"}
	for k, v := range p.env {
		env[k] = v
	}
	return shellexec.Spec{Argv: argv, Env: env, Timeout: timeout, OutputLimit: readLimit, Logger: logger}
}

// read runs a command that only reads; returns lists its allowed exit
// codes (nil: 0).
func (p *dnfProvider) read(ctx context.Context, argv []string, returns ...int) (*shellexec.Result, error) {
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

// rpmQueryFormat is one line per installed package instance. rpm prints
// "package X is not installed" (no tab) for a name it does not know.
const rpmQueryFormat = `%{NAME}\t%{EPOCHNUM}\t%{VERSION}\t%{RELEASE}\t%{ARCH}\n`

// anyExit is every exit code: rpm -q exits with the number of names it
// did not find, which says nothing about a failure.
var anyExit = func() []int {
	out := make([]int, 256)
	for i := range out {
		out[i] = i
	}
	return out
}()

// Installed asks rpm about every name at once. A package installed in
// several versions (an install-only package, a kernel) reads as its
// newest.
func (p *dnfProvider) Installed(ctx context.Context, names []string) (map[string]*PackageInfo, error) {
	out := make(map[string]*PackageInfo, len(names))
	for _, n := range names {
		out[n] = &PackageInfo{Name: n}
	}
	if len(names) == 0 {
		return out, nil
	}
	argv := append([]string{"rpm", "-q", "--qf", rpmQueryFormat, "--"}, names...)
	res, err := p.read(ctx, argv, anyExit...)
	if err != nil {
		return nil, err
	}
	if msg := rpmErrors(res.Stderr); msg != "" {
		return nil, fmt.Errorf("%s: %s", strings.Join(argv[:4], " "), msg)
	}
	parseRPMQuery(res.Stdout, out)
	return out, nil
}

// rpmErrors is rpm's error: lines (an unreadable database), "" when none.
func rpmErrors(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "error:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// parseRPMQuery fills infos from rpm -q lines (rpmQueryFormat). A line
// counts for the name it reports, never for the argument rpm matched it
// by (rpm -q foo-1.0 reports package foo).
func parseRPMQuery(text string, infos map[string]*PackageInfo) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			continue
		}
		info := infos[f[0]]
		if info == nil {
			continue
		}
		v := evrString(f[1], f[2], f[3])
		if info.State == PkgInstalled && compareRPMVersions(v, info.Installed) <= 0 {
			continue
		}
		info.State, info.Installed = PkgInstalled, v
	}
}

// evrString is the version as dnf shows it: epoch: only when not 0.
func evrString(epoch, version, release string) string {
	s := version + "-" + release
	if epoch != "" && epoch != "(none)" && strings.TrimLeft(epoch, "0") != "" {
		s = epoch + ":" + s
	}
	return s
}

// repoqueryFormat is one line per package a repository offers.
const repoqueryFormat = `%{name}\t%{epoch}\t%{version}\t%{release}\t%{arch}\t%{repoid}\n`

// Offered asks dnf repoquery about every package at once, from the
// metadata cache only (-C).
func (p *dnfProvider) Offered(ctx context.Context, infos []*PackageInfo) error {
	if len(infos) == 0 {
		return nil
	}
	byName := make(map[string][]*PackageInfo, len(infos))
	argv := []string{"dnf", "-C", "repoquery", "--queryformat", repoqueryFormat, "--"}
	for _, info := range infos {
		if byName[info.Name] == nil {
			argv = append(argv, info.Name)
		}
		byName[info.Name] = append(byName[info.Name], info)
	}
	res, err := p.read(ctx, argv)
	if err != nil {
		return err
	}
	parseRepoquery(res.Stdout, byName)
	return nil
}

// parseRepoquery fills the versions on offer, newest first, and the
// candidate: the newest (what dnf install NAME picks; source packages
// are not installable).
func parseRepoquery(text string, byName map[string][]*PackageInfo) {
	offered := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 || byName[f[0]] == nil || f[4] == "src" || f[4] == "nosrc" {
			continue
		}
		v := evrString(f[1], f[2], f[3])
		dup := false
		for _, w := range offered[f[0]] {
			dup = dup || w == v
		}
		if !dup {
			offered[f[0]] = append(offered[f[0]], v)
		}
	}
	for name, vs := range offered {
		sort.SliceStable(vs, func(i, j int) bool { return compareRPMVersions(vs[i], vs[j]) > 0 })
		for _, info := range byName[name] {
			info.Versions = append([]string(nil), vs...)
			info.Candidate = vs[0]
		}
	}
}

// Inspect reads a local .rpm's name, version and architecture with rpm
// -qp, and hashes it.
func (p *dnfProvider) Inspect(ctx context.Context, file string) (*PackageFile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading the package file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("reading the package file %s: %w", file, err)
	}
	res, err := p.read(ctx, []string{"rpm", "-qp", "--qf", `%{NAME}\t%{EPOCHNUM}\t%{VERSION}\t%{RELEASE}\t%{ARCH}`, "--", file}, anyExit...)
	if err != nil {
		return nil, err
	}
	fs := strings.Split(strings.TrimSpace(res.Stdout), "\t")
	if res.ExitCode != 0 || len(fs) != 5 {
		return nil, fmt.Errorf("%s is not an rpm package: %s", file, strings.TrimSpace(hostexec.LastLines(res.Stderr, 3)))
	}
	return &PackageFile{Name: fs[0], Version: evrString(fs[1], fs[2], fs[3]), Arch: fs[4], SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Sources lists the enabled repositories, with their URLs, from dnf
// repolist -v; one whose metadata is not cached says so (it offers
// nothing until dnf makecache, the dnf_makecache type, runs).
func (p *dnfProvider) Sources(ctx context.Context) ([]string, error) {
	res, err := p.read(ctx, []string{"dnf", "-C", "-v", "repolist", "--enabled"})
	if err != nil {
		return nil, err
	}
	uncached := map[string]bool{}
	for _, m := range noCache.FindAllStringSubmatch(res.Stdout+"\n"+res.Stderr, -1) {
		uncached[m[1]] = true
	}
	var out []string
	id, url := "", ""
	flush := func() {
		if id == "" {
			return
		}
		s := id
		if url != "" {
			s += " " + props.RedactURL(url)
		}
		if uncached[id] {
			s += " (no metadata cached: dnf makecache has not run)"
		}
		out = append(out, s)
		id, url = "", ""
	}
	for _, line := range strings.Split(res.Stdout, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Repo-id":
			flush()
			id = v
		case "Repo-baseurl", "Repo-metalink", "Repo-mirrors":
			if url == "" {
				url, _, _ = strings.Cut(v, ",")
				url = strings.TrimSpace(url)
			}
		}
	}
	flush()
	for u := range uncached {
		found := false
		for _, s := range out {
			found = found || strings.HasPrefix(s, u+" ") || s == u
		}
		if !found {
			out = append(out, u+" (no metadata cached: dnf makecache has not run)")
		}
	}
	return uniqueNames(out), nil
}

// noCache is dnf -C about a repository whose metadata is not cached.
var noCache = regexp.MustCompile(`Cache-only enabled but no cache for '([^']+)'`)

// dnfMetadataNever keeps apply from refreshing any repository's metadata:
// dnf installs from the metadata the plan read (it still downloads the
// packages, which -C would refuse).
const dnfMetadataNever = "--setopt=*.metadata_expire=never"

// args is the dnf command line of op. The simulation is the same line
// with -C and --assumeno instead of -y (dnf resolves the transaction,
// prints it and stops). The recipe's options come first, toque's after,
// so that toque's win where both set the same thing. exit_on_lock makes
// dnf return at once when another process holds its lock: Change waits
// and tries again, up to lock_timeout (dnf itself would wait forever).
func (p *dnfProvider) args(op *PackageOp, simulate bool) []string {
	argv := []string{"dnf"}
	argv = append(argv, op.Options...)
	if simulate {
		argv = append(argv, "-C", "--assumeno")
	} else {
		argv = append(argv, "-y", dnfMetadataNever, "--setopt=exit_on_lock=True")
	}
	verb := op.Verb
	if verb == "purge" {
		verb = "remove" // rpm keeps no configuration of a removed package
	}
	argv = append(argv, verb, "--")
	for _, t := range op.Targets {
		switch {
		case t.File != "":
			argv = append(argv, t.File)
		case t.Version != "" && verb == "install":
			argv = append(argv, t.Name+"-"+t.Version)
		default:
			argv = append(argv, t.Name)
		}
	}
	return argv
}

// refuse checks what dnf cannot do as the recipe asks, before running it.
func (p *dnfProvider) refuse(op *PackageOp) error {
	if op.OverwriteConfig {
		return errors.New("overwrite_config_files is dpkg's (--force-confnew); rpm has no such switch: a changed configuration file is kept and the package's is written beside it as .rpmnew, or it is saved as .rpmsave, as the package marks it (%config(noreplace) or %config)")
	}
	return checkDnfOptions(op.Options)
}

// Simulate runs the op's command line with -C --assumeno and reads dnf's
// transaction table.
func (p *dnfProvider) Simulate(ctx context.Context, op *PackageOp) (*PackageOutcome, error) {
	if err := p.refuse(op); err != nil {
		return nil, err
	}
	argv := p.args(op, true)
	// --assumeno: dnf exits 1 with "Operation aborted." having shown the
	// transaction; 0 when there was nothing to do.
	res, err := p.read(ctx, argv, 0, 1)
	if err != nil {
		return nil, err
	}
	all := res.Stdout + "\n" + res.Stderr
	if res.ExitCode != 0 && !strings.Contains(all, "Operation aborted.") || strings.Contains(all, "\nError:") || strings.HasPrefix(all, "Error:") {
		return nil, dnfRefusal(argv, res)
	}
	out := &PackageOutcome{Changes: parseDnfTransaction(res.Stdout)}
	// dnf's table shows the version a package upgrades or downgrades to,
	// not the one it leaves: rpm says (one process, only when some
	// package other than the targets changes version).
	var ask []string
	for _, c := range out.Changes {
		if c.From == "?" {
			ask = append(ask, c.Name)
		}
	}
	if len(ask) > 0 {
		inst, err := p.Installed(ctx, uniqueNames(ask))
		if err != nil {
			return nil, err
		}
		for i, c := range out.Changes {
			if c.From == "?" {
				out.Changes[i].From = inst[c.Name].Installed
			}
		}
	}
	return out, nil
}

// dnfSections maps the headings of dnf's transaction table to what the
// rows under them do.
var dnfSections = map[string]string{
	"Installing": "install", "Installing dependencies": "install", "Installing weak dependencies": "install",
	"Installing group/module packages": "install",
	"Upgrading":                        "change", "Downgrading": "change", "Reinstalling": "change",
	"Removing": "remove", "Removing dependent packages": "remove", "Removing unused dependencies": "remove",
	"Obsoleting": "remove",
}

// parseDnfTransaction reads dnf 4's transaction table:
//
//	Installing:
//	 toque-app      noarch    1.0-1     fixture     6.0 k
//	Removing dependent packages:
//	 toque-app      noarch    1.0-1     @fixture    4
//
// A row starts with one space; a value too long for its column pushes the
// rest of the row to the next line, which starts with many. "replacing"
// lines (an obsoleted package) are skipped. For installs the version is
// the one installed, for removals the one removed; for a change of
// version From is "?" (the table does not say).
func parseDnfTransaction(text string) []PackageChange {
	var out []PackageChange
	kind := ""
	var row []string
	flush := func() {
		if len(row) >= 3 && kind != "" {
			name, arch, version, repo := row[0], row[1], row[2], ""
			if len(row) >= 4 {
				repo = row[3]
			}
			switch kind {
			case "install":
				out = append(out, PackageChange{Name: name, To: version, Arch: arch, Repo: repo})
			case "change":
				out = append(out, PackageChange{Name: name, From: "?", To: version, Arch: arch, Repo: repo})
			case "remove":
				out = append(out, PackageChange{Name: name, From: version})
			}
		}
		row = nil
	}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "="):
			flush()
			if line == "" {
				kind = ""
			}
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			flush()
			kind = dnfSections[strings.TrimSuffix(line, ":")]
		case !strings.HasPrefix(line, " "):
			flush()
			kind = ""
		case strings.HasPrefix(strings.TrimLeft(line, " "), "replacing "):
			flush()
		case len(line) > 1 && line[1] != ' ':
			flush()
			row = strings.Fields(line)
		default:
			row = append(row, strings.Fields(line)...)
		}
	}
	flush()
	return out
}

// dnfRefusal words dnf refusing a simulated op: its Error: and problem
// lines, and what it could not match.
func dnfRefusal(argv []string, res *shellexec.Result) error {
	var keep []string
	for _, line := range strings.Split(res.Stdout+"\n"+res.Stderr, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "Error:"), strings.HasPrefix(t, "No match for argument"),
			strings.HasPrefix(t, "Problem"), strings.HasPrefix(t, "- "),
			strings.HasPrefix(t, "Cache-only enabled but no cache"):
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		return fmt.Errorf("%s exited with status %d: %s", strings.Join(argv, " "), res.ExitCode, hostexec.Tail(res, 12))
	}
	return fmt.Errorf("dnf refuses it (%s, status %d):\n%s", strings.Join(argv, " "), res.ExitCode, strings.Join(keep, "\n"))
}

// dnfLocked is dnf's "RPMDB already locked by 1234" (with exit_on_lock).
var dnfLocked = regexp.MustCompile(`(RPMDB|metadata|cachedir|log) already locked by (\d+)`)

// dnfLockFiles are the pid files of dnf's locks, by the name its message
// gives them (for the default persistdir, cachedir and logdir).
var dnfLockFiles = map[string]string{
	"RPMDB":    "/var/lib/dnf/rpmdb_lock.pid",
	"metadata": "/var/cache/dnf/metadata_lock.pid",
	"cachedir": "/var/cache/dnf/download_lock.pid",
	"log":      "/var/log/log_lock.pid",
}

// Change runs op's dnf command line (runLocked).
func (p *dnfProvider) Change(ctx context.Context, env *resources.Env, op *PackageOp) error {
	if err := p.refuse(op); err != nil {
		return err
	}
	return p.runLocked(ctx, env.Log(), p.args(op, false), op.Timeout, op.LockTimeout)
}

// runLocked runs a dnf command line that takes dnf's locks, with
// exit_on_lock set: dnf then does not wait for a lock another process
// holds (it would wait forever) but exits 200 at once, having changed
// nothing, naming the holder's pid. runLocked logs who holds it and tries
// again every lockPoll, up to lockTimeout; then it fails with a LockError
// that names the holder. Each try is bounded by timeout.
func (p *dnfProvider) runLocked(ctx context.Context, log hclog.Logger, argv []string, timeout, lockTimeout time.Duration) error {
	s := p.spec(argv, timeout, log)
	s.OutputLimit = 0
	start := time.Now()
	waiting := false
	for {
		log.Info("running dnf", "command", strings.Join(argv, " "))
		res, err := shellexec.Run(ctx, s)
		if err == nil {
			if failed := scriptletFailures(res.Stdout + "\n" + res.Stderr); failed != "" {
				// rpm installs a package whose %post fails, and dnf
				// exits 0: the package is where the plan puts it, but
				// what its scriptlet should have done is not.
				log.Warn("a package scriptlet failed; rpm installed or removed the package regardless", "dnf", failed)
			}
			return nil
		}
		all := ""
		if res != nil {
			all = res.Stdout + "\n" + res.Stderr
		}
		m := dnfLocked.FindStringSubmatch(all)
		if m == nil || res.ExitCode != 200 {
			var te *shellexec.TimeoutError
			if errors.As(err, &te) {
				return fmt.Errorf("%s did not finish within %s (timeout) and was stopped: %s", strings.Join(argv, " "), timeout, hostexec.Tail(te.Result, 12))
			}
			return commandError(argv, res, err)
		}
		holder := "process " + m[2] + " (" + processName(m[2]) + ")"
		if time.Since(start) >= lockTimeout {
			return &LockError{Lock: "the dnf lock " + dnfLockFiles[m[1]], Holder: holder, Waited: lockTimeout}
		}
		if !waiting {
			waiting = true
			log.Info("waiting for the package database lock", "holder", holder, "up to", lockTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the dnf lock, held by %s: %w", holder, ctx.Err())
		case <-time.After(p.lockPoll):
		}
	}
}

// scriptletFailures is what rpm said of scriptlets that failed ("" when
// none did).
func scriptletFailures(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "scriptlet failed") || (strings.Contains(l, "Error in ") && strings.Contains(l, "scriptlet")) {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return strings.Join(keep, "\n")
}

// processName is /proc/PID/comm, "?" when it cannot be read.
func processName(pid string) string {
	if _, err := strconv.Atoi(pid); err != nil {
		return "?"
	}
	b, err := os.ReadFile("/proc/" + pid + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
