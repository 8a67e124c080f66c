package planner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
	"github.com/toquehq/toque/resources/builtin"
)

// dataPlanner plans with the built-in types and data sources, as the
// command does, for the test host.
func dataPlanner() *planner.Planner {
	return &planner.Planner{
		Registry:    builtin.Registry(),
		Parallelism: 4,
		Host:        &host.Facts{Identity: host.Identity{Hostname: "web-01", MachineID: "0123456789abcdef"}},
		Version:     "0.1.0-test",
	}
}

// planData writes src (with $DIR replaced by a scratch directory, which it
// returns) as a recipe and plans it.
func planData(t *testing.T, src string) (*plan.Plan, hcl.Diagnostics, string) {
	t.Helper()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	recipes := filepath.Join(dir, "recipes")
	if err := os.Mkdir(recipes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recipes, "a.hcl"), []byte(strings.ReplaceAll(src, "$DIR", work)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := dataPlanner()
	cfg, diags := config.LoadDir(recipes, p.Registry)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pl, diags := p.Plan(ctx, cfg)
	return pl, diags, work
}

func errorSummaries(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d.Summary)
		}
	}
	return out
}

func TestDataReadAtPlan(t *testing.T) {
	pl, diags, work := planData(t, `data "exec" "sites" {
  command = "printf '{\"a.com\": {\"port\": 443}, \"b.com\": {}}'"
}
data "exec" "count" {
  command     = "echo ${length(data.exec.sites.result)}"
  interpreter = "bash"
}
data "exec" "token" {
  command   = ["echo", "\"hunter2\""]
  sensitive = true
}
file "site" {
  for_each = data.exec.sites.result
  path     = "$DIR/${each.key}.conf"
  content  = "port ${try(each.value.port, 80)} of ${data.exec.count.result}\n"
}
file "$DIR/token" {
  content = data.exec.token.result
}
file "$DIR/plain" {
  content = "reads no data\n"
}
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var addrs []string
	for _, r := range pl.Resources {
		addrs = append(addrs, r.Address)
	}
	if got := strings.Join(addrs, " "); got != fmt.Sprintf(`file[site]["a.com"] file[site]["b.com"] file[%s/token] file[%s/plain]`, work, work) {
		t.Errorf("resources: %s", got)
	}
	if got := pl.Resources[0].Desired["content"].Value.AsString(); got != "port 443 of 2\n" {
		t.Errorf("content %q", got)
	}
	if len(pl.Data) != 3 {
		t.Fatalf("data reads: %+v", pl.Data)
	}
	sites, count, token := pl.Data[0], pl.Data[1], pl.Data[2]
	if sites.Address != "data.exec.sites" || count.Address != "data.exec.count" || token.Address != "data.exec.token" {
		t.Errorf("reads in another order than declared: %s %s %s", sites.Address, count.Address, token.Address)
	}
	if sites.Source.Filename != "a.hcl" || sites.Source.Line != 1 || sites.Answer == nil || !strings.HasPrefix(sites.Digest, "sha256:") {
		t.Errorf("sites: %+v", sites)
	}
	if got := count.Answer.Value; !got.RawEquals(cty.NumberIntVal(2)) {
		t.Errorf("count answered %#v", got)
	}
	if !token.Sensitive || token.Answer != nil || !strings.HasPrefix(token.Digest, "hmac-sha256:") {
		t.Errorf("a sensitive answer is kept: %+v", token)
	}
	if tok := pl.Resources[2]; len(tok.SensitiveProperties) != 1 {
		t.Errorf("a value read from a sensitive answer is not hidden: %+v", tok.SensitiveProperties)
	}
	if got := sites.Arguments["command"].Value.AsString(); !strings.HasPrefix(got, "printf ") {
		t.Errorf("arguments: %v", sites.Arguments)
	}

	// Written and read back: the plan file carries the reads.
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := plan.Write(path, pl); err != nil {
		t.Fatal(err)
	}
	back, err := plan.Read(path, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Data) != 3 || back.Data[0].Digest != sites.Digest || !back.Data[0].Answer.Value.RawEquals(sites.Answer.Value) {
		t.Errorf("read back: %+v", back.Data)
	}
}

// A data block that cannot be read fails the plan at the block, before
// anything that reads it is evaluated, and every failing block is
// reported.
func TestDataReadFails(t *testing.T) {
	cases := []struct {
		name, block string
		detail      string // in the diagnostic's detail
	}{
		{"a command that fails", `command = "echo oops >&2; exit 3"`, "exited with status 3\nstderr:\n    oops"},
		{"a command that hangs", "command = \"sleep 30\"\n  timeout = 0.2", "did not finish within 200ms (timeout)"},
		{"a command that prints no JSON", `command = "echo not json"`, `printed "not json", which is not one JSON document`},
		{"a command that prints nothing", `command = "true"`, "printed nothing on its standard output"},
		{"a command that prints more than its cap", "command = \"yes '\\\"x\\\"' | head -c 100000\"\n  max_size = 1000", "printed more than 1000 bytes on its standard output (max_size)"},
		{"a sensitive command whose output is not JSON", "command = \"echo hunter2\"\n  sensitive = true", "what it printed is hidden"},
		{"an interpreter that is not a script type", "command = \"true\"\n  interpreter = \"ruby\"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl, diags, _ := planData(t, fmt.Sprintf("data \"exec\" \"bad\" {\n  %s\n}\ndata \"exec\" \"good\" {\n  command = \"echo 1\"\n}\nfile \"x\" {\n  path    = \"/nonexistent/${data.exec.bad.result}\"\n}\n", tc.block))
			if pl != nil {
				t.Errorf("a plan was made: %+v", pl)
			}
			got := errorSummaries(diags)
			if len(got) != 1 {
				t.Fatalf("errors %q: %v", got, diags)
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Start.Line != 1 && d.Subject.Start.Line != 3 {
				t.Errorf("error at %v, want the data block", d.Subject)
			}
			if !strings.Contains(d.Detail, tc.detail) {
				t.Errorf("detail %q, want %q", d.Detail, tc.detail)
			}
			if strings.Contains(d.Detail, "hunter2") {
				t.Errorf("a sensitive block's output is shown: %s", d.Detail)
			}
		})
	}
}

// The data blocks are read while the resources that do not read them
// are: a data command that waits for what a guard of such a resource
// does, and a guard that waits for what a data command does, both
// finish. Read one after the other, either would wait until its timeout.
func TestDataReadInParallelWithResources(t *testing.T) {
	for _, tc := range []struct{ name, reader string }{
		{"some resources read data", `file "$DIR/from-data" {
  content = jsonencode(data.exec.waits.result)
}
`},
		{"no resource reads data", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, diags, work := planData(t, `data "exec" "waits" {
  command = "while [ ! -e $DIR/guard-ran ]; do sleep 0.01; done; touch $DIR/data-ran; echo '{}'"
  timeout = 20
}
execute "independent" {
  command = "true"
  only_if = "touch $DIR/guard-ran; while [ ! -e $DIR/data-ran ]; do sleep 0.01; done"
}
`+tc.reader)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if len(pl.Data) != 1 || pl.Data[0].Answer == nil {
				t.Fatalf("data: %+v", pl.Data)
			}
			for _, f := range []string{"guard-ran", "data-ran"} {
				if _, err := os.Stat(filepath.Join(work, f)); err != nil {
					t.Error(err)
				}
			}
			if len(pl.Resources) < 1 || pl.Resources[0].Address != "execute[independent]" || pl.Resources[0].Kind != "run" || len(pl.Resources[0].Guards) != 1 {
				t.Errorf("the resource planned while the data was read: %+v", pl.Resources[0])
			}
		})
	}
}

// The resources that read no data are read while the data is, even when
// one of them subscribes to a resource that reads data (which their
// evaluation apart cannot resolve): notifications are settled with the
// whole configuration.
func TestDataPrefetchWithNotifications(t *testing.T) {
	pl, diags, work := planData(t, `data "exec" "waits" {
  command = "while [ ! -e $DIR/guard-ran ]; do sleep 0.01; done; echo '[\"a\"]'"
  timeout = 20
}
file "site" {
  for_each = toset(data.exec.waits.result)
  path     = "$DIR/${each.key}"
  content  = "x\n"
}
execute "independent" {
  command = "true"
  only_if = "touch $DIR/guard-ran"
}
execute "reload" {
  command = "true"
  action  = "nothing"
  subscribes "run" {
    resource = "file[site]"
  }
}
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(pl.NotifiedRuns) != 1 || pl.NotifiedRuns[0].Address != "execute[reload]" || len(pl.NotifiedRuns[0].Notifiers) != 1 {
		t.Fatalf("notified runs: %+v", pl.NotifiedRuns)
	}
	if _, err := os.Stat(filepath.Join(work, "guard-ran")); err != nil {
		t.Error(err)
	}
}
