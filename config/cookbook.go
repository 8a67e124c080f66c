package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Cookbook is a folder of recipes (recipes/*.hcl), attribute files
// (attributes/*.hcl), templates (templates/) and files (files/), named and
// versioned by its metadata.hcl.
type Cookbook struct {
	Name        string
	Version     string
	Description string
	// Dir is the cookbook's root directory.
	Dir string
	// NameRange is where metadata.hcl sets the name.
	NameRange hcl.Range
}

// cookbookMetadata is the shape of metadata.hcl.
type cookbookMetadata struct {
	Name        string  `hcl:"name"`
	Version     string  `hcl:"version"`
	Description *string `hcl:"description,optional"`
}

var (
	cookbookNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	versionRe      = regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,2}$`)
)

// ValidCookbookName reports whether s may name a cookbook (and a recipe):
// letters, digits, '_', '-', '.', not starting with a punctuation mark.
func ValidCookbookName(s string) bool {
	return cookbookNameRe.MatchString(s) && !strings.Contains(s, "..")
}

// ReadCookbook reads dir/metadata.hcl. The parser keeps the file for
// diagnostics; pass nil for a fresh one.
func ReadCookbook(dir string, parser *hclparse.Parser) (*Cookbook, hcl.Diagnostics) {
	if parser == nil {
		parser = hclparse.NewParser()
	}
	var diags hcl.Diagnostics
	mdPath := filepath.Join(dir, "metadata.hcl")
	if _, err := os.Stat(mdPath); err != nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Not a cookbook",
			Detail:   fmt.Sprintf("A cookbook is a directory with a metadata.hcl file (name = \"…\", version = \"…\"), but %s: %s.", mdPath, err),
		})
	}
	src, err := os.ReadFile(mdPath)
	if err != nil {
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read a cookbook's metadata",
			Detail:   fmt.Sprintf("Reading %s failed: %s.", mdPath, err),
		})
	}
	f, d := Parse(src, mdPath)
	diags = append(diags, d...)
	if f != nil && parser != nil {
		parser.AddFile(mdPath, f)
	}
	if f == nil || d.HasErrors() {
		return nil, diags
	}
	// Decode with an explicit schema first so unknown keys get precise errors.
	content, d := f.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "name", Required: true}, {Name: "version", Required: true}, {Name: "description"},
	}})
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	var md cookbookMetadata
	d = gohcl.DecodeBody(f.Body, nil, &md)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	cb := &Cookbook{Name: md.Name, Version: md.Version, Dir: dir, NameRange: content.Attributes["name"].Expr.Range()}
	if md.Description != nil {
		cb.Description = *md.Description
	}
	if !ValidCookbookName(md.Name) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid cookbook name",
			Detail:   fmt.Sprintf("%q is not a cookbook name: use letters, digits, '_', '-' and '.', starting with a letter or digit.", md.Name),
			Subject:  cb.NameRange.Ptr(),
		})
	}
	if !versionRe.MatchString(md.Version) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid cookbook version",
			Detail:   fmt.Sprintf("%q is not a version: write MAJOR.MINOR.PATCH, for example \"1.2.0\".", md.Version),
			Subject:  content.Attributes["version"].Expr.Range().Ptr(),
		})
	}
	return cb, diags
}

// RecipePath returns the file of recipe (a name below recipes/, without
// extension) in the cookbook: recipes/NAME.hcl or recipes/NAME.hcl.json.
func (cb *Cookbook) RecipePath(recipe string) (string, error) {
	if !ValidCookbookName(recipe) {
		return "", fmt.Errorf("%q is not a recipe name", recipe)
	}
	for _, ext := range []string{".hcl", ".hcl.json"} {
		p := filepath.Join(cb.Dir, "recipes", recipe+ext)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("cookbook %s has no recipe %q (no recipes/%s.hcl)", cb.Name, recipe, recipe)
}

// AttributeFiles lists attributes/*.hcl and *.hcl.json in lexical order.
func (cb *Cookbook) AttributeFiles() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(cb.Dir, "attributes"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the attribute files of cookbook %s: %w", cb.Name, err)
	}
	var out []string
	for _, e := range entries {
		if IsRecipeFile(e.Name()) && e.Type().IsRegular() {
			out = append(out, filepath.Join(cb.Dir, "attributes", e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ResourceFiles lists resources/*.hcl and *.hcl.json in lexical order:
// one resource type each (resources/site.hcl in cookbook web declares
// web_site).
func (cb *Cookbook) ResourceFiles() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(cb.Dir, "resources"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the resource types of cookbook %s: %w", cb.Name, err)
	}
	var out []string
	for _, e := range entries {
		if IsRecipeFile(e.Name()) && e.Type().IsRegular() {
			out = append(out, filepath.Join(cb.Dir, "resources", e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// TypeName is the name of the resource type a cookbook's resources/FILE
// declares: COOKBOOK_FILE (web and site.hcl give web_site).
func (cb *Cookbook) TypeName(file string) string {
	base := filepath.Base(file)
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".json"), ".hcl")
	return cb.Name + "_" + base
}

// CleanCookbookPath checks that p (slash-separated, relative) stays inside
// the directory it is relative to and returns it cleaned.
func CleanCookbookPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	if strings.Contains(p, "\\") || path.IsAbs(p) || filepath.IsAbs(p) {
		return "", fmt.Errorf("%q must be a relative, slash-separated path", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leaves the directory it is relative to", p)
	}
	return c, nil
}

// RunListItem is one run-list entry: a cookbook and one of its recipes.
type RunListItem struct {
	Cookbook string
	Recipe   string
}

// String is the normalised form, recipe[COOKBOOK::RECIPE].
func (r RunListItem) String() string { return "recipe[" + r.Cookbook + "::" + r.Recipe + "]" }

// ParseRunListItem accepts "cb", "cb::recipe", "recipe[cb]" and
// "recipe[cb::recipe]".
func ParseRunListItem(s string) (RunListItem, error) {
	in := s
	if strings.HasPrefix(s, "recipe[") && strings.HasSuffix(s, "]") {
		s = s[len("recipe[") : len(s)-1]
	} else if strings.Contains(s, "[") {
		return RunListItem{}, fmt.Errorf("%q is not a run-list item: write \"COOKBOOK\", \"COOKBOOK::RECIPE\" or \"recipe[COOKBOOK::RECIPE]\" (roles are not supported)", in)
	}
	cb, recipe, found := strings.Cut(s, "::")
	if !found {
		recipe = "default"
	}
	if !ValidCookbookName(cb) || !ValidCookbookName(recipe) {
		return RunListItem{}, fmt.Errorf("%q is not a run-list item: write \"COOKBOOK\", \"COOKBOOK::RECIPE\" or \"recipe[COOKBOOK::RECIPE]\"", in)
	}
	return RunListItem{Cookbook: cb, Recipe: recipe}, nil
}
