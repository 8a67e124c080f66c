package guard

import (
	"fmt"
	"math/big"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// params checks the guard parameters whatever the interpreter, and returns
// them in canonical form: cwd, user, group strings; environment a map of
// strings; umask "0022"; path a list of strings; timeout a positive number
// of seconds; returns a list of exit codes. It checks every parameter, in
// name order, and reports false when one is invalid (each with its
// diagnostic). A value not wholly known yet is kept unchecked.
func (d *decoder) params(r raw) (map[string]cty.Value, bool) {
	out := map[string]cty.Value{}
	ok := true
	keys := make([]string, 0, len(r.params))
	for k := range r.params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.params[k]
		_, vrng := itemRanges(r.expr, k, r.rng)
		bad := func(format string, a ...any) {
			d.errorf(vrng, "Invalid guard parameter", "The guard parameter "+k+" "+format, a...)
			ok = false
		}
		if !v.IsWhollyKnown() {
			out[k] = v
			continue
		}
		if cv, keep := checkParam(k, v, bad); keep {
			out[k] = cv
		}
	}
	return out, ok
}

// badParam reports what is wrong with a guard parameter's value: format
// and a end the sentence "The guard parameter NAME …".
type badParam func(format string, a ...any)

// checkParam checks v, the wholly known value of the guard parameter k,
// and returns it in canonical form. It reports false when the value is
// not to be kept, because it is invalid (bad said why) or k is not a
// parameter every interpreter takes; a value with a problem that does not
// stop it being kept (an environment with a bad name) is reported and
// kept.
func checkParam(k string, v cty.Value, bad badParam) (cty.Value, bool) {
	switch k {
	case "cwd", "architecture":
		return stringParam(k, v, bad)
	case "user", "group":
		return identityParam(v, bad)
	case "environment":
		return environmentParam(v, bad)
	case "umask":
		return umaskParam(v, bad)
	case "path":
		return pathParam(v, bad)
	case "timeout":
		return timeoutParam(v, bad)
	case "returns":
		return returnsParam(v, bad)
	case "flags":
		return flagsParam(v, bad)
	}
	return cty.NilVal, false
}

// stringParam checks cwd (an absolute path) and architecture: strings.
func stringParam(k string, v cty.Value, bad badParam) (cty.Value, bool) {
	sv, err := convert.Convert(v, cty.String)
	if err != nil {
		bad("must be a string, not %s.", v.Type().FriendlyName())
		return cty.NilVal, false
	}
	if k == "cwd" && !filepath.IsAbs(sv.AsString()) {
		bad("must be an absolute path, not %q.", sv.AsString())
		return cty.NilVal, false
	}
	return sv, true
}

// identityParam checks user or group: a name or a numeric id, as a
// non-empty string.
func identityParam(v cty.Value, bad badParam) (cty.Value, bool) {
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.AsString() == "" {
		bad("must be a name or a numeric id, not %s.", friendly(v))
		return cty.NilVal, false
	}
	return sv, true
}

// environmentParam checks environment: a map of strings whose names are
// valid variable names and whose values are not null. A map with bad
// entries is reported and kept.
func environmentParam(v cty.Value, bad badParam) (cty.Value, bool) {
	mv, err := convert.Convert(v, cty.Map(cty.String))
	if err != nil {
		bad("must be a map of strings, such as { JAVA_HOME = \"/usr/lib/jvm\" }: %s.", err)
		return cty.NilVal, false
	}
	for name, e := range mv.AsValueMap() {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			bad("has an invalid variable name %q.", name)
		} else if e.IsNull() {
			bad("sets %s to null; give it a string or leave it out.", name)
		}
	}
	return mv, true
}

// umaskParam checks umask, an octal string ("022") or a number, and
// returns it as four octal digits ("0022").
func umaskParam(v cty.Value, bad badParam) (cty.Value, bool) {
	var u int
	var err error
	switch v.Type() {
	case cty.String:
		u, err = shellexec.ParseUmask(v.AsString())
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		u, err = shellexec.ParseUmask(f)
	default:
		err = fmt.Errorf("want an octal string such as \"022\", not %s", v.Type().FriendlyName())
	}
	if err != nil {
		bad("is not a valid umask: %s.", err)
		return cty.NilVal, false
	}
	return cty.StringVal(fmt.Sprintf("%04o", u)), true
}

// pathParam checks path, a directory or a non-empty list of them, and
// returns a list. Directories that are empty or hold a ':' are reported,
// and the list kept.
func pathParam(v cty.Value, bad badParam) (cty.Value, bool) {
	if v.Type() == cty.String {
		v = cty.ListVal([]cty.Value{v})
	}
	lv, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || lv.LengthInt() == 0 {
		bad("must be a directory or a non-empty list of directories.")
		return cty.NilVal, false
	}
	for _, e := range lv.AsValueSlice() {
		if e.IsNull() || e.AsString() == "" || strings.ContainsAny(e.AsString(), ":\x00") {
			if e.IsNull() {
				e = cty.StringVal("")
			}
			bad("has an invalid directory %q: it must be non-empty and contain no ':'.", e.AsString())
		}
	}
	return lv, true
}

// timeoutParam checks timeout: a positive number of seconds, at most a
// year.
func timeoutParam(v cty.Value, bad badParam) (cty.Value, bool) {
	nv, err := convert.Convert(v, cty.Number)
	if err != nil {
		bad("must be a number of seconds, not %s.", v.Type().FriendlyName())
		return cty.NilVal, false
	}
	if f, _ := nv.AsBigFloat().Float64(); f > 365*24*3600 {
		bad("must be at most a year (%d seconds), not %s.", 365*24*3600, nv.AsBigFloat().Text('g', -1))
		return cty.NilVal, false
	}
	if nv.AsBigFloat().Sign() <= 0 {
		bad("must be a positive number of seconds, not %s.", nv.AsBigFloat().Text('g', -1))
		return cty.NilVal, false
	}
	return nv, true
}

// returnsParam checks returns, an exit code or a non-empty list of them
// (whole numbers from 0 to 255), and returns a list. Only the first bad
// exit code is reported.
func returnsParam(v cty.Value, bad badParam) (cty.Value, bool) {
	if v.Type() == cty.Number {
		v = cty.ListVal([]cty.Value{v})
	}
	lv, err := convert.Convert(v, cty.List(cty.Number))
	if err != nil || lv.LengthInt() == 0 {
		bad("must be an exit code or a non-empty list of exit codes.")
		return cty.NilVal, false
	}
	for _, e := range lv.AsValueSlice() {
		if e.IsNull() {
			bad("has a null exit code.")
			return cty.NilVal, false
		}
		f := e.AsBigFloat()
		if !f.IsInt() || f.Cmp(big.NewFloat(0)) < 0 || f.Cmp(big.NewFloat(255)) > 0 {
			bad("has %s, which is not an exit code: exit codes are whole numbers from 0 to 255.", f.Text('g', -1))
			return cty.NilVal, false
		}
	}
	return lv, true
}

// flagsParam checks flags: a string, kept as it is, or a list of strings.
func flagsParam(v cty.Value, bad badParam) (cty.Value, bool) {
	if v.Type() == cty.String {
		return v, true
	}
	lv, err := convert.Convert(v, cty.List(cty.String))
	if err != nil {
		bad("must be a string or a list of strings.")
		return cty.NilVal, false
	}
	return lv, true
}

// friendly words a user or group value that is not a name or an id.
func friendly(v cty.Value) string {
	if v.Type() == cty.String {
		return "an empty string"
	}
	return v.Type().FriendlyName()
}
