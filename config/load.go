package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/internal/words"
)

// Attribute levels, in increasing precedence. Recipes write default and
// override; normal is the command line's (-attr, -attr-file), as Chef's
// normal level is where chef-client -j puts its JSON.
const (
	LevelDefault  = "default"
	LevelNormal   = "normal"
	LevelOverride = "override"
)

// MetaSchema is the part of a resource body common to every type.
var MetaSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "action"},
		{Name: "only_if"},
		{Name: "not_if"},
		{Name: "guard_interpreter"},
		{Name: "ignore_failure"},
		{Name: "sensitive"},
		{Name: "for_each"},
		{Name: "count"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "notifies", LabelNames: []string{"action"}},
		{Type: "subscribes", LabelNames: []string{"action"}},
		{Type: DynamicKeyword, LabelNames: []string{"type"}},
	},
}

// DynamicKeyword is the block that generates nested blocks, as Terraform's
// dynamic blocks do: dynamic "notifies" { for_each = …  content { … } }.
const DynamicKeyword = "dynamic"

var notifySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "resource", Required: true},
		{Name: "timing"},
	},
}

// IsRecipeFile reports whether name (a base name) is read in directory mode:
// *.hcl or *.hcl.json, not a dotfile.
func IsRecipeFile(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	return strings.HasSuffix(name, ".hcl") || strings.HasSuffix(name, ".hcl.json")
}

// LoadDir loads every recipe file directly in dir (*.hcl and *.hcl.json, not
// recursive, dotfiles skipped) in lexical order: attribute blocks are
// written and resource blocks collected, unevaluated.
//
// Nothing is evaluated: attribute blocks and resource bodies are kept as
// written, for package eval.
func LoadDir(dir string, reg Types) (*Config, hcl.Diagnostics) {
	c := &Config{
		Dir:    dir,
		Parser: hclparse.NewParser(),
	}
	var diags hcl.Diagnostics
	entries, err := os.ReadDir(dir)
	if err != nil {
		return c, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the recipe directory",
			Detail:   fmt.Sprintf("Reading %s failed: %s.", dir, err),
		})
	}
	var files []string
	for _, e := range entries {
		if !IsRecipeFile(e.Name()) {
			continue
		}
		if !e.Type().IsRegular() {
			// Follow symlinks, skip directories and devices.
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
		}
		files = append(files, e.Name())
	}
	sort.Strings(files)
	if len(files) == 0 {
		return c, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No recipe files",
			Detail:   fmt.Sprintf("The directory %s has no *.hcl or *.hcl.json files. Write a recipe there, or point toque at the directory that holds your recipes (-chdir).", dir),
		})
	}

	paths := make([]string, len(files))
	for i, name := range files {
		paths[i] = filepath.Join(dir, name)
	}
	parsed := parseFiles(c.Parser, paths)
	// First the resource_type blocks of every file, so that a recipe may
	// use a type whichever file declares it.
	names := newTypeNames(reg)
	var headers []*typeHeader
	for i, path := range paths {
		diags = append(diags, parsed[i].diags...)
		c.Files = append(c.Files, path)
		if f := parsed[i].file; f != nil && f.Body != nil {
			for _, b := range findTypeBlocks(f.Body) {
				h := &typeHeader{block: b, dir: filepath.Dir(path)}
				if len(b.Labels) == 1 {
					h.name = b.Labels[0]
				}
				headers = append(headers, h)
			}
		}
	}
	diags = append(diags, names.declare(headers)...)
	seen := map[string]*ResourceBlock{}
	for i, path := range paths {
		if f := parsed[i].file; f != nil && f.Body != nil {
			diags = append(diags, c.collect(f.Body, filepath.Dir(path), names, seen, true)...)
		}
	}
	diags = append(diags, c.parseTypes(headers, names)...)
	return c, diags
}

// Types is what parsing needs to know of the resource types a build
// has: their names (a *resources.Registry is one). Decoding a resource
// against its type's schema is eval's.
type Types interface {
	// Has reports whether there is a type called name.
	Has(name string) bool
	// Names lists the type names, sorted.
	Names() []string
}

// typeNames are the resource type names recipes may use: the build's
// (built-in) and those resource_type blocks declare.
type typeNames struct {
	reg      Types
	declared map[string]*typeHeader
}

