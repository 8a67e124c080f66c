package hcltype

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/commands"
	"github.com/toquehq/toque/resources/internal/props"
)

// How a custom type's scripts are run (see docs/resource-authors.md):
//
// load_current_value gets the seed's fresh resource — the identity and
// desired_state = false properties the recipe set (and their defaults),
// and "name", the resource's name, unless a property has that name — as
// one JSON object on standard input and as environment variables
// PROP_<NAME> (upper case; a string as it is, anything else as JSON;
// secrets — Resource.IsSecret — on standard input only). It prints one JSON object:
// the desired-state properties it read, or {"exists": false} when the
// thing does not exist (Chef's current_value_does_not_exist!). With batch
// = true it gets a JSON array of such objects and prints an array of as
// many answers, in order.
//
// converge_if_changed and converge_by scripts get, on standard input,
// {"name", "action", "exists", "desired", "current", "changed", "values"}:
// desired holds what the recipe set, current what load_current_value read
// (null when the thing does not exist), changed the properties this step
// converges that differ, and values each property's effective value —
// the seed's rule: the value the recipe set, else the live value, else
// (when creating) the default. PROP_<NAME> holds the effective values,
// CHANGED_PROPERTIES the changed names (space-separated), CURRENT_EXISTS
// "true" or "false", RESOURCE_NAME and RESOURCE_ACTION the name and the
// action.

// maxScriptOutput is how much a load_current_value may print on its
// standard output. It is read into a shellexec.LimitedBuffer: toque holds
// at most that much, however much a script prints, and stops reading
// past it. Standard error, and the output of converge scripts, is kept
// as a tail for messages only (shellexec's default).
const maxScriptOutput = 64 << 20

// loadInput is the JSON object load_current_value gets for r (a
// LoadView), and the environment variables that carry it.
func (t *customType) loadInput(r *resources.Resource) (map[string]cty.Value, map[string]string) {
	in := map[string]cty.Value{}
	env := map[string]string{}
	if t.schema.Property("name") == nil {
		in["name"] = cty.StringVal(r.Name)
		env["PROP_NAME"] = r.Name
	}
	for _, p := range t.schema.Properties {
		if p.IsDesiredState() && !p.LoadInput {
			continue
		}
		v := r.Get(p.Name)
		if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
			continue
		}
		in[p.Name] = v
		if !r.IsSecret(p.Name) {
			if s, err := envValue(v); err == nil {
				env[resources.PropEnv(p.Name)] = s
			}
		}
	}
	return in, env
}

// envValue is v as an environment variable: a string as it is, anything
// else as JSON.
func envValue(v cty.Value) (string, error) {
	if v.Type() == cty.String {
		return v.AsString(), nil
	}
	b, err := resources.JSONValue(v)
	return string(b), err
}

// jsonObject encodes values as one JSON object, keys sorted.
func jsonObject(values map[string]cty.Value) ([]byte, error) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := resources.JSONValue(values[k])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", k, err)
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// where names the type's script for messages: "load_current_value of
// kv_setting (types.hcl:12:3)".
func (t *customType) where(what string, s *resources.ScriptDef) string {
	return fmt.Sprintf("%s of %s (%s)", what, t.def.Name, s.Source)
}

// scriptSpec is the process of script s (its CommandSpec), without its
// input: the same for every resource, so New makes it once.
func scriptSpec(reg *resources.Registry, s *resources.ScriptDef, defaultTimeout int) (shellexec.Spec, error) {
	runner, ok := reg.Runner(s.Type)
	if !ok {
		return shellexec.Spec{}, fmt.Errorf("the script runs as %q, which is not a script type", s.Type)
	}
	values := make(map[string]cty.Value, len(s.Values)+1)
	for k, v := range s.Values {
		values[k] = v.Value
	}
	if _, set := values["timeout"]; !set && defaultTimeout > 0 {
		values["timeout"] = cty.NumberIntVal(int64(defaultTimeout))
	}
	spec, err := runner.CommandSpec(resources.NewResource(runner.Schema(), "script", "run", values))
	if err != nil {
		return spec, err
	}
	spec.Returns = []int{0}
	return spec, nil
}

