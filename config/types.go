package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/internal/words"
)

// TypeKeyword is the block that declares a resource type in HCL:
// resource_type "NAME" { … }.
const TypeKeyword = "resource_type"

// Keywords of a resource_type body.
const (
	KeywordProperty          = "property"
	KeywordValidation        = "validation"
	KeywordLoad              = "load_current_value"
	KeywordAction            = "action"
	KeywordConvergeIfChanged = "converge_if_changed"
	KeywordConvergeBy        = "converge_by"
)

// TypeBlock is one resource_type block, kept unevaluated: its properties,
// its load_current_value script and its actions, each with their
// attributes as written. Package eval compiles it into a resource type.
type TypeBlock struct {
	// Name is the type's name: the block's label in a recipe directory;
	// COOKBOOK_FILE in a cookbook's resources/FILE.hcl (web + site.hcl is
	// web_site), as Chef names custom resources.
	Name string
	// Cookbook names the cookbook that declares it ("" in directory mode).
	Cookbook string
	// Dir is the directory relative paths in the type resolve against:
	// the recipe directory, or the cookbook's root (so that a child
	// template's source is looked up in the cookbook's templates/).
	Dir string
	// Attrs are the type's own attributes (description, default_action).
	Attrs      hcl.Attributes
	Properties []*PropertyBlock
	// Dynamic are the type's dynamic "property" blocks, unexpanded:
	// package eval expands them (ExpandedType) before compiling the type.
	Dynamic []*hcl.Block
	// Load is the load_current_value block; nil when the type has none.
	Load    *ScriptBlock
	Actions []*ActionBlock

	DeclRange  hcl.Range
	LabelRange hcl.Range
}

// PropertyBlock is one property "NAME" { … } of a resource type.
type PropertyBlock struct {
	Name        string
	Attrs       hcl.Attributes
	Validations []*ValidationBlock
	DeclRange   hcl.Range
	LabelRange  hcl.Range
}

// ValidationBlock is a property's validation { condition, error_message }.
type ValidationBlock struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression
	DeclRange    hcl.Range
}

// ScriptBlock is a load_current_value, converge_if_changed or converge_by
// block: a script and how to run it, unevaluated.
type ScriptBlock struct {
	// Kind is KeywordLoad, KeywordConvergeIfChanged or KeywordConvergeBy.
	Kind string
	// Label is a converge_by block's description as written.
	Label     string
	Attrs     hcl.Attributes
	DeclRange hcl.Range
}

// ActionBlock is one action "NAME" { … } of a resource type: its items,
// in the order they converge.
type ActionBlock struct {
	Name       string
	Items      []*ActionItem
	DeclRange  hcl.Range
	LabelRange hcl.Range
}

// ActionItem is one step of an action: a script block, a child resource
// declared in the action, or a dynamic "converge_by" block, unexpanded
// (package eval expands it, ExpandedType, into script items in its
// place).
type ActionItem struct {
	Script   *ScriptBlock
	Resource *ResourceBlock
	Dynamic  *hcl.Block
}

// HasDynamic reports whether t holds dynamic blocks to expand.
func (t *TypeBlock) HasDynamic() bool {
	if len(t.Dynamic) > 0 {
		return true
	}
	for _, a := range t.Actions {
		for _, it := range a.Items {
			if it.Dynamic != nil {
				return true
			}
		}
	}
	return false
}

