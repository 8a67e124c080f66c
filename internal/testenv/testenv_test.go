package testenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	missing := result{known: true, err: errors.New("csh is not installed"), hint: "apt-get install csh"}
	cases := []struct {
		name string
		req  Requirement
		tier tier
		res  result
		want verdict
		msg  []string
	}{
		{"met runs", Csh, rootT, result{known: true}, run, nil},
		{"local skips", Csh, local, missing, skip, []string{"needs csh: csh is not installed (apt-get install csh)"}},
		{"promised fails", Csh, rootT, missing, fail, []string{"needs csh", "TOQUE_TEST_STRICT=root promises it"}},
		{"promised by the nonroot tier too", Csh, nonroot, missing, fail, []string{"TOQUE_TEST_STRICT=nonroot promises it"}},
		{"root in the nonroot tier skips", Root, nonroot, result{known: true, err: errors.New("running as uid 65534, not root")}, skip, []string{"not promised by TOQUE_TEST_STRICT=nonroot"}},
		{"non-root in the root tier skips", NonRoot, rootT, result{known: true, err: errors.New("running as root")}, skip, []string{"not promised"}},
		{"pwsh is never promised", Pwsh, rootT, result{known: true, err: errors.New("pwsh is not installed")}, skip, []string{"needs pwsh", "not promised"}},
		{"nspawn is promised as root", Nspawn, rootT, result{known: true, err: errors.New("systemd-nspawn is not installed")}, fail, nil},
		{"nspawn is not promised to nobody", Nspawn, nonroot, result{known: true, err: errors.New("needs root")}, skip, nil},
		{"unshare is promised as root", Unshare, rootT, result{known: true, err: errors.New("no")}, fail, nil},
		{"unknown always fails", "zsh", local, result{err: errors.New(`testenv knows no requirement "zsh"`)}, fail, []string{"zsh"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, msg := decide(c.req, c.tier, c.res)
			if got != c.want {
				t.Errorf("verdict %d, want %d (%s)", got, c.want, msg)
			}
			for _, w := range c.msg {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if got != run && msg == "" {
				t.Error("a skip or failure without a message")
			}
		})
	}
}

func TestStrictTier(t *testing.T) {
	for v, want := range map[string]tier{"": local, "0": local, "1": rootT, "root": rootT, "nonroot": nonroot} {
		if got, err := strictTier(v); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := strictTier("yes"); err == nil {
		t.Error("an unknown value was accepted")
	}
}

// Every promised requirement is one testenv can probe, and the two tiers
// promise the same machine requirements.
func TestPromisesAreKnown(t *testing.T) {
	for r, tiers := range promised {
		if res := probe(r); !res.known {
			t.Errorf("%s is promised but unknown: %v", r, res.err)
		}
		if len(tiers) == 0 {
			t.Errorf("%s has an empty promise", r)
		}
	}
	for _, r := range []Requirement{Pwsh} {
		if len(promised[r]) != 0 {
			t.Errorf("%s is promised, but CI cannot provide it", r)
		}
	}
}

// Exactly one of root and non-root holds, and Has agrees with the probe.
func TestRootXorNonRoot(t *testing.T) {
	root, why := Has(Root)
	nonRoot, whyNot := Has(NonRoot)
	if root == nonRoot {
		t.Fatalf("root %v (%s), non-root %v (%s)", root, why, nonRoot, whyNot)
	}
	if !root && why == "" || !nonRoot && whyNot == "" {
		t.Error("an unmet requirement without a reason")
	}
}

// recorder stands in for a test so MustHave's skip and failure can be
// seen; unlike a real test it returns from Skip and Fatal.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)         { r.failed = fmt.Sprint(args...) }
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

func TestMustHave(t *testing.T) {
	t.Setenv(StrictEnv, "")
	var rec recorder
	MustHave(&rec, "no-such-requirement")
	if !strings.Contains(rec.failed, "no-such-requirement") || rec.skipped != "" {
		t.Errorf("unknown requirement: failed %q, skipped %q", rec.failed, rec.skipped)
	}

	// The requirement this process does not meet skips locally and fails
	// in the tier that promises it.
	unmet, tr := Root, "1"
	if ok, _ := Has(Root); ok {
		unmet, tr = NonRoot, "nonroot"
	}
	rec = recorder{}
	MustHave(&rec, unmet)
	if rec.skipped == "" || rec.failed != "" {
		t.Errorf("%s locally: skipped %q, failed %q", unmet, rec.skipped, rec.failed)
	}
	t.Setenv(StrictEnv, tr)
	rec = recorder{}
	MustHave(&rec, unmet)
	if rec.failed == "" || rec.skipped != "" {
		t.Errorf("%s with %s=%s: skipped %q, failed %q", unmet, StrictEnv, tr, rec.skipped, rec.failed)
	}

	t.Setenv(StrictEnv, "please")
	rec = recorder{}
	MustHave(&rec, Bash)
	if !strings.Contains(rec.failed, "please") {
		t.Errorf("a bad %s: failed %q", StrictEnv, rec.failed)
	}
}
