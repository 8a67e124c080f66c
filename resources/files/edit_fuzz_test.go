package files

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// FuzzEdits: whatever the file's text and the recipe's values, the
// editors never panic; a value their validation accepts gives an edit
// that, made again on what it leaves, changes nothing (the next plan is a
// no-op), and that leaves the line, block or key in the file.
func FuzzEdits(f *testing.F) {
	f.Add("a\nb\n", "c", "^a", "[s]\nk = 1\n", "s", "k")
	f.Add("", "x = 1", "", "k=v", "", "k")
	f.Add("a\r\nb\r\n", "b", "b", "[a]\n[a]\nk\n", "a", "k")
	f.Add("no newline", "#", "#", "; c\n[x]\n  k =  v  \n", "x", "k")
	f.Fuzz(func(t *testing.T, text, line, match, ini, section, key string) {
		if !utf8.ValidString(text) || notText([]byte(text)) != "" || !utf8.ValidString(ini) || notText([]byte(ini)) != "" {
			return
		}
		build := func(typ resources.Type, vals map[string]string) *resources.Resource {
			out := map[string]cty.Value{"path": cty.StringVal("/f")}
			s := typ.Schema()
			for k, v := range vals {
				cv := cty.StringVal(v)
				if p := s.Property(k); p.Validate != nil && p.Validate(cv) != nil {
					return nil
				}
				out[k] = cv
			}
			return resources.NewResource(s, "x", "create", out)
		}
		stable := func(typ resources.Type, r *resources.Resource, text string) string {
			ed := typ.(*editType).ed
			if ed.check("create", r) != nil {
				return ""
			}
			once, _, err := ed.edit("create", r, text)
			if err != nil {
				return ""
			}
			if twice, _, err := ed.edit("create", r, once); err != nil || twice != once {
				t.Fatalf("%s is not stable on %q: %q, then %q (%v)", typ.Schema().Name, text, once, twice, err)
			}
			return once
		}
		if r := build(FileLineType(), map[string]string{"line": line}); r != nil {
			out := stable(FileLineType(), r, text)
			// The line as a recipe gives it: a string value is in
			// Unicode normal form C (cty's), so U+FA69 arrives as U+97FF.
			want := r.String("line")
			found := false
			for _, l := range strings.Split(out, "\n") {
				found = found || strings.TrimSuffix(l, "\r") == want
			}
			if !found {
				t.Fatalf("file_line %q is not in %q", want, out)
			}
		}
		if r := build(FileLineType(), map[string]string{"line": line, "match": match}); r != nil {
			// With a match, stability holds when match matches line (or
			// matches one line at most): only exercised for panics.
			FileLineType().(*editType).ed.edit("create", r, text)
			FileLineType().(*editType).ed.edit("delete", r, text)
		}
		if r := build(FileBlockType(), map[string]string{"block": line + "\n" + match}); r != nil {
			stable(FileBlockType(), r, text)
		}
		if r := build(IniSettingType(), map[string]string{"section": section, "key": key, "value": line}); r != nil {
			stable(IniSettingType(), r, ini)
			IniSettingType().(*editType).ed.edit("delete", r, ini)
		}
	})
}

// FuzzSymbolicMode: a mode NormalizeMode accepts never panics when
// applied and stays within 07777; what it keeps parses again the same.
func FuzzSymbolicMode(f *testing.F) {
	for _, s := range []string{"go-w", "u=rwx,g=rx,o=", "a+X", "g=u", "u+s,o+t", "+x", "ug=,o-rwxXst"} {
		f.Add(s, uint16(0o755))
	}
	f.Fuzz(func(t *testing.T, s string, from uint16) {
		v, err := NormalizeMode(cty.StringVal(s))
		if err != nil || !isSymbolicMode(v) {
			return
		}
		m, err := parseSymbolicMode(v.AsString())
		if err != nil {
			t.Fatalf("%q normalised to %q, which does not parse: %v", s, v.AsString(), err)
		}
		for _, dir := range []bool{false, true} {
			if got := m.apply(uint32(from)&MaxMode, dir); got > MaxMode {
				t.Fatalf("%q on %04o gives %o", s, from, got)
			}
		}
	})
}
