package system

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// kernelModuleType is the built-in "kernel_module" type, Chef's: a
// module loaded (modprobe) or not (modprobe -r), loaded at boot (a file
// of /etc/modules-load.d), given options, blacklisted or disabled (files
// of /etc/modprobe.d). Reading is files only — /proc/modules, /sys/module,
// the running kernel's module lists and the configuration files — so a
// plan starts no process, and a module this kernel does not have, or one
// another module uses, is a plan error rather than a failed modprobe.
type kernelModuleType struct {
	schema *resources.Schema
	file   resources.Type
	// root is where /proc, /sys, /lib/modules and the configuration
	// directories are read and written ("" for the host's); release is
	// the kernel's (uname -r when ""). Tests use others.
	root, release string
	run           toolRunner
}

// KernelModuleType returns the built-in "kernel_module" resource type.
func KernelModuleType() resources.Type { return newKernelModuleType("", "") }

var moduleNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// moduleOptionRE is one parameter as modprobe.d(5) reads it: NAME or
// NAME=VALUE, with no blank (it separates parameters) and no "#".
var moduleOptionRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(=[^\s#"'\\]+)?$`)

func newKernelModuleType(root, release string) *kernelModuleType {
	readOnly := func(name, what string) *resources.Property {
		return &resources.Property{Name: name, Type: cty.Bool, NonState: true, Validate: mountReadOnly(name, what),
			Description: "Whether " + what + ": read by toque; a recipe does not set it."}
	}
	return &kernelModuleType{root: root, release: release, file: files.FileType(), run: runHostTool, schema: &resources.Schema{
		Name:        "kernel_module",
		Description: "Manages a kernel module: loaded or not, at boot, its options, blacklisted or disabled.",
		Properties: []*resources.Property{
			{Name: "modname", Type: cty.String, NameProperty: true, Identity: true, Required: true, Namespace: "kernel_module",
				Normalize: normalizeModuleName, Validate: validateModuleName,
				Description: "The module's name (\"-\" and \"_\" are the same); defaults to the block label."},
			{Name: "options", Type: cty.List(cty.String), Validate: validateModuleOptions,
				Description: "Its parameters (\"max_loop=8\"), written to UNLOAD_DIR/options_NAME.conf by install; they take effect when the module is loaded."},
			{Name: "load_dir", Type: cty.String, NonState: true, Default: cty.StringVal("/etc/modules-load.d"), Normalize: props.NormalizePath, Validate: props.ValidateAbsPath,
				Description: "Where install writes NAME.conf, which systemd-modules-load reads at boot."},
			{Name: "unload_dir", Type: cty.String, NonState: true, Default: cty.StringVal("/etc/modprobe.d"), Normalize: props.NormalizePath, Validate: props.ValidateAbsPath,
				Description: "Where the options, blacklist and disable files go (modprobe.d)."},
			readOnly("loaded", "the module is loaded (or built into the kernel)"),
			readOnly("loads_at_boot", "LOAD_DIR/NAME.conf loads it at boot"),
			readOnly("blacklisted", "UNLOAD_DIR/blacklist_NAME.conf blacklists it"),
			readOnly("disabled", "UNLOAD_DIR/disable_NAME.conf disables it"),
		},
		Actions:       []string{"install", "uninstall", "blacklist", "disable", "enable", "load", "unload"},
		DefaultAction: "install",
	}}
}

func (t *kernelModuleType) Schema() *resources.Schema { return t.schema }

// normalizeModuleName writes a name with "_": the kernel's spelling,
// which /proc/modules and /sys/module show ("snd-hda-intel" is
// snd_hda_intel).
func normalizeModuleName(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	s := strings.TrimSpace(v.AsString())
	if strings.HasPrefix(s, "-") {
		return cty.NilVal, fmt.Errorf("modname %q starts with \"-\": it is not a module name (modprobe would read it as an option)", s)
	}
	return cty.StringVal(strings.ReplaceAll(s, "-", "_")), nil
}

func validateModuleName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); !moduleNameRE.MatchString(s) || strings.HasPrefix(s, "-") {
		return fmt.Errorf("modname %q is not a module name: letters, digits, \"_\" and \"-\"", s)
	}
	return nil
}

func validateModuleOptions(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for i, o := range props.StringList(v) {
		if !moduleOptionRE.MatchString(o) {
			return fmt.Errorf("options[%d] %q is not one module parameter (NAME or NAME=VALUE, no space, quote, backslash or \"#\"): write each as its own element", i, o)
		}
	}
	return nil
}

