package config

import (
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
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
func LoadPolicy(in PolicyInput, reg *resources.Registry) (*Config, hcl.Diagnostics) {
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

	for _, cb := range in.Cookbooks {
		files, err := cb.AttributeFiles()
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read a cookbook's attribute files",
				Detail:   err.Error() + ".",
			})
			continue
		}
		for _, p := range files {
			f := parse(p)
			if f == nil {
				continue
			}
			before := len(c.Resources)
			diags = append(diags, c.collect(f.Body, cb.Dir, reg, map[string]*ResourceBlock{})...)
			for _, rb := range c.Resources[before:] {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Resource in an attribute file",
					Detail:   fmt.Sprintf("Files in a cookbook's attributes/ directory hold only default and override blocks. Move %s to a recipe in recipes/.", rb.Address()),
					Subject:  rb.DeclRange.Ptr(),
				})
			}
			c.Resources = c.Resources[:before]
		}
	}

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
		diags = append(diags, c.collect(f.Body, cb.Dir, reg, seen)...)
	}
	return c, diags
}
