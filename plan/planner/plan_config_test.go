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
