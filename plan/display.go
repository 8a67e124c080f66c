package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/resources"
)

// What a reviewer reads is derived here, and only here, from what apply
// uses: the desired values (Resource.Desired) apply converges to, the
// guards (Resource.GuardSpecs) apply evaluates, the live reading
// (Resource.Current) apply compares with, and the schema of this build's
// resource type, which decides defaults, sensitivity and what a resource
// is shown by. The plan file holds no display string a rendering prints,
// so a plan whose checksum was recomputed after an edit still shows what
// apply would run. Every rendering (text, Markdown, JSON) goes through
// Show.

// Shown is one resource, or one notified run, as reviewers are shown it.
// Its strings are display forms, not yet escaped for a terminal or
// Markdown: the renderer escapes them.
type Shown struct {
	// Resource is the plan entry (for a notified run, its NotifiedView).
	Resource *Resource
	// Why is the reason, composed from the type's words and the guards'
	// verdicts (Plan.Why).
	Why string
	// UnknownType is set when this build has no resource type
	// Resource.Type; apply refuses such a resource. Everything is then
	// shown generically: every desired value, as context.
	UnknownType bool
	// Context are the properties shown beside the changes so a reviewer
	// sees what the resource is: identity and name properties whose value
	// is not the block label (directory "www" { path = "/srv/www" }), and,
	// for a type that only acts (execute, the script types: no
	// desired-state property), every property the recipe set — what will
	// run, where, as whom.
	Context []ShownValue
	// Changes are the property changes of a create or update.
	Changes []ShownChange
	// Unmanaged are the state properties the recipe did not set, left as
	// they are, with their live value.
	Unmanaged []ShownValue
	// Guards are the guards evaluated at plan time, in order.
	Guards []ShownGuard
	// Current are the live values read, by property name, sorted.
	Current []ShownValue
	// Lazy are the values known only at apply, in schema order: what
	// apply evaluates, what it reads, and why it waits.
	Lazy []ShownLazy
	// Awaits are the values the resource type knows only at apply
	// (Resource.Awaits), in the plan's order: what each waits for, and the
	// earlier resources that provide it.
	Awaits []ShownAwait
	// Steps are, for a resource of a type written in HCL, the
	// converge_if_changed and converge_by steps its action will run
	// (Resource.Groups), in order, each with where the type declares it.
	Steps []ShownStep

	schema    *resources.Schema
	sensitive map[string]bool
}

// ShownLazy is one value known only at apply, as reviewers are shown it.
type ShownLazy struct {
	Property string
	// Expression is the expression apply evaluates, on one line; for a
	// template's content, "the template TEMPLATE" with its variables'.
	// "(sensitive)" for a sensitive value.
	Expression string
	// Source is FILE:LINE:COL of the expression.
	Source    string
	Sensitive bool
	// Reads are what it reads that was fixed at plan time: node
	// attributes, host facts, environment variables, recipe files, in
	// display form ("node.app.root" = "\"/srv\"").
	Reads []ShownValue
	// After are the earlier resources of the plan that could change what
	// it reads (Writer.String): why it waits for apply.
	After []string
}

// ShownAwait is one value a resource type knows only at apply, as
// reviewers are shown it.
type ShownAwait struct {
	Property string
	// What is what it waits for: "a repository that offers package
	// nginx".
	What string
	// After are the earlier resources and notified runs of the plan that
	// provide it (Meeter.String).
	After []string
}

// KnownAtApplyByType is how a value a resource type knows only at apply
// (Resource.Awaits) is shown where a value would be.
const KnownAtApplyByType = "(known at apply)"

// KnownAtApply is how a value known only at apply is shown where a value
// would be: "(known at apply: file(\"/srv/keys/api.key\"))".
func (l ShownLazy) KnownAtApply() string {
	if l.Sensitive {
		return "(known at apply; sensitive)"
	}
	return "(known at apply: " + l.Expression + ")"
}

// ShownStep is one script step a resource of a type written in HCL will
// run: its label (converge_if_changed (mode), converge_by "reload") and
// where its script is (FILE:LINE:COL).
type ShownStep struct {
	Label  string
	Source string
}

