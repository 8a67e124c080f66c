package eval

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/typedvalue"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// MetaArguments are the names every resource takes besides its type's
// properties; a property of a resource type cannot have one of them.
var MetaArguments = []string{"action", "only_if", "not_if", "guard_interpreter", "ignore_failure", "sensitive", "for_each", "count", "notifies", "subscribes"}

// reservedProperties are names a custom type's property cannot have
// besides the meta-arguments: "exists" is load_current_value's answer.
var reservedProperties = []string{"exists"}

// NewResourceVar is the variable a child resource's expressions read the
// parent's properties from: new_resource.path, as in Chef.
const NewResourceVar = "new_resource"

// Types compiles c's resource_type blocks into resource types and returns
// a registry of base's types and them. A type's expressions (defaults,
// allowed values, scripts) see the functions only, never node or host: a
// type means the same on every host; file() resolves paths against the
// type's directory. Every child resource an action declares is checked
// against its type's schema with the parent's properties unknown, so a
// mistake in a type is reported even when no recipe uses it; a type that
// contains itself, directly or through other types, is an error with the
// chain.
func Types(c *config.Config, base *resources.Registry) (*resources.Registry, hcl.Diagnostics) {
	if c == nil || len(c.Types) == 0 {
		return base, nil
	}
	var diags hcl.Diagnostics
	var types []resources.Type
	for i, tb := range c.Types {
		if tb.HasDynamic() {
			// Expanded once, in place: what follows (children, plans)
			// reads the type as its dynamic blocks make it.
			etb, d := expandTypeDynamic(tb)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			c.Types[i], tb = etb, etb
		}
		def, validators, d := compileType(c, tb, base)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		t, err := base.Define(def, validators)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid resource type",
				Detail:   fmt.Sprintf("The resource type %s: %s.", tb.Name, err),
				Subject:  tb.DeclRange.Ptr(),
			})
			continue
		}
		types = append(types, t)
	}
	diags = append(diags, typeCycles(c)...)
	reg := base.With(types...)
	if diags.HasErrors() {
		return reg, diags
	}
	for _, tb := range c.Types {
		diags = append(diags, checkChildren(c, tb, reg)...)
	}
	return reg, diags
}

// typeEvalContext is what a type's own expressions see: the functions.
func typeEvalContext(dir string) *hcl.EvalContext {
	return &hcl.EvalContext{Functions: Functions(dir)}
}

// sourcePos is where rng starts, the file named as plans name it.
func sourcePos(c *config.Config, rng hcl.Range) resources.SourcePos {
	return resources.SourcePos{Filename: c.DisplayPath(rng.Filename), Line: rng.Start.Line, Column: rng.Start.Column}
}

func compileType(c *config.Config, tb *config.TypeBlock, base *resources.Registry) (*resources.TypeDef, map[string]func(cty.Value) error, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	ctx := typeEvalContext(tb.Dir)
	def := &resources.TypeDef{Name: tb.Name, Source: sourcePos(c, tb.DeclRange)}
	validators := map[string]func(cty.Value) error{}
	if a := tb.Attrs["description"]; a != nil {
		s, d := constString(a.Expr, ctx, "description")
		diags = append(diags, d...)
		def.Description = s
	}

	envs := map[string]string{}
	nameProp := ""
	for _, pb := range tb.Properties {
		pd, validate, d := compileProperty(tb, pb, ctx)
		diags = append(diags, d...)
		if pd == nil {
			continue
		}
		if other, dup := envs[resources.PropEnv(pd.Name)]; dup {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Two properties with one environment variable",
				Detail:   fmt.Sprintf("The properties %q and %q of %s both reach scripts as %s (names differ in case only). Rename one.", other, pd.Name, tb.Name, resources.PropEnv(pd.Name)),
				Subject:  pb.LabelRange.Ptr(),
			})
			continue
		}
		envs[resources.PropEnv(pd.Name)] = pd.Name
		if pd.NameProperty {
			if nameProp != "" {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Two name properties",
					Detail:   fmt.Sprintf("The resource type %s already has the name property %q; one property defaults to the block label.", tb.Name, nameProp),
					Subject:  pb.Attrs["name_property"].Range.Ptr(),
				})
				continue
			}
			nameProp = pd.Name
		}
		if validate != nil {
			validators[pd.Name] = validate
		}
		def.Properties = append(def.Properties, pd)
	}
	if d := diags; d.HasErrors() {
		return nil, nil, diags
	}

	if tb.Load != nil {
		s, d := compileScript(c, tb.Load, ctx, base)
		diags = append(diags, d...)
		def.Load = s
		if a := tb.Load.Attrs["batch"]; a != nil {
			b, d := constBool(a.Expr, ctx, "batch")
			diags = append(diags, d...)
			def.Batch = b
		}
	}

	if len(tb.Actions) == 0 {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Resource type without actions",
			Detail:   fmt.Sprintf("The resource type %s declares no action. Declare what its resources do: action \"create\" { converge_if_changed { code = … } }.", tb.Name),
			Subject:  tb.LabelRange.Ptr(),
		})
	}
	for _, ab := range tb.Actions {
		ad, d := compileAction(c, tb, ab, def, ctx, base)
		diags = append(diags, d...)
		if ad != nil {
			def.Actions = append(def.Actions, ad)
		}
	}
	if len(def.Actions) > 0 {
		def.DefaultAction = def.Actions[0].Name
	}
	if a := tb.Attrs["default_action"]; a != nil {
		s, d := constString(a.Expr, ctx, "default_action")
		diags = append(diags, d...)
		if !d.HasErrors() {
			if def.Action(s) == nil {
				var names []string
				for _, ad := range def.Actions {
					names = append(names, ad.Name)
				}
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unknown default action",
					Detail:   fmt.Sprintf("The resource type %s has no action %q.%s Its actions are %s.", tb.Name, s, words.DidYouMean(s, names), words.Quoted(names)),
					Subject:  a.Expr.Range().Ptr(),
				})
			} else {
				def.DefaultAction = s
			}
		}
	}
	return def, validators, diags
}