// ExpandedType is t with its dynamic blocks replaced by the blocks they
// generated (package eval evaluates them, with hcl's dynblock):
// properties, parsed and appended to t's in the order generated (a
// property declared twice is an error), and, for each dynamic item of an
// action (by action and item index), its converge_by blocks. Nothing is
// evaluated here.
func (t *TypeBlock) ExpandedType(props []*hcl.Block, items map[*ActionItem][]*hcl.Block) (*TypeBlock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	out := *t
	out.Dynamic = nil
	out.Properties = append([]*PropertyBlock(nil), t.Properties...)
	seen := map[string]*PropertyBlock{}
	for _, p := range t.Properties {
		seen[p.Name] = p
	}
	for _, b := range props {
		if len(b.Labels) != 1 {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Wrong number of block labels",
				Detail:   "A dynamic \"property\" block makes property blocks, each with one label: give labels = [NAME].",
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		p, d := parseProperty(b)
		diags = append(diags, d...)
		if first := seen[p.Name]; first != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Property declared twice",
				Detail:   fmt.Sprintf("The resource type %s already declares the property %q at %s:%d.", t.Name, p.Name, first.DeclRange.Filename, first.DeclRange.Start.Line),
				Subject:  p.DeclRange.Ptr(),
			})
			continue
		}
		seen[p.Name] = p
		out.Properties = append(out.Properties, p)
	}
	out.Actions = make([]*ActionBlock, len(t.Actions))
	for i, a := range t.Actions {
		ca := *a
		ca.Items = nil
		for _, it := range a.Items {
			if it.Dynamic == nil {
				ca.Items = append(ca.Items, it)
				continue
			}
			for _, b := range items[it] {
				s, d := parseConvergeBy(b)
				diags = append(diags, d...)
				if s != nil {
					ca.Items = append(ca.Items, &ActionItem{Script: s})
				}
			}
		}
		out.Actions[i] = &ca
	}
	return &out, diags
}

// parseConvergeBy parses a converge_by block: its description, and its
// script.
func parseConvergeBy(blk *hcl.Block) (*ScriptBlock, hcl.Diagnostics) {
	if len(blk.Labels) != 1 || strings.TrimSpace(blk.Labels[0]) == "" {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "A converge_by block needs a description",
			Detail:   "Write converge_by \"what it does\" { code = … } (in a dynamic block, labels = [DESCRIPTION]): the description is what the plan shows reviewers.",
			Subject:  blk.DefRange.Ptr(),
		}}
	}
	return parseScript(blk, append([]string{"when"}, ScriptAttributes...))
}

// checkTypeDynamic reports a dynamic block of a resource_type body or an
// action that does not make what dynamic blocks may make there.
func checkTypeDynamic(b *hcl.Block, want, where string) *hcl.Diagnostic {
	if len(b.Labels) == 1 && b.Labels[0] == want {
		return nil
	}
	rng := b.DefRange
	if len(b.LabelRanges) > 0 {
		rng = b.LabelRanges[0]
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unsupported dynamic block type",
		Detail:   fmt.Sprintf("A dynamic block in %s makes %s blocks, not %s. To declare several child resources, set for_each or count on the child resource.", where, want, words.Quoted(b.Labels)),
		Subject:  rng.Ptr(),
	}
}

// Type returns the declared resource type name, or nil.
func (c *Config) Type(name string) *TypeBlock {
	for _, t := range c.Types {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// typeHeader is a resource_type block found by the first pass: its name
// and where it is, its body parsed by the second.
type typeHeader struct {
	name     string
	cookbook string
	dir      string
	block    *hcl.Block
}

// findTypeBlocks returns the resource_type blocks of a file's body. It
// reads nothing else.
func findTypeBlocks(body hcl.Body) []*hcl.Block {
	if sb, ok := body.(*hclsyntax.Body); ok {
		var out []*hcl.Block
		for _, b := range sb.Blocks {
			if b.Type == TypeKeyword {
				out = append(out, b.AsHCLBlock())
			}
		}
		return out
	}
	content, _, _ := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: TypeKeyword, LabelNames: []string{"name"}}}})
	if content == nil {
		return nil
	}
	blocks := content.Blocks
	sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].DefRange.Start.Byte < blocks[j].DefRange.Start.Byte })
	return blocks
}

