package command

import (
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
)

func TestExitStatus(t *testing.T) {
	warn := diag.Sourceless(diag.Warning, "w", "")
	cases := []struct {
		name  string
		diags diag.Diagnostics
		want  int
	}{
		{"nothing", nil, ExitOK},
		{"warnings only", diag.Diagnostics{warn}, ExitOK},
		{"an hcl error", diag.Diagnostics{}.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "x"}), ExitError},
		{"stale", diag.Diagnostics{}.Append(warn, &apply.StaleError{}), ExitStale},
		{"stale, wrapped", diag.Diagnostics{}.Append(fmt.Errorf("apply: %w", &apply.StaleError{})), ExitStale},
		{"lock held", diag.Diagnostics{}.Append(&apply.LockHeldError{PID: 1}), ExitLockHeld},
		{"interrupted apply", diag.Diagnostics{}.Append(&apply.InterruptedError{}), ExitInterrupted},
		{"interrupted read", diag.Diagnostics{}.Append(errInterrupted), ExitInterrupted},
		{"the first typed error decides", diag.Diagnostics{}.Append(fmt.Errorf("plain"), &apply.LockHeldError{}, &apply.StaleError{}), ExitLockHeld},
		{"already applied", diag.Diagnostics{}.Append(fmt.Errorf("apply: %w", &apply.AlreadyAppliedError{})), ExitAlreadyApplied},
		{"a journal toque cannot read", diag.Diagnostics{}.Append(&apply.JournalError{Err: fmt.Errorf("x")}), ExitError},
		{"an untrusted state directory", diag.Diagnostics{}.Append(&apply.UntrustedError{}), ExitError},
		{"a resource failed", diag.Diagnostics{}.Append(&apply.ResourceError{Address: "x", Err: fmt.Errorf("boom")}), ExitError},
	}
	for _, c := range cases {
		if got := exitStatus(c.diags); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
