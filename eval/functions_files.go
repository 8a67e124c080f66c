package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/toquehq/toque/internal/lazy"
)

// kindFunc answers whether what is at a path is of kind want (a regular
// file for fileexists, a directory for direxists), through links: nothing
// there, or something of another kind, is false; a path toque may not
// read (out of the recipes' root, or a permission error) is an error.
func kindFunc(baseDir string, rd *reader, want lazy.FileKind) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			k, full, err := rd.kind(baseDir, args[0].AsString())
			var out *OutsideError
			var carried carriedError
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return cty.False, nil
			case errors.As(err, &out), errors.As(err, &carried):
				return cty.UnknownVal(cty.Bool), function.NewArgError(0, err)
			case err != nil:
				return cty.UnknownVal(cty.Bool), function.NewArgErrorf(0, "checking %s: %s", full, err)
			}
			return cty.BoolVal(k == want), nil
		},
	})
}

// dirExistsFunc is direxists(PATH): whether a directory is at PATH
// (through links); a file there answers false, as fileexists answers
// false for a directory.
func dirExistsFunc(baseDir string, rd *reader) function.Function {
	return kindFunc(baseDir, rd, lazy.KindDir)
}

// Limits of fileset: a listing is a value of the plan, and a walk of a
// huge tree (a recipe directory holding a checkout, /usr) would stall
// the plan. Variables only so that tests can lower them.
var (
	// MaxFileSetMatches is the most files one fileset() may return.
	MaxFileSetMatches = 10000
	// MaxFileSetEntries is the most entries one fileset() may look at.
	MaxFileSetEntries = 200000
)

// fileSetFunc is fileset(PATH, PATTERN), as Terraform's: the regular files
// under the directory PATH whose paths relative to it (slash-separated)
// match PATTERN (* and ? within a name, ** across directories, {a,b},
// [class]), as a set of those relative paths. Unlike Terraform's, names
// starting with "." are left out (as a cookbook's identifier leaves them
// out), links to directories are not followed, and a PATH that is not a
// directory is an error.
func fileSetFunc(baseDir string, rd *reader) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{
			{Name: "path", Type: cty.String},
			{Name: "pattern", Type: cty.String},
		},
		Type: function.StaticReturnType(cty.Set(cty.String)),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p, pattern := args[0].AsString(), args[1].AsString()
			if !doublestar.ValidatePattern(pattern) {
				return cty.UnknownVal(cty.Set(cty.String)), function.NewArgErrorf(1, "%q is not a valid pattern: check its brackets [ ] and braces { }", pattern)
			}
			matches, err := rd.fileSet(baseDir, p, pattern)
			if err != nil {
				return cty.UnknownVal(cty.Set(cty.String)), function.NewArgError(0, err)
			}
			if len(matches) == 0 {
				return cty.SetValEmpty(cty.String), nil
			}
			vals := make([]cty.Value, len(matches))
			for i, m := range matches {
				vals[i] = cty.StringVal(m)
			}
			return cty.SetVal(vals), nil
		},
	})
}

// fileSet lists what fileset(p, pattern) returns: from the host (its
// recipes confined to the root), or, for a relative path at apply, from
// the plan.
func (rd *reader) fileSet(baseDir, p, pattern string) ([]string, error) {
	full := resolve(baseDir, p)
	if rd.captured && !filepath.IsAbs(p) {
		for _, s := range rd.sets {
			if s.Dir == full && s.Pattern == pattern {
				if s.Error != "" {
					return nil, carriedError(s.Error)
				}
				return s.Matches, nil
			}
		}
		return nil, fmt.Errorf("the listing of %s (%q) is not in the plan (its path or pattern was not known when the plan was made); apply reads recipe directories only from the plan", full, pattern)
	}
	var root *recipeRoot
	if !filepath.IsAbs(p) {
		root = rd.root
		if root != nil {
			if err := root.confine(p, full); err != nil {
				return nil, err
			}
		}
	}
	return listFiles(p, full, pattern, root)
}

// listFiles walks dir (which the path p names) for the regular files
// whose relative paths match pattern, sorted. Within root (nil: none), a
// link that matches must lead inside it.
func listFiles(p, dir, pattern string, root *recipeRoot) ([]string, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no directory %s; test for it with direxists(%q)", dir, p)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	// A pattern without ** (or braces, which may hold a /) matches
	// paths of one depth: deeper directories are not walked.
	maxDepth := -1
	if !strings.Contains(pattern, "**") && !strings.Contains(pattern, "{") {
		maxDepth = strings.Count(pattern, "/")
	}
	var out []string
	seen := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("listing %s: %w", dir, err)
		}
		if path == dir {
			return nil
		}
		if seen++; seen > MaxFileSetEntries {
			return fmt.Errorf("%s holds more than %d entries; fileset looks at no more: give a deeper path", dir, MaxFileSetEntries)
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if maxDepth >= 0 && strings.Count(rel, "/")+1 > maxDepth {
				return filepath.SkipDir
			}
			return nil
		}
		if ok, _ := doublestar.Match(pattern, rel); !ok {
			return nil
		}
		switch {
		case d.Type().IsRegular():
		case d.Type()&fs.ModeSymlink != 0:
			k, err := kindOf(path)
			if err != nil || k != lazy.KindFile {
				return nil // a dangling link, or one to a directory
			}
			if root != nil {
				if err := root.confine(filepath.Join(p, filepath.FromSlash(rel)), path); err != nil {
					return err
				}
			}
		default:
			return nil
		}
		if len(out) == MaxFileSetMatches {
			return fmt.Errorf("more than %d files under %s match %q; fileset returns no more: narrow the pattern", MaxFileSetMatches, dir, pattern)
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}
