package views

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// TestErrorClasses is the one table of typed errors as a command reports
// them: the exit status it ends with, the kind of its JSON diagnostic and
// the summary people read, in the text and in the JSON. Every row of
// errorClasses must be exercised here, and every error type of package
// apply must have a case: a new typed error without a row fails.
func TestErrorClasses(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	journal := &apply.JournalError{Path: "/s/journal/sha256-ab.jsonl", Err: errors.New("not a toque journal")}
	failed := &apply.ResourceError{Address: "file[/a]", Err: errors.New("boom")}
	cases := []struct {
		name    string
		err     error
		kind    string
		exit    int
		summary string
	}{
		{"untrusted state directory", &apply.UntrustedError{Path: "/s", Reason: "is owned by uid 1000"},
			KindUntrusted, ExitError, "Refusing an untrusted state directory"},
		{"already applied", &apply.AlreadyAppliedError{PlanDigest: "sha256:ab", At: at},
			KindAlreadyApplied, ExitAlreadyApplied, "The plan was already applied"},
		{"journal", journal,
			KindJournal, ExitError, "Cannot use the apply journal"},
		{"damaged journal", &apply.JournalDamage{Path: "/s/journal/sha256-ab.jsonl", Bytes: 3},
			KindJournal, ExitError, "Ignored an unfinished line at the end of the apply journal"},
		{"plan too old", &apply.PlanTooOldError{Created: at, Retention: 30 * 24 * time.Hour},
			KindPlanRefused, ExitError, "The plan is too old to apply"},
		{"stale", &apply.StaleError{Resources: []apply.StaleResource{{Address: "file[/a]", Differences: []plan.Difference{{Property: "content", Then: "a", Now: "b"}}}}},
			KindStale, ExitStale, "The plan is stale"},
		{"lock held", &apply.LockHeldError{PID: 42, Path: "/s/apply.lock"},
			KindLockHeld, ExitLockHeld, "Another toque apply holds the lock"},
		{"host-wide lock held", &apply.LockHeldError{PID: 42, Path: "/run/toque/apply.lock", HostWide: true},
			KindLockHeld, ExitLockHeld, "Another toque apply holds the host-wide lock"},
		{"apply interrupted", &apply.InterruptedError{After: "file[/a]", NotStarted: 2},
			KindInterrupted, ExitInterrupted, "apply stopped after file[/a]; 2 resources with planned changes not started"},
		{"read interrupted", ErrInterrupted,
			KindInterrupted, ExitInterrupted, "interrupted: stopped before finishing; nothing was changed and no plan was saved"},
		{"resource failed", failed,
			KindResourceFailed, ExitError, "file[/a]: boom"},
		{"needs root", &resources.NeedsRootError{Reason: "giving /x to owner root needs root, and toque runs as uid 65534: run it as root (or leave the property out)"},
			KindNeedsRoot, ExitError, "giving /x to owner root needs root, and toque runs as uid 65534: run it as root (or leave the property out)"},
		{"not as planned", &apply.EndStateError{Differences: []apply.EndDifference{{Address: "sysctl[a]", Property: "value", Predicted: `"0"`, Actual: `"1"`}}},
			KindNotAsPlanned, ExitNotAsPlanned, "Resources did not end as planned"},
		{"plain error", errors.New("something broke"),
			KindOther, ExitError, "something broke"},

		// Chains holding more than one typed error: the first class of
		// errorClasses decides, but for the exit status, which the first
		// class that gives one decides.
		{"apply aborted in a failing resource", &apply.InterruptedError{After: "file[/a]", Aborted: true, Err: failed},
			KindInterrupted, ExitInterrupted, "apply aborted after file[/a]; 0 resources with planned changes not started: file[/a]: boom"},
		{"apply aborted while its journal failed", &apply.InterruptedError{After: "file[/a]", Aborted: true, Err: journal},
			KindJournal, ExitInterrupted, "Cannot use the apply journal"},
		{"a resource failed and the journal too", fmt.Errorf("commit: %w", errors.Join(failed, journal)),
			KindJournal, ExitError, "Cannot use the apply journal"},
		{"a journal file toque cannot trust", &apply.JournalError{Path: "/s/journal/x", Err: &apply.UntrustedError{Path: "/s/journal/x", Reason: "is a symbolic link"}},
			KindUntrusted, ExitError, "Refusing an untrusted state directory"},
	}

	typesWithCase := map[string]bool{}
	for _, c := range cases {
		typesWithCase[fmt.Sprintf("%T", c.err)] = true
		for _, wrap := range []bool{false, true} {
			err, name, summary := c.err, c.name, c.summary
			if wrap {
				// Wrapped, a typed error is still of its class; one
				// worded by its own message keeps the wrapper's words.
				err, name = fmt.Errorf("apply: %w", c.err), c.name+", wrapped"
				if summary == c.err.Error() {
					summary = err.Error()
				}
			}
			t.Run(name, func(t *testing.T) {
				diags := diag.Diagnostics{}.Append(err)
				if len(diags) != 1 {
					t.Fatalf("%d diagnostics", len(diags))
				}
				if got := ExitStatus(diags); got != c.exit {
					t.Errorf("exit status %d, want %d", got, c.exit)
				}
				jd := (&View{}).JSONDiagnostics(diags)[0]
				if jd.Kind != c.kind || jd.Summary != summary {
					t.Errorf("JSON kind %q, summary %q; want %q, %q", jd.Kind, jd.Summary, c.kind, summary)
				}
				var text bytes.Buffer
				(&View{Streams: Streams{Stderr: &text}}).Diagnostics(diags)
				if first, _, _ := strings.Cut(text.String(), "\n"); first != "Error: "+summary {
					t.Errorf("text begins %q, want %q", first, "Error: "+summary)
				}
			})
		}
	}
	for i := range errorClasses {
		found := false
		for _, c := range cases {
			found = found || classOf(c.err) == &errorClasses[i]
		}
		if !found {
			t.Errorf("errorClasses[%d] (kind %q) has no case here", i, errorClasses[i].kind)
		}
	}
	for _, name := range errorTypes(t, "../../apply") {
		if !typesWithCase[name] {
			t.Errorf("%s has no case here: give it a row in errorClasses (its exit status, JSON kind and wording) and a case in this table", name)
		}
	}
}

