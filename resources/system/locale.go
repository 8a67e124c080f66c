package system

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// localeType is the built-in "locale" type, Chef's: the system's locale,
// LANG and the LC_* variables of /etc/default/locale (Debian's, which
// update-locale writes and PAM reads at login), with each locale it names
// compiled first when it is not (enabled in /etc/locale.gen, then
// locale-gen). Reading is files only: the locale file, glibc's compiled
// locales (its locale archive and directories), /etc/locale.gen and
// glibc's list of supported locales, which the recipe's are checked
// against when the plan is made.
type localeType struct {
	schema *resources.Schema
	file   resources.Type
	root   string // where /etc and /usr are ("" for the host's; tests use others)
	run    toolRunner
}

// LocaleType returns the built-in "locale" resource type.
func LocaleType() resources.Type { return newLocaleType("") }

// lcVariables are the variables lc_env may set: Chef's list.
var lcVariables = []string{"LC_ADDRESS", "LC_COLLATE", "LC_CTYPE", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_MESSAGES", "LC_MONETARY", "LC_NAME", "LC_NUMERIC", "LC_PAPER", "LC_TELEPHONE", "LC_TIME"}

// localeNameRE is the shape of a locale's name: language[_territory]
// [.codeset][@modifier].
var localeNameRE = regexp.MustCompile(`^[A-Za-z]+(_[A-Za-z0-9]+)?(\.[A-Za-z0-9_-]+)?(@[A-Za-z0-9_]+)?$`)

func newLocaleType(root string) *localeType {
	t := &localeType{root: root, file: files.FileType(), run: runHostTool}
	t.schema = &resources.Schema{
		Name:        "locale",
		Description: "Manages the system's locale: LANG and LC_* in /etc/default/locale, each locale compiled first.",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Description: "A name for the resource (Chef's locale has none of its own); defaults to the block label."},
			{Name: "lang", Type: cty.String, Group: "file", LoadInput: true, Validate: validateLocaleName("lang"), HostCheck: t.checkSupported("lang"),
				Description: "LANG: the system's default locale (\"en_US.UTF-8\")."},
			{Name: "lc_env", Type: cty.Map(cty.String), Group: "file", LoadInput: true, Validate: validateLCEnv, HostCheck: t.checkSupported("lc_env"),
				Description: "LC_* variables, exactly these ({ LC_TIME = \"en_GB.UTF-8\" }): those the file sets and the map does not are removed; unset leaves them."},
			{Name: "locale_gen", Type: cty.String, NonState: true, Content: true, Validate: mountReadOnly("locale_gen", "the lines of /etc/locale.gen for the recipe's locales that are not compiled"),
				Description: "The lines of /etc/locale.gen for the recipe's locales that are not compiled yet: read by toque, shown as a diff; a recipe does not set it."},
		},
		Actions:       []string{"update"},
		DefaultAction: "update",
	}
	return t
}

func (t *localeType) Schema() *resources.Schema { return t.schema }

func (t *localeType) path(p string) string { return filepath.Join("/", t.root, p) }

func checkLocaleName(what, s string) error {
	if !localeNameRE.MatchString(s) {
		return fmt.Errorf("%s %q is not a locale's name (language_TERRITORY.codeset@modifier: \"en_US.UTF-8\")", what, s)
	}
	return nil
}

func validateLocaleName(what string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkLocaleName(what, v.AsString())
	}
}

func validateLCEnv(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for k, e := range v.AsValueMap() {
		if !slices.Contains(lcVariables, k) {
			return fmt.Errorf("lc_env: %q is not one of %s (LANG is lang; LC_ALL overrides every other and is not for the system's default)", k, strings.Join(lcVariables, ", "))
		}
		if e.IsNull() {
			return fmt.Errorf("lc_env: %s must not be null", k)
		}
		if err := checkLocaleName("lc_env "+k, e.AsString()); err != nil {
			return err
		}
	}
	return nil
}

// normalizeLocale is glibc's spelling of a locale's name, the one its
// archive keeps: the codeset lower-cased without punctuation, "iso"
// before a codeset of digits only ("en_US.UTF-8" is en_US.utf8).
func normalizeLocale(name string) string {
	base, mod, _ := strings.Cut(name, "@")
	lang, codeset, ok := strings.Cut(base, ".")
	if !ok {
		return name
	}
	var b strings.Builder
	digits := true
	for _, r := range strings.ToLower(codeset) {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r)
			digits = false
		}
	}
	cs := b.String()
	if digits {
		cs = "iso" + cs
	}
	out := lang + "." + cs
	if mod != "" {
		out += "@" + mod
	}
	return out
}

