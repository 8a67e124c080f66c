package eval

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/lazy"
)

// Functions returns the function library expressions can call, in the
// spirit of Terraform's. File functions resolve relative paths against
// baseDir (the recipe file's directory) and keep them inside its recipes'
// root (paths.go). Nothing non-deterministic (uuid, timestamp) is offered:
// a plan must be reproducible.
func Functions(baseDir string) map[string]function.Function {
	return functionsWith(baseDir, newHostReader(baseDir))
}

// functionsWith is Functions whose file and environment functions read
// through rd: the host's (hostReader), or what a plan carries for a value
// known at apply (a captured reader).
func functionsWith(baseDir string, rd *reader) map[string]function.Function {
	fs := baseFunctionsWith(baseDir, rd)
	fs["templatefile"] = templateFileFunc(baseDir, rd)
	fs["sensitive"] = SensitiveFunc
	fs[lazyName] = lazyFunc
	return fs
}

// SensitiveMark is the cty mark sensitive() puts on a value. Marks live
// only while an expression is evaluated: eval strips them and records
// what they marked (a sensitive node attribute, a sensitive property).
const SensitiveMark = "sensitive"

// SensitiveFunc is sensitive(value): the value, marked so that toque keeps
// it, and whatever reads it, out of every output (as Terraform's
// sensitive()). In an attribute block it marks a node attribute; on a
// property it marks that property.
var SensitiveFunc = function.New(&function.Spec{
	Description: "Marks a value as sensitive: it is shown as (sensitive) in every output.",
	Params: []function.Parameter{{
		Name: "value", Type: cty.DynamicPseudoType,
		AllowUnknown: true, AllowNull: true, AllowMarked: true, AllowDynamicType: true,
	}},
	Type:         func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return args[0].Mark(SensitiveMark), nil
	},
})

// baseFunctions is the library without templatefile (templates cannot
// render templates).
func baseFunctions(baseDir string) map[string]function.Function {
	return baseFunctionsWith(baseDir, newHostReader(baseDir))
}

func baseFunctionsWith(baseDir string, rd *reader) map[string]function.Function {
	return map[string]function.Function{
		// numbers
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"log":      stdlib.LogFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc,
		"pow":      stdlib.PowFunc,
		"signum":   stdlib.SignumFunc,

		// strings
		"chomp":       stdlib.ChompFunc,
		"endswith":    endsWithFunc,
		"format":      stdlib.FormatFunc,
		"formatlist":  stdlib.FormatListFunc,
		"indent":      stdlib.IndentFunc,
		"join":        stdlib.JoinFunc,
		"lower":       stdlib.LowerFunc,
		"regex":       stdlib.RegexFunc,
		"regexall":    stdlib.RegexAllFunc,
		"replace":     replaceFunc,
		"split":       stdlib.SplitFunc,
		"startswith":  startsWithFunc,
		"strcontains": strContainsFunc,
		"strrev":      stdlib.ReverseFunc,
		"substr":      stdlib.SubstrFunc,
		"title":       stdlib.TitleFunc,
		"trim":        stdlib.TrimFunc,
		"trimprefix":  stdlib.TrimPrefixFunc,
		"trimspace":   stdlib.TrimSpaceFunc,
		"trimsuffix":  stdlib.TrimSuffixFunc,
		"upper":       stdlib.UpperFunc,

		// collections
		"alltrue":         allTrueFunc,
		"anytrue":         anyTrueFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"lookup":          stdlib.LookupFunc,
		"merge":           stdlib.MergeFunc,
		"range":           stdlib.RangeFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,

		// conversions and errors
		"can":      tryfunc.CanFunc,
		"try":      tryfunc.TryFunc,
		"tobool":   stdlib.MakeToFunc(cty.Bool),
		"tolist":   toListFunc,
		"tomap":    stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber": stdlib.MakeToFunc(cty.Number),
		"toset":    toSetFunc,
		"tostring": stdlib.MakeToFunc(cty.String),

		// encodings and hashes
		"base64decode": base64DecodeFunc,
		"base64encode": base64EncodeFunc,
		"csvdecode":    stdlib.CSVDecodeFunc,
		"jsondecode":   stdlib.JSONDecodeFunc,
		"jsonencode":   stdlib.JSONEncodeFunc,
		"yamldecode":   yamlDecodeFunc,
		"yamlencode":   yamlEncodeFunc,
		"md5":          hashFunc(md5.New),
		"sha1":         hashFunc(sha1.New),
		"sha256":       hashFunc(sha256.New),
		"sha512":       hashFunc(sha512.New),

		// dates (pure: no timestamp())
		"formatdate": stdlib.FormatDateFunc,
		"timeadd":    stdlib.TimeAddFunc,

		// files and paths
		"abspath":    absPathFunc(baseDir),
		"basename":   stringFunc("path", filepath.Base),
		"dirname":    stringFunc("path", filepath.Dir),
		"file":       fileFunc(baseDir, rd),
		"filebase64": fileBase64Func(baseDir, rd),
		"fileexists": fileExistsFunc(baseDir, rd),
		"direxists":  dirExistsFunc(baseDir, rd),
		"fileset":    fileSetFunc(baseDir, rd),
		"env":        envFunc(rd),

		// networks
		"cidrhost":    cidrHostFunc,
		"cidrnetmask": cidrNetmaskFunc,
		"cidrsubnet":  cidrSubnetFunc,
		"cidrsubnets": cidrSubnetsFunc,
	}
}