// The files a module's actions write, each named as Chef names it.
type moduleFile struct {
	prop  string // the read-only property that says whether it holds toque's text
	group string // the group that writes it
	unset string // the group that deletes it
	dir   string // load_dir or unload_dir
	name  func(mod string) string
	text  func(mod string, opts []string) string
}

var moduleFiles = []moduleFile{
	{"loads_at_boot", "boot", "unboot", "load_dir", func(m string) string { return m + ".conf" }, func(m string, _ []string) string { return m + "\n" }},
	{"options", "options", "unoptions", "unload_dir", func(m string) string { return "options_" + m + ".conf" },
		func(m string, o []string) string { return "options " + m + " " + strings.Join(o, " ") + "\n" }},
	{"blacklisted", "blacklist", "unblacklist", "unload_dir", func(m string) string { return "blacklist_" + m + ".conf" }, func(m string, _ []string) string { return "blacklist " + m + "\n" }},
	{"disabled", "disable", "enable", "unload_dir", func(m string) string { return "disable_" + m + ".conf" }, func(m string, _ []string) string { return "install " + m + " /bin/false\n" }},
}

func moduleFileOf(prop string) moduleFile {
	for _, f := range moduleFiles {
		if f.prop == prop {
			return f
		}
	}
	return moduleFile{prop: prop, name: func(string) string { return "" }, text: func(string, []string) string { return "" }}
}

// path is where f is for r (under the type's root).
func (t *kernelModuleType) path(r *resources.Resource, f moduleFile) string {
	return filepath.Join(t.root, r.String(f.dir), f.name(r.String("modname")))
}

// content is the text toque writes in f.
func moduleFileContent(mod string, f moduleFile, opts []string) string {
	return fmt.Sprintf("# Managed by toque (kernel_module[%s]): changes made here are undone by its next apply.\n", mod) + f.text(mod, opts)
}

// Load reads whether the module is loaded, built in, available to this
// kernel or in use, and each of its files. Values: loaded and the four
// file properties (options, from its options file, as a list); Extra:
// module ("loaded", "builtin", "available" or "missing: why"), in_use,
// each file's state (absent, same, other), the initramfs tool.
func (t *kernelModuleType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	mod := r.String("modname")
	if err := props.CtxErr(ctx, "reading kernel module "+mod); err != nil {
		return nil, err
	}
	st := resources.Absent()
	st.Extra = map[string]string{}
	state, err := t.moduleState(mod)
	if err != nil {
		return nil, err
	}
	st.Extra["module"] = state
	st.Values["loaded"] = cty.BoolVal(state == "loaded" || state == "builtin")
	if state == "loaded" {
		if users := t.users(mod); users != "" {
			st.Extra["in_use"] = users
		}
	}
	for _, f := range moduleFiles {
		path := t.path(r, f)
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			st.Extra[f.prop+"_file"] = "absent"
			if f.prop != "options" {
				st.Values[f.prop] = cty.False
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		st.Exists = true
		if f.prop == "options" {
			st.Extra["options_file"] = "other"
			if opts, ok := parseModuleOptions(string(data), mod); ok {
				st.Values["options"] = props.StringListVal(opts)
				if string(data) == moduleFileContent(mod, f, opts) {
					st.Extra["options_file"] = "same"
				}
			}
			continue
		}
		same := string(data) == moduleFileContent(mod, f, nil)
		st.Values[f.prop] = cty.BoolVal(same)
		st.Extra[f.prop+"_file"] = map[bool]string{true: "same", false: "other"}[same]
	}
	if boolValue(st.Values["loaded"]) {
		st.Exists = true
	}
	switch {
	case isExecutable(filepath.Join(t.root, "/usr/sbin/update-initramfs")):
		st.Extra["initramfs"] = "update-initramfs -u"
	case isExecutable(filepath.Join(t.root, "/usr/bin/dracut")):
		st.Extra["initramfs"] = "dracut -f"
	}
	return st, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// parseModuleOptions reads the parameters of an options file: the words
// after "options MODULE" on its lines, comments aside.
func parseModuleOptions(text, mod string) ([]string, bool) {
	var out []string
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "options" && strings.ReplaceAll(f[1], "-", "_") == mod {
			out, found = append(out, f[2:]...), true
		}
	}
	return out, found
}

// moduleState says what the running kernel has of mod: "loaded" (in
// /proc/modules), "builtin" (in modules.builtin, or in /sys/module with
// no initstate), "available" (a module file of this kernel, or an alias
// of one), or "missing: why".
func (t *kernelModuleType) moduleState(mod string) (string, error) {
	data, err := os.ReadFile(filepath.Join(t.root, "/proc/modules"))
	modular := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the loaded modules: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.ReplaceAll(f[0], "-", "_") == mod {
			return "loaded", nil
		}
	}
	release := t.release
	if release == "" {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return "", fmt.Errorf("reading the kernel's release: %w", err)
		}
		release = unix.ByteSliceToString(u.Release[:])
	}
	dir := filepath.Join(t.root, "/lib/modules", release)
	if listsModule(filepath.Join(dir, "modules.builtin"), mod, moduleFileName) {
		return "builtin", nil
	}
	sys := filepath.Join(t.root, "/sys/module", mod)
	if _, err := os.Stat(sys); err == nil {
		if _, err := os.Stat(filepath.Join(sys, "initstate")); errors.Is(err, fs.ErrNotExist) {
			return "builtin", nil
		}
	}
	if !modular {
		return "missing: this kernel loads no modules (there is no /proc/modules)", nil
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Sprintf("missing: there are no modules for the running kernel %s (%s does not exist)", release, dir), nil
	}
	if listsModule(filepath.Join(dir, "modules.dep"), mod, moduleFileName) || listsModule(filepath.Join(dir, "modules.alias"), mod, aliasName) {
		return "available", nil
	}
	return fmt.Sprintf("missing: the running kernel %s has no module %s (it is not in %s/modules.dep, nor an alias in modules.alias)", release, mod, dir), nil
}

