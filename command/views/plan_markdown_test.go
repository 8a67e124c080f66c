package views

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// markdownScenarios are the plans whose Markdown is kept as golden files in
// testdata/markdown: examples of what reviewers see.
func markdownScenarios(t *testing.T) map[string]struct {
	plan *plan.Plan
	opts MarkdownOptions
} {
	t.Helper()
	g := goldenScenarios(t)
	type sc = struct {
		plan *plan.Plan
		opts MarkdownOptions
	}
	empty := scenario(t, nil, nil, func(f *plantest.FakeType) []*eval.Instance { return nil })

	guards := g["skip"]
	for _, r := range guards.Resources {
		if r.Name == "/opt/widget/install" {
			r.Notifications = []plan.Notification{
				{Target: "fake_file[/etc/widget.conf]", Action: "create", Timing: "immediately"},
				{Target: "fake_file[/usr/bin/reload]", Action: "run", Timing: "delayed", Subscribe: true},
			}
			r.Guards[1].Output = "bin/widget: not found\n```\nbackticks in output\n"
		}
	}

	return map[string]sc{
		"empty":               {empty, MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"no-changes":          {g["no-changes"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"create":              {g["create"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"update":              {g["update"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"update-changes-only": {g["update"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out", ChangesOnly: true}},
		"delete":              {g["delete"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"sensitive":           {g["sensitive"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"guards":              {guards, MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"deferred":            {g["deferred"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"awaits":              {g["awaits"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"groups":              {g["groups"], MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out"}},
		"truncated":           {largePlan(t, 40), MarkdownOptions{Registry: builtin.Registry(), PlanFile: "plan.out", MaxBytes: 4000}},
	}
}

// largePlan creates n files with a few lines of content each, and deletes
// one, so a small limit must cut details.
func largePlan(t *testing.T, n int) *plan.Plan {
	t.Helper()
	return scenario(t, func(f *plantest.FakeType) {
		f.Set("/srv/old/index.html", map[string]cty.Value{"content": plantest.Str("old\n")})
	}, nil, func(f *plantest.FakeType) []*eval.Instance {
		var insts []*eval.Instance
		for i := range n {
			content := fmt.Sprintf("line one of page %d\nline two\nline three\n", i)
			insts = append(insts, f.Inst(fmt.Sprintf("/srv/www/page-%02d.html", i), "create", 1+i*4, map[string]cty.Value{"content": plantest.Str(content)}))
		}
		insts = append(insts, f.Inst("/srv/old/index.html", "delete", 1+n*4, nil))
		return insts
	})
}

func TestRenderMarkdownGolden(t *testing.T) {
	for name, sc := range markdownScenarios(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			sc.opts.Registry = testRegistry()
			if err := RenderMarkdown(&buf, sc.plan, sc.opts); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "markdown", name+".md"), buf.Bytes())
			checkMarkdownShape(t, buf.String(), sc.plan, sc.opts)
		})
	}
}

// checkMarkdownShape asserts what every rendering must hold.
func checkMarkdownShape(t *testing.T, md string, p *plan.Plan, o MarkdownOptions) {
	t.Helper()
	limit := o.MaxBytes
	if limit == 0 {
		limit = DefaultMarkdownBytes
	}
	if len(md) > limit {
		t.Errorf("output is %d bytes, over the limit %d", len(md), limit)
	}
	marker := fmt.Sprintf("<!-- toque-plan host=%s format=%d digest=%s truncated=", p.Host.Hostname, p.FormatVersion, p.Digest())
	if !strings.HasPrefix(md, marker) {
		t.Errorf("output does not start with the marker %q:\n%s", marker, md[:min(len(md), 200)])
	}
	if !strings.Contains(md, "Plan digest: `"+p.Digest()+"`") {
		t.Error("no visible digest")
	}
	c := p.Counts()
	summary := fmt.Sprintf("Plan: %d to create, %d to update, %d to delete, %d to run, %d skipped, %d unchanged%s.", c.Create, c.Update, c.Delete, c.Run, c.Skip, c.NoOp, deferredCounts(c))
	if !strings.Contains(md, summary) {
		t.Errorf("no summary line %q", summary)
	}
	for _, r := range p.Resources {
		if r.Kind == "create" || r.Kind == "update" || r.Kind == "delete" || r.Kind == "run" {
			if !strings.Contains(md, "`"+r.Address+"`") {
				t.Errorf("address %s is not listed", r.Address)
			}
		}
	}
	if c.Delete > 0 != strings.Contains(md, "> [!WARNING]") {
		t.Errorf("deletes %d, warning block present = %v", c.Delete, !(c.Delete > 0))
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details>")
	}
	checkDiffBlocks(t, md)
}

var fenceOpen = regexp.MustCompile("^(`{3,})(\\w*)$")

// checkDiffBlocks asserts that every line of every diff block starts with
// a diff marker in column 0, and that every fence is closed.
func checkDiffBlocks(t *testing.T, md string) {
	t.Helper()
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimPrefix(lines[i], "  ")
		m := fenceOpen.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fence, lang := m[1], m[2]
		closed := false
		for i++; i < len(lines); i++ {
			body := lines[i]
			if strings.TrimPrefix(body, "  ") == fence {
				closed = true
				break
			}
			if lang == "diff" && (body == "" || !strings.ContainsRune("+-!@ \\", rune(body[0]))) {
				t.Errorf("diff line without a marker in column 0: %q", body)
			}
		}
		if !closed {
			t.Errorf("fence %q (%s) is never closed", fence, lang)
		}
	}
}

func TestRenderMarkdownHidesSensitiveValues(t *testing.T) {
	p := goldenScenarios(t)["sensitive"]
	var buf bytes.Buffer
	if err := RenderMarkdown(&buf, p, MarkdownOptions{Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, secret := range []string{"hunter1", "hunter2", "s3cr3t", "new secret", "old secret"} {
		if strings.Contains(md, secret) {
			t.Errorf("the Markdown shows the sensitive value %q", secret)
		}
	}
	// The plan really holds them, so the test would see a leak.
	found := false
	for _, r := range p.Resources {
		for _, v := range r.Desired {
			if v.Type() == cty.String && v.AsString() == "hunter2" {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the scenario's plan does not hold the secret in Desired; the test proves nothing")
	}
	if !strings.Contains(md, plan.Sensitive) {
		t.Error("no (sensitive) shown")
	}
}

func TestRenderMarkdownLimit(t *testing.T) {
	p := largePlan(t, 40)
	var full bytes.Buffer
	if err := RenderMarkdown(&full, p, MarkdownOptions{Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(full.String(), "truncated=false -->") || strings.Contains(full.String(), "left out") {
		t.Fatalf("the default limit cut a small plan:\n%s", full.String())
	}
	var headOnly bytes.Buffer
	headErr := RenderMarkdown(&headOnly, p, MarkdownOptions{Registry: builtin.Registry(), MaxBytes: 1})
	if !errors.Is(headErr, ErrMarkdownTooSmall) || headOnly.Len() != 0 {
		t.Fatalf("limit 1: got %v and %d bytes written", headErr, headOnly.Len())
	}

	for _, limit := range []int{len(full.String()), len(full.String()) - 1, 9000, 5000, 3000, 2500} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			var buf bytes.Buffer
			err := RenderMarkdown(&buf, p, MarkdownOptions{MaxBytes: limit, PlanFile: "my plan.out", Registry: testRegistry()})
			if errors.Is(err, ErrMarkdownTooSmall) {
				if buf.Len() != 0 {
					t.Error("wrote output with an error")
				}
				if !strings.Contains(err.Error(), "need") {
					t.Errorf("the error does not say what is needed: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			md := buf.String()
			checkMarkdownShape(t, md, p, MarkdownOptions{Registry: builtin.Registry(), MaxBytes: limit})
			kept := strings.Count(md, "<details>")
			truncated := limit < full.Len()
			if truncated != strings.Contains(md, "truncated=true -->") {
				t.Errorf("limit %d of %d: marker truncated flag wrong", limit, full.Len())
			}
			if truncated {
				what := fmt.Sprintf("%d resources' details were", 41-kept)
				if 41-kept == 1 {
					what = "1 resource's details were"
				}
				want := fmt.Sprintf("_%s left out to stay under %d bytes; run `toque show 'my plan.out'` for all of them._", what, limit)
				if !strings.Contains(md, want) {
					t.Errorf("no note %q in:\n%s", want, md[max(0, len(md)-300):])
				}
				// The kept sections are a prefix of the full output's.
				i := strings.Index(md, "<details>")
				j := strings.LastIndex(md, "</details>")
				if i >= 0 && !strings.Contains(full.String(), md[i:j]) {
					t.Error("kept details are not the full rendering's first ones")
				}
			} else if kept != 41 {
				t.Errorf("kept %d sections without cutting", kept)
			}
		})
	}
}

func TestMarkdownCodeAndFences(t *testing.T) {
	cases := []struct{ in, want string }{
		{"file[/etc/motd]", "`file[/etc/motd]`"},
		{"a`b", "``a`b``"},
		{"`x`", "`` `x` ``"},
		{"two\nlines", "`two\\nlines`"},
		{"", "` `"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := mdCode(c.in); got != c.want {
				t.Errorf("mdCode(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	if got := mdFence("diff", "+```\n+````go"); !strings.HasPrefix(got, "`````diff\n") || !strings.HasSuffix(got, "\n`````\n") {
		t.Errorf("fence too short for content with backticks:\n%s", got)
	}
	if got := mdText("*a* <b> [c](d) & e_f"); got != `\*a\* \<b\> \[c\](d) \& e\_f` {
		t.Errorf("mdText = %s", got)
	}
}

func TestRenderMarkdownContentWithBackticks(t *testing.T) {
	p := scenario(t, nil, nil, func(f *plantest.FakeType) []*eval.Instance {
		return []*eval.Instance{
			f.Inst("/srv/README.md", "create", 1, map[string]cty.Value{"content": plantest.Str("# Title\n```sh\nmake\n```\n")}),
		}
	})
	var buf bytes.Buffer
	if err := RenderMarkdown(&buf, p, MarkdownOptions{Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if !strings.Contains(md, "````diff\n@@") {
		t.Errorf("content with ``` is not fenced with a longer fence:\n%s", md)
	}
	checkDiffBlocks(t, md)
}

func TestRenderMarkdownChangesOnly(t *testing.T) {
	p := goldenScenarios(t)["skip"]
	var buf bytes.Buffer
	if err := RenderMarkdown(&buf, p, MarkdownOptions{ChangesOnly: true, Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if strings.Contains(md, "/etc/feature") || strings.Contains(md, "/etc/once") || strings.Contains(md, "**skip**") {
		t.Errorf("changes-only shows skipped resources:\n%s", md)
	}
	if !strings.Contains(md, "/opt/widget/install") || !strings.Contains(md, "2 skipped") {
		t.Errorf("changes-only lost the change or the count:\n%s", md)
	}
}

// BenchmarkRenderMarkdown renders a 1,000-resource plan under the default
// limit, which must cut most of the details.
func BenchmarkRenderMarkdown(b *testing.B) {
	p := &plan.Plan{FormatVersion: plan.FormatVersion, Host: plan.Host{Hostname: "web-01"}}
	reg := builtin.Registry()
	fileType, _ := reg.Lookup("file")
	for i := range 1000 {
		cur := plan.StoreCurrent(fileType.Schema(), &resources.State{Exists: true, Values: map[string]cty.Value{
			"content": cty.StringVal(fmt.Sprintf("line one\nold %d\n", i)), "mode": cty.StringVal("0600"),
		}}, "salt", false)
		p.Resources = append(p.Resources, &plan.Resource{
			Address: fmt.Sprintf("file[/srv/www/page-%04d.html]", i), Type: "file", Name: fmt.Sprintf("/srv/www/page-%04d.html", i),
			Action: "create", Kind: "update", Reason: "content differs", StepReason: "content differs",
			Desired: map[string]plan.Value{
				"content": {Value: cty.StringVal(fmt.Sprintf("line one\nnew %d\n", i))},
				"mode":    {Value: cty.StringVal("0644")},
			},
			Current: cur, Fingerprint: cur.Fingerprint(),
			Changes: []plan.Change{{Property: "content"}, {Property: "mode"}},
		})
	}
	digest := p.Digest()
	b.ReportAllocs()
	for b.Loop() {
		if err := RenderMarkdown(io.Discard, p, MarkdownOptions{Digest: digest, Registry: reg}); err != nil {
			b.Fatal(err)
		}
	}
}