// spec is the process of script s for one run: stdin on its standard
// input, env in its environment (under the script's own environment
// attribute, which wins).
func (t *customType) spec(s *resources.ScriptDef, stdin []byte, env map[string]string) (shellexec.Spec, error) {
	spec, ok := t.specs[s]
	if !ok {
		return spec, fmt.Errorf("the script at %s is not one of the type's", s.Source)
	}
	merged := make(map[string]string, len(env)+len(spec.Env))
	for k, v := range env {
		merged[k] = v
	}
	for k, v := range spec.Env {
		merged[k] = v
	}
	spec.Env = merged
	spec.Stdin = stdin
	return spec, nil
}

// Run runs script s. stdout, when not nil, gets its standard output (a
// load_current_value, whose output is parsed): a script that prints more
// than stdout's Max is stopped there, and Run says so. Otherwise only the
// tail of its output is kept, for the error of a script that fails.
func (t *customType) Run(ctx context.Context, what string, s *resources.ScriptDef, stdin []byte, env map[string]string, logger hclog.Logger, sensitive bool, stdout *shellexec.LimitedBuffer) error {
	spec, err := t.spec(s, stdin, env)
	if err != nil {
		return fmt.Errorf("%s cannot run: %w", t.where(what, s), err)
	}
	spec.Logger = logger
	if stdout != nil {
		spec.Stdout = stdout
	}
	if sensitive || t.sensitive {
		spec = shellexec.Private(spec)
		spec.Sensitive = true
	}
	res, err := shellexec.Run(ctx, spec)
	if stdout != nil && stdout.Over() {
		// Whatever it did once toque stopped reading (EPIPE, SIGPIPE).
		return fmt.Errorf("%s printed more than %d bytes on its standard output, the most a reading may print: toque stopped reading there", t.where(what, s), stdout.Max)
	}
	if err != nil {
		var te *shellexec.TimeoutError
		if errors.As(err, &te) {
			return fmt.Errorf("%s did not finish within %s; its process group was killed. Make it faster, or give it a longer timeout: %w", t.where(what, s), te.Timeout, commands.DescribeRunError(spec, res, err))
		}
		return fmt.Errorf("%s failed: %w", t.where(what, s), commands.DescribeRunError(spec, res, err))
	}
	return nil
}

// runLoad runs load_current_value and returns its standard output.
func (t *customType) runLoad(ctx context.Context, stdin []byte, env map[string]string) ([]byte, error) {
	out := &shellexec.LimitedBuffer{Max: maxScriptOutput}
	if err := t.Run(ctx, resources.KeywordLoadCurrentValue, t.def.Load, stdin, env, nil, false, out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Load runs load_current_value for r (a LoadView).
func (t *customType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading "+r.Address()); err != nil {
		return nil, err
	}
	if t.def.Load == nil {
		// No way to read it: it exists, and every set property differs.
		return &resources.State{Exists: true, Values: map[string]cty.Value{}}, nil
	}
	if t.def.Batch {
		states, err := t.loadAll(ctx, []*resources.Resource{r})
		if err != nil {
			return nil, err
		}
		return states[0], nil
	}
	in, env := t.loadInput(r)
	stdin, err := jsonObject(in)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding its input: %w", t.where(resources.KeywordLoadCurrentValue, t.def.Load), err)
	}
	out, err := t.runLoad(ctx, stdin, env)
	if err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(out)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%s printed %s, which is not a JSON object: it prints the properties it read, as {\"content\": \"…\"}, or {\"exists\": false}", t.where(resources.KeywordLoadCurrentValue, t.def.Load), quoteOutput(raw))
	}
	return t.parseState(raw, in, "")
}

// LoadAll runs the batch load_current_value once for every resource of rs.
func (t *batchCustomType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	states, err := t.loadAll(ctx, rs)
	var te *shellexec.TimeoutError
	if err != nil && len(rs) > 1 && errors.As(err, &te) {
		t.mu.Lock()
		t.timedOut = fmt.Errorf("reading every %s resource at once: %w", t.def.Name, err)
		t.mu.Unlock()
	}
	return states, err
}

// Load reads one resource: a batch of one, unless a batch already ran out
// of time.
func (t *batchCustomType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	t.mu.Lock()
	err := t.timedOut
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return t.customType.Load(ctx, r)
}

