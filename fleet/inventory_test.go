package fleet

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// inventoryDir is a directory with the recipe directories the test
// inventories name.
func inventoryDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"site", "db"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInventoryErrors(t *testing.T) {
	cases := []struct {
		name     string
		src      string
		errors   int
		warnings int
		summary  string
	}{
		{"fine", `recipes = "site"
hosts = ["a"]`, 0, 0, ""},
		{"host declared twice", `recipes = "site"
hosts = ["a"]
host "a" {}`, 1, 0, "Host declared twice"},
		{"host block twice", `recipes = "site"
host "a" {}
host "a" {}`, 1, 0, "Host declared twice"},
		{"group names an undeclared host", `recipes = "site"
hosts = ["web-01"]
group "web" { hosts = ["web-1"] }`, 1, 0, "No such host"},
		{"host names a missing group", `recipes = "site"
group "web" {}
host "a" { groups = ["webs"] }`, 1, 0, "No such group"},
		{"group declared twice", `recipes = "site"
group "web" {}
group "web" {}`, 1, 0, "Group declared twice"},
		{"a glob matching nothing warns", `recipes = "site"
hosts = ["a"]
group "web" { hosts = ["web-*"] }`, 0, 1, "Pattern matches no host"},
		{"no recipes", `hosts = ["a"]`, 1, 0, "Host has no recipes"},
		{"missing recipe directory", `recipes = "nowhere"
hosts = ["a"]`, 1, 0, "No such recipe directory"},
		{"groups disagree", `hosts = ["a"]
group "x" {
  hosts   = ["a"]
  recipes = "site"
}
group "y" {
  hosts   = ["a"]
  recipes = "db"
}`, 1, 0, "Groups disagree"},
		{"the host settles what groups disagree on", `hosts = []
host "a" { recipes = "site" }
group "x" {
  hosts   = ["a"]
  recipes = "site"
}
group "y" {
  hosts   = ["a"]
  recipes = "db"
}`, 0, 0, ""},
		{"options that are toque's", `recipes = "site"
hosts = ["a"]
options = { ControlPath = "/tmp/x", BatchMode = "no" }`, 2, 0, "Invalid option name"},
		{"groups disagree on an option", `recipes = "site"
hosts = ["a"]
group "x" {
  hosts   = ["a"]
  options = { User = "x" }
}
group "y" {
  hosts   = ["a"]
  options = { User = "y" }
}`, 1, 0, "Groups disagree"},
		{"an alias ssh would read as an option", `recipes = "site"
hosts = ["-oProxyCommand=x"]`, 1, 0, "Invalid host alias"},
		{"an alias with a user", `recipes = "site"
hosts = ["root@a"]`, 1, 0, "Invalid host alias"},
		{"become", `recipes = "site"
hosts = ["a"]
become = "su"`, 1, 0, "Unsupported become method"},
		{"relative verify_key", `recipes = "site"
hosts = ["a"]
verify_key = "trusted.pub"`, 1, 0, "Relative verify_key"},
		{"bad batches", `recipes = "site"
hosts = ["a"]
rollout { batches = [0, "150%", "x"] }`, 3, 0, "Invalid batch size"},
		{"bad max_failures", `recipes = "site"
hosts = ["a"]
rollout { max_failures = -1 }`, 1, 0, "Invalid max_failures"},
		{"attributes not a map", `recipes = "site"
hosts = ["a"]
attributes = ["x"]`, 1, 0, "Invalid attributes"},
		{"a top-level attribute key that cannot be a name", `recipes = "site"
hosts = ["a"]
attributes = { "a.b" = 1 }`, 1, 0, "Invalid attributes"},
		{"attributes read no variables", `recipes = "site"
hosts = ["a"]
attributes = { web = { port = node.x } }`, 1, 0, "Variables not allowed"},
		{"an unknown argument", `recipes = "site"
hosts = ["a"]
recipe = "x"`, 1, 0, "Unsupported argument"},
		{"an unknown block", `recipes = "site"
hosts = ["a"]
groups "x" {}`, 1, 0, "Unsupported block type"},
		{"a missing ssh_config", `recipes = "site"
hosts = ["a"]
ssh_config = "nope"`, 1, 0, "No such ssh configuration file"},
	}
	dir := inventoryDir(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := ParseInventory([]byte(c.src), "fleet.hcl", dir)
			errs, warns := 0, 0
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					errs++
				} else {
					warns++
				}
			}
			if errs != c.errors || warns != c.warnings {
				t.Fatalf("%d errors and %d warnings, want %d and %d: %v", errs, warns, c.errors, c.warnings, diags)
			}
			if c.summary != "" && !strings.Contains(diags.Error(), c.summary) {
				t.Errorf("diagnostics %v lack %q", diags, c.summary)
			}
		})
	}
}