// declareType checks a resource_type header and records it by name; a
// name declared twice, or one a built-in type has, is an error naming
// both places.
func declareType(h *typeHeader, builtin func(string) bool, declared map[string]*typeHeader) hcl.Diagnostics {
	var diags hcl.Diagnostics
	b := h.block
	rng := b.DefRange
	if len(b.LabelRanges) > 0 {
		rng = b.LabelRanges[0]
	}
	switch {
	case !hclsyntax.ValidIdentifier(h.name) || strings.Contains(h.name, "-"):
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid resource type name",
			Detail:   fmt.Sprintf("%q cannot name a resource type: use letters, digits and underscores, starting with a letter (web_site).%s", h.name, cookbookNameHint(h)),
			Subject:  rng.Ptr(),
		})
	case builtin(h.name) || h.name == LevelDefault || h.name == LevelOverride || h.name == TypeKeyword || h.name == GroupKeyword || h.name == DynamicKeyword || h.name == DataKeyword:
		what := "a built-in resource type"
		if !builtin(h.name) {
			what = "a keyword of recipes"
		}
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Resource type name taken",
			Detail:   fmt.Sprintf("%q is %s: a resource_type cannot replace it. Give the type another name.%s", h.name, what, cookbookNameHint(h)),
			Subject:  rng.Ptr(),
		})
	}
	if first, dup := declared[h.name]; dup {
		where := fmt.Sprintf("%s:%d", first.block.DefRange.Filename, first.block.DefRange.Start.Line)
		if first.cookbook != "" {
			where = fmt.Sprintf("cookbook %s (%s)", first.cookbook, where)
		}
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Resource type declared twice",
			Detail:   fmt.Sprintf("The resource type %s is already declared by %s. Each type is declared once; rename one of them.%s", h.name, where, cookbookNameHint(h)),
			Subject:  rng.Ptr(),
		})
	}
	declared[h.name] = h
	return diags
}

func cookbookNameHint(h *typeHeader) string {
	if h.cookbook == "" {
		return ""
	}
	return fmt.Sprintf(" (A type in a cookbook is named COOKBOOK_FILE: cookbook %s's %s gives %s.)", h.cookbook, filepath.Base(h.block.DefRange.Filename), h.name)
}

// TypeBodySchema is what a resource_type body holds; action bodies also
// hold resource blocks of every known type.
var typeBodySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "description"}, {Name: "default_action"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: KeywordProperty, LabelNames: []string{"name"}},
		{Type: KeywordLoad},
		{Type: KeywordAction, LabelNames: []string{"name"}},
		{Type: DynamicKeyword, LabelNames: []string{"type"}},
	},
}

// TypeAttributeNames lists the attributes a resource_type takes.
var TypeAttributeNames = []string{"description", "default_action"}

// PropertyAttributes lists the attributes a property block takes.
var PropertyAttributes = []string{"type", "description", "identity", "name_property", "desired_state", "required", "default", "sensitive", "content", "allowed", "regex"}

// ScriptAttributes lists what every script block takes; a
// load_current_value also takes batch, a converge_if_changed properties.
var ScriptAttributes = []string{"interpreter", "code", "flags", "cwd", "environment", "path", "user", "group", "umask", "timeout"}

