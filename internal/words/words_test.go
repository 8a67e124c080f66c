package words

import "testing"

func TestQuoted(t *testing.T) {
	cases := map[string][]string{
		`(none)`:               nil,
		`"a"`:                  {"a"},
		`"a" and "b"`:          {"a", "b"},
		`"a", "b" and "c"`:     {"a", "b", "c"},
		`"say \"hi\"" and "x"`: {`say "hi"`, "x"},
	}
	for want, in := range cases {
		if got := Quoted(in); got != want {
			t.Errorf("Quoted(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Join(nil, ""); got != "" {
		t.Errorf("Join(nil) = %q", got)
	}
}
