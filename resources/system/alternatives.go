package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// alternativesType is the built-in "alternatives" type, Chef's: one
// alternative of a group of dpkg's alternatives system (python →
// /usr/bin/python3), converged with update-alternatives. Load reads the
// group's file of the administrative directory (/var/lib/dpkg/alternatives/NAME)
// and the links themselves: a plan starts no process.
type alternativesType struct {
	schema *resources.Schema
	// altdir and admindir are update-alternatives' directories, log its
	// log file ("" for its defaults); tests use throwaway ones.
	altdir, admindir, log string
	run                   toolRunner
}

// AlternativesType returns the built-in "alternatives" resource type.
func AlternativesType() resources.Type { return newAlternativesType("", "", "") }

func newAlternativesType(altdir, admindir, log string) *alternativesType {
	readOnly := func(name, what string) *resources.Property {
		return &resources.Property{Name: name, Type: cty.String, NonState: true, Validate: mountReadOnly(name, what),
			Description: strings.ToUpper(what[:1]) + what[1:] + ": read by toque; a recipe does not set it."}
	}
	return &alternativesType{altdir: altdir, admindir: admindir, log: log, run: runHostTool, schema: &resources.Schema{
		Name:        "alternatives",
		Description: "Manages an alternative of dpkg's alternatives system with update-alternatives.",
		Properties: []*resources.Property{
			{Name: "link_name", Type: cty.String, NameProperty: true, Identity: true, Required: true, Validate: validateAltName,
				Description: "The group's name (python, editor): the name in /etc/alternatives; defaults to the block label."},
			{Name: "path", Type: cty.String, Identity: true, Normalize: props.NormalizePath,
				Description: "The alternative: the absolute path of the program (/usr/bin/python3.11). Required by install, set and remove."},
			{Name: "priority", Type: cty.Number, Validate: validateAltPriority,
				Description: "The alternative's priority (an integer); in auto mode the highest wins. Required by install."},
			{Name: "link", Type: cty.String, Normalize: props.NormalizePath,
				Description: "The group's link, which leads to the alternative through /etc/alternatives; defaults to /usr/bin/LINK_NAME. Used by install."},
			readOnly("selected", "the alternative the group's link leads to now"),
			readOnly("status", "the group's mode: auto (the highest priority wins) or manual (set)"),
			readOnly("link_target", "what the group's link points to (its entry in /etc/alternatives)"),
		},
		Actions:       []string{"install", "set", "auto", "refresh", "remove"},
		DefaultAction: "install",
	}}
}

func (t *alternativesType) Schema() *resources.Schema { return t.schema }

func validateAltName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	switch {
	case s == "" || s == "." || s == "..":
		return fmt.Errorf("link_name %q is not a name", s)
	case strings.ContainsAny(s, "/ \t\n\r\x00"):
		return fmt.Errorf("link_name %q holds a \"/\", a space or a control character: it names a file of /etc/alternatives (update-alternatives refuses it too)", s)
	}
	return nil
}

func validateAltPriority(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != 0 || n < math.MinInt32 || n > math.MaxInt32 {
		return fmt.Errorf("priority must be a whole number from %d to %d", math.MinInt32, math.MaxInt32)
	}
	return nil
}

// Derive fills in link's default, /usr/bin/LINK_NAME, so that the plan
// shows the link install makes.
func (t *alternativesType) Derive(values map[string]cty.Value) (map[string]cty.Value, error) {
	if v, ok := values["link"]; ok && v != cty.NilVal && !v.IsNull() {
		return map[string]cty.Value{}, nil
	}
	name, ok := values["link_name"]
	if !ok || name == cty.NilVal || name.IsNull() {
		return map[string]cty.Value{}, nil
	}
	if !name.IsKnown() {
		return map[string]cty.Value{"link": cty.UnknownVal(cty.String)}, nil
	}
	return map[string]cty.Value{"link": cty.StringVal("/usr/bin/" + name.AsString())}, nil
}

func (t *alternativesType) dirs() (altdir, admindir string) {
	altdir, admindir = t.altdir, t.admindir
	if altdir == "" {
		altdir = "/etc/alternatives"
	}
	if admindir == "" {
		admindir = "/var/lib/dpkg/alternatives"
	}
	return altdir, admindir
}

// altGroup is one group's file of the administrative directory.
type altGroup struct {
	status, link string
	slaves       []string // slave names
	alts         []altChoice
}