// moduleFileName is the module a line of modules.dep or modules.builtin
// names ("kernel/fs/xfs/xfs.ko.zst: …" is xfs).
func moduleFileName(line string) string {
	path, _, _ := strings.Cut(line, ":")
	base := filepath.Base(strings.TrimSpace(path))
	if i := strings.Index(base, ".ko"); i > 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// aliasName is the alias a line of modules.alias defines (without
// wildcards: "alias fs-xfs xfs" is fs_xfs).
func aliasName(line string) string {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "alias" || strings.ContainsAny(f[1], "*?[") {
		return ""
	}
	return strings.ReplaceAll(f[1], "-", "_")
}

// listsModule reports whether a line of path names mod.
func listsModule(path, mod string, name func(string) string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name(sc.Text()) == mod {
			return true
		}
	}
	return false
}

// users says what holds mod loaded: the modules using it, or a count of
// references; "" when nothing does.
func (t *kernelModuleType) users(mod string) string {
	sys := filepath.Join(t.root, "/sys/module", mod)
	if holders, err := os.ReadDir(filepath.Join(sys, "holders")); err == nil && len(holders) > 0 {
		names := make([]string, len(holders))
		for i, h := range holders {
			names[i] = h.Name()
		}
		return "the modules " + strings.Join(names, ", ")
	}
	if data, err := os.ReadFile(filepath.Join(sys, "refcnt")); err == nil {
		if n := strings.TrimSpace(string(data)); n != "0" && n != "" {
			return n + " references (a mounted file system, an open device)"
		}
	}
	return ""
}

// Plan is Chef's actions, each a list of groups run in order: enable
// (delete the disable file), options, load (modprobe), boot (the file
// that loads it at boot) for install; unboot, unblacklist, unoptions and
// unload (modprobe -r) for uninstall; blacklist or disable, then unload;
// enable; load; unload.
func (t *kernelModuleType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	mod := desired.String("modname")
	p := &modulePlan{t: t, desired: desired, current: current}
	switch action {
	case "install":
		p.unset("disabled")
		if desired.IsSet("options") {
			p.options()
		}
		p.load()
		p.set("loads_at_boot")
	case "uninstall":
		p.unset("loads_at_boot")
		p.unset("blacklisted")
		p.unset("options")
		p.unload()
	case "blacklist":
		p.set("blacklisted")
		p.unload()
	case "disable":
		p.set("disabled")
		p.unload()
	case "enable":
		p.unset("disabled")
	case "load":
		p.load()
	case "unload":
		p.unload()
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if p.err != nil {
		return nil, p.err
	}
	if len(p.groups) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state: " + p.state()}, nil
	}
	if p.files && current.Extra["initramfs"] != "" {
		p.why = append(p.why, "then "+current.Extra["initramfs"]+" (once, after the kernel modules of the apply), so that the initramfs follows")
	}
	kind := resources.Update
	if !current.Exists {
		kind = resources.Create
	}
	return needsRoot(&resources.Step{Kind: kind, Reason: strings.Join(p.why, "; "), Changes: p.changes, Groups: p.groups}, "changing kernel module "+mod)
}

