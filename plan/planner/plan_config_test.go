package planner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
)

func TestPlanFromRecipes(t *testing.T) {
	dir := t.TempDir()
	recipe := `
default "web" {
  title = "hello"
  port  = 8080
}
override "web" {
  port = 9090
}

fake_file "/srv/index.html" {
  content = "<h1>${node.web.title} from ${host.hostname}:${node.web.port}</h1>\n"
}
`
	if err := os.WriteFile(filepath.Join(dir, "default.hcl"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	f := plantest.NewFakeType()
	p := plantest.FixedPlanner(f, 2)
	cfg, diags := config.LoadDir(dir, p.Registry)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := p.Plan(context.Background(), cfg)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if pl.Errored || len(pl.Resources) != 1 {
		t.Fatalf("plan: %+v", pl)
	}
	r := pl.Resources[0]
	want := "<h1>hello from web-01:9090</h1>\n"
	if got := r.Desired["content"].Value; !got.RawEquals(cty.StringVal(want)) {
		t.Errorf("content evaluated to %#v, want %q", got, want)
	}
	if r.Source.Line != 10 || !strings.HasSuffix(r.Source.Filename, "default.hcl") {
		t.Errorf("source %+v", r.Source)
	}
	if pl.InputsDigest != cfg.InputsDigest() || !strings.HasPrefix(pl.InputsDigest, "sha256:") {
		t.Errorf("inputs digest %q", pl.InputsDigest)
	}
	got := map[string]plan.Attribute{}
	for _, a := range pl.Attributes {
		got[a.Path] = a
	}
	port, ok := got["web.port"]
	if !ok || port.Level != "override" || !strings.HasSuffix(port.Source, "default.hcl:7") {
		t.Fatalf("attributes %+v", pl.Attributes)
	}
	var v plan.Value
	if err := v.UnmarshalJSON(port.Value); err != nil || !v.Value.RawEquals(cty.NumberIntVal(9090)) {
		t.Errorf("web.port stored as %s (%v)", port.Value, err)
	}

	t.Run("evaluation errors mark the plan errored", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.hcl")
		src := "fake_file \"/a\" {\n  content = node.missing.value\n}\nfake_file \"/b\" {\n  content = \"ok\"\n}\n"
		if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := config.LoadDir(filepath.Dir(bad), p.Registry)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		pl, diags := plantest.FixedPlanner(f, 2).Plan(context.Background(), cfg)
		if !diags.HasErrors() || pl == nil || !pl.Errored || len(pl.Errors) == 0 {
			t.Fatalf("diags %v plan %+v", diags, pl)
		}
		if len(pl.Resources) != 1 || pl.Resources[0].Name != "/b" {
			t.Errorf("resources %+v", pl.Resources)
		}
	})
}

// TestPrintOnlyForgetsUnchangedResources: a plan only printed keeps no
// reading and no desired values of an unchanged resource, and all of them
// of a changed one.
func TestPrintOnlyForgetsUnchangedResources(t *testing.T) {
	dir := t.TempDir()
	recipe := "fake_file \"/same\" {\n  content = \"same\"\n}\nfake_file \"/changed\" {\n  content = \"new\"\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "default.hcl"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	f := plantest.NewFakeType()
	f.Set("/same", map[string]cty.Value{"content": cty.StringVal("same"), "mode": cty.StringVal("0644")})
	f.Set("/changed", map[string]cty.Value{"content": cty.StringVal("old"), "mode": cty.StringVal("0644")})
	for _, printOnly := range []bool{false, true} {
		p := plantest.FixedPlanner(f, 2)
		p.PrintOnly = printOnly
		cfg, diags := config.LoadDir(dir, p.Registry)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		pl, diags := p.Plan(context.Background(), cfg)
		if diags.HasErrors() || len(pl.Resources) != 2 {
			t.Fatalf("plan: %v %+v", diags, pl)
		}
		same, changed := pl.Resources[0], pl.Resources[1]
		if changed.Current == nil || changed.Fingerprint == "" || changed.Desired == nil {
			t.Errorf("print only %v: the changed resource lost its reading or desired values: %+v", printOnly, changed)
		}
		if kept := same.Current != nil || same.Fingerprint != "" || same.Desired != nil; kept == printOnly {
			t.Errorf("print only %v: the unchanged resource's reading and desired values kept: %v", printOnly, kept)
		}
	}
}
