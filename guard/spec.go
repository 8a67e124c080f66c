package guard

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/internal/typedvalue"
)

// Kind is only_if or not_if.
type Kind string

const (
	OnlyIf Kind = "only_if"
	NotIf  Kind = "not_if"
)

// Form is how a guard is written: a script to run, or an expression.
type Form string

const (
	Script     Form = "script"
	Expression Form = "expression"
)

// Default is the guard interpreter that runs a script guard with
// `/bin/sh -c`, with only the guard's own parameters.
const Default = "default"

// DefaultTimeout bounds a script guard that sets no timeout.
const DefaultTimeout = 60 * time.Second

// InheritedParams are the parameters a guard interpreter inherits from the
// parent resource when the parent sets them (the RFC's list);
// powershell_script also inherits architecture.
var InheritedParams = []string{"cwd", "environment", "group", "path", "user", "umask"}

// Params are the keys a guard object may hold besides command.
var Params = []string{"cwd", "environment", "user", "group", "umask", "path", "timeout", "returns", "flags", "architecture"}

// Spec is one guard, decoded and resolved down to what runs. It is stored
// in the plan file so apply can run the guard again without HCL.
type Spec struct {
	Kind Kind `json:"kind"`
	Form Form `json:"form"`
	// Source is the command string of a script guard, the words of an argv
	// guard quoted for reading (ArgvSource; what runs is Values["command"],
	// the list itself), or the source text of an expression guard.
	Source string `json:"source"`
	// Sensitive is set when the resource is sensitive: Describe, logs and
	// plan output show "(sensitive)" instead of Source and the output.
	Sensitive bool `json:"sensitive,omitempty"`
	// ExprValue is an expression guard's value, computed at decode time
	// with the final node attributes and host facts; nil when it was not
	// known (validate).
	ExprValue *bool `json:"expr_value,omitempty"`
	// Interpreter is "default" or the name of the resources.Runner type the
	// guard runs as ("bash", "execute"…; always "execute" for an argv
	// guard); empty for expressions.
	Interpreter string `json:"interpreter,omitempty"`
	// Values are what runs. For "default": command, and the guard
	// parameters given. For a type: the guard resource's property values
	// (code or command, what was inherited, the guard parameters, timeout).
	Values map[string]Value `json:"values,omitempty"`
	// Inherited names the parameters taken from the parent resource;
	// Overridden those the parent set but a guard parameter replaced.
	Inherited  []string `json:"inherited,omitempty"`
	Overridden []string `json:"overridden,omitempty"`
	// Range is where the guard is written.
	Range hcl.Range `json:"range"`
	// AtApply marks a guard decided at apply, a run-time guard: the recipe
	// wrapped it in lazy(…) (only_if = lazy("test -f /srv/keys/api.key")),
	// and an earlier resource of the plan could change what it tests. It
	// decides right before its resource converges; the plan shows what it
	// says now and plans the step as if it let the resource run.
	AtApply bool `json:"at_apply,omitempty"`
	// Lazy is the expression of a run-time expression guard, with what it
	// reads that is fixed at plan (evaluated at apply, ExprValue unset);
	// nil for every other guard.
	Lazy *lazy.Expr `json:"lazy,omitempty"`
	// Group names the resource_group the guard is written on, when it is
	// a group's (every resource of the group has it, before its own
	// guards); "" for the resource's own. Plans show a group's guard once.
	Group string `json:"group,omitempty"`
}

// PassAtPlan reports whether every guard of specs is an expression whose
// value, known when the plan was made, lets its resource run (an only_if
// that is true, a not_if that is false): a resource_group's
// `only_if = node.web.enabled`. Such guards cannot decide otherwise at
// apply, so what the resource is planned on does not depend on them. A
// script guard, and one decided at apply, decide only when they run.
func PassAtPlan(specs []*Spec) bool {
	for _, s := range specs {
		if s == nil || s.Form != Expression || s.ExprValue == nil || s.AtApply || s.Lazy != nil || *s.ExprValue != (s.Kind == OnlyIf) {
			return false
		}
	}
	return true
}

// NowWord words what a guard decided at apply says now: a script only_if
// "passes now" or "fails now"; a not_if or an expression guard "true now"
// or "false now".
func NowWord(k Kind, f Form, c bool) string {
	if f == Script && k == OnlyIf {
		if c {
			return "passes now"
		}
		return "fails now"
	}
	if c {
		return "true now"
	}
	return "false now"
}

// Describe is the guard as reviewers read it: "only_if `test -f x`",
// "not_if node.web.enabled".
func (s *Spec) Describe() string {
	if s.Sensitive {
		return fmt.Sprintf("%s (sensitive)", s.Kind)
	}
	if s.Form == Expression {
		return fmt.Sprintf("%s %s", s.Kind, s.Source)
	}
	return fmt.Sprintf("%s %s", s.Kind, quoteCommand(s.Source))
}

// quoteCommand puts a command in backticks, on one line.
func quoteCommand(c string) string {
	c = strings.TrimSpace(c)
	if i := strings.IndexByte(c, '\n'); i >= 0 {
		c = strings.TrimSpace(c[:i]) + " …"
	}
	return "`" + strings.ReplaceAll(c, "`", "'") + "`"
}

// Verdict words a guard's condition: "only_if `x` passed", "only_if `x`
// failed", "not_if `x` is true", "only_if node.a is false".
func (s *Spec) Verdict(condition bool) string {
	return s.Describe() + " " + conditionWord(s.Kind, s.Form, condition)
}

// VerdictOf words a guard's condition from its parts, for callers that
// hold a stored result rather than a Spec.
func VerdictOf(kind, form, source string, condition bool) string {
	s := &Spec{Kind: Kind(kind), Form: Form(form), Source: source}
	return s.Verdict(condition)
}

// ConditionWord words a guard's condition the way plans print it: a script
// only_if "passed" or "failed"; a not_if or an expression guard "is true" or
// "is false".
func ConditionWord(kind, form string, c bool) string {
	return conditionWord(Kind(kind), Form(form), c)
}

func conditionWord(k Kind, f Form, c bool) string {
	if f == Script && k == OnlyIf {
		if c {
			return "passed"
		}
		return "failed"
	}
	if c {
		return "is true"
	}
	return "is false"
}

// Skips reports whether a guard of kind k whose condition is c skips the
// resource: a false only_if or a true not_if.
func Skips(k Kind, c bool) bool {
	if k == NotIf {
		return c
	}
	return !c
}

// Value is a cty value kept with its exact type, as plans store values
// (package typedvalue).
type Value = typedvalue.Value
