package views

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// JSONViewVersion is the version of the `toque show -json` format
// (docs/plan-json.md). The minor version grows when fields are added; the
// major version changes only when a field changes meaning or is removed.
const JSONViewVersion = "1.9"

// The view types below are the documented machine format. They are kept
// apart from the plan file model so that either can change without silently
// changing the other.

type jsonView struct {
	FormatVersion     string   `json:"format_version"`
	PlanFormatVersion int      `json:"plan_format_version"`
	ToqueVersion      string   `json:"toque_version"`
	CreatedAt         string   `json:"created_at"`
	Host              jsonHost `json:"host"`
	Digest            string   `json:"digest"`
	// SignedBy is the fingerprint of the key that signed the plan, "" when
	// it is not signed (or the plan was not read from a file).
	SignedBy     string `json:"signed_by"`
	InputsDigest string `json:"inputs_digest"`
	LockRevision string `json:"lock_revision"`
	Policy       string `json:"policy"`
	Errored      bool   `json:"errored"`
	// Diagnostics are the errors and warnings of the command that printed
	// the plan (plan -json); [] for show -json of a saved plan.
	Diagnostics []JSONDiagnostic `json:"diagnostics"`
	Errors      []string         `json:"errors"`
	Summary     jsonSummary      `json:"summary"`
	Attributes  []jsonAttribute  `json:"attributes"`
	// Data are the data blocks the plan read, with their answers (1.9).
	Data         []jsonData     `json:"data"`
	Resources    []jsonResource `json:"resources"`
	NotifiedRuns []jsonNotified `json:"notified_runs"`
	// Types are the resource types written in HCL that the resources use
	// (1.3).
	Types []jsonType `json:"types"`
	// UnfinishedApplies are the applies on this host that stopped
	// part-way (plan -json; [] for show -json) (1.6).
	UnfinishedApplies []jsonUnfinished `json:"unfinished_applies"`
}

// jsonUnfinished is an apply that stopped part-way (apply.UnfinishedApply).
type jsonUnfinished struct {
	PlanDigest  string `json:"plan_digest"`
	PlanFile    string `json:"plan_file"`
	PlanCreated string `json:"plan_created"`
	Stopped     string `json:"stopped"`
	Outcome     string `json:"outcome"`
	Report      string `json:"report"`
	Journal     string `json:"journal"`
	// NotDone is what it left undone.
	NotDone []jsonNotDone `json:"not_done"`
	// Finish says how to finish it, in words.
	Finish string `json:"finish"`
}

type jsonNotDone struct {
	Address  string `json:"address"`
	Notified bool   `json:"notified"`
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason"`
}

func viewUnfinished(us []apply.UnfinishedApply) []jsonUnfinished {
	out := make([]jsonUnfinished, 0, len(us))
	for _, u := range us {
		ju := jsonUnfinished{
			PlanDigest: u.PlanDigest, PlanFile: u.PlanFile, Outcome: u.Outcome, Report: u.Report, Journal: u.Journal,
			Stopped: u.Stopped.UTC().Format(time.RFC3339Nano), NotDone: make([]jsonNotDone, 0, len(u.NotDone)),
			Finish: finishWords(u),
		}
		if !u.PlanCreated.IsZero() {
			ju.PlanCreated = u.PlanCreated.UTC().Format(time.RFC3339Nano)
		}
		for _, s := range u.NotDone {
			ju.NotDone = append(ju.NotDone, jsonNotDone{Address: s.Address, Notified: s.Notified, Outcome: s.Outcome, Reason: s.Reason})
		}
		out = append(out, ju)
	}
	return out
}

type jsonType struct {
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	Source        string         `json:"source"`
	DefaultAction string         `json:"default_action"`
	Properties    []jsonTypeProp `json:"properties"`
	Load          *jsonScript    `json:"load_current_value"`
	Batch         bool           `json:"batch"`
	Actions       []jsonAction   `json:"actions"`
}

