package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// FilesData is data "files": what is at some paths, as the file types see
// it — through held directories, following no symbolic link (a path that
// is a link is reported as the link, with its target).
//
//	data "files" "netrc" {
//	  glob    = "/home/*/.netrc"   # or a list of patterns
//	  paths   = ["/root/.netrc"]   # absent ones are reported absent
//	  content = false              # true: each regular file's text too
//	}
//
// It answers a map by path: exists; type (file, directory, symlink,
// fifo, socket, character device, block device); mode ("0644"); uid,
// gid, owner and group (names when the host knows them); size; target (a
// symbolic link's); and, with content = true, a regular file's content
// (null when it is not UTF-8 text) and sha256. Times are not in it: a
// plan would be stale each time a file is touched. A pattern's matches
// are listed when the plan is made (filepath.Glob); a directory on the
// way that another user could swap by a link fails the read.
func FilesData() resources.DataSource { return &filesData{} }

type filesData struct{}

// DefaultDataFileSize is the largest file whose content data "files"
// reads by default.
const DefaultDataFileSize = 1 << 20

var filesSchema = &resources.Schema{
	Name:        "files",
	Description: "What is at some paths (a stat, not the content unless asked), by path.",
	Properties: []*resources.Property{
		{Name: "paths", Type: cty.List(cty.String), Normalize: normalizeDataPaths,
			Description: "Absolute paths to read; one that does not exist is reported with exists = false."},
		{Name: "glob", Type: cty.DynamicPseudoType, Normalize: normalizeGlobs,
			Description: "An absolute pattern (filepath.Glob's: *, ?, [a-z]), or a list of them: the paths that match when the plan is made."},
		{Name: "content", Type: cty.Bool, Default: cty.False,
			Description: "Read each regular file's content (and sha256) too."},
		{Name: "max_size", Type: cty.Number, Default: cty.NumberIntVal(DefaultDataFileSize), Validate: validateDataFileSize,
			Description: "With content: the largest file read; a larger one fails the plan."},
	},
}

var fileEntryType = cty.Object(map[string]cty.Type{
	"path": cty.String, "exists": cty.Bool, "type": cty.String, "mode": cty.String,
	"uid": cty.Number, "gid": cty.Number, "owner": cty.String, "group": cty.String,
	"size": cty.Number, "target": cty.String, "content": cty.String, "sha256": cty.String,
})

func normalizeDataPaths(v cty.Value) (cty.Value, error) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return v, nil
	}
	var out []cty.Value
	for _, p := range props.StringList(v) {
		if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
			return cty.NilVal, fmt.Errorf("%q is not an absolute path", p)
		}
		out = append(out, cty.StringVal(filepath.Clean(p)))
	}
	if len(out) == 0 {
		return cty.ListValEmpty(cty.String), nil
	}
	return cty.ListVal(out), nil
}

func normalizeGlobs(v cty.Value) (cty.Value, error) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return v, nil
	}
	if v.Type() == cty.String {
		v = cty.TupleVal([]cty.Value{v})
	}
	lv, err := convert.Convert(v, cty.List(cty.String))
	if err != nil {
		return cty.NilVal, errors.New("glob must be a pattern, or a list of patterns")
	}
	for _, p := range props.StringList(lv) {
		if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
			return cty.NilVal, fmt.Errorf("the pattern %q is not an absolute path", p)
		}
		if _, err := filepath.Match(p, ""); err != nil {
			return cty.NilVal, fmt.Errorf("the pattern %q: %w", p, err)
		}
	}
	return lv, nil
}

func validateDataFileSize(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() || bf.Sign() <= 0 || bf.Cmp(big.NewFloat(resources.MaxDataAnswer)) > 0 {
		return fmt.Errorf("max_size must be a whole number of bytes from 1 to %d, not %s", resources.MaxDataAnswer, bf.Text('g', -1))
	}
	return nil
}

func (d *filesData) Schema() *resources.Schema { return filesSchema }

