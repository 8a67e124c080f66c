// Package diag is the one diagnostics type every command reports through:
// HCL diagnostics with their source ranges, sourceless diagnostics, and
// plain or typed errors (a stale plan, a held lock), appended to one list,
// in order, with a severity each.
//
// Producers that read user input keep returning hcl.Diagnostics (the hcl
// convention; see style.md), and leaf I/O keeps returning errors; a command
// appends both to a Diagnostics and hands it to its view (command/views),
// which renders it once for people and once for machines. The exit status
// is derived from it in one place (views.ExitStatus).
//
// It renders nothing, and imports no toque package.
package diag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Severity is how bad a diagnostic is.
type Severity int

const (
	// Error: the command failed, or part of it did.
	Error Severity = iota
	// Warning: the command went on, but something deserves a look.
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem to report.
type Diagnostic struct {
	Severity Severity
	// Summary is short, sentence case, no full stop. A diagnostic made from
	// a plain error has the error's message as its summary and no detail.
	Summary string
	// Detail says what happened and what to do.
	Detail string
	// Subject is where in the recipes the problem is (nil: sourceless);
	// Context is a larger range around it, shown in the snippet.
	Subject *hcl.Range
	Context *hcl.Range
	// Expression and EvalContext, when both are set, let renderers show
	// the values the expression referred to ("with node.web.port as 80").
	Expression  hcl.Expression
	EvalContext *hcl.EvalContext
	// Sensitive hides those values: the expression belongs to a sensitive
	// resource (see MarkSensitive).
	Sensitive bool
	// Err is the error the diagnostic was made from, nil for diagnostics
	// made from HCL (but those that recorded their cause: WithCause). Views word typed errors (a stale plan, a held lock)
	// from it, and the exit status is told from it with errors.As.
	Err error
	// Kind classifies the diagnostic for machine outputs ("usage",
	// "plan_refused", "digest_mismatch"…); "" lets the view classify it
	// from Err.
	Kind string
}

// Error makes d usable as an error: its summary and detail.
func (d *Diagnostic) Error() string {
	if d.Detail == "" {
		return d.Summary
	}
	return d.Summary + ": " + d.Detail
}

// Diagnostics is an ordered list of diagnostics.
type Diagnostics []*Diagnostic

// Append adds items, in order, and returns the longer list. An item may be
// a *Diagnostic, Diagnostics, an *hcl.Diagnostic, hcl.Diagnostics or an
// error (a nil error or an empty list adds nothing). An error that joins
// several (errors.Join) adds one diagnostic each. Any other item panics:
// it is a bug in toque, not bad input.
func (ds Diagnostics) Append(items ...any) Diagnostics {
	for _, it := range items {
		switch v := it.(type) {
		case nil:
		case *Diagnostic:
			if v != nil {
				ds = append(ds, v)
			}
		case Diagnostics:
			ds = append(ds, v...)
		case *hcl.Diagnostic:
			if v != nil {
				ds = append(ds, FromHCL(v))
			}
		case hcl.Diagnostics:
			for _, d := range v {
				if d != nil {
					ds = append(ds, FromHCL(d))
				}
			}
		case error:
			ds = append(ds, fromError(v)...)
		default:
			panic(fmt.Sprintf("diag: cannot append %T", it))
		}
	}
	return ds
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Count returns how many errors and warnings ds holds.
func (ds Diagnostics) Count() (errs, warnings int) {
	for _, d := range ds {
		if d.Severity == Error {
			errs++
		} else {
			warnings++
		}
	}
	return errs, warnings
}

// Err is the errors of ds as one error (nil when there is none): the
// original errors where diagnostics were made from errors, so errors.As
// finds typed errors through it.
func (ds Diagnostics) Err() error {
	var errs []error
	for _, d := range ds {
		if d.Severity != Error {
			continue
		}
		if d.Err != nil {
			errs = append(errs, d.Err)
		} else {
			errs = append(errs, d)
		}
	}
	return errors.Join(errs...)
}

// FromHCL converts one hcl diagnostic. A diagnostic marked with
// MarkSensitive keeps the mark.
func FromHCL(d *hcl.Diagnostic) *Diagnostic {
	out := &Diagnostic{
		Severity:    Error,
		Summary:     d.Summary,
		Detail:      d.Detail,
		Subject:     d.Subject,
		Context:     d.Context,
		Expression:  d.Expression,
		EvalContext: d.EvalContext,
	}
	if d.Severity == hcl.DiagWarning {
		out.Severity = Warning
	}
	if s, ok := hcl.DiagnosticExtra[sensitivity](d); ok && s.hidesValues() {
		out.Sensitive = true
	}
	if c, ok := hcl.DiagnosticExtra[cause](d); ok {
		out.Err = c.cause()
	}
	return out
}

// fromError makes the diagnostics of err: one per joined error.
func fromError(err error) Diagnostics {
	if err == nil {
		return nil
	}
	var d *Diagnostic
	if errors.As(err, &d) && d != nil && error(d) == err {
		return Diagnostics{d}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out Diagnostics
		for _, e := range j.Unwrap() {
			out = append(out, fromError(e)...)
		}
		return out
	}
	return Diagnostics{{Severity: Error, Summary: err.Error(), Err: err}}
}

// Sourceless makes a diagnostic that points at no recipe.
func Sourceless(sev Severity, summary, detail string) *Diagnostic {
	return &Diagnostic{Severity: sev, Summary: summary, Detail: detail}
}

// Errorf makes a one-line error diagnostic ("-parallelism must be at least
// 1"), wrapping any %w error so errors.As still finds it.
func Errorf(format string, args ...any) *Diagnostic {
	err := fmt.Errorf(format, args...)
	return &Diagnostic{Severity: Error, Summary: strings.TrimSpace(err.Error()), Err: err}
}

// WithKind sets d's Kind and returns d.
func (d *Diagnostic) WithKind(kind string) *Diagnostic {
	d.Kind = kind
	return d
}

// sensitivity is the hcl.Diagnostic Extra that MarkSensitive sets.
type sensitivity interface{ hidesValues() bool }

type sensitiveExtra struct{ wrapped any }

func (sensitiveExtra) hidesValues() bool            { return true }
func (s sensitiveExtra) UnwrapDiagnosticExtra() any { return s.wrapped }

// MarkSensitive marks hcl diagnostics that belong to a sensitive resource:
// renderers then leave out the values their expressions refer to. Other
// extras on the diagnostics stay reachable (hcl.DiagnosticExtra unwraps).
func MarkSensitive(ds hcl.Diagnostics) {
	for _, d := range ds {
		if d == nil {
			continue
		}
		if _, ok := hcl.DiagnosticExtra[sensitivity](d); ok {
			continue
		}
		d.Extra = sensitiveExtra{wrapped: d.Extra}
	}
}

// cause is the hcl.Diagnostic Extra that WithCause sets.
type cause interface{ cause() error }

type causeExtra struct {
	err     error
	wrapped any
}

func (c causeExtra) cause() error               { return c.err }
func (c causeExtra) UnwrapDiagnosticExtra() any { return c.wrapped }

// WithCause records on an hcl diagnostic the typed error it was made from
// (a resource needing root), which FromHCL keeps as the Diagnostic's Err:
// views then classify and word it like any typed error. Other extras stay
// reachable. It returns d.
func WithCause(d *hcl.Diagnostic, err error) *hcl.Diagnostic {
	if d != nil && err != nil {
		d.Extra = causeExtra{err: err, wrapped: d.Extra}
	}
	return d
}