func newTypeNames(reg Types) *typeNames {
	return &typeNames{reg: reg, declared: map[string]*typeHeader{}}
}

func (n *typeNames) builtin(t string) bool { return n.reg.Has(t) }

func (n *typeNames) known(t string) bool {
	_, ok := n.declared[t]
	return ok || n.builtin(t)
}

// list is every known type name, sorted.
func (n *typeNames) list() []string {
	out := n.reg.Names()
	for t := range n.declared {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// declare records headers, in order, reporting bad and duplicate names.
func (n *typeNames) declare(headers []*typeHeader) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, h := range headers {
		if len(h.block.Labels) != 1 {
			rng := h.block.DefRange
			if len(h.block.LabelRanges) > 1 {
				rng = h.block.LabelRanges[1]
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Wrong number of block labels",
				Detail:   "A resource_type block takes exactly one label, the type's name: resource_type \"NAME\" { … }.",
				Subject:  rng.Ptr(),
			})
			continue
		}
		diags = append(diags, declareType(h, n.builtin, n.declared)...)
	}
	return diags
}

// parseTypes parses the bodies of the declared types, in order.
func (c *Config) parseTypes(headers []*typeHeader, names *typeNames) hcl.Diagnostics {
	var diags hcl.Diagnostics
	list := names.list()
	for _, h := range headers {
		if names.declared[h.name] != h {
			continue // refused by declare
		}
		t, d := c.parseType(h, names.known, list)
		diags = append(diags, d...)
		c.Types = append(c.Types, t)
	}
	return diags
}

// collect reads one file's top-level body: blocks only. typesHere says
// whether the file may declare resource types (the blocks themselves are
// read by findTypeBlocks and parseTypes).
func (c *Config) collect(body hcl.Body, dir string, names *typeNames, seen map[string]*ResourceBlock, typesHere bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var blocks []*hcl.Block

	isKnown := func(typ string) bool {
		return typ == LevelDefault || typ == LevelOverride || typ == GroupKeyword || typ == DataKeyword || names.known(typ)
	}

	if sb, ok := body.(*hclsyntax.Body); ok {
		for _, a := range sortedAttributes(sb) {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unexpected attribute",
				Detail:   fmt.Sprintf("A recipe holds only blocks: resources (TYPE \"NAME\" { … }) and attribute blocks (default \"NAME\" { … }, override \"NAME\" { … }). To set a node attribute, write it inside a default or override block, for example: default \"app\" { %s = … }.", a.Name),
				Subject:  a.NameRange.Ptr(),
			})
		}
		for _, b := range sb.Blocks {
			if b.Type == TypeKeyword {
				if !typesHere {
					diags = diags.Append(typeOutOfPlace(b.TypeRange))
				}
				continue
			}
			if !isKnown(b.Type) {
				diags = diags.Append(unknownTypeDiag(b.Type, b.TypeRange, names.list()))
				continue
			}
			blocks = append(blocks, b.AsHCLBlock())
		}
	} else {
		schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
			{Type: LevelDefault, LabelNames: []string{"name"}},
			{Type: LevelOverride, LabelNames: []string{"name"}},
			{Type: TypeKeyword, LabelNames: []string{"name"}},
			{Type: GroupKeyword, LabelNames: []string{"name"}},
			{Type: DataKeyword, LabelNames: []string{"type", "name"}},
		}}
		for _, n := range names.list() {
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: n, LabelNames: []string{"name"}})
		}
		content, rest, d := body.PartialContent(schema)
		diags = append(diags, d...)
		if content != nil {
			for _, b := range content.Blocks {
				if b.Type == TypeKeyword {
					if !typesHere {
						diags = diags.Append(typeOutOfPlace(b.TypeRange))
					}
					continue
				}
				blocks = append(blocks, b)
			}
		}
		// JSON cannot tell blocks from attributes: every key left over is
		// taken as an unknown resource type.
		if rest != nil {
			left, _ := rest.JustAttributes()
			keys := make([]*hcl.Attribute, 0, len(left))
			for _, a := range left {
				keys = append(keys, a)
			}
			sort.Slice(keys, func(i, j int) bool { return keys[i].NameRange.Start.Byte < keys[j].NameRange.Start.Byte })
			for _, a := range keys {
				diags = diags.Append(unknownTypeDiag(a.Name, a.NameRange, names.list()))
			}
		}
		// JSON bodies return blocks grouped by type; restore source order.
		sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].DefRange.Start.Byte < blocks[j].DefRange.Start.Byte })
	}

	for _, b := range blocks {
		if b.Type == GroupKeyword {
			diags = append(diags, c.addGroup(b, dir, names, seen)...)
			continue
		}
		if b.Type == DataKeyword {
			diags = append(diags, c.addData(b, dir)...)
			continue
		}
		diags = append(diags, c.addBlock(b, dir, seen)...)
	}
	return diags
}