type altChoice struct {
	path     string
	priority int64
	slaves   int // slave paths it provides
}

// parseAltGroup reads update-alternatives' file of a group: the status,
// the master link, the slaves' names and links up to an empty line, then
// per alternative its path, priority and one line per slave (its path or
// empty), up to an empty line.
func parseAltGroup(text string) (*altGroup, error) {
	lines := strings.Split(text, "\n")
	next := func() (string, bool) {
		if len(lines) == 0 {
			return "", false
		}
		l := lines[0]
		lines = lines[1:]
		return l, true
	}
	g := &altGroup{}
	var ok bool
	if g.status, ok = next(); !ok || g.status != "auto" && g.status != "manual" {
		return nil, fmt.Errorf("its status is %q, not auto or manual", g.status)
	}
	if g.link, ok = next(); !ok || !filepath.IsAbs(g.link) {
		return nil, fmt.Errorf("its link %q is not an absolute path", g.link)
	}
	for {
		name, ok := next()
		if !ok {
			return nil, errors.New("it ends within the slaves")
		}
		if name == "" {
			break
		}
		if _, ok := next(); !ok {
			return nil, errors.New("it ends within the slaves")
		}
		g.slaves = append(g.slaves, name)
	}
	for {
		path, ok := next()
		if !ok {
			return nil, errors.New("it ends within the alternatives")
		}
		if path == "" {
			return g, nil
		}
		prio, ok := next()
		n, err := strconv.ParseInt(prio, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("the priority of %s is %q, not a number", path, prio)
		}
		c := altChoice{path: path, priority: n}
		for range g.slaves {
			sp, ok := next()
			if !ok {
				return nil, errors.New("it ends within the alternatives")
			}
			if sp != "" {
				c.slaves++
			}
		}
		g.alts = append(g.alts, c)
	}
}

// best is the alternative auto mode selects: the highest priority, the
// first of equals (as update-alternatives picks).
func (g *altGroup) best() string {
	best := -1
	for i, c := range g.alts {
		if best < 0 || c.priority > g.alts[best].priority {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return g.alts[best].path
}

func (g *altGroup) find(path string) *altChoice {
	for i := range g.alts {
		if g.alts[i].path == path {
			return &g.alts[i]
		}
	}
	return nil
}

// encodeAlts is the group's alternatives as State.Extra keeps them: one
// "PRIORITY SLAVES PATH" line each, in the file's order.
func encodeAlts(alts []altChoice) string {
	var b strings.Builder
	for _, c := range alts {
		fmt.Fprintf(&b, "%d %d %s\n", c.priority, c.slaves, c.path)
	}
	return b.String()
}

func decodeAlts(s string) []altChoice {
	var out []altChoice
	for _, l := range strings.Split(s, "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			continue
		}
		p, _ := strconv.ParseInt(f[0], 10, 64)
		n, _ := strconv.Atoi(f[1])
		out = append(out, altChoice{path: f[2], priority: p, slaves: n})
	}
	return out
}

// Load reads the group's file and links. The group exists when its file
// does (Exists); Values hold the path's priority when it is registered,
// the group's link, what its entry in the alternatives directory leads to
// (selected), its status, and what the group's link points to
// (link_target). Extra holds every alternative (alternatives), whether
// path exists (path), and a file toque cannot read (db).
func (t *alternativesType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading the alternatives"); err != nil {
		return nil, err
	}
	altdir, admindir := t.dirs()
	name := r.String("link_name")
	st := resources.Absent()
	st.Extra = map[string]string{}
	if r.IsSet("path") {
		if _, err := os.Stat(r.String("path")); errors.Is(err, fs.ErrNotExist) {
			st.Extra["path"] = "missing"
		} else if err != nil {
			return nil, fmt.Errorf("reading %s: %w", r.String("path"), err)
		}
	}
	file := filepath.Join(admindir, name)
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	g, err := parseAltGroup(string(data))
	if err != nil {
		st.Exists = true
		st.Extra["db"] = fmt.Sprintf("%s is not a file update-alternatives wrote: %v", file, err)
		return st, nil
	}
	st.Exists = true
	st.Values["status"] = cty.StringVal(g.status)
	st.Values["link"] = cty.StringVal(g.link)
	st.Extra["alternatives"] = encodeAlts(g.alts)
	if c := g.find(r.String("path")); c != nil {
		st.Values["priority"] = cty.NumberIntVal(c.priority)
	}
	entry := filepath.Join(altdir, name)
	if target, err := os.Readlink(entry); err == nil {
		st.Values["selected"] = cty.StringVal(target)
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
		return nil, fmt.Errorf("reading %s: %w", entry, err)
	}
	if target, err := os.Readlink(g.link); err == nil {
		st.Values["link_target"] = cty.StringVal(target)
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
		return nil, fmt.Errorf("reading %s: %w", g.link, err)
	}
	return st, nil
}

