package guard

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestCheckParam holds each guard parameter's check alone: the canonical
// value kept, or what is reported.
func TestCheckParam(t *testing.T) {
	str := cty.StringVal
	num := cty.NumberIntVal
	list := func(vs ...cty.Value) cty.Value { return cty.ListVal(vs) }
	cases := []struct {
		key  string
		in   cty.Value
		want cty.Value // cty.NilVal when not kept
		bad  []string  // what is reported, in order
	}{
		{"cwd", str("/srv"), str("/srv"), nil},
		{"cwd", str("srv"), cty.NilVal, []string{`must be an absolute path, not "srv".`}},
		{"cwd", list(str("/")), cty.NilVal, []string{"must be a string, not list of string."}},
		{"architecture", str("i386"), str("i386"), nil},
		{"user", num(1000), str("1000"), nil},
		{"group", str(""), cty.NilVal, []string{"must be a name or a numeric id, not an empty string."}},
		{"environment", cty.ObjectVal(map[string]cty.Value{"A": str("1")}), cty.MapVal(map[string]cty.Value{"A": str("1")}), nil},
		{"environment", cty.ObjectVal(map[string]cty.Value{"A=B": str("1")}), cty.MapVal(map[string]cty.Value{"A=B": str("1")}),
			[]string{`has an invalid variable name "A=B".`}},
		{"umask", str("22"), str("0022"), nil},
		{"umask", str("999"), cty.NilVal, nil}, // reported; the wording is shellexec's
		{"path", str("/opt/bin"), list(str("/opt/bin")), nil},
		{"path", list(str("/a"), str("/b:c")), list(str("/a"), str("/b:c")),
			[]string{`has an invalid directory "/b:c": it must be non-empty and contain no ':'.`}},
		{"path", cty.ListValEmpty(cty.String), cty.NilVal, []string{"must be a directory or a non-empty list of directories."}},
		{"timeout", num(30), num(30), nil},
		{"timeout", num(0), cty.NilVal, []string{"must be a positive number of seconds, not 0."}},
		{"timeout", num(366 * 24 * 3600), cty.NilVal, []string{"must be at most a year (31536000 seconds), not 3.16224e+07."}}, // (big.Float.Text 'g': today's wording)
		{"returns", num(0), list(num(0)), nil},
		{"returns", list(num(0), num(256), num(-1)), cty.NilVal,
			[]string{"has 256, which is not an exit code: exit codes are whole numbers from 0 to 255."}},
		{"flags", str("-eu"), str("-eu"), nil},
		{"flags", list(str("-e"), str("-u")), list(str("-e"), str("-u")), nil},
		{"shell", str("/bin/sh"), cty.NilVal, nil}, // not a parameter every interpreter takes
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s=%s", c.key, c.in.GoString()), func(t *testing.T) {
			var bad []string
			got, keep := checkParam(c.key, c.in, func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) })
			if keep != (c.want != cty.NilVal) || keep && !got.RawEquals(c.want) {
				t.Errorf("kept %v %#v, want %#v", keep, got, c.want)
			}
			switch {
			case c.key == "umask" && c.want == cty.NilVal:
				if len(bad) != 1 {
					t.Errorf("reported %q, want one problem", bad)
				}
			case !reflect.DeepEqual(bad, c.bad):
				t.Errorf("reported %q, want %q", bad, c.bad)
			}
		})
	}
}
