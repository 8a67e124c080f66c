package diag

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

type typedErr struct{ n int }

func (e *typedErr) Error() string { return fmt.Sprintf("typed %d", e.n) }

func TestAppend(t *testing.T) {
	rng := &hcl.Range{Filename: "a.hcl", Start: hcl.Pos{Line: 2, Column: 3}}
	var ds Diagnostics
	ds = ds.Append(
		nil,
		(*hcl.Diagnostic)(nil),
		&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Deprecated", Subject: rng},
		hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Bad value", Detail: "Say why."}},
		fmt.Errorf("wrapped: %w", &typedErr{3}),
		errors.Join(errors.New("one"), errors.New("two")),
		Sourceless(Warning, "Heads up", ""),
		Diagnostics{Errorf("flag %q is wrong", "x")},
		error(nil),
	)
	want := []struct {
		sev     Severity
		summary string
	}{
		{Warning, "Deprecated"}, {Error, "Bad value"}, {Error, "wrapped: typed 3"},
		{Error, "one"}, {Error, "two"}, {Warning, "Heads up"}, {Error, `flag "x" is wrong`},
	}
	if len(ds) != len(want) {
		t.Fatalf("%d diagnostics: %v", len(ds), ds)
	}
	for i, w := range want {
		if ds[i].Severity != w.sev || ds[i].Summary != w.summary {
			t.Errorf("%d: %v %q, want %v %q", i, ds[i].Severity, ds[i].Summary, w.sev, w.summary)
		}
	}
	if ds[0].Subject != rng {
		t.Error("the range was lost")
	}
	if e, w := ds.Count(); e != 5 || w != 2 || !ds.HasErrors() {
		t.Errorf("count %d errors, %d warnings", e, w)
	}
	var te *typedErr
	if !errors.As(ds.Err(), &te) || te.n != 3 {
		t.Errorf("the typed error is not reachable through Err: %v", ds.Err())
	}
	if Diagnostics(nil).Err() != nil || (Diagnostics{Sourceless(Warning, "w", "")}).HasErrors() {
		t.Error("warnings are not errors")
	}
	defer func() {
		if recover() == nil {
			t.Error("appending an unknown type must panic (a bug in toque)")
		}
	}()
	ds.Append(42)
}

func TestMarkSensitive(t *testing.T) {
	type other struct{ x int }
	hd := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "x", Extra: other{7}}, {Severity: hcl.DiagError, Summary: "y"}}
	MarkSensitive(hd)
	MarkSensitive(hd) // twice is once
	ds := Diagnostics{}.Append(hd)
	if !ds[0].Sensitive || !ds[1].Sensitive {
		t.Error("marked diagnostics are not sensitive")
	}
	if o, ok := hcl.DiagnosticExtra[other](hd[0]); !ok || o.x != 7 {
		t.Error("the earlier extra is lost")
	}
	if s := (Diagnostics{}).Append(&hcl.Diagnostic{Summary: "z"}); s[0].Sensitive {
		t.Error("an unmarked diagnostic is sensitive")
	}
}