func (t *customType) loadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	if err := props.CtxErr(ctx, "reading "+t.def.Name+" resources"); err != nil {
		return nil, err
	}
	where := t.where(resources.KeywordLoadCurrentValue, t.def.Load)
	ins := make([]map[string]cty.Value, len(rs))
	var b bytes.Buffer
	b.WriteByte('[')
	for i, r := range rs {
		ins[i], _ = t.loadInput(r)
		o, err := jsonObject(ins[i])
		if err != nil {
			return nil, fmt.Errorf("%s: encoding the input of %s: %w", where, r.Address(), err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o)
	}
	b.WriteByte(']')
	out, err := t.runLoad(ctx, b.Bytes(), map[string]string{"BATCH_SIZE": fmt.Sprint(len(rs))})
	if err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(out)
	var answers []child
	if len(raw) > 0 && raw[0] == '[' && json.Valid(raw) {
		answers, err = scanJSON(raw, false)
	}
	if len(raw) == 0 || raw[0] != '[' || !json.Valid(raw) || err != nil {
		return nil, fmt.Errorf("%s (batch = true) printed %s, which is not a JSON array: it gets an array of resources and prints an array of as many answers, in order", where, quoteOutput(raw))
	}
	if len(answers) != len(rs) {
		return nil, fmt.Errorf("%s (batch = true) printed %d answers for %d resources: it prints one answer per resource, in the order it got them", where, len(answers), len(rs))
	}
	states := make([]*resources.State, len(rs))
	for i, ans := range answers {
		a := ans.value
		if len(a) == 0 || a[0] != '{' {
			return nil, fmt.Errorf("%s (batch = true): answer %d (for %s) is %s, not a JSON object", where, i+1, rs[i].Address(), quoteOutput(a))
		}
		st, err := t.parseState(a, ins[i], rs[i].Address())
		if err != nil {
			return nil, err
		}
		states[i] = st
	}
	return states, nil
}

