package guard

import (
	"testing"

	"github.com/toquehq/toque/internal/lazy"
)

func TestPassAtPlan(t *testing.T) {
	yes, no := true, false
	expr := func(k Kind, v *bool) *Spec { return &Spec{Kind: k, Form: Expression, Source: "node.x", ExprValue: v} }
	cases := []struct {
		name  string
		specs []*Spec
		want  bool
	}{
		{"no guard", nil, true},
		{"only_if true", []*Spec{expr(OnlyIf, &yes)}, true},
		{"not_if false", []*Spec{expr(NotIf, &no)}, true},
		{"a group's and its own", []*Spec{expr(OnlyIf, &yes), expr(NotIf, &no)}, true},
		{"only_if false", []*Spec{expr(OnlyIf, &no)}, false},
		{"not_if true", []*Spec{expr(NotIf, &yes)}, false},
		{"not known (validate)", []*Spec{expr(OnlyIf, nil)}, false},
		{"a script", []*Spec{{Kind: OnlyIf, Form: Script, Source: "true"}}, false},
		{"an expression and a script", []*Spec{expr(OnlyIf, &yes), {Kind: NotIf, Form: Script, Source: "false"}}, false},
		{"decided at apply", []*Spec{{Kind: OnlyIf, Form: Expression, Source: "fileexists(\"/x\")", AtApply: true, Lazy: &lazy.Expr{}}}, false},
		{"a nil guard", []*Spec{nil}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PassAtPlan(c.specs); got != c.want {
				t.Errorf("PassAtPlan = %v, want %v", got, c.want)
			}
		})
	}
}
