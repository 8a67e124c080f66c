package config

import (
	"os"
	"path/filepath"
)

// TemplateDir is where the `source` of a template resource is looked up,
// given the directory its block was declared in (ResourceBlock.Dir): a
// cookbook's templates/ folder in policy mode, where Dir is the cookbook's
// root (it holds metadata.hcl; a recipes/ folder of a cookbook counts too),
// else the recipe's own folder (directory mode).
func TemplateDir(dir string) string {
	isCookbook := func(d string) bool {
		fi, err := os.Stat(filepath.Join(d, "metadata.hcl"))
		return err == nil && fi.Mode().IsRegular()
	}
	switch {
	case isCookbook(dir):
		return filepath.Join(dir, "templates")
	case filepath.Base(dir) == "recipes" && isCookbook(filepath.Dir(dir)):
		return filepath.Join(filepath.Dir(dir), "templates")
	}
	return dir
}
