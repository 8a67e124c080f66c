package eval

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
)

// fakeType is a small resource type for tests: it never touches the host.
type fakeType struct{ s *resources.Schema }

func (f *fakeType) Schema() *resources.Schema { return f.s }
func (f *fakeType) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return resources.Absent(), nil
}
func (f *fakeType) Plan(d *resources.Resource, c *resources.State) (*resources.Step, error) {
	return resources.ConvergeIfChanged(d, c), nil
}
func (f *fakeType) Converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	return nil
}

// normalizeMode accepts 420, "644" and "0644" and returns "0644".
func normalizeMode(v cty.Value) (cty.Value, error) {
	var n int64
	switch v.Type() {
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return cty.NilVal, fmt.Errorf("mode must be a whole number")
		}
		n, _ = bf.Int64()
	case cty.String:
		var err error
		n, err = strconv.ParseInt(v.AsString(), 8, 32)
		if err != nil {
			return cty.NilVal, fmt.Errorf("mode %q is not an octal number", v.AsString())
		}
	default:
		return cty.NilVal, fmt.Errorf("mode must be a string or a number")
	}
	if n < 0 || n > 0o7777 {
		return cty.NilVal, fmt.Errorf("mode %o is out of range", n)
	}
	return cty.StringVal(fmt.Sprintf("%04o", n)), nil
}

func testRegistry() *resources.Registry {
	file := &resources.Schema{
		Name: "file",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true, Validate: func(v cty.Value) error {
				if !strings.HasPrefix(v.AsString(), "/") {
					return fmt.Errorf("path %q is not absolute", v.AsString())
				}
				return nil
			}},
			{Name: "content", Type: cty.String, Content: true},
			{Name: "mode", Type: cty.DynamicPseudoType, Normalize: normalizeMode},
			{Name: "backup", Type: cty.Number, NonState: true},
			{Name: "tags", Type: cty.List(cty.String)},
		},
		Actions:       []string{"create", "delete", "touch"},
		DefaultAction: "create",
	}
	account := &resources.Schema{
		Name: "account",
		Properties: []*resources.Property{
			{Name: "username", Type: cty.String, NameProperty: true},
			{Name: "uid", Type: cty.Number, Required: true},
		},
		Actions:       []string{"create", "remove"},
		DefaultAction: "create",
	}
	return resources.NewRegistry(&fakeType{file}, &fakeType{account})
}

func testHost() cty.Value {
	f := &host.Facts{
		Identity: host.Identity{Hostname: "web-01", MachineID: "abc"},
		FQDN:     "web-01.example.com", OS: "linux", Platform: "debian", PlatformVersion: "12",
		PlatformFamily: "debian", Arch: "amd64", Kernel: "6.1.0", CPUs: 2,
	}
	return f.Value()
}

// writeDir writes files (name → content) into a new temp dir.
func writeDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, files)
	return dir
}

func summaries(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d.Summary)
		}
	}
	return out
}

// plan loads dir and evaluates it against the test host.
func plan(t *testing.T, dir string) (*config.Config, []*Instance, hcl.Diagnostics) {
	t.Helper()
	reg := testRegistry()
	cfg, diags := config.LoadDir(dir, reg)
	if diags.HasErrors() {
		return cfg, nil, diags
	}
	scope, _, d := NewScope(cfg, testHost())
	diags = append(diags, d...)
	if diags.HasErrors() {
		return cfg, nil, diags
	}
	insts, d := Resources(cfg, reg, scope)
	return cfg, insts, append(diags, d...)
}

func rangeAt(t *testing.T, d *hcl.Diagnostic) string {
	t.Helper()
	if d.Subject == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
}

// unknownNode is cfg's node attributes written without the host, as
// validate sees them.
func unknownNode(t *testing.T, cfg *config.Config) cty.Value {
	t.Helper()
	attrs, diags := Attributes(cfg, host.Unknown())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return attrs.Node()
}

func mustLoad(t *testing.T, dir string) *config.Config {
	t.Helper()
	cfg, diags := config.LoadDir(dir, testRegistry())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}