// validPropertyName reports whether name may name a property: letters,
// digits and underscores.
func validPropertyName(name string) bool {
	return hclsyntax.ValidIdentifier(name) && !strings.Contains(name, "-")
}

func compileProperty(tb *config.TypeBlock, pb *config.PropertyBlock, ctx *hcl.EvalContext) (*resources.PropertyDef, func(cty.Value) error, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	bad := func(summary, detail string, rng hcl.Range) (*resources.PropertyDef, func(cty.Value) error, hcl.Diagnostics) {
		return nil, nil, diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()})
	}
	switch {
	case !validPropertyName(pb.Name):
		return bad("Invalid property name", fmt.Sprintf("%q cannot name a property: use letters, digits and underscores, starting with a letter.", pb.Name), pb.LabelRange)
	case slices.Contains(MetaArguments, pb.Name):
		return bad("Property name is a meta-argument", fmt.Sprintf("Every resource takes %q as a meta-argument (%s), so the resource type %s cannot have a property of that name. Rename the property.", pb.Name, words.Quoted(MetaArguments), tb.Name), pb.LabelRange)
	case slices.Contains(reservedProperties, pb.Name):
		return bad("Reserved property name", fmt.Sprintf("%q is how load_current_value says whether the thing exists ({\"exists\": false}), so it cannot name a property of %s. Rename the property.", pb.Name, tb.Name), pb.LabelRange)
	}
	pd := &resources.PropertyDef{Name: pb.Name}
	a := pb.Attrs["type"]
	if a == nil {
		return bad("Missing property type", fmt.Sprintf("The property %q of %s needs a type: type = string (or number, bool, list(string), map(string), object({…}), any).", pb.Name, tb.Name), pb.DeclRange)
	}
	ty, d := typeexpr.TypeConstraint(a.Expr)
	if d.HasErrors() {
		return nil, nil, append(diags, d...)
	}
	pd.Type = typedvalue.Type{Type: ty}

	flags := []struct {
		name string
		dst  *bool
		def  bool
	}{{"identity", &pd.Identity, false}, {"name_property", &pd.NameProperty, false}, {"required", &pd.Required, false},
		{"sensitive", &pd.Sensitive, false}, {"content", &pd.Content, false}}
	for _, f := range flags {
		if a := pb.Attrs[f.name]; a != nil {
			b, d := constBool(a.Expr, ctx, f.name)
			diags = append(diags, d...)
			*f.dst = b
		}
	}
	if a := pb.Attrs["desired_state"]; a != nil {
		b, d := constBool(a.Expr, ctx, "desired_state")
		diags = append(diags, d...)
		pd.NonState = !b && !d.HasErrors()
	}
	if a := pb.Attrs["description"]; a != nil {
		s, d := constString(a.Expr, ctx, "description")
		diags = append(diags, d...)
		pd.Description = s
	}
	if pd.NameProperty && ty != cty.String {
		return bad("Name property is not a string", fmt.Sprintf("The name property %q of %s defaults to the block label, a string: give it type = string.", pb.Name, tb.Name), pb.Attrs["name_property"].Range)
	}
	if pd.Content && ty != cty.String {
		return bad("Content property is not a string", fmt.Sprintf("content = true shows %q as a diff of text: give it type = string.", pb.Name), pb.Attrs["content"].Range)
	}
	if a := pb.Attrs["regex"]; a != nil {
		s, d := constString(a.Expr, ctx, "regex")
		diags = append(diags, d...)
		if !d.HasErrors() {
			if ty != cty.String {
				return bad("Regex on a property that is not a string", fmt.Sprintf("regex checks text, but %q is of type %s.", pb.Name, typeexpr.TypeString(ty)), a.Range)
			}
			if _, err := regexp.Compile(s); err != nil {
				return bad("Invalid regular expression", fmt.Sprintf("The regex of %q: %s. toque uses Go's (RE2) syntax.", pb.Name, err), a.Expr.Range())
			}
			pd.Regex = s
		}
	}
	if a := pb.Attrs["allowed"]; a != nil {
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.IsNull() || !v.IsWhollyKnown() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) || v.LengthInt() == 0 {
				return bad("Invalid allowed values", fmt.Sprintf("allowed is a list of the values %q may have: allowed = [\"a\", \"b\"].", pb.Name), a.Expr.Range())
			}
			for _, e := range v.AsValueSlice() {
				cv, err := convert.Convert(e, ty)
				if err != nil || cv.IsNull() {
					return bad("Invalid allowed values", fmt.Sprintf("An allowed value of %q is not a %s: %v.", pb.Name, typeexpr.TypeString(ty), err), a.Expr.Range())
				}
				pd.Allowed = append(pd.Allowed, typedvalue.Value{Value: cv})
			}
		}
	}
	var conditions []func(cty.Value) error
	for _, vb := range pb.Validations {
		conditions = append(conditions, conditionCheck(tb, pb.Name, vb, ctx))
	}
	var extra func(cty.Value) error
	if len(conditions) > 0 {
		extra = func(v cty.Value) error {
			for _, f := range conditions {
				if err := f(v); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if diags.HasErrors() {
		return nil, nil, diags
	}
	if a := pb.Attrs["default"]; a != nil {
		if pd.Required {
			return bad("Default of a required property", fmt.Sprintf("%q is required, so the recipe always sets it and a default would never be used. Remove one of required and default.", pb.Name), a.Range)
		}
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil, nil, diags
		}
		if v.IsNull() {
			return bad("Null default", fmt.Sprintf("A default of null is no default: leave default out of %q.", pb.Name), a.Expr.Range())
		}
		cv, err := convert.Convert(v, ty)
		if err != nil {
			return bad("Default of the wrong type", fmt.Sprintf("The default of %q must be a %s: %s.", pb.Name, typeexpr.TypeString(ty), err), a.Expr.Range())
		}
		if v.ContainsMarked() {
			return bad("Sensitive default", fmt.Sprintf("The default of %q is stored with the type in every plan: mark the property sensitive = true instead of using sensitive().", pb.Name), a.Expr.Range())
		}
		pd.Default = &typedvalue.Value{Value: cv}
	}
	// The default must pass the property's own checks.
	check := resources.PropertyDefValidator(pd, extra)
	if pd.Default != nil && check != nil {
		if err := check(pd.Default.Value); err != nil {
			return bad("Invalid default", fmt.Sprintf("The default of %q: %s.", pb.Name, err), pb.Attrs["default"].Expr.Range())
		}
	}
	return pd, extra, diags
}

// conditionCheck is a validation block as a check: condition, with
// value bound to the property's value, must be true; else error_message
// (which may read value too) is the error.
func conditionCheck(tb *config.TypeBlock, prop string, vb *config.ValidationBlock, ctx *hcl.EvalContext) func(cty.Value) error {
	where := fmt.Sprintf("%s:%d", vb.DeclRange.Filename, vb.DeclRange.Start.Line)
	return func(v cty.Value) error {
		child := ctx.NewChild()
		child.Variables = map[string]cty.Value{"value": v}
		cv, d := vb.Condition.Value(child)
		if d.HasErrors() {
			return fmt.Errorf("its validation condition (%s) failed: %s", where, d.Error())
		}
		if !cv.IsKnown() {
			return nil
		}
		if cv.IsNull() || cv.Type() != cty.Bool {
			return fmt.Errorf("its validation condition (%s) must be true or false, not %s", where, cv.Type().FriendlyName())
		}
		if cv.True() {
			return nil
		}
		mv, d := vb.ErrorMessage.Value(child)
		msg := "the value is not valid"
		if !d.HasErrors() && mv.IsKnown() && !mv.IsNull() {
			if s, err := convert.Convert(mv, cty.String); err == nil {
				msg = strings.TrimRight(s.AsString(), ".")
			}
		}
		return fmt.Errorf("%s (validation of %s at %s)", msg, tb.Name, where)
	}
}

// compileScript compiles a script block: interpreter picks the script
// type that runs it (sh when not given; a name that is not a script type
// runs with the script type, as its interpreter); the other attributes
// are that type's properties, decoded as a resource's are.
func compileScript(c *config.Config, sb *config.ScriptBlock, ctx *hcl.EvalContext, base *resources.Registry) (*resources.ScriptDef, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	s := &resources.ScriptDef{Type: "sh", Values: map[string]typedvalue.Value{}, Source: sourcePos(c, sb.DeclRange)}
	if a := sb.Attrs["interpreter"]; a != nil {
		name, d := constString(a.Expr, ctx, "interpreter")
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil, diags
		}
		if _, ok := base.Runner(name); ok && name != "script" {
			s.Type = name
		} else {
			s.Type = "script"
			s.Values["interpreter"] = typedvalue.Value{Value: cty.StringVal(name)}
		}
	}
	runner, ok := base.Runner(s.Type)
	if !ok {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No script type to run this script",
			Detail:   fmt.Sprintf("The script runs as %s, and this build of toque has no %s resource type to run it.", s.Type, s.Type),
			Subject:  sb.DeclRange.Ptr(),
		})
	}
	schema := runner.Schema()
	names := make([]string, 0, len(sb.Attrs))
	for n := range sb.Attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch n {
		case "interpreter", "batch", "properties", "when":
			continue
		}
		a := sb.Attrs[n]
		p := schema.Property(n)
		if p == nil {
			continue // the block's schema lists only run properties
		}
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if v.ContainsMarked() {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Sensitive value in a script",
				Detail:   "A type's scripts are stored in every plan and shown to reviewers: pass secrets as sensitive properties, which scripts read on standard input.",
				Subject:  a.Expr.Range().Ptr(),
			})
			continue
		}
		v, d = decodeProperty(schema, p, v, a.Expr.Range())
		diags = append(diags, d...)
		if v != cty.NilVal && !d.HasErrors() {
			if !v.IsWhollyKnown() {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Value not known",
					Detail:   fmt.Sprintf("The %s of a script must be known when the type is read; it cannot depend on the host.", n),
					Subject:  a.Expr.Range().Ptr(),
				})
				continue
			}
			s.Values[n] = typedvalue.Value{Value: v}
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	values := map[string]cty.Value{}
	for k, v := range s.Values {
		values[k] = v.Value
	}
	if _, err := runner.CommandSpec(resources.NewResource(schema, "script", "run", values)); err != nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Script cannot run",
			Detail:   fmt.Sprintf("This %s cannot run: %s.", sb.Kind, err),
			Subject:  sb.DeclRange.Ptr(),
		})
	}
	return s, diags
}