// sortedAttributes is sb's attributes in the order they are written.
func sortedAttributes(sb *hclsyntax.Body) []*hclsyntax.Attribute {
	attrs := make([]*hclsyntax.Attribute, 0, len(sb.Attributes))
	for _, a := range sb.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	return attrs
}

// UnknownTypeDiag is the diagnostic of a block naming no type of reg.
func UnknownTypeDiag(typ string, rng hcl.Range, reg Types) *hcl.Diagnostic {
	return unknownTypeDiag(typ, rng, reg.Names())
}

// typeOutOfPlace is the diagnostic of a resource_type block where types
// are not declared (a cookbook's recipes and attribute files).
func typeOutOfPlace(rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Resource type outside resources/",
		Detail:   "A cookbook declares its resource types in its resources/ folder, one per file: resources/site.hcl in cookbook web declares web_site. Move this resource_type block there.",
		Subject:  rng.Ptr(),
	}
}

func unknownTypeDiag(typ string, rng hcl.Range, names []string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unknown resource type",
		Detail: fmt.Sprintf("There is no resource type %q.%s The resource types are %s; default and override blocks set node attributes, and resource_group blocks group resources under shared guards.",
			typ, words.DidYouMean(typ, append(names, LevelDefault, LevelOverride, GroupKeyword, DataKeyword)), words.Quoted(names)),
		Subject: rng.Ptr(),
	}
}

func (c *Config) addBlock(b *hcl.Block, dir string, seen map[string]*ResourceBlock) hcl.Diagnostics {
	var diags hcl.Diagnostics
	isAttr := b.Type == LevelDefault || b.Type == LevelOverride
	if len(b.Labels) != 1 {
		what := fmt.Sprintf("A %s block takes exactly one label, the resource's name: %s \"NAME\" { … }.", b.Type, b.Type)
		if isAttr {
			what = fmt.Sprintf("A %s block takes exactly one label, the top-level attribute it writes: %s \"NAME\" { … }.", b.Type, b.Type)
		}
		rng := b.DefRange
		if len(b.LabelRanges) > 1 {
			rng = b.LabelRanges[1]
		}
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Wrong number of block labels",
			Detail:   what,
			Subject:  rng.Ptr(),
		})
	}
	name := b.Labels[0]
	if name == "" {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Empty block label",
			Detail:   fmt.Sprintf("The label of a %s block must not be empty.", b.Type),
			Subject:  b.LabelRanges[0].Ptr(),
		})
	}
	if isAttr {
		c.AttributeBlocks = append(c.AttributeBlocks, &AttributeBlock{Level: b.Type, Name: name, Body: b.Body, Dir: dir, DeclRange: b.DefRange})
		return diags
	}

	rb, d := newResourceBlock(b, dir)
	diags = append(diags, d...)
	if rb == nil {
		return diags
	}
	addr := rb.Address()
	if first, dup := seen[addr]; dup {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Duplicate resource",
			Detail: fmt.Sprintf("The resource %s is already declared at %s:%d. Each resource is declared once; merge the two blocks, or give one of them another name.",
				addr, first.DeclRange.Filename, first.DeclRange.Start.Line),
			Subject: rb.DeclRange.Ptr(),
		})
	}
	seen[addr] = rb
	c.Resources = append(c.Resources, rb)
	return diags
}

