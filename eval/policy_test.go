package eval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/testutil"
)

func TestLoadPolicyPrecedenceAndProvenance(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"a/metadata.hcl":           "name = \"a\"\nversion = \"1.0.0\"\n",
		"a/attributes/default.hcl": "default \"x\" {\n  d1 = \"cookbook default\"\n  d2 = \"cookbook default\"\n  o1 = \"cookbook default\"\n}\noverride \"x\" {\n  o1 = \"cookbook override\"\n  o2 = \"cookbook override\"\n}\n",
		"a/recipes/default.hcl":    "file \"/a\" {\n  content = templatefile(\"templates/t.tpl\", { v = node.x.d2 })\n}\n",
		"a/templates/t.tpl":        "v=${v}",
		"b/metadata.hcl":           "name = \"b\"\nversion = \"1.0.0\"\n",
		"b/attributes/default.hcl": "file \"/nope\" {}\n",
		"b/recipes/default.hcl":    "",
	})
	ca, _ := config.ReadCookbook(filepath.Join(dir, "a"), nil)
	policyRange := func(line int) hcl.Range {
		return hcl.Range{Filename: filepath.Join(dir, "policy.hcl"), Start: hcl.Pos{Line: line}}
	}
	in := config.PolicyInput{
		Dir:       dir,
		Cookbooks: []*config.Cookbook{ca},
		RunList:   []config.RunListItem{{Cookbook: "a", Recipe: "default"}},
		Writes: []config.AttributeWrite{
			{Level: config.LevelDefault, Path: []string{"x", "d2"}, Value: cty.StringVal("policy default"), Range: policyRange(3)},
			{Level: config.LevelDefault, Path: []string{"x", "o2"}, Value: cty.StringVal("policy default"), Range: policyRange(4)},
			{Level: config.LevelOverride, Path: []string{"x", "o1"}, Value: cty.StringVal("policy override"), Range: policyRange(5)},
		},
	}
	cfg, diags := config.LoadPolicy(in, testRegistry())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	// Compile again with facts, as the planner does: policy writes stay.
	scope, attrs, diags := NewScope(cfg, host.Unknown())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	x := scope.Node.GetAttr("x")
	for k, want := range map[string]string{
		"d1": "cookbook default",  // only a cookbook default
		"d2": "policy default",    // cookbook default < policy default
		"o1": "policy override",   // cookbook override < policy override
		"o2": "cookbook override", // policy default < cookbook override
	} {
		if got := x.GetAttr(k).AsString(); got != want {
			t.Errorf("x.%s = %q, want %q", k, got, want)
		}
	}
	src := map[string]string{}
	for _, l := range attrs.Leaves() {
		src[strings.Join(l.Path, ".")] = filepath.Base(l.Range.Filename) + ":" + string(rune('0'+l.Range.Start.Line))
	}
	if src["x.d2"] != "policy.hcl:3" || src["x.o2"] != "default.hcl:8" || src["x.d1"] != "default.hcl:2" {
		t.Errorf("provenance %v", src)
	}
	if len(cfg.Resources) != 1 || cfg.Resources[0].Dir != filepath.Join(dir, "a") {
		t.Fatalf("resources %+v", cfg.Resources)
	}
	// templatefile() resolves against the cookbook's root.
	insts, diags := Resources(cfg, testRegistry(), scope)
	if diags.HasErrors() || len(insts) != 1 {
		t.Fatal(diags)
	}
	if got := insts[0].Resource.Get("content"); got.AsString() != "v=policy default" {
		t.Errorf("content %#v", got)
	}

	t.Run("resource in an attribute file", func(t *testing.T) {
		cb, _ := config.ReadCookbook(filepath.Join(dir, "b"), nil)
		_, diags := config.LoadPolicy(config.PolicyInput{Dir: dir, Cookbooks: []*config.Cookbook{cb}, RunList: []config.RunListItem{{Cookbook: "b", Recipe: "default"}}}, testRegistry())
		if len(diags) != 1 || diags[0].Summary != "Resource in an attribute file" {
			t.Fatalf("diags %v", diags)
		}
	})
	t.Run("missing recipe", func(t *testing.T) {
		_, diags := config.LoadPolicy(config.PolicyInput{Dir: dir, Cookbooks: []*config.Cookbook{ca}, RunList: []config.RunListItem{{Cookbook: "a", Recipe: "nope"}}}, testRegistry())
		if len(diags) != 1 || diags[0].Summary != "Recipe not found" {
			t.Fatalf("diags %v", diags)
		}
	})
}