// quoteOutput shows what a script printed, shortened.
func quoteOutput(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// shortJSON shows a JSON value a script printed, shortened.
func shortJSON(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// parseState turns one answer of load_current_value into a State. in is
// the input it got; for is the resource's address in a batch ("" for one
// resource).
func (t *customType) parseState(raw []byte, in map[string]cty.Value, forAddr string) (*resources.State, error) {
	where := t.where(resources.KeywordLoadCurrentValue, t.def.Load)
	if forAddr != "" {
		where += " for " + forAddr
	}
	members, err := scanAnswer(raw)
	if err != nil {
		var dk *duplicateKeyError
		switch {
		case errors.As(err, &dk):
			return nil, fmt.Errorf("%s %w", where, err)
		case errors.Is(err, errMoreThanOne):
			return nil, fmt.Errorf("%s printed more than one JSON value; it prints one object", where)
		}
		return nil, fmt.Errorf("%s printed %s, which is not a JSON object: %v", where, quoteOutput(raw), err)
	}
	obj := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		obj[m.key] = m.value
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}}
	if e, ok := obj["exists"]; ok {
		var exists bool
		if err := json.Unmarshal(e, &exists); err != nil {
			return nil, fmt.Errorf("%s printed \"exists\": %s; it is true or false", where, shortJSON(e))
		}
		if !exists {
			return resources.Absent(), nil
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if k != "exists" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := t.schema.Property(k)
		if p == nil {
			if k == "name" {
				continue // the input's name, printed back
			}
			var names []string
			for _, q := range t.schema.Properties {
				names = append(names, q.Name)
			}
			return nil, fmt.Errorf("%s printed the property %q, which %s does not declare.%s Its properties are %s", where, k, t.def.Name, words.DidYouMean(k, names), words.Quoted(names))
		}
		v, err := decodeJSON(obj[k], p.Type)
		if err != nil {
			return nil, fmt.Errorf("%s printed %q: %s, which is not a %s: %v", where, k, shortJSON(obj[k]), typeName(p.Type), err)
		}
		if v.IsNull() {
			continue // not read
		}
		if !p.IsDesiredState() && !p.LoadInput {
			// Identity and desired_state = false properties come from
			// the resource (the seed copies them into the current
			// value); printed back unchanged, they are ignored.
			if iv, ok := in[k]; ok && p.Equals(iv, v) {
				continue
			}
			return nil, fmt.Errorf("%s printed %q, an identity or desired_state = false property, with another value than it was given: load_current_value reads the desired-state properties only", where, k)
		}
		st.Values[k] = v
	}
	return st, nil
}

// typeName words a type for messages: "string", "list of string".
func typeName(ty cty.Type) string { return ty.FriendlyName() }

// Steps run the scripts of the groups step lists, in the action's order.
// Child resources are apply's: it converges each where Sequence puts it,
// converging one group at a time.
func (t *customType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *customType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	action := desired.Action
	a := t.def.Action(action)
	if a == nil {
		return resources.UnknownAction(t.schema, action)
	}
	var logger hclog.Logger = hclog.NewNullLogger()
	sensitive := false
	if env != nil {
		if env.Logger != nil {
			logger = env.Logger
		}
		sensitive = env.Sensitive
	}
	groups := t.groups[action]
	for i, s := range a.Steps {
		if s.Kind == resources.StepResource || !step.HasGroup(groups[i]) {
			continue
		}
		if err := props.CtxErr(ctx, "converging "+desired.Address()); err != nil {
			return err
		}
		stdin, envs, err := t.convergeInput(desired, current, step, s, sensitive)
		if err != nil {
			return fmt.Errorf("%s: %w", t.where(s.Label(), s.Script), err)
		}
		if err := t.Run(ctx, s.Label(), s.Script, stdin, envs, logger.With("step", groups[i]), sensitive, nil); err != nil {
			return err
		}
	}
	return nil
}

// convergeInput is what a converge script of step s gets: its JSON input
// and its environment variables (none of the values of a sensitive
// resource, or of a secret value (Resource.IsSecret): those are on
// standard input only).
func (t *customType) convergeInput(desired *resources.Resource, current *resources.State, step *resources.Step, s *resources.StepDef, sensitive bool) ([]byte, map[string]string, error) {
	covered := t.covered(s)
	var changed []string
	for _, c := range step.Changes {
		if s.Kind != resources.StepConvergeIfChanged || slices.Contains(covered, c.Property) {
			changed = append(changed, c.Property)
		}
	}
	values := map[string]cty.Value{}
	env := map[string]string{
		"RESOURCE_NAME":      desired.Name,
		"RESOURCE_ACTION":    desired.EffectiveAction(),
		"CURRENT_EXISTS":     fmt.Sprint(current.Exists),
		"CHANGED_PROPERTIES": strings.Join(changed, " "),
	}
	if t.schema.Property("name") == nil {
		values["name"] = cty.StringVal(desired.Name)
		env["PROP_NAME"] = desired.Name
	}
	for _, p := range t.schema.Properties {
		v := desired.Values[p.Name]
		if !desired.IsSet(p.Name) {
			v = cty.NilVal
			if lv, ok := current.Values[p.Name]; ok && current.Exists && p.IsDesiredState() {
				v = lv // desired = actual: an unset property keeps its live value
			} else if p.Default != cty.NilVal && (!current.Exists || !p.IsDesiredState()) {
				v = p.Default
			}
		}
		if v == cty.NilVal || v.IsNull() {
			continue
		}
		values[p.Name] = v
		if !desired.IsSecret(p.Name) && !sensitive {
			if s, err := envValue(v); err == nil {
				env[resources.PropEnv(p.Name)] = s
			}
		}
	}
	desiredObj, err := jsonObject(desired.Values)
	if err != nil {
		return nil, nil, err
	}
	valuesObj, err := jsonObject(values)
	if err != nil {
		return nil, nil, err
	}
	currentObj := []byte("null")
	if current.Exists {
		if currentObj, err = jsonObject(current.Values); err != nil {
			return nil, nil, err
		}
	}
	if changed == nil {
		changed = []string{}
	}
	changedJSON, _ := json.Marshal(changed)
	nameJSON, _ := json.Marshal(desired.Name)
	actionJSON, _ := json.Marshal(desired.EffectiveAction())
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"name":%s,"action":%s,"exists":%t,"desired":%s,"current":%s,"changed":%s,"values":%s}`,
		nameJSON, actionJSON, current.Exists, desiredObj, currentObj, changedJSON, valuesObj)
	return b.Bytes(), env, nil
}