// stringFunc wraps a pure string → string function.
func stringFunc(param string, f func(string) string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: param, Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(f(args[0].AsString())), nil
		},
	})
}

func strPredicate(a, b string, f func(s, x string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: a, Type: cty.String}, {Name: b, Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

var (
	startsWithFunc  = strPredicate("str", "prefix", strings.HasPrefix)
	endsWithFunc    = strPredicate("str", "suffix", strings.HasSuffix)
	strContainsFunc = strPredicate("str", "substr", strings.Contains)
)

// lengthFunc counts the characters of a string or the elements of a
// collection, like Terraform's length.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		t := args[0].Type()
		switch {
		case t == cty.String, t == cty.DynamicPseudoType, t.IsCollectionType(), t.IsTupleType(), t.IsObjectType():
			return cty.Number, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "length takes a string or a collection, not %s", t.FriendlyName())
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		t := v.Type()
		switch {
		case t == cty.String:
			return stdlib.Strlen(v)
		case t.IsObjectType():
			return cty.NumberIntVal(int64(len(t.AttributeTypes()))), nil
		}
		return cty.NumberIntVal(int64(v.LengthInt())), nil
	},
})

// replaceFunc is Terraform's replace: a substring wrapped in slashes is a
// regular expression.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "substr", Type: cty.String},
		{Name: "replace", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sub := args[1].AsString()
		if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
			return stdlib.RegexReplace(args[0], cty.StringVal(sub[1:len(sub)-1]), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})

func boolFold(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			result := all
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				if !v.IsKnown() {
					return cty.UnknownVal(cty.Bool), nil
				}
				if v.IsNull() {
					if all {
						result = false
					}
					continue
				}
				if all && v.False() {
					result = false
				}
				if !all && v.True() {
					result = true
				}
			}
			return cty.BoolVal(result), nil
		},
	})
}

var (
	allTrueFunc = boolFold(true)
	anyTrueFunc = boolFold(false)
)

var base64EncodeFunc = stringFunc("str", func(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
})

var base64DecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "not valid base64: %s", err)
		}
		if !utf8.Valid(b) {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "the decoded bytes are not valid UTF-8 text")
		}
		return cty.StringVal(string(b)), nil
	},
})

// hashFunc returns the hex digest of a string's UTF-8 bytes.
func hashFunc(h func() hash.Hash) function.Function {
	return stringFunc("str", func(s string) string {
		d := h()
		d.Write([]byte(s))
		return hex.EncodeToString(d.Sum(nil))
	})
}

// resolve makes p absolute against baseDir.
func resolve(baseDir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(baseDir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

func absPathFunc(baseDir string) function.Function {
	return stringFunc("path", func(p string) string { return resolve(baseDir, p) })
}

// readFile reads the regular file full (absolute).
func readFile(full string) ([]byte, string, error) {
	fi, err := os.Stat(full)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, full, fmt.Errorf("no file %s", full)
	case err != nil:
		return nil, full, fmt.Errorf("reading %s: %w", full, err)
	case !fi.Mode().IsRegular():
		// Devices and pipes could block or never end.
		return nil, full, fmt.Errorf("%s is not a regular file", full)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return nil, full, fmt.Errorf("reading %s: %w", full, err)
	}
	return b, full, nil
}

func fileFunc(baseDir string, rd *reader) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, full, err := rd.read(baseDir, args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), function.NewArgError(0, err)
			}
			if !utf8.Valid(b) {
				return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "%s is not valid UTF-8 text; use filebase64 for binary files", full)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func fileBase64Func(baseDir string, rd *reader) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, _, err := rd.read(baseDir, args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), function.NewArgError(0, err)
			}
			return cty.StringVal(base64.StdEncoding.EncodeToString(b)), nil
		},
	})
}