// builtinLocale reports whether glibc knows name without compiling it.
func builtinLocale(name string) bool { return name == "C" || name == "POSIX" }

// supported is glibc's list of the locales it can compile
// (/usr/share/i18n/SUPPORTED): normalised name → its line ("de_DE.UTF-8
// UTF-8"), which /etc/locale.gen takes.
func (t *localeType) supported() (map[string]string, error) {
	f, err := os.Open(t.path("/usr/share/i18n/SUPPORTED"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 && !strings.HasPrefix(fs[0], "#") {
			out[normalizeLocale(fs[0])] = fs[0] + " " + fs[1]
		}
	}
	return out, sc.Err()
}

// checkSupported is the plan's check that each locale the property names
// is one glibc can compile (or one compiled here already).
func (t *localeType) checkSupported(prop string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsWhollyKnown() || v.IsNull() {
			return nil
		}
		names := []string{}
		if v.Type() == cty.String {
			names = append(names, v.AsString())
		} else {
			for _, e := range v.AsValueMap() {
				names = append(names, e.AsString())
			}
		}
		sup, err := t.supported()
		if err != nil {
			return fmt.Errorf("cannot check the locale against glibc's list of supported locales: %w (Debian: apt-get install locales)", err)
		}
		have, err := t.compiled()
		if err != nil {
			return err
		}
		for _, n := range names {
			if norm := normalizeLocale(n); !builtinLocale(n) && sup[norm] == "" && !have[norm] {
				return fmt.Errorf("%s: %q is not a locale glibc supports (it is not in %s) nor one compiled here", prop, n, t.path("/usr/share/i18n/SUPPORTED"))
			}
		}
		return nil
	}
}

// localeArchiveMagic starts glibc's locale archive (locarchive.h).
const localeArchiveMagic = 0xde020109

// compiled is the locales compiled on the host, by normalised name: those
// of glibc's archive (/usr/lib/locale/locale-archive) and those in
// directories of their own (/usr/lib/locale/C.utf8).
func (t *localeType) compiled() (map[string]bool, error) {
	out := map[string]bool{}
	dir := t.path("/usr/lib/locale")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading the compiled locales: %w", err)
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "LC_CTYPE")); e.IsDir() && err == nil {
			out[normalizeLocale(e.Name())] = true
		}
	}
	names, err := archiveLocales(filepath.Join(dir, "locale-archive"))
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		out[normalizeLocale(n)] = true
	}
	return out, nil
}

// archiveLocales lists the locales of a glibc locale archive: its header,
// then a hash table of (hash, name offset, record offset), each used slot
// naming one locale. Read by offset: an archive of every locale is
// hundreds of MiB, its names a few KiB.
func archiveLocales(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the locale archive: %w", err)
	}
	defer f.Close()
	var head [14]uint32
	if err := binary.Read(io.NewSectionReader(f, 0, 56), binary.NativeEndian, &head); err != nil {
		return nil, fmt.Errorf("reading the locale archive %s: %w", path, err)
	}
	if head[0] != localeArchiveMagic {
		return nil, fmt.Errorf("%s is not a glibc locale archive", path)
	}
	offset, size := int64(head[2]), int64(head[4])
	if size > 1<<20 {
		return nil, fmt.Errorf("%s has a hash table of %d entries: not a locale archive", path, size)
	}
	table := make([]uint32, 3*size)
	if err := binary.Read(io.NewSectionReader(f, offset, 12*size), binary.NativeEndian, table); err != nil {
		return nil, fmt.Errorf("reading the locale archive %s: %w", path, err)
	}
	var out []string
	buf := make([]byte, 256)
	for i := int64(0); i < size; i++ {
		nameOff, recOff := table[3*i+1], table[3*i+2]
		if recOff == 0 || nameOff == 0 {
			continue
		}
		n, _ := f.ReadAt(buf, int64(nameOff))
		if end := bytes.IndexByte(buf[:n], 0); end > 0 {
			out = append(out, string(buf[:end]))
		}
	}
	return out, nil
}

// localeNames is the locales a recipe names: lang, then lc_env's values
// in the order of its keys.
func localeNames(r *resources.Resource) []string {
	var out []string
	add := func(n string) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	add(r.String("lang"))
	if v := r.Get("lc_env"); v.IsWhollyKnown() && !v.IsNull() {
		m := v.AsValueMap()
		for _, k := range slices.Sorted(maps.Keys(m)) {
			add(m[k].AsString())
		}
	}
	return out
}

