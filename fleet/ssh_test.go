package fleet

import "testing"

// toque's own options come first (ssh keeps the first value of each), so
// a user's or inventory's ForwardAgent yes cannot hand the agent to every
// host of a fleet.
func TestRouteOptionsForwardNothing(t *testing.T) {
	r := &Route{Alias: "web-01", Options: []Option{{"ForwardAgent", "yes"}}}
	first := map[string]string{}
	for _, o := range r.options() {
		if _, ok := first[o.Name]; !ok {
			first[o.Name] = o.Value
		}
	}
	for _, k := range []string{"ForwardAgent", "ForwardX11", "ForwardX11Trusted"} {
		if first[k] != "no" {
			t.Errorf("%s is %q first, want no", k, first[k])
		}
	}
}
