package config

import (
	"path/filepath"
	"testing"
)

// cookbookInput is a policy input of one cookbook "web" at dir, running
// its default recipe.
func cookbookInput(t *testing.T, dir string) PolicyInput {
	t.Helper()
	cb, diags := ReadCookbook(filepath.Join(dir, "cookbooks", "web"), nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return PolicyInput{Dir: dir, Cookbooks: []*Cookbook{cb}, RunList: []RunListItem{{Cookbook: "web", Recipe: "default"}}}
}

func TestCookbookTypes(t *testing.T) {
	const meta = "name = \"web\"\nversion = \"1.0.0\"\n"
	const body = "{\n  action \"create\" {\n    converge_by \"x\" { code = \"true\" }\n  }\n}\n"
	cases := []struct {
		name    string
		files   map[string]string
		summary string // "" for none
		types   string
	}{
		{"named after its file", map[string]string{"resources/site.hcl": "resource_type \"site\" " + body}, "", "web_site"},
		{"full name as label", map[string]string{"resources/site.hcl": "resource_type \"web_site\" " + body}, "", "web_site"},
		{"label not the file", map[string]string{"resources/site.hcl": "resource_type \"page\" " + body}, "Resource type name does not match its file", ""},
		{"two types in a file", map[string]string{"resources/site.hcl": "resource_type \"site\" " + body + "resource_type \"site\" " + body}, "One resource type per file", ""},
		{"a resource in a type file", map[string]string{"resources/site.hcl": "resource_type \"site\" " + body + "file \"/x\" {}\n"}, "Unexpected block in a resource type file", ""},
		{"a type in a recipe", map[string]string{"recipes/default.hcl": "resource_type \"x\" " + body}, "Resource type outside resources/", ""},
		{"a cookbook name that cannot prefix a type", map[string]string{"resources/my-site.hcl": "resource_type \"my-site\" " + body}, "Invalid resource type name", ""},
		{"any file name", map[string]string{"resources/x.hcl": "resource_type \"x\" " + body, "recipes/default.hcl": "web_x \"a\" {}\n"}, "", "web_x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"cookbooks/web/metadata.hcl": meta, "cookbooks/web/recipes/default.hcl": "web_site \"a\" {}\n"}
			for k, v := range c.files {
				files["cookbooks/web/"+k] = v
			}
			if _, ok := c.files["recipes/default.hcl"]; ok {
				files["cookbooks/web/recipes/default.hcl"] = c.files["recipes/default.hcl"]
			}
			dir := writeDir(t, files)
			cfg, diags := LoadPolicy(cookbookInput(t, dir), testRegistry())
			if c.summary == "" {
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				if len(cfg.Types) != 1 || cfg.Types[0].Name != c.types || cfg.Types[0].Cookbook != "web" {
					t.Fatalf("types %+v", cfg.Types)
				}
				return
			}
			for _, d := range diags {
				if d.Summary == c.summary {
					return
				}
			}
			t.Fatalf("want %q, got %v", c.summary, diags)
		})
	}
}