// ShownValue is a property and its display form.
type ShownValue struct {
	Property string
	Value    string
}

// ShownChange is one property change: the live value (Before, "" when
// there is none) and the planned one (After), in display form; for text
// content, a unified diff of the two, or a note saying why there is none.
type ShownChange struct {
	Property string
	Before   string
	After    string
	// Default is set when After is the type's default, used because the
	// recipe did not set the property and the thing is created.
	Default   bool
	Sensitive bool
	// Diff is a unified diff of text content, hunks only; DiffNote says
	// why there is none, or what it shows.
	Diff     string
	DiffNote string
	// KnownAtApply marks a value known only at apply: After says so, with
	// its expression (Shown.Lazy has the rest), and there is no diff.
	KnownAtApply bool
}

// ShownGuard is one evaluated guard: what ran (from its spec) and its
// outcome at plan time.
type ShownGuard struct {
	Kind        string
	Form        string
	Command     string // the script, or the expression's source text
	Interpreter string
	Cwd         string
	Environment map[string]string
	User        string
	// Params are every parameter the guard runs with (inherited or
	// given), in a fixed order: cwd, environment, user, group, path,
	// umask, then the others by name. The script itself and the default
	// timeout are not repeated.
	Params     []ShownValue
	Inherited  []string
	ExitCode   *int
	DurationMS int64
	Output     string
	Passed     bool
	Decided    bool
	Warning    string
	// Verdict words the guard and its condition: "only_if `test -f x`
	// passed"; for a guard decided at apply, "decided at apply: only_if
	// `test -f x` (fails now)".
	Verdict string
	// AtApply marks a guard decided at apply; Now says what it says now
	// ("fails now", "true now", "cannot run now: …"), and After lists the
	// earlier resources that could change what it tests.
	AtApply bool
	Now     string
	After   []string
	// Group names the resource_group the guard is written on; "" for the
	// resource's own.
	Group string
}

// IsSensitive reports whether the value of property name is hidden: the
// resource is sensitive, or the property's type or the plan marks it so.
func (s *Shown) IsSensitive(name string) bool {
	return s.Resource.Sensitive || s.sensitive[name]
}

// Show derives what reviewers are shown of r, one of p's resources. reg
// holds this build's resource types; nil means none is known.
func (p *Plan) Show(reg *resources.Registry, r *Resource) *Shown {
	s := show(reg, r, p.Why(r))
	p.showDeferred(reg, s, nil)
	return s
}

// ShowNotified derives what reviewers are shown of a notified run.
func (p *Plan) ShowNotified(reg *resources.Registry, nr *NotifiedRun) *Shown {
	s := show(reg, p.NotifiedView(nr), p.WhyNotified(nr))
	p.showDeferred(reg, s, nr)
	return s
}