type jsonTypeProp struct {
	Name         string            `json:"name"`
	Type         json.RawMessage   `json:"type"`
	Description  string            `json:"description"`
	Identity     bool              `json:"identity"`
	NameProperty bool              `json:"name_property"`
	DesiredState bool              `json:"desired_state"`
	Required     bool              `json:"required"`
	Sensitive    bool              `json:"sensitive"`
	Default      json.RawMessage   `json:"default"`
	Allowed      []json.RawMessage `json:"allowed"`
	Regex        string            `json:"regex"`
}

type jsonAction struct {
	Name  string         `json:"name"`
	Steps []jsonTypeStep `json:"steps"`
}

type jsonTypeStep struct {
	Kind        string      `json:"kind"`
	Group       string      `json:"group"`
	Properties  []string    `json:"properties"`
	Description string      `json:"description"`
	When        string      `json:"when"`
	Resource    string      `json:"resource"`
	Script      *jsonScript `json:"script"`
	Source      string      `json:"source"`
}

type jsonScript struct {
	Interpreter string            `json:"interpreter"`
	Code        string            `json:"code"`
	Parameters  map[string]string `json:"parameters"`
	Source      string            `json:"source"`
}

type jsonNotified struct {
	Address     string       `json:"address"`
	Action      string       `json:"action"`
	Timing      string       `json:"timing"`
	Notifiers   []string     `json:"notifiers"`
	Runs        string       `json:"runs"`
	During      string       `json:"during"`
	Kind        string       `json:"kind"`
	Reason      string       `json:"reason"`
	Changes     []jsonChange `json:"changes"`
	Groups      []string     `json:"groups"`
	Guards      []jsonGuard  `json:"guards"`
	Fingerprint string       `json:"fingerprint"`
}

type jsonTrigger struct {
	Notifier  string `json:"notifier"`
	Action    string `json:"action"`
	Timing    string `json:"timing"`
	Subscribe bool   `json:"subscribe"`
}

// jsonData is a data block the plan read (1.9): what it read or ran, and
// its answer (null when sensitive: the plan keeps only its digest).
type jsonData struct {
	Address    string                     `json:"address"`
	Type       string                     `json:"type"`
	Name       string                     `json:"name"`
	Source     plan.Range                 `json:"source"`
	Arguments  map[string]json.RawMessage `json:"arguments"`
	Reads      string                     `json:"reads"`
	Sensitive  bool                       `json:"sensitive"`
	Answer     json.RawMessage            `json:"answer"`
	Digest     string                     `json:"digest"`
	DurationMS int64                      `json:"duration_ms"`
}

func viewData(p *plan.Plan, reg *resources.Registry) []jsonData {
	out := make([]jsonData, 0, len(p.Data))
	for _, d := range p.Data {
		if d == nil {
			continue
		}
		s := p.ShowData(reg, d)
		jd := jsonData{
			Address: d.Address, Type: d.Type, Name: d.Name, Source: d.Source,
			Arguments: make(map[string]json.RawMessage, len(d.Arguments)),
			Reads:     s.Reads, Sensitive: d.Sensitive, Answer: json.RawMessage(`null`),
			Digest: d.Digest, DurationMS: d.DurationMS,
		}
		for k, v := range d.Arguments {
			jd.Arguments[k] = plainJSON(v.Value)
		}
		if !d.Sensitive && d.Answer != nil {
			jd.Answer = plainJSON(d.Answer.Value)
		}
		out = append(out, jd)
	}
	return out
}

type jsonHost struct {
	Hostname  string `json:"hostname"`
	MachineID string `json:"machine_id"`
}

type jsonSummary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Delete    int `json:"delete"`
	Run       int `json:"run"`
	Skip      int `json:"skip"`
	Unchanged int `json:"unchanged"`
	// DecidedAtApply and KnownAtApply count resources with work, also
	// counted by kind, that have a guard decided at apply, or values known
	// only at apply (1.3).
	DecidedAtApply int `json:"decided_at_apply"`
	KnownAtApply   int `json:"known_at_apply"`
}

