package words

import (
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text, tabs\tand ünïcödé", "plain text, tabs\tand ünïcödé"},
		{"", ""},
		{"red \x1b[31mALERT\x1b[0m", `red \x1b[31mALERT\x1b[0m`},
		{"title \x1b]0;pwned\x07", `title \x1b]0;pwned\x07`},
		{"two\nlines\r\n", `two\nlines\r\n`},
		{"erase\x1b[2K\rfake", `erase\x1b[2K\rfake`},
		{"bell\x07 del\x7f nul\x00", `bell\x07 del\x7f nul\x00`},
		{"c1 csi \u009b31m", `c1 csi \x9b31m`},
		{"raw 8-bit csi \x9b31m", `raw 8-bit csi \x9b31m`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"isolate \u2067x\u2069", `isolate \u2067x\u2069`},
		{"separator \u2028here", `separator \u2028here`},
		{`back\slash \x1b`, `back\slash \x1b`},
	}
	for _, c := range cases {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("a\x1b[31mb\x9b\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Printable(%q) = %q is not UTF-8", s, out)
		}
		for _, r := range out {
			if unsafeRune(r) {
				t.Fatalf("Printable(%q) = %q keeps %U", s, out, r)
			}
		}
		if Printable(out) != out {
			t.Fatalf("Printable is not stable on %q", out)
		}
	})
}
