package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// AttributeWrite is one node attribute write made outside any recipe: a
// policy's default_attributes or override_attributes leaf, or a value the
// command line gives (-attr, -attr-file), with where it came from.
type AttributeWrite struct {
	Level string
	Path  []string
	Value cty.Value
	Range hcl.Range
	// Origin names an included policy the value came from, or the flag
	// that gave it (Leaf.Origin).
	Origin string
	// Sensitive marks a value written with sensitive(): it is kept out of
	// every output.
	Sensitive bool
}

// PolicyInput is what policy mode loads: cookbooks and a run list resolved
// from a policy lock, and the lock's attributes.
type PolicyInput struct {
	// Dir is the policy's directory (Config.Dir).
	Dir string
	// Cookbooks are the run list's cookbooks, in run-list order of first
	// appearance. Their attributes/ files are read before any recipe.
	Cookbooks []*Cookbook
	// RunList is the normalised, de-duplicated run list.
	RunList []RunListItem
	// Writes are the policy's attribute writes. They are applied, in order,
	// after every attribute block of the cookbooks each time the attributes
	// are compiled, so: cookbook default < policy default < cookbook
	// override < policy override — except that, within one level, a list
	// the policy writes where a cookbook wrote a list is merged with it
	// (the cookbook's elements first), as Chef does.
	Writes []AttributeWrite
}

// LoadPolicy builds a Config from cookbooks: every cookbook's attribute
// files (attributes/*.hcl, lexical order) in run-list order, then each
// run-list recipe (recipes/NAME.hcl) in order. Relative paths in a
// cookbook's files (file(), templatefile()) resolve against the cookbook's
// root, so a recipe reads templatefile("templates/site.conf.tpl", …).
// Attribute files may hold only default and override blocks.
func LoadPolicy(in PolicyInput, reg Types) (*Config, hcl.Diagnostics) {
	c := &Config{
		Dir:          in.Dir,
		Parser:       hclparse.NewParser(),
		PolicyWrites: append([]AttributeWrite(nil), in.Writes...),
	}
	var diags hcl.Diagnostics
	byName := map[string]*Cookbook{}
	c.CookbookDirs = map[string]string{}
	for _, cb := range in.Cookbooks {
		byName[cb.Name] = cb
		c.CookbookDirs[cb.Dir] = cb.Name
	}
	parse := func(path string) *hcl.File {
		src, err := os.ReadFile(path)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read a cookbook file",
				Detail:   fmt.Sprintf("Reading %s failed: %s.", path, err),
			})
			return nil
		}
		f, d := Parse(src, path)
		diags = append(diags, d...)
		if f == nil {
			f = &hcl.File{Body: hcl.EmptyBody(), Bytes: src}
		}
		c.Parser.AddFile(path, f)
		c.Files = append(c.Files, path)
		if f == nil || f.Body == nil {
			return nil
		}
		return f
	}

	// The cookbooks' resource types first: recipes and attribute files
	// may use them, whichever cookbook declares them.
	// eachFile parses every file list gives of each cookbook, in order.
	eachFile := func(what string, list func(*Cookbook) ([]string, error), fn func(cb *Cookbook, path string, f *hcl.File)) {
		for _, cb := range in.Cookbooks {
			files, err := list(cb)
			if err != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Cannot read a cookbook's " + what,
					Detail:   err.Error() + ".",
				})
				continue
			}
			for _, p := range files {
				if f := parse(p); f != nil {
					fn(cb, p, f)
				}
			}
		}
	}
	names := newTypeNames(reg)
	var headers []*typeHeader
	eachFile("resource types", (*Cookbook).ResourceFiles, func(cb *Cookbook, p string, f *hcl.File) {
		h, d := cookbookType(cb, p, f.Body)
		diags = append(diags, d...)
		if h != nil {
			headers = append(headers, h)
		}
	})
	diags = append(diags, names.declare(headers)...)

	eachFile("attribute files", (*Cookbook).AttributeFiles, func(cb *Cookbook, p string, f *hcl.File) {
		before, groupsBefore := len(c.Resources), len(c.Groups)
		diags = append(diags, c.collect(f.Body, cb.Dir, names, map[string]*ResourceBlock{}, false)...)
		c.Groups = c.Groups[:groupsBefore]
		for _, rb := range c.Resources[before:] {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Resource in an attribute file",
				Detail:   fmt.Sprintf("Files in a cookbook's attributes/ directory hold only default and override blocks. Move %s to a recipe in recipes/.", rb.Address()),
				Subject:  rb.DeclRange.Ptr(),
			})
		}
		c.Resources = c.Resources[:before]
	})

	seen := map[string]*ResourceBlock{}
	for _, item := range in.RunList {
		cb := byName[item.Cookbook]
		if cb == nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Run-list cookbook not locked",
				Detail:   fmt.Sprintf("The run list names %s, but the lock has no cookbook %q. Add a cookbook block for it to policy.hcl and run toque install.", item, item.Cookbook),
			})
			continue
		}
		p, err := cb.RecipePath(item.Recipe)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Recipe not found",
				Detail:   fmt.Sprintf("The run list names %s, but %s. Check the run list, or add the recipe to the cookbook.", item, err),
			})
			continue
		}
		f := parse(p)
		if f == nil {
			continue
		}
		diags = append(diags, c.collect(f.Body, cb.Dir, names, seen, false)...)
	}
	diags = append(diags, c.parseTypes(headers, names)...)
	return c, diags
}