type jsonAttribute struct {
	Path      string          `json:"path"`
	Value     json.RawMessage `json:"value"`
	Type      json.RawMessage `json:"type"`
	Level     string          `json:"level"`
	Source    string          `json:"source"`
	Sensitive bool            `json:"sensitive"`
}

type jsonResource struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	// Index is an instance's key (a string, for_each) or index (a
	// number, count); absent for a resource of a block with neither
	// (1.7).
	Index resources.Key `json:"index,omitzero"`
	// Parent and ParentAction name, for a child resource, the resource
	// and the action that declare it (1.3).
	Parent          string                     `json:"parent"`
	ParentAction    string                     `json:"parent_action"`
	Source          plan.Range                 `json:"source"`
	Action          string                     `json:"action"`
	Kind            string                     `json:"kind"`
	Reason          string                     `json:"reason"`
	Sensitive       bool                       `json:"sensitive"`
	IgnoreFailure   bool                       `json:"ignore_failure"`
	Desired         map[string]json.RawMessage `json:"desired"`
	SensitiveValues []string                   `json:"sensitive_values"`
	Changes         []jsonChange               `json:"changes"`
	Unmanaged       []jsonUnmanaged            `json:"unmanaged"`
	Groups          []string                   `json:"groups"`
	Guards          []jsonGuard                `json:"guards"`
	Notifications   []jsonNotification         `json:"notifications"`
	NotifiedBy      []jsonTrigger              `json:"notified_by"`
	Current         *jsonCurrent               `json:"current"`
	Fingerprint     string                     `json:"fingerprint"`
	// Then are the resource's further actions (action = ["enable",
	// "start"]), each planned from the state the previous one leaves.
	Then []jsonStep `json:"then"`
	// KnownAtApply are the values known only at apply, which desired does
	// not hold (1.3).
	KnownAtApply []jsonLazy `json:"known_at_apply"`
	// Awaits are the values the resource type knows only at apply (1.5).
	Awaits []jsonAwait `json:"awaits"`
	// Provided says where what the resource needs comes from when an
	// earlier step brings it (a package's directory) (1.6).
	Provided []string `json:"provided"`
}

// jsonAwait is a value a resource type knows only at apply: what it
// waits for, and the earlier resources that provide it.
type jsonAwait struct {
	Property string   `json:"property"`
	Needs    string   `json:"needs"`
	After    []string `json:"after"`
}

type jsonLazy struct {
	Property   string            `json:"property"`
	Expression string            `json:"expression"`
	Template   string            `json:"template"`
	Variables  string            `json:"variables"`
	Source     plan.Range        `json:"source"`
	Sensitive  bool              `json:"sensitive"`
	Reads      map[string]string `json:"reads"`
	After      []string          `json:"after"`
}

type jsonStep struct {
	Action  string       `json:"action"`
	Kind    string       `json:"kind"`
	Reason  string       `json:"reason"`
	Changes []jsonChange `json:"changes"`
	Groups  []string     `json:"groups"`
}

type jsonChange struct {
	Property  string `json:"property"`
	Before    string `json:"before"`
	After     string `json:"after"`
	Default   bool   `json:"default"`
	Sensitive bool   `json:"sensitive"`
	Diff      string `json:"diff"`
	DiffNote  string `json:"diff_note"`
	// KnownAtApply marks a value known only at apply (1.3).
	KnownAtApply bool `json:"known_at_apply"`
}

type jsonUnmanaged struct {
	Property string `json:"property"`
	Current  string `json:"current"`
}