func compileAction(c *config.Config, tb *config.TypeBlock, ab *config.ActionBlock, def *resources.TypeDef, ctx *hcl.EvalContext, base *resources.Registry) (*resources.ActionDef, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if !validPropertyName(ab.Name) || ab.Name == "nothing" {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid action name",
			Detail:   fmt.Sprintf("%q cannot name an action: use letters, digits and underscores (create, delete, reload); nothing is every type's action already.", ab.Name),
			Subject:  ab.LabelRange.Ptr(),
		})
	}
	ad := &resources.ActionDef{Name: ab.Name}
	for _, it := range ab.Items {
		if it.Resource != nil {
			ad.Steps = append(ad.Steps, &resources.StepDef{Kind: resources.StepResource, Resource: it.Resource.Address(), Source: sourcePos(c, it.Resource.DeclRange)})
			continue
		}
		sb := it.Script
		script, d := compileScript(c, sb, ctx, base)
		diags = append(diags, d...)
		step := &resources.StepDef{Kind: sb.Kind, Script: script, Source: sourcePos(c, sb.DeclRange)}
		if sb.Kind == config.KeywordConvergeBy {
			step.Description = sb.Label
			if a := sb.Attrs["when"]; a != nil {
				w, d := constString(a.Expr, ctx, "when")
				diags = append(diags, d...)
				if !d.HasErrors() && !slices.Contains(resources.ConvergeByWhen, w) {
					diags = diags.Append(&hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid when",
						Detail:   fmt.Sprintf("A converge_by runs when %s, not %q.%s", words.Quoted(resources.ConvergeByWhen), w, words.DidYouMean(w, resources.ConvergeByWhen)),
						Subject:  a.Expr.Range().Ptr(),
					})
				} else if w != resources.WhenAlways {
					step.When = w
				}
			}
		}
		if a := sb.Attrs["properties"]; a != nil {
			props, d := constStrings(a.Expr, ctx, "properties")
			diags = append(diags, d...)
			for _, name := range props {
				pd := def.Property(name)
				switch {
				case pd == nil:
					var names []string
					for _, p := range def.Properties {
						names = append(names, p.Name)
					}
					diags = diags.Append(&hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Unknown property",
						Detail:   fmt.Sprintf("The resource type %s has no property %q.%s", tb.Name, name, words.DidYouMean(name, names)),
						Subject:  a.Expr.Range().Ptr(),
					})
				case pd.Identity || pd.NameProperty || pd.NonState:
					diags = diags.Append(&hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Property is not desired state",
						Detail:   fmt.Sprintf("converge_if_changed converges desired-state properties, but %q is an identity or desired_state = false property: it is never compared.", name),
						Subject:  a.Expr.Range().Ptr(),
					})
				default:
					step.Properties = append(step.Properties, name)
				}
			}
		}
		ad.Steps = append(ad.Steps, step)
	}
	return ad, diags
}

