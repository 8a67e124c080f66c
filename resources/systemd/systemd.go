package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
)

// initSystem is the seam between the service types (service,
// systemd_unit) and the host's init system. systemd is the one toque has;
// sysvinit or OpenRC would be others. Its vocabulary is systemd's — load,
// active and unit file states — the richest of them: another init system
// maps its own states onto those words (a running script is "active", a
// script linked into the default runlevel "enabled").
type initSystem interface {
	// Name names the init system in messages: "systemd".
	Name() string
	// Status reads every unit of names, with as few processes as the
	// tool allows (one `systemctl show` for all of them), and returns
	// one status per name, in order. It only reads.
	Status(ctx context.Context, names []string) ([]unitStatus, error)
	// Act carries out verb (enable, disable, mask, unmask, start, stop,
	// restart, reload) on unit.
	Act(ctx context.Context, env *resources.Env, verb, unit string) error
	// Reload makes the init system read the unit files again
	// (daemon-reload); nothing when it is not running.
	Reload(ctx context.Context, env *resources.Env) error
	// ReloadJob is Reload as deferred work (Env.Later), batched with the
	// next changes of unit files and of enablement.
	ReloadJob(env *resources.Env) resources.Job
	// UnitDir is where an administrator's unit files go
	// (/etc/systemd/system).
	UnitDir() string
	// Verify checks unit files as the init system would load them:
	// units maps a unit name to its content. It returns, per unit that
	// fails, what the init system said.
	Verify(ctx context.Context, units map[string]string) (map[string]string, error)
}

// unitStatus is what the init system says of one unit.
type unitStatus struct {
	// Load is the load state: loaded, not-found, masked, error,
	// bad-setting… ("" unknown: predicted after an unmask).
	Load string
	// Active and Sub are the activity (active, inactive, failed,
	// activating, deactivating, reloading) and its detail (running,
	// dead, exited…); "" when unknown (systemd is not running).
	Active, Sub string
	// File is the unit file state: enabled, disabled, static, indirect,
	// masked, linked, alias, generated, transient, enabled-runtime,
	// masked-runtime…; "" when the unit has no file or it is unknown.
	File string
	// CanReload is "yes" or "no" (whether the unit has ExecReload=), ""
	// when unknown.
	CanReload string
	// NeedReload is set when the unit's file changed on disk since
	// systemd loaded it (NeedDaemonReload).
	NeedReload bool
	// LoadError is systemd's message for a unit that failed to load.
	LoadError string
	// Offline says why systemd is not running here ("" when it is): only
	// the unit files can be read and changed, nothing started or stopped.
	Offline string
	// EtcFile is set when the unit's file is a regular file in
	// /etc/systemd/system, an administrator's (or a systemd_unit's):
	// systemctl cannot mask such a unit.
	EtcFile bool
	// NotRoot names toque's user when it is not root ("uid 1000"): only
	// root may change a system unit.
	NotRoot string
}

// Keys of a unit's status in State.Extra: they are what a plan shows of a
// unit and what staleness compares.
const (
	extraLoadState  = "load_state"
	extraActive     = "active_state"
	extraSub        = "sub_state"
	extraFileState  = "unit_file_state"
	extraCanReload  = "can_reload"
	extraNeedReload = "need_daemon_reload"
	extraLoadError  = "load_error"
	extraOffline    = "systemd"
	extraEtcFile    = "etc_file"
	extraNotRoot    = "toque_user"
)

// put records u in extra.
func (u unitStatus) put(extra map[string]string) {
	set := func(k, v string) {
		if v == "" {
			delete(extra, k)
		} else {
			extra[k] = v
		}
	}
	set(extraLoadState, u.Load)
	set(extraActive, u.Active)
	set(extraSub, u.Sub)
	set(extraFileState, u.File)
	set(extraCanReload, u.CanReload)
	set(extraLoadError, u.LoadError)
	set(extraNeedReload, "")
	if u.NeedReload {
		set(extraNeedReload, "yes")
	}
	set(extraOffline, "")
	if u.Offline != "" {
		set(extraOffline, "offline: "+u.Offline)
	}
	set(extraEtcFile, "")
	if u.EtcFile {
		set(extraEtcFile, "yes")
	}
	set(extraNotRoot, u.NotRoot)
}

