package eval

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

func testRegistry() *resources.Registry { return resourcetest.Registry() }

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