// showDeferred adds to s what waits for apply: each value known at apply
// with what it reads, and, for it and each guard decided at apply, the
// earlier resources that could change what it reads.
func (p *Plan) showDeferred(reg *resources.Registry, s *Shown, nr *NotifiedRun) {
	r := s.Resource
	for _, name := range sortedLazy(reg, r) {
		e := r.Lazy[name]
		if e == nil {
			continue
		}
		l := ShownLazy{Property: name, Sensitive: s.IsSensitive(name), Expression: e.OneLine(),
			Source: fmt.Sprintf("%s:%d:%d", e.Range.Filename, e.Range.Start.Line, e.Range.Start.Column)}
		if e.Template == lazy.TemplateFile {
			// The text is carried in the plan: its size and digest let a
			// reviewer tell it is the file of the repository.
			sum := sha256.Sum256([]byte(e.Source))
			l.Expression = fmt.Sprintf("the template %s (%d bytes, sha256:%s)", e.Range.Filename, len(e.Source), hex.EncodeToString(sum[:]))
			if e.Variables != "" {
				l.Expression += " with " + e.Variables
			}
		} else if e.Template == lazy.TemplateInline && e.Variables != "" {
			l.Expression += " with " + e.Variables
		}
		if l.Sensitive {
			l.Expression = Sensitive
		}
		l.Reads = p.lazyReads(e, r.Sensitive, l.Sensitive)
		l.After = waits(p.DeferredWhy(reg, r, nr, e.Reads()))
		s.Lazy = append(s.Lazy, l)
	}
	for i := range s.Guards {
		g := &s.Guards[i]
		if !g.AtApply {
			continue
		}
		g.After = waits(p.DeferredWhy(reg, r, nr, GuardReads(specAt(r.GuardSpecs, i))))
	}
	for _, a := range r.Awaits {
		sa := ShownAwait{Property: a.Property, What: a.What}
		for i, m := range p.MeetersOf(reg, r, a) {
			if i == maxWaits {
				sa.After = append(sa.After, "and more")
				break
			}
			sa.After = append(sa.After, m.String())
		}
		s.Awaits = append(s.Awaits, sa)
	}
	byName := map[string]ShownLazy{}
	for _, l := range s.Lazy {
		byName[l.Property] = l
	}
	for i := range s.Changes {
		c := &s.Changes[i]
		if l, ok := byName[c.Property]; ok {
			c.After = l.KnownAtApply()
			c.KnownAtApply = true
			c.Diff, c.DiffNote = "", ""
		} else if r.Awaited(c.Property) {
			c.After, c.KnownAtApply, c.Default = KnownAtApplyByType, true, false
			c.Diff, c.DiffNote = "", ""
		}
	}
	for i := range s.Context {
		if l, ok := byName[s.Context[i].Property]; ok {
			s.Context[i].Value = l.KnownAtApply()
		}
	}
}

// maxWaits is how many earlier resources a deferred value or guard names.
const maxWaits = 5

// waits words the earlier resources a deferred value or guard waits for:
// those that create a path it names first, then those that manage one,
// then the others, at most maxWaits and how many more.
func waits(ws []Writer) []string {
	rank := func(w Writer) int {
		switch {
		case w.Via == "creates":
			return 0
		case w.Path != "":
			return 1
		}
		return 2
	}
	sort.SliceStable(ws, func(i, j int) bool { return rank(ws[i]) < rank(ws[j]) })
	var out []string
	for i, w := range ws {
		if i == maxWaits {
			out = append(out, fmt.Sprintf("and %d more", len(ws)-maxWaits))
			break
		}
		out = append(out, w.String())
	}
	return out
}

