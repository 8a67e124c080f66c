package eval

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
)

// DataVar is the variable recipes read data blocks through:
// data.TYPE.NAME.result.
const DataVar = config.DataKeyword

// dataSensitiveArg is the argument every data block takes besides its data
// source's: sensitive = true hides the answer.
const dataSensitiveArg = "sensitive"

// DataBlock is a data block checked against its data source, whose
// arguments are evaluated once the data blocks they read have answered
// (Arguments).
type DataBlock struct {
	Block  *config.DataBlock
	Source resources.DataSource
	// Deps are the addresses (TYPE.NAME, without "data.") of the data
	// blocks its arguments read, sorted.
	Deps  []string
	attrs hcl.Attributes
}

// Key is the block's TYPE.NAME: the path below data it is read at.
func (b *DataBlock) Key() string { return b.Block.Type + "." + b.Block.Name }

// DataAnswer is what a data block answered.
type DataAnswer struct {
	Value     cty.Value
	Sensitive bool
}

// DataBlocks checks cfg's data blocks against reg's data sources — a data
// source that exists, arguments it takes, references to data blocks that
// are declared and read no block that reads them — and returns them
// ordered so that each comes after the blocks it reads (declaration order
// otherwise). It keeps going to report every error; the blocks returned
// are those without one.
func DataBlocks(cfg *config.Config, reg *resources.Registry) ([]*DataBlock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	declared := map[string]*config.DataBlock{}
	for _, b := range cfg.Data {
		declared[b.Type+"."+b.Name] = b
	}
	var ok []*DataBlock
	for _, b := range cfg.Data {
		src, found := reg.DataSource(b.Type)
		if !found {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown data source",
				Detail:   fmt.Sprintf("There is no data source %q.%s The data sources are %s.", b.Type, words.DidYouMean(b.Type, reg.DataNames()), words.Quoted(reg.DataNames())),
				Subject:  b.TypeRange.Ptr(),
			})
			continue
		}
		attrs, d := b.Attributes()
		diags = append(diags, d...)
		db := &DataBlock{Block: b, Source: src, attrs: attrs}
		bad := d.HasErrors()
		schema := src.Schema()
		deps := map[string]bool{}
		for _, name := range sortedNames(attrs) {
			a := attrs[name]
			if name != dataSensitiveArg && schema.Property(name) == nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unsupported argument",
					Detail:   fmt.Sprintf("The data source %q takes no argument %q.%s Its arguments are %s.", b.Type, name, words.DidYouMean(name, dataArgNames(schema)), words.Quoted(dataArgNames(schema))),
					Subject:  a.NameRange.Ptr(),
				})
				bad = true
				continue
			}
			if d := refuseLazy(a.Expr, "a data block's argument", "data blocks are read when the plan is made, before any resource"); d.HasErrors() {
				diags, bad = append(diags, d...), true
				continue
			}
			for _, tr := range a.Expr.Variables() {
				if tr.RootName() != DataVar {
					continue
				}
				key, d := dataReference(tr, declared)
				if d != nil {
					diags, bad = diags.Append(d), true
					continue
				}
				deps[key] = true
			}
		}
		for _, p := range schema.Properties {
			if p.Required && attrs[p.Name] == nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Missing required argument",
					Detail:   fmt.Sprintf("The data source %q needs the argument %q: %s", b.Type, p.Name, p.Description),
					Subject:  b.DeclRange.Ptr(),
				})
				bad = true
			}
		}
		if bad {
			continue
		}
		for k := range deps {
			db.Deps = append(db.Deps, k)
		}
		sort.Strings(db.Deps)
		ok = append(ok, db)
	}
	ordered, d := orderData(ok)
	return ordered, append(diags, d...)
}