// typeCycles reports each resource type that contains itself through
// the child resources of its actions, with the chain.
func typeCycles(c *config.Config) hcl.Diagnostics {
	type edge struct {
		to  string
		rng hcl.Range
	}
	out := map[string][]edge{}
	for _, tb := range c.Types {
		for _, ab := range tb.Actions {
			for _, it := range ab.Items {
				if it.Resource != nil && c.Type(it.Resource.Type) != nil {
					out[tb.Name] = append(out[tb.Name], edge{it.Resource.Type, it.Resource.TypeRange})
				}
			}
		}
	}
	var diags hcl.Diagnostics
	reported := map[string]bool{}
	state := map[string]int{} // 0 new, 1 on the path, 2 done
	var path []string
	var visit func(t string)
	visit = func(t string) {
		state[t] = 1
		path = append(path, t)
		for _, e := range out[t] {
			switch state[e.to] {
			case 0:
				visit(e.to)
			case 1:
				i := slices.Index(path, e.to)
				chain := append(append([]string(nil), path[i:]...), e.to)
				key := strings.Join(chain, ">")
				if !reported[key] {
					reported[key] = true
					diags = diags.Append(&hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Resource type contains itself",
						Detail:   fmt.Sprintf("The resource type %s declares a child resource of type %s, which leads back to it: %s. Expanding it would never end; break the chain.", t, e.to, strings.Join(chain, " -> ")),
						Subject:  e.rng.Ptr(),
					})
				}
			}
		}
		path = path[:len(path)-1]
		state[t] = 2
	}
	for _, tb := range c.Types {
		if state[tb.Name] == 0 {
			visit(tb.Name)
		}
	}
	return diags
}