// statusOf reads a unit's status back from a State's Extra.
func statusOf(st *resources.State) unitStatus {
	x := st.Extra
	return unitStatus{
		Load: x[extraLoadState], Active: x[extraActive], Sub: x[extraSub], File: x[extraFileState],
		CanReload: x[extraCanReload], NeedReload: x[extraNeedReload] == "yes", LoadError: x[extraLoadError],
		Offline: strings.TrimPrefix(x[extraOffline], "offline: "), EtcFile: x[extraEtcFile] == "yes", NotRoot: x[extraNotRoot],
	}
}

// exists reports whether the unit is there to act on: anything but
// not-found (a masked unit exists; an unknown state is taken to).
func (u unitStatus) exists() bool { return u.Load != "not-found" }

// running reports whether the unit is active or on its way (a start job
// would do nothing more).
func (u unitStatus) running() bool {
	switch u.Active {
	case "active", "reloading", "activating":
		return true
	}
	return false
}

// activity words the unit's activity: "active (running)", "inactive".
func (u unitStatus) activity() string {
	if u.Active == "" {
		return "in an unknown state"
	}
	if u.Sub == "" || u.Sub == u.Active {
		return u.Active
	}
	return u.Active + " (" + u.Sub + ")"
}

// unitSuffixes are systemd's unit types.
var unitSuffixes = []string{".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target", ".path", ".timer", ".slice", ".scope"}

// unitSuffix returns name's unit type suffix, "" when it has none.
func unitSuffix(name string) string {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return s
		}
	}
	return ""
}

// isTemplate reports a template unit name: "getty@.service".
func isTemplate(name string) bool {
	s := unitSuffix(name)
	return s != "" && strings.HasSuffix(strings.TrimSuffix(name, s), "@")
}

// templateOf is the template of an instance name ("getty@tty1.service" →
// "getty@.service"), "" for a name that is not an instance.
func templateOf(name string) string {
	s := unitSuffix(name)
	base := strings.TrimSuffix(name, s)
	i := strings.IndexByte(base, '@')
	if s == "" || i < 0 || i == len(base)-1 {
		return ""
	}
	return base[:i+1] + s
}

// checkUnitName checks name as systemd checks a unit name: a prefix of
// letters, digits and ":-_.\", an optional "@" and instance, and a unit
// type suffix; at most 255 bytes. A path is refused with a word on what
// to write instead.
func checkUnitName(name string) error {
	switch {
	case name == "":
		return errors.New("the unit name must not be empty")
	case strings.ContainsRune(name, '/'):
		return fmt.Errorf("%q is a path, not a unit name: name the unit (%q); toque finds its file itself (write unit files with a systemd_unit resource)", name, filepath.Base(name))
	case len(name) > 255:
		return fmt.Errorf("the unit name is %d bytes long; systemd allows 255", len(name))
	}
	suffix := unitSuffix(name)
	if suffix == "" {
		return fmt.Errorf("%q has no unit type: systemd unit names end in one of %s", name, strings.Join(unitSuffixes, ", "))
	}
	base := strings.TrimSuffix(name, suffix)
	prefix, instance, templated := strings.Cut(base, "@")
	if prefix == "" {
		return fmt.Errorf("%q has an empty name before its unit type", name)
	}
	if templated && strings.ContainsRune(instance, '@') {
		return fmt.Errorf("%q has more than one @: a unit name is NAME@INSTANCE%s", name, suffix)
	}
	for _, part := range []string{prefix, instance} {
		for _, c := range part {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":-_.\\", c)) {
				return fmt.Errorf("%q holds %q, which systemd does not allow in a unit name (letters, digits and \":-_.\\\" only; systemd-escape escapes the rest)", name, c)
			}
		}
	}
	return nil
}

// systemd is the initSystem of a host that runs systemd, through
// systemctl and systemd-analyze.
type systemd struct {
	// root, when set, is another root directory: systemctl --root=ROOT
	// manages the unit files there, offline (nothing is started or
	// stopped). Tests use it; toque itself always manages "/".
	root string
	// booted is the directory whose existence says systemd runs as PID 1
	// (sd_booted(3): /run/systemd/system).
	booted string
}

// hostSystemd is the host's systemd.
func hostSystemd() *systemd { return &systemd{booted: "/run/systemd/system"} }

func (s *systemd) Name() string { return "systemd" }

// UnitDir is /etc/systemd/system, under the root.
func (s *systemd) UnitDir() string { return filepath.Join(s.root, "/etc/systemd/system") }