// dataArgNames lists what a data block of schema takes.
func dataArgNames(schema *resources.Schema) []string {
	names := []string{dataSensitiveArg}
	for _, p := range schema.Properties {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// dataReference is the TYPE.NAME a data block's argument reads through
// tr, or why it cannot: a data block reads another by its address.
func dataReference(tr hcl.Traversal, declared map[string]*config.DataBlock) (string, *hcl.Diagnostic) {
	var parts []string
	for _, step := range tr[1:] {
		a, ok := step.(hcl.TraverseAttr)
		if !ok || len(parts) == 2 {
			break
		}
		parts = append(parts, a.Name)
	}
	if len(parts) < 2 {
		return "", &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid reference to data",
			Detail:   "A data block reads another one by its address: data.TYPE.NAME.result.",
			Subject:  tr.SourceRange().Ptr(),
		}
	}
	key := parts[0] + "." + parts[1]
	if declared[key] == nil {
		return "", undeclaredData(parts[0], parts[1], tr.SourceRange(), declared)
	}
	return key, nil
}

// undeclaredData is the diagnostic of a reference to a data block that is
// not declared.
func undeclaredData(typ, name string, rng hcl.Range, declared map[string]*config.DataBlock) *hcl.Diagnostic {
	var names []string
	for k := range declared {
		names = append(names, "data."+k)
	}
	sort.Strings(names)
	detail := fmt.Sprintf("There is no data %q %q block: data.%s.%s reads nothing.", typ, name, typ, name)
	if len(names) == 0 {
		detail += " Declare it (data \"" + typ + "\" \"" + name + "\" { … }) to read the host when the plan is made."
	} else {
		detail += words.DidYouMean("data."+typ+"."+name, names) + " The data blocks are " + words.Join(names, "") + "."
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to an undeclared data block", Detail: detail, Subject: rng.Ptr()}
}

// orderData orders blocks so that each comes after those it reads,
// declaration order otherwise, and reports every block that reads itself
// through others (a cycle: none of them can be read first).
func orderData(blocks []*DataBlock) ([]*DataBlock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	byKey := map[string]*DataBlock{}
	for _, b := range blocks {
		byKey[b.Key()] = b
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var out []*DataBlock
	var stack []string
	var visit func(b *DataBlock) bool
	visit = func(b *DataBlock) bool {
		switch state[b.Key()] {
		case done:
			return true
		case visiting:
			i := len(stack) - 1
			for i > 0 && stack[i] != b.Key() {
				i--
			}
			chain := append(append([]string(nil), stack[i:]...), b.Key())
			for j := range chain {
				chain[j] = "data." + chain[j]
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Data blocks read each other",
				Detail:   fmt.Sprintf("%s: none of them can be read first. A data block may read others that do not read it.", strings.Join(chain, " reads ")),
				Subject:  b.Block.DeclRange.Ptr(),
			})
			return false
		}
		state[b.Key()] = visiting
		stack = append(stack, b.Key())
		ok := true
		for _, dep := range b.Deps {
			d := byKey[dep]
			if d == nil {
				ok = false // failed its own checks, reported there
				continue
			}
			if !visit(d) {
				ok = false
			}
		}
		stack = stack[:len(stack)-1]
		state[b.Key()] = done
		if ok {
			out = append(out, b)
		} else {
			delete(byKey, b.Key())
		}
		return ok
	}
	for _, b := range blocks {
		if state[b.Key()] == unseen {
			visit(b)
		}
	}
	return out, diags
}

// Arguments evaluates b's arguments in scope — node, host, the functions
// and, in scope.Data, the answers of the blocks it reads — and decodes
// them against its data source's schema. sensitive is the block's
// sensitive argument. An argument may not hold a secret: the plan shows
// arguments, and they reach the command's line or environment.
func (b *DataBlock) Arguments(scope *Scope) (args map[string]cty.Value, sensitive bool, diags hcl.Diagnostics) {
	ctx := scope.EvalContext(b.Block.Dir)
	ev := &evaluator{ctx: ctx, scope: scope}
	schema := b.Source.Schema()
	args = map[string]cty.Value{}
	for _, name := range sortedNames(b.attrs) {
		a := b.attrs[name]
		v, d := ev.raw(a.Expr)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if v.ContainsMarked() || scope.ReadsSensitive(a.Expr) {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Secret in a data block's argument",
				Detail: fmt.Sprintf("The argument %q of %s reads a sensitive value. A data block's arguments are shown in the plan, and reach its command's line or environment, where other processes may read them: a secret cannot be one. Let the command read the secret itself (from a file only root may read).",
					name, b.Block.Address()),
				Subject: a.Expr.Range().Ptr(),
			})
			continue
		}
		if name == dataSensitiveArg {
			s, d := dataBool(v, a.Expr.Range())
			diags = append(diags, d...)
			sensitive = s
			continue
		}
		p := schema.Property(name)
		dv, d := decodeProperty(&resources.Schema{Name: fmt.Sprintf("data %q", b.Block.Type)}, p, v, a.Expr.Range())
		for _, x := range d {
			// decodeProperty words a resource's property.
			x.Summary = strings.Replace(x.Summary, " for property", " for argument", 1)
			x.Detail = strings.Replace(x.Detail, "The property ", "The argument ", 1)
		}
		diags = append(diags, d...)
		if !d.HasErrors() && dv != cty.NilVal {
			args[name] = dv
		}
	}
	return args, sensitive, diags
}