func TestInventorySettles(t *testing.T) {
	dir := inventoryDir(t)
	src := `
recipes = "site"
become  = "sudo"
options = { ConnectTimeout = 5 }
hosts   = ["web-01"]

host "web-02" {
  become     = "none"
  options    = { User = "admin" }
  attributes = { site = { port = 8081 } }
}

group "web" {
  hosts       = ["web-*"]
  options     = { User = "deploy", Port = 2222 }
  environment = { TOQUE_STATE_DIR = "/var/lib/toque-web" }
  attributes  = {
    site = {
      port  = 8080
      token = sensitive("s3cret")
    }
  }
}

host "db-01" {}

group "db" {
  hosts   = ["db-01"]
  recipes = "db"
}

group "canary" {}

host "canary-01" {
  groups = ["canary", "web"]
}

rollout {
  batches      = [1, "10%", "100%"]
  max_failures = "5%"
  parallel     = 8
}
`
	inv, diags := ParseInventory([]byte(src), "fleet.hcl", dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	aliases := []string{}
	for _, h := range inv.Hosts {
		aliases = append(aliases, h.Alias)
	}
	if want := []string{"web-01", "web-02", "db-01", "canary-01"}; !reflect.DeepEqual(aliases, want) {
		t.Errorf("hosts %v, want %v", aliases, want)
	}
	web01, web02, db01, canary := inv.Host("web-01"), inv.Host("web-02"), inv.Host("db-01"), inv.Host("canary-01")
	if web01.Become != "sudo" || web02.Become != "" {
		t.Errorf("become: %q %q", web01.Become, web02.Become)
	}
	if got := web01.Options; !reflect.DeepEqual(got, []Option{{"ConnectTimeout", "5"}, {"Port", "2222"}, {"User", "deploy"}}) {
		t.Errorf("web-01 options %v", got)
	}
	if got := web02.Options; !reflect.DeepEqual(got, []Option{{"ConnectTimeout", "5"}, {"Port", "2222"}, {"User", "admin"}}) {
		t.Errorf("web-02 options %v", got)
	}
	if db01.Recipes != filepath.Join(dir, "db") || db01.RecipesName != "db" || web01.Recipes != filepath.Join(dir, "site") {
		t.Errorf("recipes %s %s", db01.Recipes, web01.Recipes)
	}
	if !reflect.DeepEqual(canary.Groups, []string{"web", "canary"}) {
		t.Errorf("canary-01's groups %v (in declaration order)", canary.Groups)
	}
	if g := inv.Group("web"); !reflect.DeepEqual(g.Members, []string{"web-01", "web-02", "canary-01"}) {
		t.Errorf("web's members %v", g.Members)
	}
	var layers []string
	for _, l := range web02.Layers {
		layers = append(layers, l.Name)
	}
	if want := []string{"fleet.hcl#group.web", "fleet.hcl#host.web-02"}; !reflect.DeepEqual(layers, want) {
		t.Errorf("web-02's attribute files %v, want %v", layers, want)
	}
	if web01.Environment["TOQUE_STATE_DIR"] != "/var/lib/toque-web" || len(db01.Environment) != 0 {
		t.Errorf("environment %v %v", web01.Environment, db01.Environment)
	}
	r := inv.Rollout
	if got := r.BatchSizes(50); !reflect.DeepEqual(got, []int{1, 5, 44}) {
		t.Errorf("batches of 50: %v", got)
	}
	if r.Budget(50) != 2 || r.Parallel != 8 {
		t.Errorf("budget %d, parallel %d", r.Budget(50), r.Parallel)
	}
}

func TestBatchSizes(t *testing.T) {
	for _, c := range []struct {
		batches []Size
		n       int
		want    []int
	}{
		{nil, 7, []int{7}},
		{[]Size{{N: 1}}, 3, []int{1, 1, 1}},
		{[]Size{{N: 1}, {N: 50, Percent: true}}, 10, []int{1, 5, 4}},
		{[]Size{{N: 2}, {N: 100, Percent: true}}, 1, []int{1}},
		{[]Size{{N: 10, Percent: true}}, 5, []int{1, 1, 1, 1, 1}},
		{[]Size{{N: 3}}, 0, nil},
	} {
		got := Rollout{Batches: c.batches}.BatchSizes(c.n)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v of %d: %v, want %v", c.batches, c.n, got, c.want)
		}
	}
}
