package planner

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

func TestContextValues(t *testing.T) {
	acting := &resources.Schema{Name: "run_thing", Properties: []*resources.Property{
		{Name: "command", Type: cty.String, NameProperty: true},
		{Name: "cwd", Type: cty.String, NonState: true},
		{Name: "secret", Type: cty.String, NonState: true, Sensitive: true},
	}}
	state := &resources.Schema{Name: "state_thing", Properties: []*resources.Property{
		{Name: "path", Type: cty.String, NameProperty: true},
		{Name: "content", Type: cty.String},
		{Name: "backup", Type: cty.Number, NonState: true},
	}}
	cases := []struct {
		name      string
		r         *resources.Resource
		sensitive bool
		want      string
	}{
		{"label is the name", resources.NewResource(state, "/x", "create", map[string]cty.Value{"path": cty.StringVal("/x"), "content": cty.StringVal("a")}), false, ""},
		{"name differs from label", resources.NewResource(state, "www", "create", map[string]cty.Value{"path": cty.StringVal("/srv/www"), "backup": cty.NumberIntVal(2)}), false, `path="/srv/www"`},
		{"acting type shows what runs", resources.NewResource(acting, "reload", "run", map[string]cty.Value{"command": cty.StringVal("kill -HUP 1"), "cwd": cty.StringVal("/opt"), "secret": cty.StringVal("s3")}), false, `command="kill -HUP 1" cwd="/opt" secret=(sensitive)`},
		{"sensitive resource", resources.NewResource(acting, "reload", "run", map[string]cty.Value{"command": cty.StringVal("kill -HUP 1")}), true, `command=(sensitive)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, v := range contextValues(c.r, func(p *resources.Property) bool { return c.sensitive || p.Sensitive }) {
				got = append(got, v.Property+"="+v.Value)
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("got %s, want %s", s, c.want)
			}
		})
	}
}