// lazyReads lists what e reads that its plan carries, for display: each
// node attribute and host fact read (hidden for a sensitive resource, or a
// sensitive attribute), each environment variable (hidden for a sensitive
// value too) and each recipe file (by size and digest).
func (p *Plan) lazyReads(e *LazyExpr, sensitive, sensitiveValue bool) []ShownValue {
	var out []ShownValue
	hidden := map[string]bool{}
	for _, a := range p.Attributes {
		if a.Sensitive {
			hidden[a.Path] = true
		}
	}
	for _, root := range []struct {
		name string
		v    *Value
	}{{"node", e.Scope.Node}, {"host", e.Scope.Host}} {
		if root.v == nil || root.v.Value == cty.NilVal {
			continue
		}
		walkLeaves(root.v.Value, nil, func(path []string, v cty.Value) {
			key := strings.Join(path, ".")
			shown := DisplayValue(v)
			if sensitive || (root.name == "node" && hidden[key]) {
				shown = Sensitive
			}
			out = append(out, ShownValue{Property: root.name + "." + key, Value: shown})
		})
	}
	for _, name := range slices.Sorted(maps.Keys(e.Scope.Env)) {
		shown := "(not set)"
		if v := e.Scope.Env[name]; v != nil {
			shown = DisplayValue(cty.StringVal(*v))
		}
		if sensitive || sensitiveValue {
			shown = Sensitive
		}
		out = append(out, ShownValue{Property: "env " + name, Value: shown})
	}
	relName := func(path string) string {
		if rel, err := filepath.Rel(e.Scope.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return path
	}
	for _, path := range slices.Sorted(maps.Keys(e.Scope.Files)) {
		f := e.Scope.Files[path]
		shown := "(does not exist)"
		switch {
		case f == nil:
		case f.Error != "":
			shown = "(refused: " + DisplayValue(cty.StringVal(f.Error)) + ")"
		case f.Kind == lazy.KindDir:
			shown = "(a directory)"
		case f.Kind == lazy.KindOther:
			shown = "(not a regular file)"
		default:
			sum := sha256.Sum256(f.Content)
			shown = Summary(int64(len(f.Content)), "sha256:"+hex.EncodeToString(sum[:]))
		}
		out = append(out, ShownValue{Property: "recipe file " + relName(path), Value: shown})
	}
	for _, set := range e.Scope.Sets {
		shown := fmt.Sprintf("%d files", len(set.Matches))
		if set.Error != "" {
			shown = "(refused: " + DisplayValue(cty.StringVal(set.Error)) + ")"
		}
		out = append(out, ShownValue{Property: fmt.Sprintf("recipe files %s %s", relName(set.Dir), DisplayValue(cty.StringVal(set.Pattern))), Value: shown})
	}
	return out
}

func show(reg *resources.Registry, r *Resource, why string) *Shown {
	s := &Shown{Resource: r, Why: why, sensitive: map[string]bool{}}
	if reg != nil {
		if t, ok := reg.Lookup(r.Type); ok {
			s.schema = t.Schema()
		}
	}
	s.UnknownType = s.schema == nil
	for _, k := range r.SensitiveProperties {
		s.sensitive[k] = true
	}
	if s.schema != nil {
		for _, prop := range s.schema.Properties {
			if prop.Sensitive {
				s.sensitive[prop.Name] = true
			}
		}
	}
	s.Context = s.context()
	changed := map[string]bool{}
	if r.Kind == resources.Create || r.Kind == resources.Update {
		for _, c := range r.Changes {
			s.Changes = append(s.Changes, s.change(c))
			changed[c.Property] = true
		}
	}
	if cur := r.Current; cur != nil {
		for _, k := range slices.Sorted(maps.Keys(cur.Values)) {
			s.Current = append(s.Current, ShownValue{Property: k, Value: s.live(k, cur.Values[k])})
		}
		if cur.Exists && (r.Kind == resources.Update || r.Kind == resources.NoOp) && s.schema != nil {
			for _, prop := range s.schema.Properties {
				if !prop.IsDesiredState() || isSet(r.Desired, prop.Name) || r.Lazy[prop.Name] != nil || changed[prop.Name] {
					// A property the step changes all the same (a value
					// the type computed: remote_file's download) is not
					// left as it is.
					continue
				}
				if sv, ok := cur.Values[prop.Name]; ok {
					s.Unmanaged = append(s.Unmanaged, ShownValue{Property: prop.Name, Value: s.live(prop.Name, sv)})
				}
			}
		}
	}
	for i, g := range r.Guards {
		s.Guards = append(s.Guards, showGuard(specAt(r.GuardSpecs, i), g, r.Sensitive))
	}
	s.Steps = showSteps(reg, r)
	return s
}

// showSteps lists the script steps of r's action that its groups run,
// for a type written in HCL.
func showSteps(reg *resources.Registry, r *Resource) []ShownStep {
	if reg == nil || len(r.Groups) == 0 || !r.Kind.IsWork() {
		return nil
	}
	t, ok := reg.Lookup(r.Type)
	if !ok {
		return nil
	}
	d, ok := t.(resources.Definer)
	if !ok {
		return nil
	}
	a := d.Def().Action(r.Action)
	if a == nil {
		return nil
	}
	groups := a.Groups()
	var out []ShownStep
	for i, g := range groups {
		if g != "" && slices.Contains(r.Groups, g) {
			out = append(out, ShownStep{Label: g, Source: a.Steps[i].Source.String()})
		}
	}
	return out
}

func isSet(desired map[string]Value, name string) bool {
	v, ok := desired[name]
	return ok && v.Value != cty.NilVal && !v.Value.IsNull()
}

// property is the schema's property name, or nil.
func (s *Shown) property(name string) *resources.Property {
	if s.schema == nil {
		return nil
	}
	return s.schema.Property(name)
}

// live is how a live value is shown.
func (s *Shown) live(name string, sv StoredValue) string {
	if s.IsSensitive(name) {
		return Sensitive
	}
	p := s.property(name)
	return sv.Display(p != nil && p.Content)
}

// desired is how a planned value is shown: content by size and digest (the
// diff shows the text), anything else in HCL syntax.
func (s *Shown) desired(name string, v cty.Value) string {
	if s.IsSensitive(name) {
		return Sensitive
	}
	if p := s.property(name); p != nil && p.Content {
		if text, ok := stringOf(v); ok {
			return Summary(int64(len(text)), DigestValue(v, "", false))
		}
	}
	return DisplayValue(v)
}

// context lists Shown.Context: with the type's schema, identity and name
// properties whose value is not the block label, then, for a type with no
// desired-state property, every other property set, in schema order, and
// for a create or a delete, the settings set (desired_state = false
// properties: how it acts, such as a user's system or manage_home), which
// say how the thing is made or removed; for a type this build does not
// know, every desired value.
func (s *Shown) context() []ShownValue {
	r := s.Resource
	if s.schema == nil {
		var out []ShownValue
		for _, k := range slices.Sorted(maps.Keys(r.Desired)) {
			if v := r.Desired[k].Value; v != cty.NilVal {
				out = append(out, ShownValue{Property: k, Value: s.desired(k, v)})
			}
		}
		return out
	}
	acting := true
	for _, prop := range s.schema.Properties {
		if prop.IsDesiredState() {
			acting = false
			break
		}
	}
	working := r.Kind == resources.Create || r.Kind == resources.Delete
	var ids, rest []ShownValue
	for _, prop := range s.schema.Properties {
		isID := prop.Identity || prop.NameProperty
		if !isID && !acting && !(working && prop.NonState) && !(prop.Runs && r.Kind.IsWork()) {
			continue
		}
		dv, ok := r.Desired[prop.Name]
		v := dv.Value
		if r.Lazy[prop.Name] != nil && !isID {
			// Known at apply: showDeferred words it.
			rest = append(rest, ShownValue{Property: prop.Name})
			continue
		}
		if !ok || v == cty.NilVal || v.IsNull() {
			continue
		}
		if isID && v.IsKnown() && v.Type() == cty.String && v.AsString() == r.Name {
			continue
		}
		sv := ShownValue{Property: prop.Name, Value: s.desired(prop.Name, v)}
		if isID {
			ids = append(ids, sv)
		} else {
			rest = append(rest, sv)
		}
	}
	// A value the schema does not know is still what the plan sets: apply
	// refuses it, and the reviewer sees it.
	for _, k := range slices.Sorted(maps.Keys(r.Desired)) {
		if s.schema.Property(k) == nil {
			rest = append(rest, ShownValue{Property: k, Value: s.desired(k, r.Desired[k].Value) + " (not a property of " + r.Type + ": apply refuses this plan)"})
		}
	}
	return append(ids, rest...)
}

// change derives one property change from Desired (or the schema's
// default, or the value the type planned from the host) and Current, with
// the type's note.
func (s *Shown) change(pc Change) ShownChange {
	c := s.changeValues(pc)
	if pc.Note != "" && !c.Sensitive {
		c.DiffNote = strings.TrimPrefix(c.DiffNote+"; "+pc.Note, "; ")
	}
	return c
}

func (s *Shown) changeValues(pc Change) ShownChange {
	r := s.Resource
	name := pc.Property
	c := ShownChange{Property: name, Sensitive: s.IsSensitive(name)}
	prop := s.property(name)

	after := cty.NilVal
	if pc.Planned != nil && pc.Planned.Value != cty.NilVal {
		after = pc.Planned.Value
	} else if isSet(r.Desired, name) {
		after = r.Desired[name].Value
	} else if r.Kind == resources.Create && prop != nil && prop.Default != cty.NilVal && !prop.Default.IsNull() {
		after, c.Default = prop.Default, true
	}
	if after == cty.NilVal {
		c.After = "(not set)"
	} else {
		c.After = s.desired(name, after)
	}

	var live StoredValue
	hasLive := false
	if cur := r.Current; cur != nil && cur.Exists && r.Kind != resources.Create {
		live, hasLive = cur.Values[name]
	}
	if hasLive {
		c.Before = s.live(name, live)
	}

	if prop == nil || !prop.Content {
		return c
	}
	if c.Sensitive {
		c.DiffNote = "sensitive content is not shown"
		return c
	}
	afterText, ok := stringOf(after)
	if !ok {
		c.DiffNote = "content is not text: no diff shown"
		return c
	}
	if !diffable(afterText) {
		_, c.DiffNote = ContentDiff("", afterText)
		return c
	}
	beforeText, known := "", true
	if hasLive {
		beforeText, known = live.Text()
	}
	if hasLive && live.Private != "" {
		// The live content may not be shown; what apply writes may.
		c.Diff, _ = ContentDiff("", afterText)
		c.DiffNote = live.Private + "; the diff shows the planned content in full"
		if c.Diff == "" {
			c.DiffNote = live.Private + "; the planned content is empty"
		}
		return c
	}
	if known && diffable(beforeText) {
		c.Diff, c.DiffNote = ContentDiff(beforeText, afterText)
		return c
	}
	// No diff can be made from the live content, but the reviewer still
	// sees, in full, what apply will write.
	why := "is binary"
	switch {
	case !known && live.Size > MaxDiffSize:
		why = "is larger than 1 MiB and not in the plan"
	case !known:
		why = "is not in the plan (binary, or larger than 1 MiB)"
	case len(beforeText) > MaxDiffSize:
		why = "is larger than 1 MiB"
	}
	c.Diff, _ = ContentDiff("", afterText)
	if c.Diff == "" {
		c.DiffNote = "the live content " + Summary(live.Size, live.Digest) + " " + why + "; the planned content is empty"
	} else {
		c.DiffNote = "the live content " + Summary(live.Size, live.Digest) + " " + why + ": the diff shows the planned content in full"
	}
	return c
}

// diffable reports text a diff can show.
func diffable(s string) bool { return !isBinary(s) && len(s) <= MaxDiffSize }

func specAt(specs []*guard.Spec, i int) *guard.Spec {
	if i < len(specs) && specs[i] != nil {
		return specs[i]
	}
	// Read refuses a plan with a result and no guard; this is for plans
	// made in memory.
	return &guard.Spec{Kind: guard.OnlyIf, Form: guard.Expression, Source: "(a guard missing from the plan)"}
}

// showGuard derives a guard's display from its spec and outcome. What it
// ran with (cwd, environment, user) is the spec's: what apply runs.
func showGuard(spec *guard.Spec, g GuardResult, sensitive bool) ShownGuard {
	if sensitive && !spec.Sensitive {
		c := *spec
		c.Sensitive = true
		spec = &c
	}
	sg := ShownGuard{
		Kind: string(spec.Kind), Form: string(spec.Form), Command: spec.Source, Interpreter: spec.Interpreter,
		Inherited: spec.Inherited, ExitCode: g.ExitCode, DurationMS: g.DurationMS, Output: g.Output,
		Passed: g.Passed, Decided: g.Decided, Warning: g.Warning, Verdict: spec.Verdict(g.Passed),
		Group: spec.Group,
	}
	if spec.AtApply {
		sg.AtApply = true
		sg.Now = guard.NowWord(spec.Kind, spec.Form, g.Passed)
		if g.Error != "" {
			sg.Now = "cannot run now: " + g.Error
			if spec.Sensitive {
				sg.Now = "cannot run now"
			}
		}
		sg.Verdict = "decided at apply: " + spec.Describe() + " (" + sg.Now + ")"
	}
	if spec.Form == guard.Script {
		sg.Params = guardParams(spec)
		sg.Cwd = guardString(spec, "cwd")
		sg.User = guardString(spec, "user")
		if ev := spec.Values["environment"].Value; ev != cty.NilVal && ev.IsWhollyKnown() && !ev.IsNull() && (ev.Type().IsMapType() || ev.Type().IsObjectType()) {
			sg.Environment = map[string]string{}
			for k, e := range ev.AsValueMap() {
				if text, ok := stringOf(e); ok {
					sg.Environment[k] = text
				} else {
					sg.Environment[k] = DisplayValue(e)
				}
			}
		}
	}
	if spec.Sensitive {
		sg.Command, sg.Output = Sensitive, ""
		if sg.Cwd != "" {
			sg.Cwd = Sensitive
		}
		if sg.User != "" {
			sg.User = Sensitive
		}
		for k := range sg.Environment {
			sg.Environment[k] = Sensitive
		}
		for i := range sg.Params {
			sg.Params[i].Value = Sensitive
		}
	}
	return sg
}

// guardParamOrder is the order guard parameters are shown in; others
// follow by name.
var guardParamOrder = []string{"cwd", "environment", "user", "group", "path", "umask"}

// guardParams lists what a script guard runs with: every value of its spec
// but the script (Read checks it is the spec's Source) and a timeout that is
// the default.
func guardParams(spec *guard.Spec) []ShownValue {
	skip := func(k string, v cty.Value) bool {
		switch k {
		case "code", "command":
			return runsSource(v, spec.Source)
		case "timeout":
			return v.Type() == cty.Number && v.RawEquals(cty.NumberIntVal(int64(guard.DefaultTimeout.Seconds())))
		case "convert_boolean_return":
			return spec.Interpreter == "powershell_script" && v.RawEquals(cty.True)
		}
		return false
	}
	keys := slices.Sorted(maps.Keys(spec.Values))
	sort.SliceStable(keys, func(i, j int) bool { return paramRank(keys[i]) < paramRank(keys[j]) })
	var out []ShownValue
	for _, k := range keys {
		v := spec.Values[k].Value
		if v == cty.NilVal || v.IsNull() || skip(k, v) {
			continue
		}
		out = append(out, ShownValue{Property: k, Value: paramDisplay(v)})
	}
	return out
}

func paramRank(k string) int {
	for i, o := range guardParamOrder {
		if o == k {
			return i
		}
	}
	return len(guardParamOrder)
}

// paramDisplay shows a guard parameter as a shell user reads it: a string
// as it is, a map as NAME=VALUE pairs, a list of strings space-separated.
func paramDisplay(v cty.Value) string {
	if text, ok := stringOf(v); ok {
		return text
	}
	if v.IsWhollyKnown() && (v.Type().IsMapType() || v.Type().IsObjectType()) {
		m := v.AsValueMap()
		parts := make([]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			e, ok := stringOf(m[k])
			if !ok {
				e = DisplayValue(m[k])
			}
			parts = append(parts, k+"="+e)
		}
		return strings.Join(parts, " ")
	}
	if v.IsWhollyKnown() && (v.Type().IsListType() || v.Type().IsTupleType()) {
		var parts []string
		for _, e := range v.AsValueSlice() {
			text, ok := stringOf(e)
			if !ok {
				return DisplayValue(v)
			}
			parts = append(parts, text)
		}
		return strings.Join(parts, " ")
	}
	return DisplayValue(v)
}

func guardString(spec *guard.Spec, name string) string {
	v, ok := spec.Values[name]
	if !ok {
		return ""
	}
	if text, ok := stringOf(v.Value); ok {
		return text
	}
	if v.Value == cty.NilVal || !v.Value.IsKnown() || v.Value.IsNull() {
		return ""
	}
	return DisplayValue(v.Value)
}

// Why composes r's reason from what apply uses: the type's own words
// (StepReason), the verdicts of the guards apply evaluates (GuardSpecs
// with their plan-time conditions), and, for an action-nothing resource,
// whether this plan has a notified run of it.
func (p *Plan) Why(r *Resource) string {
	if r.Action == "nothing" && r.Kind == resources.NoOp {
		for _, nr := range p.NotifiedRuns {
			if nr != nil && nr.Address == r.Address {
				return ReasonNothing
			}
		}
		return ReasonNotNotified
	}
	why := composeReason(r.Kind, r.StepReason, r.Guards, r.GuardSpecs, r.Sensitive)
	if r.Kind == resources.Update && len(r.Lazy) > 0 {
		for _, c := range r.Changes {
			if r.Lazy[c.Property] != nil {
				return why + " (values known only at apply: it may turn out unchanged)"
			}
		}
	}
	return why
}

// WhyNotified composes a notified run's reason as Why does, after "notified
// by NOTIFIERS (TIMING)".
func (p *Plan) WhyNotified(nr *NotifiedRun) string {
	sensitive := false
	for _, r := range p.Resources {
		if r.Address == nr.Address {
			sensitive = r.Sensitive
			break
		}
	}
	return NotifiedReason(nr.Notifiers, nr.Timing, nr.Kind, composeReason(nr.Kind, nr.StepReason, nr.Guards, nr.GuardSpecs, sensitive))
}

// ComposeReason is the reason the planner records for a step of kind from
// the type's reason and the guards evaluated: the deciding guard's verdict
// for a skip; the type's reason and every guard's verdict for a guarded
// run; otherwise the type's reason. Plan.Why composes it again when a plan
// is shown.
func ComposeReason(kind resources.Kind, stepReason string, guards []GuardResult, specs []*guard.Spec, sensitive bool) string {
	return composeReason(kind, stepReason, guards, specs, sensitive)
}

func composeReason(kind resources.Kind, stepReason string, guards []GuardResult, specs []*guard.Spec, sensitive bool) string {
	switch {
	case kind == resources.Skip:
		for i, g := range guards {
			if g.Decided {
				return showGuard(specAt(specs, i), g, sensitive).Verdict
			}
		}
		return "skipped by a guard"
	case kind == resources.Run && len(guards) > 0:
		// The verdicts of the guards decided at plan; those decided at
		// apply are shown apart (they decided nothing yet).
		var vs []string
		atApply := false
		for i, g := range guards {
			spec := specAt(specs, i)
			if spec.AtApply {
				atApply = true
				continue
			}
			vs = append(vs, showGuard(spec, g, sensitive).Verdict)
		}
		v := strings.Join(vs, ", ")
		switch {
		case v == "" && atApply && stepReason == resources.NoGuardReason:
			return ""
		case v == "":
			return stepReason
		case stepReason == "" || stepReason == resources.NoGuardReason:
			return v
		}
		return stepReason + "; " + v
	}
	return stepReason
}

// IncomingEdges lists, by target address, the incoming notification edges
// of p's resources: the Notifications that name them, in plan order. It is
// what Resource.NotifiedBy holds, derived from what apply uses.
func (p *Plan) IncomingEdges() map[string][]Trigger {
	out := map[string][]Trigger{}
	for _, r := range p.Resources {
		if r == nil {
			continue
		}
		for _, n := range r.Notifications {
			out[n.Target] = append(out[n.Target], Trigger{Notifier: r.Address, Action: n.Action, Timing: n.Timing, Subscribe: n.Subscribe})
		}
	}
	return out
}

// ContentDiff is the unified diff (hunks only, without the ---/+++ header)
// from before to after, or, when either side is binary (a NUL byte or
// invalid UTF-8) or larger than MaxDiffSize, no diff and a note saying why.
func ContentDiff(before, after string) (diff, note string) {
	if isBinary(before) || isBinary(after) {
		return "", "binary content: no diff shown"
	}
	if len(before) > MaxDiffSize || len(after) > MaxDiffSize {
		return "", "content larger than 1 MiB: no diff shown"
	}
	if before == after {
		return "", ""
	}
	u, err := udiff.ToUnified("current", "planned", before, udiff.Lines(before, after), udiff.DefaultContextLines)
	if err != nil {
		return "", fmt.Sprintf("no diff: %v", err)
	}
	// Drop the two header lines: the plan names the resource already.
	for range 2 {
		if strings.HasPrefix(u, "--- ") || strings.HasPrefix(u, "+++ ") {
			if i := strings.IndexByte(u, '\n'); i >= 0 {
				u = u[i+1:]
			}
		}
	}
	return u, ""
}