// fileExistsFunc is fileexists(PATH): whether a regular file is at PATH
// (through links). Nothing there, a directory (see direxists) or another
// kind of file answer false; a path toque may not read is an error.
func fileExistsFunc(baseDir string, rd *reader) function.Function {
	return kindFunc(baseDir, rd, lazy.KindFile)
}

// TemplateError is returned by templatefile when the template does not
// parse or render. Its diagnostics point into the template file; the
// evaluator reports them in place of the function call's error.
type TemplateError struct {
	Filename string
	Src      []byte
	Diags    hcl.Diagnostics
}

func (e *TemplateError) Error() string {
	var parts []string
	for _, d := range e.Diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d,%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		return "template " + e.Filename + " failed"
	}
	return strings.Join(parts, "\n")
}

// templateFileFunc renders an HCL template (${…} and %{…} syntax) with
// vars as its variables and the function library (without templatefile,
// relative paths against the template's directory). The template is named
// as a template's source is (paths.go).
func templateFileFunc(baseDir string, rd *reader) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{
			{Name: "path", Type: cty.String},
			{Name: "vars", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true},
		},
		Type: function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			vars := map[string]cty.Value{}
			if !args[1].IsKnown() {
				return cty.DynamicVal, nil
			}
			if v := args[1]; !v.IsNull() {
				t := v.Type()
				if !t.IsObjectType() && !t.IsMapType() {
					return cty.DynamicVal, function.NewArgErrorf(1, "template variables must be an object or a map, not %s", t.FriendlyName())
				}
				for it := v.ElementIterator(); it.Next(); {
					k, ev := it.Element()
					name := k.AsString()
					if !hclsyntax.ValidIdentifier(name) {
						return cty.DynamicVal, function.NewArgErrorf(1, "template variable %q is not a valid name", name)
					}
					vars[name] = ev
				}
			}
			name := args[0].AsString()
			src, full, err := rd.readTemplate(baseDir, name)
			if err != nil {
				return cty.DynamicVal, function.NewArgError(0, err)
			}
			if d := config.CheckSource(src, full, true); d != nil {
				return cty.DynamicVal, &TemplateError{Filename: full, Src: src, Diags: hcl.Diagnostics{d}}
			}
			expr, diags := hclsyntax.ParseTemplate(src, full, hcl.Pos{Line: 1, Column: 1, Byte: 0})
			if diags.HasErrors() {
				return cty.DynamicVal, &TemplateError{Filename: full, Src: src, Diags: diags}
			}
			funcs := baseFunctionsWith(filepath.Dir(full), rd)
			val, diags := expr.Value(&hcl.EvalContext{Variables: vars, Functions: funcs})
			if diags.HasErrors() {
				return cty.DynamicVal, &TemplateError{Filename: full, Src: src, Diags: diags}
			}
			return val, nil
		},
	})
}

// envFunc is env(NAME) or env(NAME, DEFAULT): the value of an environment
// variable of the toque process, read at plan time (and recorded in the
// plan, so apply does not read it again). Without a default, an unset
// variable is an error rather than a silent empty string.
func envFunc(rd *reader) function.Function {
	return function.New(&function.Spec{
		Params:   []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam: &function.Parameter{Name: "default", Type: cty.String},
		Type:     function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 2 {
				return cty.UnknownVal(cty.String), function.NewArgErrorf(2, "env takes a name and at most one default")
			}
			name := args[0].AsString()
			v, ok, err := rd.lookupEnv(name)
			if err != nil {
				return cty.UnknownVal(cty.String), function.NewArgError(0, err)
			}
			if ok {
				return cty.StringVal(v), nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "environment variable %s is not set; give a default as env(%q, \"…\")", name, name)
		},
	})
}