// errorTypes lists the types of the package in dir that have an Error()
// string method, as %T prints them (*apply.StaleError).
func errorTypes(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Error" || fn.Type.Params.NumFields() != 0 ||
				fn.Type.Results.NumFields() != 1 || identName(fn.Type.Results) != "string" {
				continue
			}
			recv := fn.Recv.List[0].Type
			star := ""
			if s, ok := recv.(*ast.StarExpr); ok {
				star, recv = "*", s.X
			}
			out = append(out, star+f.Name.Name+"."+recv.(*ast.Ident).Name)
		}
	}
	if len(out) == 0 {
		t.Fatalf("found no error types in %s", dir)
	}
	return out
}

func identName(l *ast.FieldList) string {
	id, _ := l.List[0].Type.(*ast.Ident)
	if id == nil {
		return ""
	}
	return id.Name
}

func TestExitStatus(t *testing.T) {
	warn := diag.Sourceless(diag.Warning, "w", "")
	cases := []struct {
		name  string
		diags diag.Diagnostics
		want  int
	}{
		{"nothing", nil, ExitOK},
		{"warnings only", diag.Diagnostics{warn}, ExitOK},
		{"a typed error as a warning", diag.Diagnostics{{Severity: diag.Warning, Summary: "x", Err: &apply.StaleError{}}}, ExitOK},
		{"an hcl error", diag.Diagnostics{}.Append(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "x"}), ExitError},
		{"after a warning", diag.Diagnostics{}.Append(warn, &apply.StaleError{}), ExitStale},
		{"the first typed error that gives a status decides", diag.Diagnostics{}.Append(fmt.Errorf("plain"), &apply.JournalError{Err: fmt.Errorf("x")}, &apply.LockHeldError{}, &apply.StaleError{}), ExitLockHeld},
	}
	for _, c := range cases {
		if got := ExitStatus(c.diags); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// A kind the command set wins over its error's.
func TestKindSetByCommand(t *testing.T) {
	d := diag.Errorf("%w", &apply.PlanTooOldError{}).WithKind(KindUsage)
	if got := kindOf(d); got != KindUsage {
		t.Errorf("kind %q", got)
	}
	if got := kindOf(diag.Sourceless(diag.Error, "about the recipes", "")); got != "" {
		t.Errorf("kind of a diagnostic without an error: %q", got)
	}
}