// needPath refuses an action that needs path when the recipe has none.
func needPath(action string, desired *resources.Resource) error {
	if !desired.IsSet("path") {
		return &resources.PropertyError{Property: "path", Err: fmt.Errorf("%s needs path, the alternative", action)}
	}
	return nil
}

// Plan decides each action from the group as Load read it (or as an
// earlier action of the same resource leaves it).
func (t *alternativesType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	name, path := desired.String("link_name"), desired.String("path")
	if why := current.Extra["db"]; why != "" {
		return nil, errors.New(why + "; repair it with update-alternatives --config " + name)
	}
	alts := decodeAlts(current.Extra["alternatives"])
	g := &altGroup{alts: alts, status: props.StringOr(current.Values["status"])}
	var step *resources.Step
	var err error
	switch action {
	case "install":
		step, err = t.planInstall(desired, current, g)
	case "set":
		if err := needPath(action, desired); err != nil {
			return nil, err
		}
		if !current.Exists || g.find(path) == nil {
			return nil, &resources.PropertyError{Property: "path", Err: fmt.Errorf("%s is not an alternative of the %s group, so update-alternatives cannot set it: install it first (action = [\"install\", \"set\"], with a priority)", path, name)}
		}
		step = t.planSelect(current, path, "manual", "set makes "+name+" lead to "+path+" (manual mode)")
	case "auto":
		if !current.Exists {
			return nil, fmt.Errorf("there is no alternatives group %s on this host: install an alternative first", name)
		}
		step = t.planSelect(current, g.best(), "auto", name+" goes back to auto mode: the highest priority, "+g.best()+", wins")
	case "refresh":
		step, err = t.planRefresh(desired, current, g)
	case "remove":
		if err := needPath(action, desired); err != nil {
			return nil, err
		}
		step = planRemove(desired, current, g)
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if err != nil || t.admindir != "" {
		return step, err
	}
	return needsRoot(step, "changing the alternatives")
}

func (t *alternativesType) planInstall(desired *resources.Resource, current *resources.State, g *altGroup) (*resources.Step, error) {
	name, path := desired.String("link_name"), desired.String("path")
	if err := needPath("install", desired); err != nil {
		return nil, err
	}
	if !desired.IsSet("priority") {
		return nil, &resources.PropertyError{Property: "priority", Err: errors.New("install needs a priority")}
	}
	if current.Extra["path"] == "missing" {
		return nil, &resources.PropertyError{Property: "path", Err: fmt.Errorf("%s does not exist, and update-alternatives --install refuses an alternative that is not there: install what provides it first (a package), and plan again", path)}
	}
	if desired.String("link") == path {
		return nil, &resources.PropertyError{Property: "link", Err: fmt.Errorf("link and path are both %s: the link must be another path", path)}
	}
	var changes []resources.Change
	prio := desired.Values["priority"]
	have := current.Values["priority"]
	if have == cty.NilVal || !prio.IsKnown() || !have.Equals(prio).True() {
		changes = append(changes, resources.Change{Property: "priority", Before: have, After: prio})
	}
	if link := desired.Values["link"]; link != cty.NilVal && !link.RawEquals(current.Values["link"]) {
		c := resources.Change{Property: "link", Before: current.Values["link"], After: link}
		if current.Exists {
			c.Note = "update-alternatives moves the group's link: " + props.StringOr(current.Values["link"]) + " goes"
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: fmt.Sprintf("%s is an alternative of %s already, with priority %s", path, name, prio.AsBigFloat().String())}, nil
	}
	reason := fmt.Sprintf("%s is not an alternative of %s", path, name)
	kind := resources.Create
	switch {
	case !current.Exists:
		reason = "there is no alternatives group " + name + ": install makes it"
	case g.find(path) != nil:
		kind, reason = resources.Update, resources.Differ(resources.PropertyNames(changes))
	}
	// What the group's link will lead to, and what a registered
	// alternative loses: --install replaces its slaves, which toque does
	// not manage.
	n, _ := prio.AsBigFloat().Int64()
	after := &altGroup{alts: withAlt(g.alts, path, n)}
	var notes []string
	if g.status != "manual" && after.best() != props.StringOr(current.Values["selected"]) {
		notes = append(notes, fmt.Sprintf("in auto mode, %s then leads to %s, the highest priority", name, after.best()))
	}
	if c := g.find(path); c != nil && c.slaves > 0 {
		notes = append(notes, fmt.Sprintf("update-alternatives --install replaces the alternative's slave links: its %d go", c.slaves))
	}
	changes[0].Note = strings.Join(append(notes, changes[0].Note), "; ")
	changes[0].Note = strings.TrimSuffix(changes[0].Note, "; ")
	return &resources.Step{Kind: kind, Reason: reason, Changes: changes, Groups: []string{"install"}}, nil
}

// withAlt is alts with path at priority n (added at the end when new).
func withAlt(alts []altChoice, path string, n int64) []altChoice {
	out := append([]altChoice(nil), alts...)
	for i := range out {
		if out[i].path == path {
			out[i].priority = n
			return out
		}
	}
	return append(out, altChoice{path: path, priority: n})
}

// planSelect is set's and auto's step: the group's entry leads to want,
// in mode status.
func (t *alternativesType) planSelect(current *resources.State, want, status, reason string) *resources.Step {
	var changes []resources.Change
	if v := current.Values["selected"]; props.StringOr(v) != want {
		changes = append(changes, resources.Change{Property: "selected", Before: v, After: cty.StringVal(want)})
	}
	if v := current.Values["status"]; props.StringOr(v) != status {
		changes = append(changes, resources.Change{Property: "status", Before: v, After: cty.StringVal(status)})
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: fmt.Sprintf("leads to %s already, in %s mode", want, status)}
	}
	return &resources.Step{Kind: resources.Update, Reason: reason, Changes: changes, Groups: []string{status}}
}