// constValue evaluates a value of type ty that a type states (no node,
// no host): want words ty for the error ("a string").
func constValue(expr hcl.Expression, ctx *hcl.EvalContext, ty cty.Type, name, want string) (cty.Value, hcl.Diagnostics) {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	v, err := convert.Convert(v, ty)
	if err != nil || v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid " + name,
			Detail:   fmt.Sprintf("%s must be %s.", name, want),
			Subject:  expr.Range().Ptr(),
		})
	}
	v, _ = v.UnmarkDeep()
	return v, diags
}

// constString evaluates a string that a type states.
func constString(expr hcl.Expression, ctx *hcl.EvalContext, name string) (string, hcl.Diagnostics) {
	v, diags := constValue(expr, ctx, cty.String, name, "a string")
	if diags.HasErrors() {
		return "", diags
	}
	return v.AsString(), diags
}

// constBool evaluates a bool that a type states.
func constBool(expr hcl.Expression, ctx *hcl.EvalContext, name string) (bool, hcl.Diagnostics) {
	v, diags := constValue(expr, ctx, cty.Bool, name, "true or false")
	if diags.HasErrors() {
		return false, diags
	}
	return v.True(), diags
}

// constStrings evaluates a list of strings that a type states.
func constStrings(expr hcl.Expression, ctx *hcl.EvalContext, name string) ([]string, hcl.Diagnostics) {
	v, diags := constValue(expr, ctx, cty.List(cty.String), name, "a list of strings")
	if diags.HasErrors() {
		return nil, diags
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		if !e.IsNull() {
			out = append(out, e.AsString())
		}
	}
	return out, diags
}
