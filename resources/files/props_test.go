package files

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
	"github.com/toquehq/toque/resources/resourcetest"
)

func TestNormalizeMode(t *testing.T) {
	cases := []struct {
		name string
		in   cty.Value
		want string // "" means an error is expected
	}{
		{"three digits", cty.StringVal("644"), "0644"},
		{"four digits", cty.StringVal("0644"), "0644"},
		{"0o prefix", cty.StringVal("0o644"), "0644"},
		{"extra leading zeros", cty.StringVal("000644"), "0644"},
		{"setuid", cty.StringVal("4755"), "4755"},
		{"zero", cty.StringVal("0"), "0000"},
		{"max", cty.StringVal("7777"), "7777"},
		{"spaces", cty.StringVal(" 755 "), "0755"},
		{"number 420", cty.NumberIntVal(420), "0644"},
		{"number 0", cty.NumberIntVal(0), "0000"},
		{"number 4095", cty.NumberIntVal(4095), "7777"},
		{"not octal", cty.StringVal("0648"), ""},
		{"letters", cty.StringVal("rw-r--r--"), ""},
		{"empty", cty.StringVal(""), ""},
		{"prefix only", cty.StringVal("0o"), ""},
		{"too large string", cty.StringVal("10000"), ""},
		{"too large number", cty.NumberIntVal(4096), ""},
		{"negative", cty.NumberIntVal(-1), ""},
		{"fraction", cty.NumberFloatVal(420.5), ""},
		{"bool", cty.True, ""},
		{"very long", cty.StringVal(strings.Repeat("7", 40)), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NormalizeMode(c.in)
			if c.want == "" {
				if err == nil {
					t.Fatalf("NormalizeMode(%#v) = %#v, want an error", c.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeMode(%#v): %v", c.in, err)
			}
			if !got.RawEquals(cty.StringVal(c.want)) {
				t.Fatalf("NormalizeMode(%#v) = %#v, want %q", c.in, got, c.want)
			}
		})
	}
	t.Run("null passes through", func(t *testing.T) {
		got, err := NormalizeMode(cty.NullVal(cty.String))
		if err != nil || !got.IsNull() {
			t.Fatalf("got %#v, %v", got, err)
		}
	})
}

func TestModeEquality(t *testing.T) {
	p := ModeProperty("", "")
	forms := []cty.Value{cty.StringVal("644"), cty.StringVal("0644"), cty.StringVal("0o644"), cty.NumberIntVal(420)}
	for _, a := range forms {
		for _, b := range forms {
			if !p.Equals(a, b) {
				t.Errorf("%#v should equal %#v", a, b)
			}
		}
	}
	if p.Equals(cty.StringVal("0644"), cty.StringVal("0600")) {
		t.Error("0644 should not equal 0600")
	}
}

func TestOwnerGroupEquality(t *testing.T) {
	owner, group := OwnerProperty(""), GroupProperty("")
	cases := []struct {
		name string
		p    *resources.Property
		a, b string
		want bool
	}{
		{"owner root by name and id", owner, "root", "0", true},
		{"owner same id", owner, "0", "0", true},
		{"owner different ids", owner, "0", "1", false},
		{"owner root vs other id", owner, "root", "65533", false},
		{"owner unknown names differ", owner, "no-such-user-a", "no-such-user-b", false},
		{"group root by name and id", group, "root", "0", true},
		{"group different ids", group, "root", "12345", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.Equals(cty.StringVal(c.a), cty.StringVal(c.b)); got != c.want {
				t.Fatalf("Equals(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
			}
		})
	}
}

func TestLookupIDs(t *testing.T) {
	if id, err := props.LookupUID("root"); err != nil || id != 0 {
		t.Fatalf("LookupUID(root) = %d, %v", id, err)
	}
	if id, err := props.LookupGID("4242"); err != nil || id != 4242 {
		t.Fatalf("LookupGID(4242) = %d, %v", id, err)
	}
	if _, err := props.LookupUID("no-such-user-xyz"); err == nil || !strings.Contains(err.Error(), `"no-such-user-xyz"`) {
		t.Fatalf("LookupUID of an unknown user: %v, want an error naming it", err)
	}
	if _, err := props.LookupGID("no-such-group-xyz"); err == nil || !strings.Contains(err.Error(), `"no-such-group-xyz"`) {
		t.Fatalf("LookupGID of an unknown group: %v, want an error naming it", err)
	}
}

func TestCanonicalPath(t *testing.T) {
	cases := []struct {
		in, want string // want "" means an error is expected
		errHas   string
	}{
		{"/etc/motd", "/etc/motd", ""},
		{"/s/./a", "/s/a", ""},
		{"/s//a", "/s/a", ""},
		{"//s/a", "/s/a", ""},
		{"/s/d/", "/s/d", ""},
		{"/s/d/.", "/s/d", ""},
		{"/s/.hidden/a..b/...", "/s/.hidden/a..b/...", ""},
		{"/s/a b\\c", "/s/a b\\c", ""},
		{"", "", "must not be empty"},
		{"etc/motd", "", "is not an absolute path"},
		{"./etc/motd", "", "is not an absolute path"},
		{"~/motd", "", "is not an absolute path"},
		{"/s/../a", "", `has a ".." component`},
		{"/s/a/..", "", `has a ".." component`},
		{"/..", "", `has a ".." component`},
		{"/", "", "root directory"},
		{"//", "", "root directory"},
		{"/./", "", "root directory"},
		{"/s/\x00a", "", "NUL byte"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := props.CanonicalPath(c.in)
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("CanonicalPath(%q) = %q, %v; want an error containing %q", c.in, got, err, c.errHas)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("CanonicalPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			if again, _ := props.CanonicalPath(got); again != got {
				t.Fatalf("CanonicalPath is not idempotent: %q then %q", got, again)
			}
		})
	}
}

// TestPathPropertiesNormalise checks that every file-system type's path
// property makes equal identities of spellings of one path, as the config
// loader decodes them (Normalize, then Validate).
func TestPathPropertiesNormalise(t *testing.T) {
	for _, typ := range []resources.Type{FileType(), TemplateType(), DirectoryType(), LinkType()} {
		np := typ.Schema().NameProperty()
		t.Run(typ.Schema().Name, func(t *testing.T) {
			var ids []string
			for _, in := range []string{"/s/a", "/s/./a", "/s//a", "/s/a/"} {
				r := resourcetest.NewRes(t, typ, "", map[string]any{np.Name: in})
				ids = append(ids, r.String(np.Name))
			}
			for _, id := range ids {
				if id != "/s/a" {
					t.Fatalf("identities = %q, want all \"/s/a\"", ids)
				}
			}
			for _, bad := range []string{"s/a", "/s/../a", "/s/a/..", "/"} {
				if _, err := np.Normalize(cty.StringVal(bad)); err == nil {
					t.Errorf("Normalize(%q) succeeded, want an error", bad)
				}
			}
		})
	}
}

func TestValidators(t *testing.T) {
	cases := []struct {
		name string
		fn   func(cty.Value) error
		v    cty.Value
		ok   bool
	}{
		{"absolute path", props.ValidateAbsPath, cty.StringVal("/etc/motd"), true},
		{"relative path", props.ValidateAbsPath, cty.StringVal("etc/motd"), false},
		{"root path", props.ValidateAbsPath, cty.StringVal("/"), false},
		{"empty path", props.ValidateAbsPath, cty.StringVal(""), false},
		{"dot-dot path", props.ValidateAbsPath, cty.StringVal("/etc/../motd"), false},
		{"backup 0", props.NonNegativeInt("backup"), cty.NumberIntVal(0), true},
		{"backup -1", props.NonNegativeInt("backup"), cty.NumberIntVal(-1), false},
		{"backup 1.5", props.NonNegativeInt("backup"), cty.NumberFloatVal(1.5), false},
		{"link_type hard", props.OneOf("link_type", "symbolic", "hard"), cty.StringVal("hard"), true},
		{"link_type soft", props.OneOf("link_type", "symbolic", "hard"), cty.StringVal("soft"), false},
		{"empty owner", props.ValidateNonEmpty("owner"), cty.StringVal(" "), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.fn(c.v); (err == nil) != c.ok {
				t.Fatalf("validate(%#v) = %v, want ok=%v", c.v, err, c.ok)
			}
		})
	}
}