// planRefresh makes the links what the group's file says: the group's
// link to its entry in the alternatives directory, and the entry to the
// best alternative (auto) or to the one set (manual, when it is still
// registered).
func (t *alternativesType) planRefresh(desired *resources.Resource, current *resources.State, g *altGroup) (*resources.Step, error) {
	name := desired.String("link_name")
	if !current.Exists {
		return nil, fmt.Errorf("there is no alternatives group %s on this host to refresh", name)
	}
	altdir, _ := t.dirs()
	entry := filepath.Join(altdir, name)
	want := g.best()
	if sel := props.StringOr(current.Values["selected"]); g.status == "manual" && g.find(sel) != nil {
		want = sel
	}
	var changes []resources.Change
	if v := current.Values["selected"]; props.StringOr(v) != want {
		changes = append(changes, resources.Change{Property: "selected", Before: v, After: cty.StringVal(want)})
	}
	if sel := props.StringOr(current.Values["selected"]); g.status == "manual" && g.find(sel) == nil {
		// Set to what is no longer an alternative: back to auto mode.
		changes = append(changes, resources.Change{Property: "status", Before: current.Values["status"], After: cty.StringVal("auto")})
	}
	if v := current.Values["link_target"]; props.StringOr(v) != entry {
		changes = append(changes, resources.Change{Property: "link_target", Before: v, After: cty.StringVal(entry)})
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "the links are as the group's file says"}, nil
	}
	return &resources.Step{Kind: resources.Update, Reason: "the links are not as the group's file says: refresh makes them again (" + g.status + " mode)", Changes: changes, Groups: []string{"refresh"}}, nil
}

func planRemove(desired *resources.Resource, current *resources.State, g *altGroup) *resources.Step {
	name, path := desired.String("link_name"), desired.String("path")
	if !current.Exists || g.find(path) == nil {
		return &resources.Step{Kind: resources.NoOp, Reason: path + " is not an alternative of " + name}
	}
	rest := &altGroup{}
	for _, c := range g.alts {
		if c.path != path {
			rest.alts = append(rest.alts, c)
		}
	}
	reason := "remove takes " + path + " out of the " + name + " group"
	switch {
	case len(rest.alts) == 0:
		reason += "; it is the last: the group and its links go"
	case props.StringOr(current.Values["selected"]) == path:
		reason += "; " + name + " then leads to " + rest.best() + " (auto mode)"
	}
	return &resources.Step{Kind: resources.Delete, Reason: reason}
}