// newResourceBlock keeps a resource block: its meta-arguments taken out,
// the rest of its body unevaluated. It returns nil when the block's
// labels are wrong.
func newResourceBlock(b *hcl.Block, dir string) (*ResourceBlock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if len(b.Labels) != 1 {
		rng := b.DefRange
		if len(b.LabelRanges) > 1 {
			rng = b.LabelRanges[1]
		}
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Wrong number of block labels",
			Detail:   fmt.Sprintf("A %s block takes exactly one label, the resource's name: %s \"NAME\" { … }.", b.Type, b.Type),
			Subject:  rng.Ptr(),
		})
	}
	if b.Labels[0] == "" {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Empty block label",
			Detail:   fmt.Sprintf("The label of a %s block must not be empty.", b.Type),
			Subject:  b.LabelRanges[0].Ptr(),
		})
	}
	rb := &ResourceBlock{
		Type:       b.Type,
		Name:       b.Labels[0],
		Dir:        dir,
		DeclRange:  b.DefRange,
		TypeRange:  b.TypeRange,
		LabelRange: b.LabelRanges[0],
	}
	if sb, ok := b.Body.(*hclsyntax.Body); ok && noMeta(sb) {
		// Nothing for MetaSchema to take (most resources): the body is
		// the rest as it is, without PartialContent's copy.
		rb.Body = b.Body
		return rb, diags
	}
	content, rest, d := b.Body.PartialContent(MetaSchema)
	diags = append(diags, d...)
	diags = append(diags, blockMetaAsAttribute(rest)...)
	rb.Body = rest
	if content != nil {
		m := &rb.Meta
		for _, f := range [...]struct {
			name string
			dst  *hcl.Expression
		}{
			{"action", &m.Action},
			{"only_if", &m.OnlyIf},
			{"not_if", &m.NotIf},
			{"guard_interpreter", &m.GuardInterpreter},
			{"ignore_failure", &m.IgnoreFailure},
			{"sensitive", &m.Sensitive},
			{"for_each", &m.ForEach},
			{"count", &m.Count},
		} {
			if a, ok := content.Attributes[f.name]; ok {
				*f.dst = a.Expr
			}
		}
		if m.ForEach != nil && m.Count != nil {
			fe, ct := content.Attributes["for_each"], content.Attributes["count"]
			later := ct
			if fe.Range.Start.Byte > ct.Range.Start.Byte {
				later = fe
			}
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid combination of count and for_each",
				Detail:   fmt.Sprintf("%s sets both count and for_each: a block makes its instances from one of them. Use for_each with a map or a set of strings to key instances by name, or count for numbered instances.", rb.Address()),
				Subject:  later.NameRange.Ptr(),
			})
			m.Count = nil
		}
		for _, nb := range content.Blocks {
			if nb.Type == DynamicKeyword {
				diags = append(diags, checkDynamic(nb, rb)...)
				m.Dynamic = append(m.Dynamic, nb)
				continue
			}
			n, d := DecodeNotify(nb)
			diags = append(diags, d...)
			if n == nil {
				continue
			}
			if nb.Type == "notifies" {
				m.Notifies = append(m.Notifies, n)
			} else {
				m.Subscribes = append(m.Subscribes, n)
			}
		}
	}
	return rb, diags
}

// noMeta reports whether sb holds no block and no attribute MetaSchema
// names: PartialContent(MetaSchema) would take nothing from it.
func noMeta(sb *hclsyntax.Body) bool {
	if len(sb.Blocks) > 0 {
		return false
	}
	isMeta := metaNames()
	for name := range sb.Attributes {
		if isMeta[name] {
			return false
		}
	}
	return true
}

// checkDynamic reports a dynamic block of a resource that does not
// generate notifies or subscribes blocks: the only blocks a resource
// takes.
func checkDynamic(b *hcl.Block, rb *ResourceBlock) hcl.Diagnostics {
	if len(b.Labels) == 1 && (b.Labels[0] == "notifies" || b.Labels[0] == "subscribes") {
		return nil
	}
	rng := b.DefRange
	if len(b.LabelRanges) > 0 {
		rng = b.LabelRanges[0]
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Unsupported dynamic block type",
		Detail:   fmt.Sprintf("A dynamic block generates nested blocks, and a resource takes only notifies and subscribes blocks; %s cannot take %s blocks. To make several resources, set for_each or count on the resource itself.", rb.Address(), words.Quoted(b.Labels)),
		Subject:  rng.Ptr(),
	}}
}

