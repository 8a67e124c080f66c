package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/resources"
)

// A plan whose only errors are resources that need root (made as another
// user) is still shown, with them listed at its top, one line each, and
// no diagnostic repeats them; any other error hides the plan as before.
// A needs-root diagnostic is one line: what, and where.
func TestPlanTextShowsAPlanThatOnlyNeedsRoot(t *testing.T) {
	p := plantest.SamplePlan(t)
	p.Errored, p.Errors = true, []string{"main.hcl:3: Needs root: file[/x]: giving /x to owner root needs root."}
	needsRoot := diag.WithCause(&hcl.Diagnostic{
		Severity: hcl.DiagError, Summary: "Needs root", Detail: "file[/x]: giving /x to owner root needs root.",
		Subject: &hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 3, Column: 1}, End: hcl.Pos{Line: 3, Column: 9}},
	}, &resources.NeedsRootError{Reason: "giving /x to owner root needs root"})
	warning := &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Something to look at"}

	show := func(diags diag.Diagnostics) (stdout, stderr string) {
		var out, errs bytes.Buffer
		if err := NewPlan(&View{Streams: Streams{Stdout: &out, Stderr: &errs}, Registry: testRegistry()}, false, false).Show(p, diags, PlanOptions{SavedTo: "plan.out"}); err != nil {
			t.Fatal(err)
		}
		return out.String(), errs.String()
	}
	stdout, stderr := show(diag.Diagnostics{}.Append(needsRoot, warning))
	if !strings.Contains(stdout, "main.hcl:3: Needs root: file[/x]: giving /x to owner root needs root.") || !strings.Contains(stdout, "will be created") {
		t.Errorf("the plan is not shown with what needs root:\n%s", stdout)
	}
	if !strings.Contains(stdout, "Saved the plan to plan.out; being incomplete, it cannot be applied.") || strings.Contains(stdout, "toque apply plan.out") {
		t.Errorf("the plan says it can be applied:\n%s", stdout)
	}
	if strings.Contains(stderr, "root") || !strings.Contains(stderr, "Something to look at") {
		t.Errorf("stderr %q: want the warning only", stderr)
	}

	stdout, stderr = show(diag.Diagnostics{}.Append(needsRoot, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read file[/y]"}))
	if stdout != "" {
		t.Errorf("a plan with another error is shown:\n%s", stdout)
	}
	if want := "Error: needs root: file[/x]: giving /x to owner root needs root (main.hcl:3)\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr begins %q, want %q", stderr, want)
	}
}