// cookbookType reads the one resource_type block of a cookbook's
// resources/FILE: its label is FILE or COOKBOOK_FILE, and the type is
// named COOKBOOK_FILE, as Chef names custom resources.
func cookbookType(cb *Cookbook, path string, body hcl.Body) (*typeHeader, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	name := cb.TypeName(path)
	short := strings.TrimPrefix(name, cb.Name+"_")
	rel := "resources/" + filepath.Base(path)
	content, rest, d := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: TypeKeyword, LabelNames: []string{"name"}}}})
	diags = append(diags, d...)
	if rest != nil {
		if sb, ok := rest.(*hclsyntax.Body); ok {
			for _, b := range sb.Blocks {
				if b.Type == TypeKeyword {
					continue
				}
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unexpected block in a resource type file",
					Detail:   fmt.Sprintf("The cookbook %s's %s declares the resource type %s and holds nothing else: one resource_type %q { … } block. Move the %s block to a recipe.", cb.Name, rel, name, short, b.Type),
					Subject:  b.TypeRange.Ptr(),
				})
			}
			for _, a := range sb.Attributes {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unexpected attribute in a resource type file",
					Detail:   fmt.Sprintf("The cookbook %s's %s holds one resource_type %q { … } block and nothing else.", cb.Name, rel, short),
					Subject:  a.NameRange.Ptr(),
				})
			}
		}
	}
	if content == nil || d.HasErrors() {
		return nil, diags
	}
	if len(content.Blocks) != 1 {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "One resource type per file",
			Detail:   fmt.Sprintf("The cookbook %s's %s must hold exactly one resource_type block (it declares %s); it holds %d. Put each type in a file of its own: resources/NAME.hcl declares %s_NAME.", cb.Name, rel, name, len(content.Blocks), cb.Name),
			Subject:  &hcl.Range{Filename: path, Start: hcl.InitialPos, End: hcl.InitialPos},
		})
	}
	b := content.Blocks[0]
	if label := b.Labels[0]; label != short && label != name {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Resource type name does not match its file",
			Detail:   fmt.Sprintf("The cookbook %s's %s declares the type %s, so its label is %q (or %q), not %q. Rename the file, or the label.", cb.Name, rel, name, short, name, label),
			Subject:  b.LabelRanges[0].Ptr(),
		})
	}
	return &typeHeader{name: name, cookbook: cb.Name, dir: cb.Dir, block: b}, diags
}
