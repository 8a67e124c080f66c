package builtin

import (
	"go/build"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// families are the packages of built-in types. Only this package (the
// registry's assembler) and the families themselves import them: the
// engine (config, eval, plan, apply, guard, command) sees types through the
// resources contract and a *resources.Registry, so a new type touches
// nothing but its family and this package.
var families = []string{"files", "accounts", "packages", "commands", "systemd", "system", "hcltype", "vcs"}

const module = "github.com/toquehq/toque"

// TestOnlyTheAssemblerImportsTheFamilies reads the imports of every
// package of the module, tests included.
func TestOnlyTheAssemblerImportsTheFamilies(t *testing.T) {
	root := filepath.Join("..", "..")
	isFamily := func(imp string) bool {
		rest, ok := strings.CutPrefix(imp, module+"/resources/")
		return ok && slices.Contains(families, rest)
	}
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		pkg := path.Join(module, filepath.ToSlash(rel))
		if rel == "." {
			pkg = module
		}
		if pkg == module+"/resources/builtin" || isFamily(pkg) || strings.HasPrefix(pkg, module+"/resources/internal/") {
			return nil
		}
		bp, err := build.ImportDir(p, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		checked++
		for _, imp := range slices.Concat(bp.Imports, bp.TestImports, bp.XTestImports) {
			if isFamily(imp) {
				t.Errorf("%s imports %s: outside resources/builtin, packages use the resources contract and a registry, never a type family", pkg, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("only %d packages read: is the module root at %s?", checked, root)
	}
}
