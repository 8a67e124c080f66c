package packages

import (
	"os/exec"
	"testing"
)

func TestCompareDebVersions(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0},
		{"1.0", "2.0", -1},
		{"1.10", "1.9", 1},
		{"1.0~rc1", "1.0", -1},
		{"1.0", "1.0+b1", -1},
		{"1:0.1", "9.9", 1},
		{"1.0-1", "1.0-2", -1},
		{"1.0-10", "1.0-9", 1},
		{"1.22.1-9", "1.22.1-9+deb12u1", -1},
		{"2.10-3", "2.10-3", 0},
		{"0:1.0", "1.0", 0},
		{"1.0a", "1.0+", -1},
		{"1.001", "1.1", 0},
		{"1.0~~", "1.0~", -1},
		{"1.0-1~bpo1", "1.0-1", -1},
	}
	_, dpkgErr := exec.LookPath("dpkg")
	for _, c := range cases {
		if got := compareDebVersions(c.a, c.b); got != c.want {
			t.Errorf("compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := compareDebVersions(c.b, c.a); got != -c.want {
			t.Errorf("compare(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
		if dpkgErr != nil {
			continue
		}
		// The reference: dpkg itself.
		op := map[int]string{-1: "lt", 0: "eq", 1: "gt"}[c.want]
		if err := exec.Command("dpkg", "--compare-versions", c.a, op, c.b).Run(); err != nil {
			t.Errorf("dpkg disagrees: %s %s %s is false", c.a, op, c.b)
		}
	}
}

func TestParseDebVersion(t *testing.T) {
	for _, ok := range []string{"1.0", "1:2.3-4", "2.10-3+deb12u1", "1.0~rc1-0ubuntu1", "7", "1.2.3-1.1"} {
		if _, err := parseDebVersion(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1.0 ", "a1.0", "1.0;rm", "1.0-", ":1.0", "x:1.0", "1:", "1.0/2", "1.0-1_2", "1.0=2", "1.0*"} {
		if _, err := parseDebVersion(bad); err == nil {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
}
