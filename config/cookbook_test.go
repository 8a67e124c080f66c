package config

import (
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

func TestParseRunListItem(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"web", "recipe[web::default]", ""},
		{"web::server", "recipe[web::server]", ""},
		{"recipe[web]", "recipe[web::default]", ""},
		{"recipe[web::server]", "recipe[web::server]", ""},
		{"role[web]", "", "roles are not supported"},
		{"web::", "", "not a run-list item"},
		{"../x", "", "not a run-list item"},
		{"", "", "not a run-list item"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRunListItem(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestReadCookbook(t *testing.T) {
	for _, tc := range []struct{ name, md, want string }{
		{"ok", "name = \"web\"\nversion = \"1.2.3\"\ndescription = \"x\"\n", ""},
		{"unknown key", "name = \"web\"\nversion = \"1.2.3\"\ndepends = []\n", "Unsupported argument"},
		{"missing version", "name = \"web\"\n", "Missing required argument"},
		{"bad version", "name = \"web\"\nversion = \"one\"\n", "Invalid cookbook version"},
		{"bad name", "name = \"we b\"\nversion = \"1.0.0\"\n", "Invalid cookbook name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteFiles(t, dir, map[string]string{"metadata.hcl": tc.md})
			cb, diags := ReadCookbook(dir, nil)
			if tc.want == "" {
				if diags.HasErrors() || cb.Name != "web" || cb.Version != "1.2.3" {
					t.Fatalf("%v %+v", diags, cb)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != tc.want {
				t.Fatalf("diags %v, want %q", diags, tc.want)
			}
		})
	}
}
