package apply

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestApplyEndState: once the plan is carried out, apply reads every
// resource again and lists those that did not end as the plan predicted
// — here a file planned unchanged that a later step of the same apply
// rewrote behind the plan's back — counts them in the report, and
// returns an *EndStateError (exit status 7); -verify=false
// (SkipVerify) skips the reading.
func TestApplyEndState(t *testing.T) {
	for _, skip := range []bool{false, true} {
		dir := t.TempDir()
		same, made := filepath.Join(dir, "same"), filepath.Join(dir, "made")
		writeFile(t, same, "as planned")
		reg := testRegistry()
		a, _ := newApplier(t, reg)
		a.SkipVerify = skip
		p := makePlan(t, reg,
			tfile(same, "as planned"),
			tfile(made, "new"),
			tscript("side-effect", "printf 'changed' > "+same))
		rep, err := a.Apply(context.Background(), p)
		if skip {
			if err != nil || rep.Verified || len(rep.NotAsPlanned) != 0 {
				t.Errorf("SkipVerify: %v; verified %v, %v", err, rep.Verified, rep.NotAsPlanned)
			}
			continue
		}
		var ee *EndStateError
		if !errors.As(err, &ee) {
			t.Fatalf("apply: %v, want an *EndStateError", err)
		}
		if !rep.Verified || rep.DidNotEndAsPlanned != 1 || !rep.PlanFinished {
			t.Errorf("report: verified %v, %d did not end as planned, finished %v", rep.Verified, rep.DidNotEndAsPlanned, rep.PlanFinished)
		}
		if len(ee.Differences) != 1 {
			t.Fatalf("differences %+v, want the one file's content", ee.Differences)
		}
		d := ee.Differences[0]
		if d.Address != "tfile["+same+"]" || d.Property != "content" || !strings.HasPrefix(d.Predicted, "(10 bytes, sha256:") || !strings.HasPrefix(d.Actual, "(7 bytes, sha256:") {
			t.Errorf("difference %+v", d)
		}
		if !strings.Contains(err.Error(), "1 resource did not end as planned") {
			t.Errorf("error %q", err)
		}
	}
}

// A run that says it rewrites a file (an execute's writes) has the last
// word on it: the file's own plan is not held against what it leaves.
func TestApplyEndStateWrites(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same")
	writeFile(t, same, "as planned")
	reg := testRegistry()
	a, _ := newApplier(t, reg)
	run := tscript("regenerate", "printf 'changed' > "+same)
	run.values["writes"] = cty.ListVal([]cty.Value{cty.StringVal(same)})
	rep, err := a.Apply(context.Background(), makePlan(t, reg, tfile(same, "as planned"), run))
	if err != nil || !rep.Verified || rep.DidNotEndAsPlanned != 0 {
		t.Errorf("apply: %v; verified %v, %d did not end as planned", err, rep.Verified, rep.DidNotEndAsPlanned)
	}
}