// Load reads /etc/default/locale (lang, lc_env) and which of the
// recipe's locales are not compiled (lang and lc_env are LoadInput):
// Extra "missing", and Values "locale_gen", the lines of /etc/locale.gen
// that name them (commented out, or not).
func (t *localeType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading the locale"); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	path := t.path("/etc/default/locale")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Exists = false
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	case !isText(data):
		st.Extra["file"] = "not text"
	}
	lc := map[string]cty.Value{}
	for _, line := range splitLines(string(data)) {
		k, v, ok := localeAssignment(line)
		switch {
		case !ok:
		case k == "LANG":
			st.Values["lang"] = cty.StringVal(v)
		case slices.Contains(lcVariables, k):
			lc[k] = cty.StringVal(v)
		}
	}
	if len(lc) == 0 {
		st.Values["lc_env"] = cty.MapValEmpty(cty.String)
	} else {
		st.Values["lc_env"] = cty.MapVal(lc)
	}
	have, err := t.compiled()
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range localeNames(r) {
		if !builtinLocale(n) && !have[normalizeLocale(n)] {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return st, nil
	}
	st.Extra["missing"] = strings.Join(missing, " ")
	if isExecutable(t.path("/usr/sbin/locale-gen")) {
		st.Extra["locale-gen"] = "present"
	}
	gen, err := os.ReadFile(t.path("/etc/locale.gen"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", t.path("/etc/locale.gen"), err)
	}
	if !isText(gen) {
		st.Extra["locale.gen"] = "not text"
	}
	var lines strings.Builder
	for _, l := range splitLines(string(gen)) {
		if n := localeGenName(l); n != "" && slices.ContainsFunc(missing, func(m string) bool { return normalizeLocale(m) == n }) {
			lines.WriteString(l + "\n")
		}
	}
	if lines.Len() > 0 {
		st.Values["locale_gen"] = cty.StringVal(lines.String())
	}
	return st, nil
}

// localeAssignment reads KEY=VALUE (quoted or not) of a shell-style
// locale file.
func localeAssignment(line string) (string, string, bool) {
	l := strings.TrimSpace(line)
	if l == "" || l[0] == '#' {
		return "", "", false
	}
	l = strings.TrimPrefix(l, "export ")
	k, v, ok := strings.Cut(l, "=")
	if !ok {
		return "", "", false
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return strings.TrimSpace(k), v, true
}

// localeGenName is the normalised locale a line of /etc/locale.gen names,
// enabled or commented out ("# de_DE.UTF-8 UTF-8"), or "".
func localeGenName(line string) string {
	fs := strings.Fields(strings.TrimLeft(strings.TrimSpace(line), "#"))
	if len(fs) != 2 || !localeNameRE.MatchString(fs[0]) {
		return ""
	}
	return normalizeLocale(fs[0])
}

// enabledLocaleGen is /etc/locale.gen with the lines of locales enabled:
// a line naming one, commented out, is uncommented (the first such);
// one with none is given glibc's line.
func enabledLocaleGen(text string, missing []string, sup map[string]string) string {
	lines := splitLines(text)
	for _, m := range missing {
		norm := normalizeLocale(m)
		names := func(l string) bool { return localeGenName(l) == norm }
		if slices.ContainsFunc(lines, func(l string) bool { return names(l) && !strings.HasPrefix(strings.TrimSpace(l), "#") }) {
			continue
		}
		if i := slices.IndexFunc(lines, names); i >= 0 {
			lines[i] = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(lines[i]), "#")), " ")
		} else {
			lines = append(lines, sup[norm])
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// Plan: update compiles the recipe's locales that are not (group
// "generate": enabled in /etc/locale.gen, then locale-gen), then writes
// LANG and the LC_* variables where /etc/default/locale differs (group
// "file"), converge_if_changed's way: only what the recipe sets.
func (t *localeType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if action != "update" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	if !desired.IsSet("lang") && !desired.IsSet("lc_env") {
		return nil, &resources.PropertyError{Property: "lang", Err: errors.New("update needs lang or lc_env")}
	}
	path := t.path("/etc/default/locale")
	if current.Extra["file"] != "" {
		return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", path)
	}
	var groups, why []string
	var changes []resources.Change
	if m := current.Extra["missing"]; m != "" {
		switch {
		case current.Extra["locale-gen"] == "":
			return nil, fmt.Errorf("%s is not compiled on this host, and it has no locale-gen to compile it (Debian: the locales package)", m)
		case current.Extra["locale.gen"] != "":
			return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", t.path("/etc/locale.gen"))
		}
		sup, err := t.supported()
		if err != nil {
			return nil, fmt.Errorf("%s is not compiled, and glibc's list of supported locales cannot be read: %w", m, err)
		}
		before := ""
		if v, ok := current.Values["locale_gen"]; ok {
			before = v.AsString()
		}
		missing := strings.Fields(m)
		for _, n := range missing {
			if sup[normalizeLocale(n)] == "" {
				return nil, fmt.Errorf("%s is neither compiled here nor in %s, so locale-gen cannot compile it", n, t.path("/usr/share/i18n/SUPPORTED"))
			}
		}
		groups = append(groups, "generate")
		changes = append(changes, resources.Change{Property: "locale_gen", Before: current.Values["locale_gen"], After: cty.StringVal(enabledLocaleGen(before, missing, sup)),
			Note: "then locale-gen --keep-existing compiles " + strings.Join(missing, ", ")})
		why = append(why, m+" not compiled: enabled in "+t.path("/etc/locale.gen")+" and compiled with locale-gen")
	}
	if ch := resources.Diff(desired, current); len(ch) > 0 {
		groups = append(groups, "file")
		changes = append(changes, ch...)
		why = append(why, path+": "+resources.Differ(resources.PropertyNames(ch)))
	}
	if len(groups) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state"}, nil
	}
	kind := resources.Update
	if !current.Exists {
		kind = resources.Create
	}
	return needsRoot(&resources.Step{Kind: kind, Reason: strings.Join(why, "; "), Changes: changes, Groups: groups}, "setting the system's locale")
}

// Predict is the state update leaves.
func (t *localeType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := resources.PredictFromChanges(current, step)
	if step.HasGroup("generate") {
		delete(st.Extra, "missing")
		delete(st.Values, "locale_gen")
	}
	return st, nil
}

// Steps: locale.gen and /etc/default/locale edited through the file type,
// locale-gen between them, its work read back (locale-gen goes on past a
// locale it could not compile).
func (t *localeType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *localeType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	if step.HasGroup("generate") {
		missing := strings.Fields(current.Extra["missing"])
		sup, err := t.supported()
		if err != nil {
			return err
		}
		if err := editFile(ctx, env, t.file, t.path("/etc/locale.gen"), nil, func(old string, _ bool) (string, bool, error) {
			return enabledLocaleGen(old, missing, sup), false, nil
		}); err != nil {
			return err
		}
		if err := t.run(ctx, env, "locale-gen", "--keep-existing"); err != nil {
			return err
		}
		have, err := t.compiled()
		if err != nil {
			return err
		}
		for _, m := range missing {
			if !have[normalizeLocale(m)] {
				return fmt.Errorf("locale-gen ran, yet %s is not compiled (locale-gen goes on past a locale localedef fails on: run it by hand to see why); %s was not changed", m, t.path("/etc/default/locale"))
			}
		}
	}
	if step.HasGroup("file") {
		return editFile(ctx, env, t.file, t.path("/etc/default/locale"), nil, func(old string, _ bool) (string, bool, error) {
			return localeFileText(old, desired), false, nil
		})
	}
	return nil
}

// localeFileText is the locale file with the recipe's variables: LANG
// and each LC_* of lc_env rewritten where they are (the first line of a
// variable; further ones removed), added at the end otherwise, and, with
// lc_env set, the LC_* variables it does not name removed. Other lines
// (LANGUAGE, comments) stay as they are.
func localeFileText(old string, r *resources.Resource) string {
	want := map[string]string{}
	if r.IsSet("lang") {
		want["LANG"] = r.String("lang")
	}
	exact := r.IsSet("lc_env")
	if exact {
		for k, v := range r.Values["lc_env"].AsValueMap() {
			want[k] = v.AsString()
		}
	}
	var out []string
	written := map[string]bool{}
	for _, l := range splitLines(old) {
		k, _, ok := localeAssignment(l)
		_, managed := want[k]
		switch {
		case !ok:
			out = append(out, l)
		case managed && !written[k]:
			out, written[k] = append(out, k+"="+want[k]), true
		case managed:
		case exact && slices.Contains(lcVariables, k):
		default:
			out = append(out, l)
		}
	}
	for _, k := range append([]string{"LANG"}, lcVariables...) {
		if v, ok := want[k]; ok && !written[k] {
			out = append(out, k+"="+v)
		}
	}
	return strings.Join(out, "\n") + "\n"
}