// dataBool is a data block's sensitive argument: true, false, or unknown
// (false; validate).
func dataBool(v cty.Value, rng hcl.Range) (bool, hcl.Diagnostics) {
	if v.IsNull() || !v.IsKnown() {
		return false, nil
	}
	bv, err := convert.Convert(v, cty.Bool)
	if err != nil {
		return false, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Wrong type for sensitive",
			Detail:   fmt.Sprintf("sensitive must be true or false, not %s.", v.Type().FriendlyName()),
			Subject:  rng.Ptr(),
		}}
	}
	return bv.True(), nil
}

// DataValue is the data variable: data.TYPE.NAME is an object whose
// result is the block's answer, marked sensitive for a sensitive block,
// or unknown for a block with no answer (validate, graph and the console,
// which read nothing of the host).
func DataValue(blocks []*config.DataBlock, answers map[string]DataAnswer) cty.Value {
	if len(blocks) == 0 {
		return cty.EmptyObjectVal
	}
	byType := map[string]map[string]cty.Value{}
	for _, b := range blocks {
		result := cty.DynamicVal
		if a, ok := answers[b.Type+"."+b.Name]; ok && a.Value != cty.NilVal {
			result = a.Value
			if a.Sensitive {
				result = result.Mark(SensitiveMark)
			}
		}
		if byType[b.Type] == nil {
			byType[b.Type] = map[string]cty.Value{}
		}
		byType[b.Type][b.Name] = cty.ObjectVal(map[string]cty.Value{resources.DataResultAttr: result})
	}
	out := make(map[string]cty.Value, len(byType))
	for t, names := range byType {
		out[t] = cty.ObjectVal(names)
	}
	return cty.ObjectVal(out)
}

// WithData is scope with the data blocks' answers: data.TYPE.NAME.result
// holds each, marked sensitive for a sensitive block (whose address
// ReadsSensitive then knows too), unknown for a block that has none.
func (s *Scope) WithData(blocks []*config.DataBlock, answers map[string]DataAnswer) *Scope {
	c := *s
	c.Data = DataValue(blocks, answers)
	c.SensitiveData = nil
	for k, a := range answers {
		if a.Sensitive {
			c.SensitiveData = append(c.SensitiveData, k)
		}
	}
	sort.Strings(c.SensitiveData)
	return &c
}

// readsData reports whether expr reads data.
func readsData(expr hcl.Expression) bool {
	if expr == nil {
		return false
	}
	for _, tr := range expr.Variables() {
		if tr.RootName() == DataVar {
			return true
		}
	}
	return false
}

// ReadsData reports whether b's expressions (NodePathsRead's: its
// properties, meta-arguments, notifications, dynamic blocks, and its
// group's) read data: its evaluation must wait for the data blocks.
func ReadsData(b *config.ResourceBlock) bool {
	for _, e := range blockExprs(b) {
		if readsData(e) {
			return true
		}
	}
	return false
}

// readsSensitiveData reports whether tr, a traversal of data, reads a
// sensitive data block's answer (or the whole of data, or of a data
// source, holding one).
func (s *Scope) readsSensitiveData(tr hcl.Traversal) bool {
	if len(s.SensitiveData) == 0 {
		return false
	}
	var parts []string
	for _, step := range tr[1:] {
		a, ok := step.(hcl.TraverseAttr)
		if !ok || len(parts) == 2 {
			break
		}
		parts = append(parts, a.Name)
	}
	for _, k := range s.SensitiveData {
		typ, name, _ := strings.Cut(k, ".")
		switch len(parts) {
		case 0:
			return true
		case 1:
			if parts[0] == typ {
				return true
			}
		default:
			if parts[0] == typ && parts[1] == name {
				return true
			}
		}
	}
	return false
}

// CheckData is what validate checks of cfg's data blocks without reading
// the host: DataBlocks' checks, and each block's arguments evaluated in
// scope (whose host and data are unknown): their types, their values
// where known, and that none holds a secret.
func CheckData(cfg *config.Config, reg *resources.Registry, scope *Scope) hcl.Diagnostics {
	if len(cfg.Data) == 0 {
		return nil
	}
	blocks, diags := DataBlocks(cfg, reg)
	for _, b := range blocks {
		_, _, d := b.Arguments(scope)
		diags = append(diags, d...)
	}
	return diags
}