// offline says why systemd cannot start or stop anything here, "" when it
// can: another root (systemctl --root), systemd not running as PID 1 (a
// container, a chroot, a build; sd_booted's test, which systemctl
// is-system-running answers with "offline"), or toque in a chroot of a
// host that runs it (systemctl would ignore the request there).
func (s *systemd) offline() string {
	if s.root != "" {
		return "toque manages the unit files under " + s.root + " (systemctl --root), where nothing runs"
	}
	if fi, err := os.Stat(s.booted); err != nil || !fi.IsDir() {
		return "systemd is not running as the init system (PID 1) here: " + s.booted + " does not exist, so `systemctl is-system-running` says offline (a container, a chroot or an image being built)"
	}
	var root, init unix.Stat_t
	if unix.Stat("/", &root) == nil && unix.Stat("/proc/1/root", &init) == nil && (root.Dev != init.Dev || root.Ino != init.Ino) {
		return "toque runs in a chroot, where systemctl ignores requests to start or stop units"
	}
	return ""
}

// systemctl is the argv of a systemctl command.
func (s *systemd) systemctl(args ...string) []string {
	argv := []string{"systemctl"}
	if s.root != "" {
		argv = append(argv, "--root="+s.root)
	}
	return append(argv, args...)
}

// Run runs argv, allowing the exit codes returns (none: 0). The error
// names the command and quotes what it printed.
func (s *systemd) Run(ctx context.Context, env *resources.Env, timeout time.Duration, argv []string, returns ...int) (*shellexec.Result, error) {
	spec := shellexec.Spec{
		Argv:        argv,
		Env:         map[string]string{"SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "LC_ALL": "C"},
		Timeout:     timeout,
		Returns:     returns,
		OutputLimit: 16 << 20,
	}
	if env != nil {
		spec.Logger, spec.Sensitive = env.Logger, env.Sensitive
	}
	res, err := shellexec.Run(ctx, spec)
	if err == nil && res.Truncated {
		err = fmt.Errorf("%s printed more than %d bytes", argv[0], spec.OutputLimit)
	}
	if err != nil {
		var nf *shellexec.NotFoundError
		if errors.As(err, &nf) {
			return res, fmt.Errorf("%s is not installed: toque's service types manage systemd, and need systemctl and systemd-analyze: %w", argv[0], err)
		}
		msg := ""
		if res != nil && strings.TrimSpace(res.Stderr+res.Stdout) != "" {
			msg = hostexec.LastLines(res.Stderr+"\n"+res.Stdout, 10)
		}
		if msg != "" {
			return res, fmt.Errorf("`%s` failed: %w: %s", strings.Join(argv, " "), err, msg)
		}
		return res, fmt.Errorf("`%s` failed: %w", strings.Join(argv, " "), err)
	}
	return res, nil
}

// readTimeout bounds a reading; actTimeout a start or stop (systemd has
// its own job timeouts, 90 s by default: this is a last resort).
const (
	readTimeout = time.Minute
	actTimeout  = 15 * time.Minute
	// showBatch is how many units one systemctl show reads, within any
	// command line's limits.
	showBatch = 512
)

// Status reads names: with one `systemctl show` when systemd runs, with
// `systemctl list-unit-files` (and, for instances of templates,
// `systemctl is-enabled`) when it does not.
func (s *systemd) Status(ctx context.Context, names []string) ([]unitStatus, error) {
	// Each unit once: two resources may name one unit.
	var unique []string
	at := map[string]int{}
	for _, n := range names {
		if _, ok := at[n]; !ok {
			at[n] = len(unique)
			unique = append(unique, n)
		}
	}
	var got []unitStatus
	if why := s.offline(); why != "" {
		var err error
		if got, err = s.statusOffline(ctx, unique, why); err != nil {
			return nil, err
		}
	} else {
		for rest := unique; len(rest) > 0; {
			n := min(len(rest), showBatch)
			part, err := s.show(ctx, rest[:n])
			if err != nil {
				return nil, err
			}
			got = append(got, part...)
			rest = rest[n:]
		}
	}
	out := make([]unitStatus, len(names))
	for i, n := range names {
		out[i] = got[at[n]]
	}
	notRoot := ""
	if uid := hostexec.EffectiveUID(); uid != 0 && s.root == "" {
		notRoot = fmt.Sprintf("uid %d", uid)
	}
	for i, n := range names {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(s.UnitDir(), n), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			out[i].EtcFile = true
		}
		out[i].NotRoot = notRoot
	}
	return out, nil
}