type jsonGuard struct {
	Kind        string            `json:"kind"`
	Form        string            `json:"form"`
	Command     string            `json:"command"`
	Interpreter string            `json:"interpreter"`
	Cwd         string            `json:"cwd"`
	Environment map[string]string `json:"environment"`
	User        string            `json:"user"`
	Parameters  map[string]string `json:"parameters"`
	Inherited   []string          `json:"inherited"`
	ExitCode    *int              `json:"exit_code"`
	DurationMS  int64             `json:"duration_ms"`
	Output      string            `json:"output"`
	Passed      bool              `json:"passed"`
	Decided     bool              `json:"decided"`
	Warning     string            `json:"warning"`
	// DecidedAtApply marks a guard decided at apply; Now says what it says
	// now; After names the earlier resources that could change what it
	// tests (1.3).
	DecidedAtApply bool     `json:"decided_at_apply"`
	Now            string   `json:"now"`
	After          []string `json:"after"`
	// Group names the resource_group the guard is written on, "" for
	// the resource's own guard (1.7).
	Group string `json:"group"`
}

type jsonNotification struct {
	Target    string `json:"target"`
	Action    string `json:"action"`
	Timing    string `json:"timing"`
	Subscribe bool   `json:"subscribe"`
}

type jsonCurrent struct {
	Exists bool              `json:"exists"`
	Values map[string]string `json:"values"`
	Extra  map[string]string `json:"extra"`
}

// JSONOptions are what JSONView needs besides the plan.
type JSONOptions struct {
	// Diagnostics are the command's errors and warnings.
	Diagnostics []JSONDiagnostic
	// Registry holds this build's resource types. Required.
	Registry *resources.Registry
	// Digest is the plan's digest when the caller has it (the file's
	// verified checksum); "" computes it.
	Digest string
	// Signature says who signed the plan.
	Signature *SignatureInfo
	// Unfinished are the applies on this host that stopped part-way.
	Unfinished []apply.UnfinishedApply
}

// JSONView renders p in the documented, stable machine format of `toque
// show -json` (docs/plan-json.md). Like every rendering, it derives what it
// shows from the values apply uses (plan.Show). It is redacted: sensitive
// values are replaced by "(sensitive)" and the salt is left out, so the
// output is safe to paste into a review. Every list and map is present
// (empty rather than null) so consumers need no null checks.
func JSONView(p *plan.Plan, o JSONOptions) ([]byte, error) {
	diags := o.Diagnostics
	if diags == nil {
		diags = []JSONDiagnostic{}
	}
	if p == nil {
		// Planning failed before there was a plan: the diagnostics say why.
		return marshalIndent(struct {
			FormatVersion string           `json:"format_version"`
			Errored       bool             `json:"errored"`
			Diagnostics   []JSONDiagnostic `json:"diagnostics"`
		}{JSONViewVersion, true, diags})
	}
	reg, err := registryFor(p, o.Registry)
	if err != nil {
		return nil, err
	}
	digest := o.Digest
	if digest == "" {
		digest = p.Digest()
	}
	c := p.Counts()
	v := jsonView{
		FormatVersion:     JSONViewVersion,
		PlanFormatVersion: p.FormatVersion,
		ToqueVersion:      p.ToqueVersion,
		CreatedAt:         p.CreatedAt.UTC().Format(time.RFC3339Nano),
		Host:              jsonHost{Hostname: p.Host.Hostname, MachineID: p.Host.MachineID},
		Digest:            digest,
		InputsDigest:      p.InputsDigest,
		LockRevision:      p.LockRevision,
		Policy:            p.Policy,
		Errored:           p.Errored,
		Errors:            nonNil(p.Errors),
		Diagnostics:       diags,
		Summary: jsonSummary{
			Create: c.Create, Update: c.Update, Delete: c.Delete,
			Run: c.Run, Skip: c.Skip, Unchanged: c.NoOp,
			DecidedAtApply: c.DecidedAtApply, KnownAtApply: c.KnownAtApply,
		},
		Attributes:   make([]jsonAttribute, 0, len(p.Attributes)),
		Data:         viewData(p, reg),
		Resources:    make([]jsonResource, 0, len(p.Resources)),
		NotifiedRuns: make([]jsonNotified, 0, len(p.NotifiedRuns)),
		Types:        make([]jsonType, 0, len(p.Types)),

		UnfinishedApplies: viewUnfinished(o.Unfinished),
	}
	for _, d := range p.Types {
		if d != nil {
			v.Types = append(v.Types, viewType(d))
		}
	}
	if o.Signature != nil && o.Signature.Signed {
		v.SignedBy = o.Signature.Fingerprint
	}
	for _, a := range p.Attributes {
		v.Attributes = append(v.Attributes, viewAttribute(a))
	}
	incoming := p.IncomingEdges()
	for _, r := range p.Resources {
		if r == nil {
			continue
		}
		jr := viewResource(p.Show(reg, r), incoming[r.Address])
		if r.Parent != "" {
			jr.Parent = r.Parent
			for _, pr := range p.Resources {
				if pr != nil && pr.Address == r.Parent {
					jr.ParentAction = pr.StepView(r.ParentStep).Action
				}
			}
		}
		for si := 1; si < r.Steps(); si++ {
			sv := p.Show(reg, r.StepView(si))
			jr.Then = append(jr.Then, jsonStep{Action: sv.Resource.Action, Kind: string(sv.Resource.Kind), Reason: sv.Why, Changes: jsonChanges(sv.Changes), Groups: nonNil(sv.Resource.Groups)})
		}
		v.Resources = append(v.Resources, jr)
	}
	for _, nr := range p.NotifiedRuns {
		if nr != nil {
			v.NotifiedRuns = append(v.NotifiedRuns, viewNotified(p, p.ShowNotified(reg, nr), nr))
		}
	}
	return marshalIndent(v)
}

