package packages

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// rpmVersionCases are ordered pairs; the test checks each against toque's
// comparison and, where rpm is installed, against rpm's own (rpm.vercmp
// in rpm's Lua, the comparison dnf and rpm use), all in one process.
var rpmVersionCases = []struct {
	a, b string
	want int
}{
	{"1.0", "1.0", 0},
	{"1.0", "2.0", -1},
	{"1.10", "1.9", 1},
	{"1.001", "1.1", 0},
	{"1.0", "1.0.0", -1},
	{"1.0a", "1.0", 1},
	{"1.0a", "1.0b", -1},
	{"a", "1", -1},
	{"1_0", "1.0", 0},
	{"2.0-1", "2.0", 1},
	{"2.0-1", "2.0-2", -1},
	{"2.0-10", "2.0-9", 1},
	{"1.0-1", "1.0-1.el9", -1},
	{"1.0-1.el9", "1.0-1.el9_1", -1},
	{"0:2.0-1", "2.0-1", 0},
	{"1:1.0", "2.0", 1},
	{"1:1.0-1", "2:0.1-1", -1},
	{"10:1.0", "9:2.0", 1},
	// tilde: before everything, even the end
	{"1.0~rc1", "1.0", -1},
	{"1.0~rc1", "1.0~rc2", -1},
	{"1.0~~", "1.0~", -1},
	{"1.0~", "1.0", -1},
	{"1.0-1~rc", "1.0-1", -1},
	// caret: after the end, before anything else
	{"1.0^git1", "1.0", 1},
	{"1.0^git1", "1.0.1", -1},
	{"1.0^git1", "1.0^git2", -1},
	{"1.0^", "1.0", 1},
	{"1.0~rc1^git1", "1.0~rc1", 1},
	{"1.0~rc1^git1", "1.0", -1},
	{"1.0^20230101", "1.0~rc1", 1},
	{"5.3.28-3", "5.3.28-3", 0},
	{"2.4.57-5.el9", "2.4.57-11.el9", -1},
	{"1.20.1-14.el9_2.1", "1.20.1-14.el9", 1},
	{"0.9.9", "0.10", -1},
	{"1.0.0010", "1.0.9", 1},
	{"fc4", "fc.4", 0},
	{"3.0.0", "3.0.0+git", -1},
}

func TestCompareRPMVersions(t *testing.T) {
	for _, c := range rpmVersionCases {
		if got := compareRPMVersions(c.a, c.b); got != c.want {
			t.Errorf("compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := compareRPMVersions(c.b, c.a); got != -c.want {
			t.Errorf("compare(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Log("rpm is not installed: the cases are not checked against rpm's own comparison (scripts/test-deps installs it)")
		return
	}
	// The reference: rpm itself, every case in one Lua chunk.
	var lua strings.Builder
	lua.WriteString("%{lua: ")
	for _, c := range rpmVersionCases {
		lua.WriteString("print(rpm.vercmp(" + strconv.Quote(c.a) + ", " + strconv.Quote(c.b) + ") .. ' ') ")
	}
	lua.WriteString("}")
	out, err := exec.Command("rpm", "--eval", lua.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm --eval: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	if len(got) != len(rpmVersionCases) {
		t.Fatalf("rpm printed %q for %d cases", out, len(rpmVersionCases))
	}
	for i, c := range rpmVersionCases {
		if got[i] != strconv.Itoa(c.want) {
			t.Errorf("rpm disagrees: rpm.vercmp(%q, %q) = %s, the table says %d", c.a, c.b, got[i], c.want)
		}
	}
}

func TestParseRPMVersion(t *testing.T) {
	for in, want := range map[string]string{"1.0": "1.0", "1:2.3-4": "1:2.3-4", "0:2.3-4.el9": "2.3-4.el9", "1.0~rc1-1": "1.0~rc1-1",
		"1.0^git20230101-2.fc39": "1.0^git20230101-2.fc39", "7": "7", "2.4.57-5.el9_2.1": "2.4.57-5.el9_2.1"} {
		v, err := parseRPMVersion(in)
		if err != nil || v.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, v, err, want)
		}
	}
	for _, bad := range []string{"", "1.0 ", "a1.0", "1.0;rm", "1.0-", ":1.0", "x:1.0", "1:", "1.0/2", "1.0-1-2", "1.0=2",
		"1.0*", "1.0?", "1.[0]", "1..0", "-1.0", "1.0\n2", "1.0-.1", "$x"} {
		if _, err := parseRPMVersion(bad); err == nil {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
}

func TestRPMPinMatches(t *testing.T) {
	for _, c := range []struct {
		pin, v string
		want   bool
	}{
		{"2.0", "2.0-1", true},
		{"2.0", "1:2.0-3.el9", true},
		{"2.0-1", "2.0-1", true},
		{"2.0-1", "1:2.0-1", true},
		{"0:2.0-1", "1:2.0-1", false},
		{"1:2.0", "1:2.0-1", true},
		{"2.0", "2.0.1-1", false},
		{"2.0-1", "2.0-10", false},
		{"2.00-1", "2.0-1", true},
	} {
		if got := rpmPinMatches(c.pin, c.v); got != c.want {
			t.Errorf("pin %q, version %q: %v, want %v", c.pin, c.v, got, c.want)
		}
	}
}
