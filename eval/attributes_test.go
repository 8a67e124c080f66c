package eval

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
)

func TestLoadAttributes(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"10-base.hcl": `
default "web" {
  port = 8080
  tls  = { enabled = true, port = 443 }
  name = "web on ${host.hostname}"
}
override "web" {
  port = 9090
}
`,
		"20-site.hcl": `
default "web" {
  port = 1111
  cpus = host.cpus * 2
}
override "web" {
  tls = { port = 8443 }
}
`,
	})
	reg := testRegistry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	// Without the host, host-based values are unknown.
	unknown, diags := Attributes(cfg, host.Unknown())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if v := unknown.Node().GetAttr("web").GetAttr("name"); v.IsKnown() {
		t.Errorf("name without the host = %#v, want unknown", v)
	}
	attrs, diags := Attributes(cfg, testHost())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	web := attrs.Node().GetAttr("web")
	checks := map[string]cty.Value{
		"port": cty.NumberIntVal(9090),
		"name": cty.StringVal("web on web-01"),
		"cpus": cty.NumberIntVal(4),
	}
	for k, want := range checks {
		if got := web.GetAttr(k); !got.RawEquals(want) {
			t.Errorf("web.%s = %#v, want %#v", k, got, want)
		}
	}
	tls := web.GetAttr("tls")
	if !tls.GetAttr("enabled").RawEquals(cty.True) || !tls.GetAttr("port").RawEquals(cty.NumberIntVal(8443)) {
		t.Errorf("web.tls = %#v", tls)
	}
	want := map[string]string{
		"web.cpus":        "default 20-site.hcl:4",
		"web.name":        "default 10-base.hcl:5",
		"web.port":        "override 10-base.hcl:8",
		"web.tls.enabled": "default 10-base.hcl:4",
		"web.tls.port":    "override 20-site.hcl:7",
	}
	leaves := attrs.Leaves()
	if len(leaves) != len(want) {
		t.Fatalf("leaves = %v", leaves)
	}
	for _, l := range leaves {
		got := l.Level + " " + rangeAt(t, &hcl.Diagnostic{Subject: &l.Range})
		if p := strings.Join(l.Path, "."); want[p] != got {
			t.Errorf("%s: %s, want %s", p, got, want[p])
		}
	}
}

func TestAttributeErrors(t *testing.T) {
	cases := []struct {
		name, src, want, at, detail string
	}{
		{"node read in an attribute block", "default \"a\" { x = 1 }\ndefault \"b\" {\n  y = node.a.x + 1\n}\n", "Node attributes cannot be read here", "a.hcl:3", "compile time"},
		{"missing host fact in an attribute block", "default \"a\" {\n  x = host.colour\n}\n", "Unsupported attribute", "a.hcl:2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustLoad(t, writeDir(t, map[string]string{"a.hcl": tc.src}))
			// The same errors with and without the host.
			for _, h := range []cty.Value{host.Unknown(), testHost()} {
				_, diags := Attributes(cfg, h)
				if got := summaries(diags); len(got) != 1 || got[0] != tc.want {
					t.Fatalf("errors = %q, want %q", got, tc.want)
				}
				if at := rangeAt(t, diags[0]); at != tc.at {
					t.Errorf("at %s, want %s", at, tc.at)
				}
				if !strings.Contains(diags[0].Detail, tc.detail) {
					t.Errorf("detail %q lacks %q", diags[0].Detail, tc.detail)
				}
			}
		})
	}
}

// WithHost reuses the attributes written without the host when none
// reads host, and writes them again when one does: the node is then the
// host's.
func TestWithHost(t *testing.T) {
	for _, c := range []struct {
		src    string
		reused bool
		want   string
	}{
		{`default "app" { port = 80 }`, true, "80"},
		{`default "app" { port = "${host.hostname}:80" }`, false, "web-01:80"},
	} {
		cfg, diags := config.LoadDir(writeDir(t, map[string]string{"a.hcl": c.src}), dataRegistry())
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		s, attrs, d := NewScope(cfg, host.Unknown())
		if d.HasErrors() {
			t.Fatal(d)
		}
		hs, hattrs, d := WithHost(cfg, &Unhosted{Scope: s, Attrs: attrs, Diags: d}, testHost())
		if d.HasErrors() {
			t.Fatal(d)
		}
		if (hattrs == attrs) != c.reused {
			t.Errorf("%s: reused %v, want %v", c.src, hattrs == attrs, c.reused)
		}
		if !hs.Host.RawEquals(testHost()) || hs == s {
			t.Errorf("%s: the scope's host is not the host's", c.src)
		}
		port := hs.Node.GetAttr("app").GetAttr("port")
		if got := port.GoString(); !port.IsKnown() || !strings.Contains(got, c.want) {
			t.Errorf("%s: node.app.port is %s, want %s", c.src, got, c.want)
		}
	}
}