// DecodeNotify reads a notifies or subscribes block (one a dynamic block
// generated too), its expressions unevaluated.
func DecodeNotify(b *hcl.Block) (*NotifyBlock, hcl.Diagnostics) {
	content, diags := b.Body.Content(notifySchema)
	if diags.HasErrors() {
		return nil, diags
	}
	n := &NotifyBlock{Action: b.Labels[0], DeclRange: b.DefRange}
	if a, ok := content.Attributes["resource"]; ok {
		n.Resource = a.Expr
	}
	if a, ok := content.Attributes["timing"]; ok {
		n.Timing = a.Expr
	}
	return n, diags
}

type parsedFile struct {
	file  *hcl.File
	diags hcl.Diagnostics
}

// parseFiles parses paths (native syntax, or JSON for *.hcl.json) on every
// CPU — parsing is a third of a large plan's time — and records each file
// in parser, so diagnostics can show snippets. Results keep paths' order.
func parseFiles(parser *hclparse.Parser, paths []string) []parsedFile {
	out := make([]parsedFile, len(paths))
	parallel.For(len(paths), runtime.GOMAXPROCS(0), func(i int) { out[i] = parseFile(paths[i]) })
	// hclparse.Parser is not safe for concurrent use; its Files map is
	// filled here, after the parallel part.
	files := parser.Files()
	for i, p := range paths {
		if out[i].file != nil {
			files[p] = out[i].file
		}
	}
	return out
}

func parseFile(path string) parsedFile {
	src, err := os.ReadFile(path)
	if err != nil {
		return parsedFile{diags: hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read a recipe file",
			Detail:   fmt.Sprintf("Reading %s failed: %s.", path, err),
		}}}
	}
	f, d := Parse(src, path)
	if f == nil {
		// Keep the bytes so the diagnostic can show a snippet.
		f = &hcl.File{Body: hcl.EmptyBody(), Bytes: src}
	}
	return parsedFile{file: f, diags: d}
}

// blockMetaAsAttribute reports notifies and subscribes written as
// attributes, Chef style (`notifies = ["run", "execute[reload]",
// "delayed"]`): they are blocks here, and an attribute of that name would
// otherwise be dropped, and the notification with it. The detail shows the
// block to write, translated from the attribute when its value says enough.
func blockMetaAsAttribute(rest hcl.Body) hcl.Diagnostics {
	sb, ok := rest.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	for _, kw := range []string{"notifies", "subscribes"} {
		a, ok := sb.Attributes[kw]
		if !ok {
			continue
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unsupported argument; " + kw + " is a block",
			Detail:   fmt.Sprintf("%s is written as a block, one per notification, not as an attribute:\n\n%s\nThe timing is delayed (the default), immediately or before.", kw, notifyBlockExample(kw, a.Expr)),
			Subject:  a.NameRange.Ptr(),
		})
	}
	return diags
}

// notifyBlockExample writes the block form of a notifies or subscribes
// attribute: from a list ["ACTION", "TYPE[NAME]", "TIMING"] or an object
// { ACTION = "TYPE[NAME]" } when the value is a literal, else a template.
func notifyBlockExample(kw string, expr hcl.Expression) string {
	block := func(action, resource, timing string) string {
		s := fmt.Sprintf("  %s %q {\n    resource = %q\n", kw, action, resource)
		if timing != "" {
			s += fmt.Sprintf("    timing   = %q\n", timing)
		}
		return s + "  }\n"
	}
	generic := block("ACTION", "TYPE[NAME]", "delayed")
	v, d := expr.Value(nil)
	if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return generic
	}
	str := func(v cty.Value) (string, bool) {
		if v.IsNull() || v.Type() != cty.String {
			return "", false
		}
		return v.AsString(), true
	}
	switch t := v.Type(); {
	case t.IsTupleType() || t.IsListType():
		var parts []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			s, ok := str(e)
			if !ok {
				return generic
			}
			parts = append(parts, s)
		}
		switch len(parts) {
		case 2:
			return block(parts[0], parts[1], "")
		case 3:
			return block(parts[0], parts[1], parts[2])
		}
	case t.IsObjectType() || t.IsMapType():
		var out []string
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			s, ok := str(e)
			if !ok {
				return generic
			}
			out = append(out, block(k.AsString(), s, ""))
		}
		if len(out) > 0 {
			return strings.Join(out, "\n")
		}
	case t == cty.String:
		return block("ACTION", v.AsString(), "")
	}
	return generic
}