// showProps are the properties Status reads.
const showProps = "Id,LoadState,ActiveState,SubState,UnitFileState,CanReload,NeedDaemonReload,LoadError"

// show reads names with one systemctl show, which prints a block of
// KEY=VALUE lines per unit, in the order given, blocks separated by an
// empty line.
func (s *systemd) show(ctx context.Context, names []string) ([]unitStatus, error) {
	argv := append(s.systemctl("show", "--no-pager", "--property="+showProps, "--"), names...)
	res, err := s.Run(ctx, nil, readTimeout, argv)
	if err != nil {
		return nil, err
	}
	return parseShow(res.Stdout, names)
}

// parseShow reads systemctl show's blocks, one per unit of names.
func parseShow(stdout string, names []string) ([]unitStatus, error) {
	blocks := strings.Split(strings.TrimSpace(stdout), "\n\n")
	if len(blocks) != len(names) {
		return nil, fmt.Errorf("systemctl show printed %d units for the %d asked for", len(blocks), len(names))
	}
	out := make([]unitStatus, len(names))
	for i, b := range blocks {
		props := map[string]string{}
		for _, line := range strings.Split(b, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				props[k] = v
			}
		}
		u := unitStatus{
			Load: props["LoadState"], Active: props["ActiveState"], Sub: props["SubState"],
			File: props["UnitFileState"], CanReload: props["CanReload"], NeedReload: props["NeedDaemonReload"] == "yes",
		}
		if u.Load == "" {
			return nil, fmt.Errorf("systemctl show printed no LoadState for %s", names[i])
		}
		switch u.Load {
		case "loaded", "not-found", "masked":
		default:
			u.LoadError = props["LoadError"]
		}
		out[i] = u
	}
	return out, nil
}

// statusOffline reads the unit files of names with one systemctl
// list-unit-files (an instance by its template), then the enablement of
// instances with one systemctl is-enabled. Nothing is active.
func (s *systemd) statusOffline(ctx context.Context, names []string, why string) ([]unitStatus, error) {
	var patterns []string
	for _, n := range names {
		p := n
		if t := templateOf(n); t != "" {
			p = t
		}
		if !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}
	files := map[string]string{}
	// Exit 1, saying nothing, when no file matches.
	argv := append(s.systemctl("list-unit-files", "--no-legend", "--no-pager", "--full", "--"), patterns...)
	res, err := s.Run(ctx, nil, readTimeout, argv, 0, 1)
	if err == nil && res.ExitCode == 1 && strings.TrimSpace(res.Stderr) != "" {
		err = fmt.Errorf("`%s` failed: %s", strings.Join(argv, " "), hostexec.LastLines(res.Stderr, 5))
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(res.Stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			files[f[0]] = f[1]
		}
	}
	out := make([]unitStatus, len(names))
	var instances []int
	for i, n := range names {
		u := unitStatus{Load: "not-found", Offline: why}
		key := n
		if t := templateOf(n); t != "" {
			key = t
		}
		if state, ok := files[key]; ok {
			u.Load, u.File = "loaded", state
			if key != n {
				u.File = ""
				instances = append(instances, i)
			}
			if state == "masked" {
				u.Load = "masked"
			}
		}
		out[i] = u
	}
	if len(instances) == 0 {
		return out, nil
	}
	argv = s.systemctl("is-enabled", "--")
	for _, i := range instances {
		argv = append(argv, names[i])
	}
	// is-enabled exits 1 unless one of them is enabled.
	res, err = s.Run(ctx, nil, readTimeout, argv, 0, 1)
	if err != nil {
		return nil, err
	}
	states := strings.Fields(res.Stdout)
	if len(states) != len(instances) {
		return nil, fmt.Errorf("systemctl is-enabled printed %d states for %d units: %s", len(states), len(instances), hostexec.LastLines(res.Stderr, 3))
	}
	for j, i := range instances {
		out[i].File = states[j]
		if states[j] == "masked" {
			out[i].Load = "masked"
		}
	}
	return out, nil
}

// enablement reports the verbs that change unit files only.
func enablement(verb string) bool {
	switch verb {
	case "enable", "disable", "mask", "unmask":
		return true
	}
	return false
}