// parseType parses a resource_type body into its parts, leaving every
// expression unevaluated. known reports resource type names (built-in and
// declared), which action bodies may declare children of.
func (c *Config) parseType(h *typeHeader, known func(string) bool, names []string) (*TypeBlock, hcl.Diagnostics) {
	b := h.block
	t := &TypeBlock{Name: h.name, Cookbook: h.cookbook, Dir: h.dir, DeclRange: b.DefRange}
	if len(b.LabelRanges) > 0 {
		t.LabelRange = b.LabelRanges[0]
	}
	content, diags := b.Body.Content(typeBodySchema)
	if content == nil {
		return t, diags
	}
	t.Attrs = content.Attributes
	seenProps := map[string]*PropertyBlock{}
	seenActions := map[string]*ActionBlock{}
	for _, blk := range sortBlocks(content.Blocks) {
		switch blk.Type {
		case DynamicKeyword:
			if d := checkTypeDynamic(blk, KeywordProperty, "a resource_type"); d != nil {
				diags = diags.Append(d)
				continue
			}
			t.Dynamic = append(t.Dynamic, blk)
		case KeywordProperty:
			p, d := parseProperty(blk)
			diags = append(diags, d...)
			if first := seenProps[p.Name]; first != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Property declared twice",
					Detail:   fmt.Sprintf("The resource type %s already declares the property %q at %s:%d.", t.Name, p.Name, first.DeclRange.Filename, first.DeclRange.Start.Line),
					Subject:  p.LabelRange.Ptr(),
				})
				continue
			}
			seenProps[p.Name] = p
			t.Properties = append(t.Properties, p)
		case KeywordLoad:
			if t.Load != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Two load_current_value blocks",
					Detail:   fmt.Sprintf("The resource type %s already has a load_current_value block at %s:%d; a type reads its current value with one script.", t.Name, t.Load.DeclRange.Filename, t.Load.DeclRange.Start.Line),
					Subject:  blk.DefRange.Ptr(),
				})
				continue
			}
			s, d := parseScript(blk, append([]string{"batch"}, ScriptAttributes...))
			diags = append(diags, d...)
			t.Load = s
		case KeywordAction:
			a, d := c.parseAction(blk, h.dir, known, names)
			diags = append(diags, d...)
			if first := seenActions[a.Name]; first != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Action declared twice",
					Detail:   fmt.Sprintf("The resource type %s already declares the action %q at %s:%d.", t.Name, a.Name, first.DeclRange.Filename, first.DeclRange.Start.Line),
					Subject:  a.LabelRange.Ptr(),
				})
				continue
			}
			seenActions[a.Name] = a
			t.Actions = append(t.Actions, a)
		}
	}
	return t, diags
}

var propertySchema = &hcl.BodySchema{
	Attributes: func() []hcl.AttributeSchema {
		var out []hcl.AttributeSchema
		for _, n := range PropertyAttributes {
			out = append(out, hcl.AttributeSchema{Name: n})
		}
		return out
	}(),
	Blocks: []hcl.BlockHeaderSchema{{Type: KeywordValidation}},
}

var validationSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "condition", Required: true},
	{Name: "error_message", Required: true},
}}

func parseProperty(b *hcl.Block) (*PropertyBlock, hcl.Diagnostics) {
	p := &PropertyBlock{Name: b.Labels[0], DeclRange: b.DefRange, LabelRange: b.LabelRanges[0]}
	content, diags := b.Body.Content(propertySchema)
	if content == nil {
		return p, diags
	}
	p.Attrs = content.Attributes
	for _, vb := range sortBlocks(content.Blocks) {
		vc, d := vb.Body.Content(validationSchema)
		diags = append(diags, d...)
		if vc == nil || d.HasErrors() {
			continue
		}
		p.Validations = append(p.Validations, &ValidationBlock{
			Condition:    vc.Attributes["condition"].Expr,
			ErrorMessage: vc.Attributes["error_message"].Expr,
			DeclRange:    vb.DefRange,
		})
	}
	return p, diags
}

// parseScript parses a script block whose attributes are names.
func parseScript(b *hcl.Block, names []string) (*ScriptBlock, hcl.Diagnostics) {
	s := &ScriptBlock{Kind: b.Type, DeclRange: b.DefRange}
	if len(b.Labels) > 0 {
		s.Label = b.Labels[0]
	}
	schema := &hcl.BodySchema{}
	for _, n := range names {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: n, Required: n == "code"})
	}
	content, diags := b.Body.Content(schema)
	if content == nil {
		return s, diags
	}
	s.Attrs = content.Attributes
	return s, diags
}

