package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/config"
)

// checkCookbookSyntax parses every file of cb that toque parses when it
// plans — recipes/, attributes/ and resources/ (*.hcl, *.hcl.json) and
// the templates under templates/ — so that install refuses a cookbook
// that does not parse, with each file's diagnostics (the files go into
// parser, for their snippets). It checks syntax only: what a recipe
// means is checked when it is planned or validated.
func checkCookbookSyntax(cb *config.Cookbook, parser *hclparse.Parser) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var files []string
	for _, sub := range []string{"recipes", "attributes", "resources"} {
		entries, err := os.ReadDir(filepath.Join(cb.Dir, sub))
		if err != nil && !os.IsNotExist(err) {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read a cookbook",
				Detail:   fmt.Sprintf("The cookbook %q: %s.", cb.Name, err),
			})
			continue
		}
		for _, e := range entries {
			if config.IsRecipeFile(e.Name()) && e.Type().IsRegular() {
				files = append(files, filepath.Join(cb.Dir, sub, e.Name()))
			}
		}
	}
	sort.Strings(files)
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read a cookbook file", Detail: fmt.Sprintf("Reading %s failed: %s.", path, err)})
			continue
		}
		f, d := config.Parse(src, path)
		if f == nil {
			f = &hcl.File{Body: hcl.EmptyBody(), Bytes: src}
		}
		parser.AddFile(path, f)
		diags = append(diags, d...)
	}
	return append(diags, checkTemplates(cb, parser)...)
}

// checkTemplates parses every template of cb (the files under templates/
// whose names do not start with "."), as templatefile and a template's
// source parse them.
func checkTemplates(cb *config.Cookbook, parser *hclparse.Parser) hcl.Diagnostics {
	var diags hcl.Diagnostics
	root := filepath.Join(cb.Dir, "templates")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == root {
				return filepath.SkipDir
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if d := config.CheckSource(src, path, true); d != nil {
			parser.AddFile(path, &hcl.File{Body: hcl.EmptyBody(), Bytes: src})
			diags = diags.Append(d)
			return nil
		}
		if _, d := hclsyntax.ParseTemplate(src, path, hcl.InitialPos); d.HasErrors() {
			parser.AddFile(path, &hcl.File{Body: hcl.EmptyBody(), Bytes: src})
			diags = append(diags, d...)
		}
		return nil
	})
	if err != nil {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read a cookbook's templates",
			Detail:   fmt.Sprintf("The cookbook %q: %s.", cb.Name, err),
		})
	}
	return diags
}