// Act runs `systemctl VERB -- UNIT`. Enabling, disabling, masking and
// unmasking change unit files; systemctl would reload systemd after each
// one, so toque asks it not to (--no-reload) and defers one reload for
// the batch (Env.Later), as it does after unit files change.
func (s *systemd) Act(ctx context.Context, env *resources.Env, verb, unit string) error {
	args := []string{verb}
	online := s.offline() == ""
	if enablement(verb) && online {
		args = append(args, "--no-reload")
	}
	argv := s.systemctl(append(args, "--", unit)...)
	if _, err := s.Run(ctx, env, actTimeout, argv); err != nil {
		if !enablement(verb) {
			return fmt.Errorf("%w (its log: journalctl -u %s)", err, unit)
		}
		return err
	}
	if enablement(verb) && online {
		return env.Later.Defer(ctx, s.ReloadJob(env))
	}
	return nil
}

// Reload runs systemctl daemon-reload, when systemd runs.
func (s *systemd) Reload(ctx context.Context, env *resources.Env) error {
	if s.offline() != "" {
		return nil
	}
	_, err := s.Run(ctx, env, actTimeout, s.systemctl("daemon-reload"))
	return err
}

// reloadKey is the key of the deferred daemon-reload.
const reloadKey = "systemd daemon-reload"

// ReloadJob is Reload, deferred until the batch of unit file and
// enablement changes it follows ends: it waits past a systemd_unit that
// writes or deletes its file and past an enablement action, and runs
// before anything else.
func (s *systemd) ReloadJob(env *resources.Env) resources.Job {
	return resources.Job{
		Key:  reloadKey,
		What: "systemctl daemon-reload (systemd reads the changed unit files)",
		BatchesWith: func(r *resources.Resource) bool {
			a := r.EffectiveAction()
			switch r.Type {
			case "systemd_unit":
				return a == "create" || a == "delete" || enablement(a) || a == "nothing"
			case "service":
				return enablement(a) || a == "nothing"
			}
			return false
		},
		Run: func(ctx context.Context) error { return s.Reload(ctx, env) },
	}
}

// Verify runs systemd-analyze verify on the units, written under their
// names in one temporary directory, which systemd-analyze adds to the unit
// search path: units of one plan may refer to each other. When it fails,
// each unit is verified alone to tell which failed and why.
func (s *systemd) Verify(ctx context.Context, units map[string]string) (map[string]string, error) {
	if len(units) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "toque-verify-")
	if err != nil {
		return nil, fmt.Errorf("verifying unit files: %w", err)
	}
	defer os.RemoveAll(dir)
	names := make([]string, 0, len(units))
	for name, content := range units {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("verifying unit files: %w", err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	verify := func(names []string) (bool, string, error) {
		argv := []string{"systemd-analyze", "verify", "--man=no", "--"}
		for _, n := range names {
			argv = append(argv, filepath.Join(dir, n))
		}
		res, err := shellexec.Run(ctx, shellexec.Spec{Argv: argv, Env: map[string]string{"SYSTEMD_COLORS": "0", "LC_ALL": "C"}, Timeout: readTimeout, Returns: []int{0, 1}})
		if err != nil {
			var nf *shellexec.NotFoundError
			if errors.As(err, &nf) {
				return false, "", fmt.Errorf("systemd-analyze is not installed; install it, or set verify = false: %w", err)
			}
			return false, "", fmt.Errorf("running systemd-analyze verify: %w", err)
		}
		msg := strings.ReplaceAll(strings.TrimSpace(res.Stderr+"\n"+res.Stdout), dir+"/", s.UnitDir()+"/")
		return res.ExitCode == 0, msg, nil
	}
	ok, msg, err := verify(names)
	if err != nil || ok {
		return nil, err
	}
	failed := map[string]string{}
	if len(names) == 1 {
		failed[names[0]] = hostexec.LastLines(msg, 10)
		return failed, nil
	}
	for _, n := range names {
		ok, msg, err := verify([]string{n})
		if err != nil {
			return nil, err
		}
		if !ok {
			failed[n] = hostexec.LastLines(msg, 10)
		}
	}
	if len(failed) == 0 {
		// Only together: say so on each.
		for _, n := range names {
			failed[n] = hostexec.LastLines(msg, 10)
		}
	}
	return failed, nil
}
