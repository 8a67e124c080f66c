package eval

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/internal/lazy"
)

// captureFiles records in sc what expr's file functions read of the
// recipes by a path known now (relative: against dir), as rd reads it at
// plan — a file's content, a directory, a listing, or why the path is
// refused — so that apply reads exactly that. A template's own reads are
// followed (templatefile's, by literal paths), depth levels deep at most.
func captureFiles(sc *lazy.Scope, rd *reader, expr hcl.Expression, dir string, ctx *hcl.EvalContext, depth int) {
	if depth > 2 {
		return
	}
	for _, name := range lazy.HostReaders {
		for _, c := range lazy.FindCalls(expr, name) {
			if len(c.Args) == 0 {
				continue
			}
			p, ok := knownString(c.Args[0], ctx)
			if !ok || filepath.IsAbs(p) {
				continue // read from the host at apply
			}
			switch name {
			case "fileset":
				if len(c.Args) < 2 {
					continue
				}
				if pattern, ok := knownString(c.Args[1], ctx); ok {
					carrySet(sc, rd, dir, p, pattern)
				}
			case "templatefile":
				full := rd.templatePath(dir, p)
				f, fresh := carryFile(sc, rd, p, full)
				if !fresh || f == nil || f.Kind != lazy.KindFile || f.Error != "" {
					continue
				}
				if t, d := hclsyntax.ParseTemplate(f.Content, full, hcl.Pos{Line: 1, Column: 1}); !d.HasErrors() {
					captureFiles(sc, rd, t, filepath.Dir(full), &hcl.EvalContext{}, depth+1)
				}
			default:
				carryFile(sc, rd, p, resolve(dir, p))
			}
		}
	}
}

// carryFile records full (which the relative path p names) in sc, unless
// it is there already (fresh is false then).
func carryFile(sc *lazy.Scope, rd *reader, p, full string) (f *lazy.File, fresh bool) {
	if sc.Files == nil {
		sc.Files = map[string]*lazy.File{}
	}
	if f, done := sc.Files[full]; done {
		return f, false
	}
	f = readCarried(rd, p, full)
	sc.Files[full] = f
	return f, true
}

// readCarried is full as a plan carries it: nil when nothing is there.
func readCarried(rd *reader, p, full string) *lazy.File {
	if rd.root != nil {
		if err := rd.root.confine(p, full); err != nil {
			return &lazy.File{Error: err.Error()}
		}
	}
	k, err := kindOf(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &lazy.File{Error: "checking " + full + ": " + err.Error()}
	case k != lazy.KindFile:
		return &lazy.File{Kind: k}
	}
	b, _, err := readFile(full)
	if err != nil {
		return &lazy.File{Error: err.Error()}
	}
	return &lazy.File{Content: b}
}

// carrySet records the listing fileset(p, pattern) makes now.
func carrySet(sc *lazy.Scope, rd *reader, dir, p, pattern string) {
	full := resolve(dir, p)
	for _, s := range sc.Sets {
		if s.Dir == full && s.Pattern == pattern {
			return
		}
	}
	set := lazy.FileSet{Dir: full, Pattern: pattern, Matches: []string{}}
	matches, err := rd.fileSet(dir, p, pattern)
	if err != nil {
		set.Error = err.Error()
	} else if matches != nil {
		set.Matches = matches
	}
	sc.Sets = append(sc.Sets, set)
}
