package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
)

// dataScenario is a plan made from two data blocks: an exec whose answer
// made two instances, and a sensitive one whose answer the plan keeps
// only as its HMAC.
func dataScenario(t testing.TB) *plan.Plan {
	t.Helper()
	pl := scenario(t, nil, nil, func(f *plantest.FakeType) []*eval.Instance {
		return []*eval.Instance{
			f.Inst("/etc/sites/a.com", "create", 9, map[string]cty.Value{"content": plantest.Str("port 443\n")}),
		}
	})
	sites := cty.ObjectVal(map[string]cty.Value{"a.com": cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(443)})})
	digest, err := plan.DataDigest(sites, false, pl.Salt)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := plan.DataDigest(cty.StringVal("hunter2"), true, pl.Salt)
	if err != nil {
		t.Fatal(err)
	}
	pl.Data = []*plan.DataRead{
		{
			Address: "data.exec.sites", Type: "exec", Name: "sites", Source: plan.Range{Filename: "default.hcl", Line: 1, Column: 1},
			Arguments: map[string]plan.Value{"command": {Value: cty.StringVal("cat /etc/sites.json \x1b[31m")}, "interpreter": {Value: cty.StringVal("bash")}},
			Answer:    &plan.Value{Value: sites}, Digest: digest, DurationMS: 12,
		},
		{
			Address: "data.exec.token", Type: "exec", Name: "token", Source: plan.Range{Filename: "default.hcl", Line: 5, Column: 1},
			Arguments: map[string]plan.Value{"command": {Value: cty.StringVal("cat /root/token.json")}},
			Sensitive: true, Digest: secret, DurationMS: 1,
		},
	}
	return pl
}

func TestDataReadsShown(t *testing.T) {
	pl := dataScenario(t)
	var text bytes.Buffer
	if err := RenderText(&text, pl, RenderOptions{Registry: testRegistry(), NoDigest: true}); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := RenderMarkdown(&md, pl, MarkdownOptions{Registry: testRegistry()}); err != nil {
		t.Fatal(err)
	}
	js, err := JSONView(pl, JSONOptions{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/data.golden", text.Bytes())
	checkGolden(t, "testdata/markdown/data.md", md.Bytes())
	checkGolden(t, "testdata/data.json.golden", js)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String(), "json": string(js)} {
		if strings.Contains(out, "hunter2") || strings.Contains(out, "\x1b") {
			t.Errorf("%s shows a secret or an escape sequence:\n%s", name, out)
		}
	}
	if !strings.Contains(text.String(), "# data.exec.sites read in 12 ms: runs `cat /etc/sites.json \\x1b[31m` (bash)\n") {
		t.Errorf("the text does not say what ran:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "#   answer: (sensitive), hmac-sha256:") {
		t.Errorf("the sensitive answer is not hidden:\n%s", text.String())
	}
}