// modulePlan gathers one action's groups and changes.
type modulePlan struct {
	t       *kernelModuleType
	desired *resources.Resource
	current *resources.State
	groups  []string
	changes []resources.Change
	why     []string
	files   bool // a file changes
	err     error
}

func (p *modulePlan) state() string {
	parts := []string{map[bool]string{true: "loaded", false: "not loaded"}[boolValue(p.current.Values["loaded"])]}
	if p.current.Extra["module"] == "builtin" {
		parts[0] = "built into the kernel"
	}
	for _, prop := range []string{"loads_at_boot", "blacklisted", "disabled"} {
		if boolValue(p.current.Values[prop]) {
			parts = append(parts, strings.ReplaceAll(prop, "_", " "))
		}
	}
	return strings.Join(parts, ", ")
}

// set writes file prop when it does not hold toque's text.
func (p *modulePlan) set(prop string) {
	f := moduleFileOf(prop)
	if p.current.Extra[prop+"_file"] == "same" {
		return
	}
	path := p.t.path(p.desired, f)
	p.groups, p.files = append(p.groups, f.group), true
	p.changes = append(p.changes, resources.Change{Property: prop, Before: p.current.Values[prop], After: cty.True,
		Note: "writes " + path + ": " + strings.TrimSpace(f.text(p.desired.String("modname"), nil))})
	p.why = append(p.why, "writes "+path)
}

// unset deletes file prop when it exists.
func (p *modulePlan) unset(prop string) {
	f := moduleFileOf(prop)
	if p.current.Extra[prop+"_file"] == "absent" {
		return
	}
	path := p.t.path(p.desired, f)
	p.groups, p.files = append(p.groups, f.unset), true
	after := cty.False
	if prop == "options" {
		after = cty.NullVal(cty.List(cty.String))
	}
	p.changes = append(p.changes, resources.Change{Property: prop, Before: p.current.Values[prop], After: after, Note: "deletes " + path})
	p.why = append(p.why, "deletes "+path)
}

// options writes the options file when it does not hold the recipe's.
func (p *modulePlan) options() {
	if p.current.Extra["options_file"] == "same" && p.current.Values["options"].RawEquals(p.desired.Values["options"]) {
		return
	}
	f := moduleFileOf("options")
	opts := props.StringList(p.desired.Values["options"])
	path := p.t.path(p.desired, f)
	p.groups, p.files = append(p.groups, "options"), true
	note := "writes " + path + ": " + strings.TrimSpace(f.text(p.desired.String("modname"), opts))
	if boolValue(p.current.Values["loaded"]) {
		note += " (they take effect when the module is next loaded)"
	}
	p.changes = append(p.changes, resources.Change{Property: "options", Before: p.current.Values["options"], After: p.desired.Values["options"], Note: note})
	p.why = append(p.why, "writes "+path)
}

// load loads the module when it is not loaded, or refuses one this
// kernel does not have.
func (p *modulePlan) load() {
	mod, state := p.desired.String("modname"), p.current.Extra["module"]
	switch {
	case state == "loaded" || state == "builtin":
		return
	case strings.HasPrefix(state, "missing: "):
		p.err = fmt.Errorf("cannot load %s: %s", mod, strings.TrimPrefix(state, "missing: "))
		return
	case p.current.Extra["disabled_file"] != "absent" && !slices.Contains(p.groups, "enable"):
		p.err = fmt.Errorf("cannot load %s: %s disables it (modprobe would run /bin/false); enable it first (action enable, or install)", mod, p.t.path(p.desired, moduleFileOf("disabled")))
		return
	}
	p.groups = append(p.groups, "load")
	p.changes = append(p.changes, resources.Change{Property: "loaded", Before: p.current.Values["loaded"], After: cty.True, Note: "modprobe " + mod})
	p.why = append(p.why, "not loaded: modprobe loads it")
}

