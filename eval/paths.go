package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/lazy"
)

// This file holds the one rule for the paths the file functions (file,
// filebase64, fileexists, direxists, fileset, templatefile) and a
// template's source are given:
//
//   - An absolute path names a file of the host, read when the expression
//     is evaluated: at plan (and, inside lazy(…), at apply).
//   - A relative path names a file of the recipes: it resolves against the
//     directory of the file that holds the expression (in a cookbook, the
//     cookbook's root; inside a template, the template's directory), and
//     must stay inside the recipes' root — the cookbook, whose identifier
//     the lock pins, or the recipe directory — both as written ("..") and
//     once every link on the way is resolved.
//   - A template (templatefile's first argument, a template's source) is
//     named relative to the templates directory: a cookbook's templates/,
//     the recipe directory otherwise. In a cookbook a leading "templates/"
//     names the same file (what cookbooks wrote before this rule).

// recipeRoot is where the relative paths of one recipe directory may
// lead: its cookbook, or itself. It is found once, when a file function
// first needs it (most expressions read no file).
type recipeRoot struct {
	dir      string
	once     sync.Once
	root     string
	cookbook bool
}

func newRecipeRoot(dir string) *recipeRoot { return &recipeRoot{dir: dir} }

func (r *recipeRoot) find() {
	r.once.Do(func() {
		r.root, r.cookbook = cookbookOf(r.dir)
	})
}

// cookbookOf is the cookbook dir belongs to (dir itself, or the parent of
// its recipes/ directory), or dir itself when it belongs to none: the
// cookbook whose templates/ config.TemplateDir names.
func cookbookOf(dir string) (string, bool) {
	if t := config.TemplateDir(dir); t != dir {
		return filepath.Dir(t), true
	}
	return dir, false
}

// templatesDir is where templates are named from: the cookbook's
// templates/, or the recipe directory.
func (r *recipeRoot) templatesDir() string {
	r.find()
	if r.cookbook {
		return filepath.Join(r.root, "templates")
	}
	return r.dir
}

// confine checks that full (absolute, clean), which the relative path p
// names, stays inside the root: as written, and once its links are
// resolved. A path that does not exist is not refused here: reading it
// says so.
func (r *recipeRoot) confine(p, full string) error {
	r.find()
	root := absClean(r.root)
	if !withinDir(full, root) {
		return &OutsideError{Path: p, Full: full, Root: root, Cookbook: r.cookbook}
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	if !withinDir(real, realRoot) {
		return &OutsideError{Path: p, Full: full, Root: root, Cookbook: r.cookbook, Via: real}
	}
	return nil
}

// OutsideError is a relative path that leads out of the recipes' root.
type OutsideError struct {
	Path, Full, Root string
	Cookbook         bool
	// Via is where a link on the way leads, when the path as written
	// stays inside.
	Via string
}

func (e *OutsideError) Error() string {
	what, why := "the recipe directory", "relative paths name the recipes' own files"
	if e.Cookbook {
		what, why = "the cookbook", "relative paths name the cookbook's own files, which its lock pins"
	}
	lead := fmt.Sprintf("%q leads out of %s (%s)", e.Path, what, e.Root)
	if e.Via != "" {
		lead = fmt.Sprintf("%q leads, through a link, to %s, out of %s (%s)", e.Path, e.Via, what, e.Root)
	}
	return fmt.Sprintf("%s: %s; move the file into it, or name a file of the host by its absolute path", lead, why)
}

func absClean(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// withinDir reports whether p is dir or lies below it (both absolute and
// clean).
func withinDir(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// hostPath resolves p for a host reader: absolute paths as they are,
// relative ones against baseDir and confined to the root.
func (rd *reader) hostPath(baseDir, p string) (string, error) {
	full := resolve(baseDir, p)
	if filepath.IsAbs(p) || rd.root == nil {
		return full, nil
	}
	return full, rd.root.confine(p, full)
}

// templatePath is the file a template name names (see the rule above),
// and, at apply, the templates directory the plan recorded.
func (rd *reader) templatePath(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	dir := baseDir
	switch {
	case rd.captured && rd.templateDir != "":
		dir = rd.templateDir
	case !rd.captured && rd.root != nil:
		dir = rd.root.templatesDir()
	}
	return resolve(dir, lazy.TemplateName(baseDir, dir, p))
}

// templatesDirOf is the templates directory of a host reader for baseDir
// ("" when it is baseDir: nothing to record).
func (rd *reader) templatesDirOf(baseDir string) string {
	if rd.captured || rd.root == nil {
		return ""
	}
	if d := rd.root.templatesDir(); d != baseDir {
		return d
	}
	return ""
}

// kindOf says what is at full: a regular file, a directory, something
// else, or nothing (fs.ErrNotExist), through links.
func kindOf(full string) (lazy.FileKind, error) {
	fi, err := os.Stat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fs.ErrNotExist
	case err != nil:
		return "", err
	case fi.Mode().IsRegular():
		return lazy.KindFile, nil
	case fi.IsDir():
		return lazy.KindDir, nil
	}
	return lazy.KindOther, nil
}

// readTemplate reads the template name names (a template's source,
// templatefile's path) for an expression of baseDir.
func (rd *reader) readTemplate(baseDir, name string) ([]byte, string, error) {
	return rd.readFull(name, rd.templatePath(baseDir, name))
}
