package views

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// evalDiags parses src as a recipe and evaluates its content attribute,
// returning hcl's own diagnostics, which carry the expression and its
// evaluation context.
func evalDiags(t *testing.T, dir, src string, node cty.Value) (hcl.Diagnostics, map[string]*hcl.File) {
	t.Helper()
	p := hclparse.NewParser()
	name := filepath.Join(dir, "web.hcl")
	f, d := p.ParseHCL([]byte(src), name)
	if d.HasErrors() {
		t.Fatal(d)
	}
	attrs, _ := f.Body.JustAttributes()
	_, d = attrs["content"].Expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"node": node}})
	if !d.HasErrors() {
		t.Fatal("the expression evaluated without error")
	}
	return d, p.Files()
}

func TestDiagnosticsShowValues(t *testing.T) {
	dir := t.TempDir()
	node := cty.ObjectVal(map[string]cty.Value{"web": cty.ObjectVal(map[string]cty.Value{
		"port": cty.NumberIntVal(8080), "name": cty.StringVal("front\x1b[31m"),
	})})
	hd, files := evalDiags(t, dir, "content = node.web.port + node.web.name\n", node)
	v := &View{Workdir: dir, Files: files}
	var stderr bytes.Buffer
	v.Streams.Stderr = &stderr

	v.Diagnostics(diag.Diagnostics{}.Append(hd))
	out := stderr.String()
	for _, want := range []string{"Error: Invalid operand", "on web.hcl:1:", "content = node.web.port + node.web.name",
		"│ node.web.name is \"front\\x1b[31m\""} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", out)
	}

	// A sensitive resource's diagnostic names the variables, never their values.
	diag.MarkSensitive(hd)
	stderr.Reset()
	ds := diag.Diagnostics{}.Append(hd)
	v.Diagnostics(ds)
	if out := stderr.String(); strings.Contains(out, "front") || !strings.Contains(out, "node.web.name has a sensitive value") {
		t.Errorf("sensitive values shown:\n%s", out)
	}
	js := v.JSONDiagnostics(ds)
	b, _ := json.Marshal(js)
	if strings.Contains(string(b), "front") || len(js) != 1 || js[0].Range == nil || js[0].Range.Filename != "web.hcl" || js[0].Snippet == nil || len(js[0].Snippet.Values) != 1 {
		t.Errorf("JSON %s", b)
	}
}

func TestDiagnosticsWordTypedErrors(t *testing.T) {
	stale := &apply.StaleError{Resources: []apply.StaleResource{{Address: "file[/etc/app.conf]", Planned: "update", Now: "update",
		Differences: []plan.Difference{{Property: "content", Then: "(3 bytes, sha256:aa…)", Now: "(4 bytes, sha256:bb…)"}}}}}
	ds := diag.Diagnostics{}.Append(stale, diag.Errorf("-parallelism must be at least 1").WithKind(KindUsage))
	var stderr bytes.Buffer
	v := &View{Streams: Streams{Stderr: &stderr}}
	v.Diagnostics(ds)
	out := stderr.String()
	for _, want := range []string{"Error: The plan is stale\n", "  file[/etc/app.conf]: content: (3 bytes, sha256:aa…) at plan time, now (4 bytes, sha256:bb…)", "Run toque plan again", "Error: -parallelism must be at least 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	js := v.JSONDiagnostics(ds)
	if js[0].Kind != KindStale || js[0].Summary != "The plan is stale" || js[1].Kind != KindUsage || js[1].Range != nil {
		t.Errorf("JSON %+v", js)
	}
}

func TestDiagnosticsRewordGoisms(t *testing.T) {
	var stderr bytes.Buffer
	v := &View{Streams: Streams{Stderr: &stderr}}
	v.Diagnostics(diag.Diagnostics{}.Append(fmt.Errorf("fetching the include: %w", context.Canceled)))
	if got := stderr.String(); got != "Error: fetching the include: interrupted\n" {
		t.Errorf("got %q", got)
	}
}
