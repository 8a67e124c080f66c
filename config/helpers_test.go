package config

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

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

func rangeAt(t *testing.T, d *hcl.Diagnostic) string {
	t.Helper()
	if d.Subject == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
}