// parseAction parses an action body: converge_if_changed and converge_by
// blocks and child resources, in declaration order.
func (c *Config) parseAction(b *hcl.Block, dir string, known func(string) bool, names []string) (*ActionBlock, hcl.Diagnostics) {
	a := &ActionBlock{Name: b.Labels[0], DeclRange: b.DefRange, LabelRange: b.LabelRanges[0]}
	var diags hcl.Diagnostics
	var blocks []*hcl.Block
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		for _, at := range sortedAttributes(sb) {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unexpected attribute",
				Detail:   fmt.Sprintf("An action holds only blocks, in the order they converge: converge_if_changed { … }, converge_by \"DESCRIPTION\" { … } and child resources (TYPE \"NAME\" { … }); %s is not one of them.", at.Name),
				Subject:  at.NameRange.Ptr(),
			})
		}
		for _, blk := range sb.Blocks {
			if blk.Type != KeywordConvergeIfChanged && blk.Type != KeywordConvergeBy && blk.Type != DynamicKeyword && !known(blk.Type) {
				diags = diags.Append(unknownChildDiag(blk.Type, blk.TypeRange, names))
				continue
			}
			blocks = append(blocks, blk.AsHCLBlock())
		}
	} else {
		schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: KeywordConvergeIfChanged}, {Type: KeywordConvergeBy, LabelNames: []string{"description"}}, {Type: DynamicKeyword, LabelNames: []string{"type"}}}}
		for _, n := range names {
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: n, LabelNames: []string{"name"}})
		}
		content, rest, d := b.Body.PartialContent(schema)
		diags = append(diags, d...)
		if content != nil {
			blocks = sortBlocks(content.Blocks)
		}
		if rest != nil {
			left, _ := rest.JustAttributes()
			for _, at := range left {
				diags = diags.Append(unknownChildDiag(at.Name, at.NameRange, names))
			}
		}
	}
	seen := map[string]*ResourceBlock{}
	for _, blk := range blocks {
		switch blk.Type {
		case DynamicKeyword:
			if d := checkTypeDynamic(blk, KeywordConvergeBy, "an action"); d != nil {
				diags = diags.Append(d)
				continue
			}
			a.Items = append(a.Items, &ActionItem{Dynamic: blk})
		case KeywordConvergeIfChanged:
			if len(blk.Labels) > 0 {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unexpected label",
					Detail:   "A converge_if_changed block takes no label; name the properties it covers with properties = [\"mode\", …] (all desired-state properties when left out).",
					Subject:  blk.LabelRanges[0].Ptr(),
				})
				continue
			}
			s, d := parseScript(blk, append([]string{"properties"}, ScriptAttributes...))
			diags = append(diags, d...)
			a.Items = append(a.Items, &ActionItem{Script: s})
		case KeywordConvergeBy:
			s, d := parseConvergeBy(blk)
			diags = append(diags, d...)
			if s != nil {
				a.Items = append(a.Items, &ActionItem{Script: s})
			}
		default:
			rb, d := newResourceBlock(blk, dir)
			diags = append(diags, d...)
			if rb == nil {
				continue
			}
			if first, dup := seen[rb.Address()]; dup {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate resource",
					Detail:   fmt.Sprintf("The action %s already declares %s at %s:%d. Give one of them another name.", a.Name, rb.Address(), first.DeclRange.Filename, first.DeclRange.Start.Line),
					Subject:  rb.DeclRange.Ptr(),
				})
				continue
			}
			seen[rb.Address()] = rb
			a.Items = append(a.Items, &ActionItem{Resource: rb})
		}
	}
	return a, diags
}

func unknownChildDiag(typ string, rng hcl.Range, names []string) *hcl.Diagnostic {
	valid := append([]string{KeywordConvergeIfChanged, KeywordConvergeBy}, names...)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unknown resource type",
		Detail: fmt.Sprintf("An action holds converge_if_changed and converge_by blocks and child resources, but there is no resource type %q.%s The resource types are %s.",
			typ, words.DidYouMean(typ, valid), words.Quoted(names)),
		Subject: rng.Ptr(),
	}
}

// sortBlocks orders blocks by where they are written (JSON bodies return
// them grouped by type).
func sortBlocks(blocks hcl.Blocks) hcl.Blocks {
	out := append(hcl.Blocks(nil), blocks...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].DefRange.Start.Byte < out[j].DefRange.Start.Byte })
	return out
}