// Predict is the group each action leaves.
func (t *alternativesType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	if !step.Kind.IsWork() {
		return st, nil
	}
	name, path := desired.String("link_name"), desired.String("path")
	altdir, _ := t.dirs()
	alts := decodeAlts(st.Extra["alternatives"])
	status := props.StringOr(st.Values["status"])
	switch desired.EffectiveAction() {
	case "install":
		n, _ := desired.Values["priority"].AsBigFloat().Int64()
		alts = withAlt(alts, path, n)
		st.Exists = true
		st.Values["priority"] = desired.Values["priority"]
		st.Values["link"] = desired.Values["link"]
		st.Values["link_target"] = cty.StringVal(filepath.Join(altdir, name))
		if status == "" {
			status = "auto"
		}
	case "remove":
		var rest []altChoice
		for _, c := range alts {
			if c.path != path {
				rest = append(rest, c)
			}
		}
		alts = rest
		delete(st.Values, "priority")
		if len(alts) == 0 {
			return resources.Absent(), nil
		}
		if props.StringOr(st.Values["selected"]) == path {
			status = "auto"
		}
	case "set":
		status = "manual"
		st.Values["selected"] = cty.StringVal(path)
	case "auto":
		status = "auto"
	case "refresh":
		for _, c := range step.Changes {
			st.Values[c.Property] = c.After
		}
		if c := step.Change("status"); c != nil {
			status = props.StringOr(c.After)
		}
	}
	st.Extra["alternatives"] = encodeAlts(alts)
	st.Values["status"] = cty.StringVal(status)
	if status == "auto" {
		st.Values["selected"] = cty.StringVal((&altGroup{alts: alts}).best())
	}
	return st, nil
}

// Steps run update-alternatives, then read the group back.
func (t *alternativesType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *alternativesType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	name, path := desired.String("link_name"), desired.String("path")
	var args []string
	switch action := desired.EffectiveAction(); action {
	case "install":
		args = []string{"--install", desired.String("link"), name, path, strconv.Itoa(desired.Int("priority"))}
	case "set":
		args = []string{"--set", name, path}
	case "auto":
		args = []string{"--auto", name}
	case "refresh":
		// Debian's update-alternatives has no --refresh (RHEL's
		// alternatives has): auto makes the links again in auto mode, set
		// to the alternative set in manual mode.
		args = []string{"--auto", name}
		sel := props.StringOr(current.Values["selected"])
		g := &altGroup{alts: decodeAlts(current.Extra["alternatives"])}
		if props.StringOr(current.Values["status"]) == "manual" && g.find(sel) != nil {
			args = []string{"--set", name, sel}
		}
	case "remove":
		args = []string{"--remove", name, path}
	default:
		return resources.UnknownAction(t.schema, action)
	}
	if t.altdir != "" {
		args = append([]string{"--altdir", t.altdir}, args...)
	}
	if t.admindir != "" {
		args = append([]string{"--admindir", t.admindir}, args...)
	}
	if t.log != "" {
		args = append([]string{"--log", t.log}, args...)
	}
	if err := t.run(ctx, env, "update-alternatives", args...); err != nil {
		return err
	}
	return t.readBack(ctx, desired, current, step)
}

// readBack reads the group again and checks the step's changes took.
func (t *alternativesType) readBack(ctx context.Context, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	want, err := t.Predict(desired, current, step)
	if err != nil {
		return err
	}
	got, err := t.Load(ctx, desired.LoadView())
	if err != nil {
		return err
	}
	var bad []string
	for _, k := range []string{"priority", "link", "selected", "status"} {
		w, g := want.Values[k], got.Values[k]
		if (w == cty.NilVal) != (g == cty.NilVal) || w != cty.NilVal && !w.RawEquals(g) {
			bad = append(bad, fmt.Sprintf("%s is %s, not %s", k, shownAlt(g), shownAlt(w)))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("after update-alternatives, the %s group is not as planned: %s", desired.String("link_name"), strings.Join(bad, "; "))
	}
	return nil
}

func shownAlt(v cty.Value) string {
	if v == cty.NilVal || v.IsNull() {
		return "(none)"
	}
	if v.Type() == cty.Number {
		return v.AsBigFloat().String()
	}
	return strconv.Quote(v.AsString())
}
