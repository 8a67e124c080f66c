package config

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

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

func rangeAt(t *testing.T, d *hcl.Diagnostic) string {
	t.Helper()
	if d.Subject == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
}