// unload unloads the module when it is loaded, or refuses one built into
// the kernel or in use.
func (p *modulePlan) unload() {
	mod, state := p.desired.String("modname"), p.current.Extra["module"]
	switch {
	case state == "builtin":
		p.err = fmt.Errorf("cannot unload %s: it is built into the kernel (a blacklist or disable file does not stop it either; the kernel command line's module_blacklist= does)", mod)
		return
	case state != "loaded":
		return
	case p.current.Extra["in_use"] != "":
		p.err = fmt.Errorf("cannot unload %s: %s use it; unload those first", mod, p.current.Extra["in_use"])
		return
	}
	p.groups = append(p.groups, "unload")
	p.changes = append(p.changes, resources.Change{Property: "loaded", Before: p.current.Values["loaded"], After: cty.False, Note: "modprobe -r " + mod + " (which also unloads the modules it needed that nothing else uses)"})
	p.why = append(p.why, "loaded: modprobe -r unloads it")
}

// Predict is the state the step leaves: each file written or deleted,
// the module loaded or not.
func (t *kernelModuleType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	for _, g := range step.Groups {
		for _, f := range moduleFiles {
			switch g {
			case f.group:
				st.Extra[f.prop+"_file"] = "same"
				if f.prop == "options" {
					st.Values["options"] = desired.Values["options"]
				} else {
					st.Values[f.prop] = cty.True
				}
			case f.unset:
				st.Extra[f.prop+"_file"] = "absent"
				if f.prop == "options" {
					delete(st.Values, "options")
				} else {
					st.Values[f.prop] = cty.False
				}
			}
		}
		switch g {
		case "load":
			st.Extra["module"], st.Values["loaded"] = "loaded", cty.True
		case "unload":
			st.Extra["module"], st.Values["loaded"] = "available", cty.False
			delete(st.Extra, "in_use")
		}
	}
	st.Exists = boolValue(st.Values["loaded"])
	for _, f := range moduleFiles {
		st.Exists = st.Exists || st.Extra[f.prop+"_file"] != "absent"
	}
	return st, nil
}

// Steps carry out the groups in order: files through the file type
// (atomically, backed up, root's, 0644), modprobe read back from
// /proc/modules; then one initramfs update is deferred to the end of the
// apply's run of kernel modules.
func (t *kernelModuleType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *kernelModuleType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	mod := desired.String("modname")
	for _, g := range step.Groups {
		var err error
		switch g {
		case "load":
			err = t.modprobe(ctx, env, mod, true)
		case "unload":
			err = t.modprobe(ctx, env, mod, false)
		default:
			err = t.writeGroup(ctx, env, desired, g)
		}
		if err != nil {
			return err
		}
	}
	if tool := current.Extra["initramfs"]; tool != "" && slices.ContainsFunc(step.Groups, func(g string) bool { return g != "load" && g != "unload" }) {
		argv := strings.Fields(tool)
		var later *resources.Later
		if env != nil {
			later = env.Later
		}
		return later.Defer(ctx, resources.Job{
			Key: "kernel_module initramfs", What: tool,
			BatchesWith: func(r *resources.Resource) bool { return r.Type == "kernel_module" },
			Run:         func(ctx context.Context) error { return t.run(ctx, env, argv[0], argv[1:]...) },
		})
	}
	return nil
}

// writeGroup writes or deletes the file group g names.
func (t *kernelModuleType) writeGroup(ctx context.Context, env *resources.Env, desired *resources.Resource, g string) error {
	for _, f := range moduleFiles {
		switch g {
		case f.group:
			return writeRootFile(ctx, env, t.file, t.path(desired, f), moduleFileContent(desired.String("modname"), f, props.StringList(desired.Values["options"])))
		case f.unset:
			return writeRootFile(ctx, env, t.file, t.path(desired, f), "")
		}
	}
	return fmt.Errorf("%s: no step %q", desired.Address(), g)
}

// modprobe loads or unloads mod, then reads /proc/modules back: modprobe
// exits 0 for a module an install line of modprobe.d replaces.
func (t *kernelModuleType) modprobe(ctx context.Context, env *resources.Env, mod string, load bool) error {
	args := []string{mod}
	if !load {
		args = []string{"-r", mod}
	}
	if err := t.run(ctx, env, "modprobe", args...); err != nil {
		return err
	}
	state, err := t.moduleState(mod)
	if err != nil {
		return err
	}
	switch {
	case load && state != "loaded" && state != "builtin":
		return fmt.Errorf("modprobe %s exited 0, yet %s is not loaded: an install line of modprobe.d may run something else in its place", mod, mod)
	case !load && state == "loaded":
		return fmt.Errorf("modprobe -r %s exited 0, yet %s is still loaded", mod, mod)
	}
	return nil
}