func (d *filesData) Describe(args map[string]cty.Value) string {
	var parts []string
	if v, ok := args["paths"]; ok {
		parts = append(parts, strings.Join(props.StringList(v), ", "))
	}
	if v, ok := args["glob"]; ok {
		parts = append(parts, "what matches "+strings.Join(props.StringList(v), ", "))
	}
	what := "stats " + strings.Join(parts, " and ")
	if v, ok := args["content"]; ok && v.True() {
		what += ", with the content of regular files"
	}
	return what
}

func (d *filesData) Read(ctx context.Context, req *resources.DataRequest) (cty.Value, error) {
	paths := props.StringList(req.Args["paths"])
	globs := props.StringList(req.Args["glob"])
	if req.Args["paths"] == cty.NilVal && req.Args["glob"] == cty.NilVal {
		return cty.NilVal, errors.New("it names nothing to read: give paths, glob, or both")
	}
	seen := map[string]bool{}
	var all []string
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			all = append(all, p)
		}
	}
	for _, g := range globs {
		matches, err := filepath.Glob(g)
		if err != nil {
			return cty.NilVal, fmt.Errorf("the pattern %q: %w", g, err)
		}
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				all = append(all, m)
			}
		}
	}
	sort.Strings(all)
	withContent := req.Get(filesSchema, "content").True()
	maxSize := int64(DefaultDataFileSize)
	if v := req.Get(filesSchema, "max_size"); v != cty.NilVal {
		maxSize, _ = v.AsBigFloat().Int64()
	}
	cache := dirCacheOf(ctx)
	out := make(map[string]cty.Value, len(all))
	for _, p := range all {
		if err := props.CtxErr(ctx, "reading "+p); err != nil {
			return cty.NilVal, err
		}
		e, err := statEntry(cache, p, withContent, maxSize)
		if err != nil {
			return cty.NilVal, err
		}
		out[strings.ToValidUTF8(p, "\uFFFD")] = e
	}
	if len(out) == 0 {
		return cty.MapValEmpty(fileEntryType), nil
	}
	return cty.MapVal(out), nil
}

// statEntry is what is at p, as data "files" answers it.
func statEntry(cache *DirCache, p string, withContent bool, maxSize int64) (cty.Value, error) {
	e := map[string]cty.Value{"path": resources.DataString(p), "exists": cty.False}
	for k, t := range fileEntryType.AttributeTypes() {
		if _, set := e[k]; !set {
			e[k] = cty.NullVal(t)
		}
	}
	f, err := lookupPathIn(cache, p, false)
	if err != nil {
		return cty.NilVal, fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.close()
	if !f.exists && f.link == "" {
		return cty.ObjectVal(e), nil
	}
	st := f.st
	e["exists"] = cty.True
	e["type"] = cty.StringVal(kindOf(uint32(st.Mode)))
	e["mode"] = cty.StringVal(fmt.Sprintf("%04o", uint32(st.Mode)&MaxMode))
	e["uid"] = cty.NumberUIntVal(uint64(st.Uid))
	e["gid"] = cty.NumberUIntVal(uint64(st.Gid))
	e["owner"] = resources.DataString(props.OwnerName(st.Uid))
	e["group"] = resources.DataString(props.GroupName(st.Gid))
	e["size"] = cty.NumberIntVal(st.Size)
	if f.link != "" {
		e["target"] = resources.DataString(f.link)
	}
	if withContent && uint32(st.Mode)&unix.S_IFMT == unix.S_IFREG {
		if st.Size > maxSize {
			return cty.NilVal, fmt.Errorf("%s is %d bytes, more than max_size (%d): give a larger max_size, or leave content out", p, st.Size, maxSize)
		}
		b, _, err := readRegular(f.dir, f.name, idOf(&st))
		if err != nil {
			return cty.NilVal, fmt.Errorf("reading %s: %w", p, err)
		}
		if int64(len(b)) > maxSize {
			return cty.NilVal, fmt.Errorf("%s grew past max_size (%d) while it was read", p, maxSize)
		}
		sum := sha256.Sum256(b)
		e["sha256"] = cty.StringVal(hex.EncodeToString(sum[:]))
		if utf8.Valid(b) {
			e["content"] = cty.StringVal(string(b))
		}
	}
	return cty.ObjectVal(e), nil
}