// marshalIndent encodes v as indented JSON with a final newline, leaving
// <, > and & as they are (the output is not HTML).
func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func viewAttribute(a plan.Attribute) jsonAttribute {
	out := jsonAttribute{Path: a.Path, Level: a.Level, Source: a.Source, Value: json.RawMessage(`null`), Type: json.RawMessage(`"dynamic"`), Sensitive: a.Sensitive}
	if a.Sensitive {
		return out // no value: not even its type is shown
	}
	var typed struct {
		Value json.RawMessage `json:"value"`
		Type  json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(a.Value, &typed); err == nil && len(typed.Value) > 0 && len(typed.Type) > 0 {
		out.Value, out.Type = typed.Value, typed.Type
	} else if json.Valid(a.Value) && len(a.Value) > 0 {
		out.Value = a.Value
	}
	return out
}

// jsonChanges is changes in the JSON form (sensitive content has no diff).
func jsonChanges(changes []plan.ShownChange) []jsonChange {
	out := make([]jsonChange, 0, len(changes))
	for _, c := range changes {
		jc := jsonChange{
			Property: c.Property, Before: c.Before, After: c.After,
			Default: c.Default, Sensitive: c.Sensitive, Diff: c.Diff, DiffNote: c.DiffNote,
			KnownAtApply: c.KnownAtApply,
		}
		if c.Sensitive {
			jc.Diff = ""
		}
		out = append(out, jc)
	}
	return out
}

func viewResource(s *plan.Shown, notifiedBy []plan.Trigger) jsonResource {
	r := s.Resource
	out := jsonResource{
		Address:         r.Address,
		Type:            r.Type,
		Name:            r.Name,
		Index:           r.Index,
		Source:          r.Source,
		Action:          r.Action,
		Kind:            string(r.Kind),
		Reason:          s.Why,
		Sensitive:       r.Sensitive,
		IgnoreFailure:   r.IgnoreFailure,
		Desired:         make(map[string]json.RawMessage, len(r.Desired)),
		SensitiveValues: []string{},
		Changes:         make([]jsonChange, 0, len(s.Changes)),
		Unmanaged:       make([]jsonUnmanaged, 0, len(s.Unmanaged)),
		Groups:          nonNil(r.Groups),
		Guards:          make([]jsonGuard, 0, len(s.Guards)),
		Notifications:   make([]jsonNotification, 0, len(r.Notifications)),
		NotifiedBy:      make([]jsonTrigger, 0, len(notifiedBy)),
		Fingerprint:     r.Fingerprint,
		Provided:        nonNil(r.Provided),
	}
	for _, k := range slices.Sorted(maps.Keys(r.Desired)) {
		if s.IsSensitive(k) {
			out.Desired[k] = json.RawMessage(`"` + plan.Sensitive + `"`)
			out.SensitiveValues = append(out.SensitiveValues, k)
			continue
		}
		out.Desired[k] = plainJSON(r.Desired[k].Value)
	}
	out.Changes = jsonChanges(s.Changes)
	out.Then = make([]jsonStep, 0, len(r.Then))
	out.KnownAtApply = make([]jsonLazy, 0, len(s.Lazy))
	for _, l := range s.Lazy {
		e := r.Lazy[l.Property]
		jl := jsonLazy{Property: l.Property, Expression: e.Source, Template: e.Template, Variables: e.Variables,
			Source:    plan.Range{Filename: e.Range.Filename, Line: e.Range.Start.Line, Column: e.Range.Start.Column},
			Sensitive: l.Sensitive, Reads: map[string]string{}, After: nonNil(l.After)}
		if l.Sensitive {
			jl.Expression = plan.Sensitive
		}
		for _, rd := range l.Reads {
			jl.Reads[rd.Property] = rd.Value
		}
		out.KnownAtApply = append(out.KnownAtApply, jl)
	}
	out.Awaits = make([]jsonAwait, 0, len(s.Awaits))
	for _, a := range s.Awaits {
		out.Awaits = append(out.Awaits, jsonAwait{Property: a.Property, Needs: a.What, After: nonNil(a.After)})
	}
	for _, u := range s.Unmanaged {
		out.Unmanaged = append(out.Unmanaged, jsonUnmanaged{Property: u.Property, Current: u.Value})
	}
	for _, g := range s.Guards {
		jg := jsonGuard{
			Kind: g.Kind, Form: g.Form, Command: g.Command, Interpreter: g.Interpreter,
			Cwd: g.Cwd, Environment: map[string]string{}, User: g.User, Parameters: map[string]string{}, Inherited: nonNil(g.Inherited),
			ExitCode: g.ExitCode, DurationMS: g.DurationMS, Output: g.Output,
			Passed: g.Passed, Decided: g.Decided, Warning: g.Warning,
			DecidedAtApply: g.AtApply, Now: g.Now, After: nonNil(g.After), Group: g.Group,
		}
		for k, val := range g.Environment {
			jg.Environment[k] = val
		}
		for _, p := range g.Params {
			jg.Parameters[p.Property] = p.Value
		}
		out.Guards = append(out.Guards, jg)
	}
	for _, n := range r.Notifications {
		out.Notifications = append(out.Notifications, jsonNotification{Target: n.Target, Action: n.Action, Timing: n.Timing, Subscribe: n.Subscribe})
	}
	for _, t := range notifiedBy {
		out.NotifiedBy = append(out.NotifiedBy, jsonTrigger{Notifier: t.Notifier, Action: t.Action, Timing: t.Timing, Subscribe: t.Subscribe})
	}
	if r.Current != nil {
		jc := &jsonCurrent{Exists: r.Current.Exists, Values: map[string]string{}, Extra: map[string]string{}}
		for _, cv := range s.Current {
			jc.Values[cv.Property] = cv.Value
		}
		for k, x := range r.Current.Extra {
			jc.Extra[k] = x
		}
		out.Current = jc
	}
	return out
}

// plainJSON is v as plain JSON (no type): a string, a number, an object…
// A value JSON cannot hold (unknown) is shown by its display form.
func plainJSON(v cty.Value) json.RawMessage {
	if v == cty.NilVal {
		return json.RawMessage(`null`)
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		s, _ := json.Marshal(plan.DisplayValue(v))
		return s
	}
	return b
}

// viewNotified is a planned notified run, redacted as its target is.
func viewNotified(p *plan.Plan, s *plan.Shown, nr *plan.NotifiedRun) jsonNotified {
	rv := viewResource(s, nil)
	out := jsonNotified{
		Address: nr.Address, Action: nr.Action, Timing: nr.Timing, Notifiers: nonNil(nr.Notifiers),
		Runs: "end", Kind: string(nr.Kind), Reason: s.Why,
		Changes: rv.Changes, Groups: rv.Groups, Guards: rv.Guards, Fingerprint: nr.Fingerprint,
	}
	if nr.Slot >= 0 && nr.Slot < len(p.Resources) {
		out.During = p.Resources[nr.Slot].Address
		out.Runs = "after"
		if nr.Before {
			out.Runs = "before"
		}
	}
	return out
}

// viewType is a resource type written in HCL, as the plan carries it:
// its scripts in full (they hold no secret: a type cannot use
// sensitive()), the default of a sensitive property hidden.
func viewType(d *resources.TypeDef) jsonType {
	out := jsonType{
		Name: d.Name, Description: d.Description, Source: d.Source.String(), DefaultAction: d.DefaultAction,
		Properties: []jsonTypeProp{}, Batch: d.Batch, Actions: []jsonAction{},
	}
	for _, p := range d.Properties {
		ty, _ := ctyjson.MarshalType(p.Type.Type)
		jp := jsonTypeProp{
			Name: p.Name, Type: ty, Description: p.Description, Identity: p.Identity || p.NameProperty, NameProperty: p.NameProperty,
			DesiredState: !p.NonState && !p.Identity && !p.NameProperty, Required: p.Required, Sensitive: p.Sensitive,
			Default: json.RawMessage(`null`), Allowed: []json.RawMessage{}, Regex: p.Regex,
		}
		if p.Default != nil {
			jp.Default = plainJSON(p.Default.Value)
			if p.Sensitive {
				jp.Default = json.RawMessage(`"` + plan.Sensitive + `"`)
			}
		}
		for _, a := range p.Allowed {
			jp.Allowed = append(jp.Allowed, plainJSON(a.Value))
		}
		out.Properties = append(out.Properties, jp)
	}
	if d.Load != nil {
		out.Load = viewScript(d.Load)
	}
	for _, a := range d.Actions {
		ja := jsonAction{Name: a.Name, Steps: []jsonTypeStep{}}
		groups := a.Groups()
		for i, st := range a.Steps {
			js := jsonTypeStep{Kind: st.Kind, Group: groups[i], Properties: nonNil(st.Properties), Description: st.Description,
				When: st.When, Resource: st.Resource, Source: st.Source.String()}
			if st.Kind == resources.StepConvergeBy && js.When == "" {
				js.When = resources.WhenAlways
			}
			if st.Script != nil {
				js.Script = viewScript(st.Script)
			}
			ja.Steps = append(ja.Steps, js)
		}
		out.Actions = append(out.Actions, ja)
	}
	return out
}

func viewScript(s *resources.ScriptDef) *jsonScript {
	out := &jsonScript{Interpreter: s.Type, Parameters: map[string]string{}, Source: s.Source.String()}
	for k, v := range s.Values {
		switch k {
		case "code":
			if text, ok := stringValue(v.Value); ok {
				out.Code = text
			}
		case "interpreter":
			if text, ok := stringValue(v.Value); ok {
				out.Interpreter = text
			}
		default:
			out.Parameters[k] = plan.DisplayValue(v.Value)
		}
	}
	return out
}

func stringValue(v cty.Value) (string, bool) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}
