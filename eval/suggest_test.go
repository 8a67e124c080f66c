package eval

import (
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/host"
)

func TestSuggestMistypedNames(t *testing.T) {
	cases := []struct{ src, want string }{
		{"file \"/x\" { content = \"${node.svc.prot}\" }", "Did you mean node.svc.port?"},
		{"file \"/x\" { content = host.hostnme }", "Did you mean host.hostname?"},
		{"file \"/x\" { content = nod.svc.port }", `Did you mean "node"?`},
		{"default \"b\" { name = host.fdqn }", "Did you mean host.fqdn?"},
		{"file \"/x\" { content = node.svc.zzzzzz }", ""},
		// Inside a for expression, whose context holds only its own
		// names: not "Did you mean name?".
		{"file \"/x\" { content = join(\",\", [for name in [\"a\"] : node.svc.prot]) }", "Did you mean node.svc.port?"},
	}
	for _, c := range cases {
		dir := writeDir(t, map[string]string{"a.hcl": "default \"svc\" {\n  port = 80\n}\n" + c.src + "\n"})
		cfg := mustLoad(t, dir)
		for _, h := range []bool{false, true} { // validate's unknown host, and a real one
			hv := testHost()
			if !h {
				hv = host.Unknown()
			}
			scope, _, diags := NewScope(cfg, hv)
			if !diags.HasErrors() {
				_, diags = Resources(cfg, testRegistry(), scope)
			}
			if len(diags) != 1 {
				t.Fatalf("%s: diagnostics %v", c.src, diags)
			}
			if got := diags[0].Detail; (c.want == "") != !strings.Contains(got, "Did you mean") || !strings.Contains(got, c.want) {
				t.Errorf("%s (host known: %v): detail %q, want %q", c.src, h, got, c.want)
			}
		}
	}
}
