package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// jsonFileData is a data source that answers the JSON a file holds: a
// real read, which a test changes between plan and apply.
type jsonFileData struct{}

var jsonFileSchema = &resources.Schema{Name: "jsonfile", Description: "A file's JSON.", Properties: []*resources.Property{
	{Name: "path", Type: cty.String, Required: true, Description: "The file."},
}}

func (jsonFileData) Schema() *resources.Schema { return jsonFileSchema }

func (jsonFileData) Describe(args map[string]cty.Value) string {
	return "reads " + args["path"].AsString()
}

func (jsonFileData) Read(ctx context.Context, req *resources.DataRequest) (cty.Value, error) {
	b, err := os.ReadFile(req.Args["path"].AsString())
	if err != nil {
		return cty.NilVal, err
	}
	ty, err := ctyjson.ImpliedType(b)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(b, ty)
}

// withData adds to p a read of the JSON file path as the planner does.
func withData(t *testing.T, p *plan.Plan, name, path string, sensitive bool) {
	t.Helper()
	v, err := jsonFileData{}.Read(context.Background(), &resources.DataRequest{Args: map[string]cty.Value{"path": cty.StringVal(path)}})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := plan.DataDigest(v, sensitive, p.Salt)
	if err != nil {
		t.Fatal(err)
	}
	d := &plan.DataRead{Address: "data.jsonfile." + name, Type: "jsonfile", Name: name, Sensitive: sensitive, Digest: digest,
		Arguments: map[string]plan.Value{"path": {Value: cty.StringVal(path)}}}
	if !sensitive {
		d.Answer = &plan.Value{Value: v}
	}
	p.Data = append(p.Data, d)
}

func TestPreflightReadsDataAgain(t *testing.T) {
	cases := []struct {
		name      string
		sensitive bool
		move      func(t *testing.T, dir string)
		stale     []string // "ADDRESS: PROPERTY: THEN -> NOW"
		err       string
	}{
		{name: "nothing moved", move: func(*testing.T, string) {}},
		{name: "the answer moved", move: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "users.json"), `{"alice": {"inactive": 30}, "carol": {"inactive": -1}}`)
		}, stale: []string{
			"data.jsonfile.users: result.bob: { inactive = -1 } -> (none)",
			"data.jsonfile.users: result.carol: (none) -> { inactive = -1 }",
			"data.jsonfile.users: result.alice.inactive: -1 -> 30",
		}},
		{name: "a sensitive answer moved", sensitive: true, move: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "users.json"), `{}`)
		}, stale: []string{"data.jsonfile.users: result: hmac-sha256:"}},
		{name: "the data cannot be read now", move: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "users.json"))
		}, err: "data.jsonfile.users: cannot read it again: open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			reg := testRegistry().WithData(jsonFileData{})
			a, _ := newApplier(t, reg)
			writeFile(t, filepath.Join(dir, "users.json"), `{"alice": {"inactive": -1}, "bob": {"inactive": -1}}`)
			p := makePlan(t, reg, tfile(filepath.Join(dir, "motd"), "hello\n"))
			withData(t, p, "users", filepath.Join(dir, "users.json"), c.sensitive)
			c.move(t, dir)
			r := startRun(t, a, p)

			err := r.preflight(context.Background())

			var se *StaleError
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("preflight: %v, want %q", err, c.err)
				}
			case c.stale == nil && err != nil:
				t.Fatalf("preflight: %v", err)
			case c.stale != nil && !errors.As(err, &se):
				t.Fatalf("preflight: %v, want a *StaleError", err)
			case c.stale != nil:
				var got []string
				for _, sr := range se.Resources {
					for _, d := range sr.Differences {
						got = append(got, sr.Address+": "+d.Property+": "+d.Then+" -> "+d.Now)
					}
				}
				if len(got) != len(c.stale) {
					t.Fatalf("differences %q, want %q", got, c.stale)
				}
				for i := range got {
					if !strings.HasPrefix(got[i], c.stale[i]) && !strings.Contains(strings.Join(got, "\n"), c.stale[i]) {
						t.Errorf("differences %q, want %q", got, c.stale)
					}
				}
				if w := se.What(); w != "1 data block" {
					t.Errorf("the error counts %q", w)
				}
				if c.sensitive && strings.Contains(se.Error(), "inactive") {
					t.Errorf("a sensitive answer is shown: %s", se.Error())
				}
			}
			if _, statErr := os.Stat(filepath.Join(dir, "motd")); statErr == nil {
				t.Error("pre-flight changed the host")
			}
		})
	}
}

// An apply the plan resumes does not read the data again: what its
// earlier part converged may be what the data blocks read.
func TestPreflightResumedLeavesDataAlone(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry().WithData(jsonFileData{})
	a, _ := newApplier(t, reg)
	writeFile(t, filepath.Join(dir, "users.json"), `{"alice": 1}`)
	p := makePlan(t, reg, tfile(filepath.Join(dir, "motd"), "hello\n"))
	withData(t, p, "users", filepath.Join(dir, "users.json"), false)
	writeFile(t, filepath.Join(dir, "users.json"), `{"alice": 2}`)
	r := startRun(t, a, p)
	r.j.past.applies = 1
	if err := r.preflight(context.Background()); err != nil {
		t.Fatalf("preflight of a resumed apply: %v", err)
	}
}

// A whole apply refuses a plan whose data moved, changing nothing.
func TestApplyRefusesStaleData(t *testing.T) {
	dir := t.TempDir()
	reg := testRegistry().WithData(jsonFileData{})
	a, _ := newApplier(t, reg)
	writeFile(t, filepath.Join(dir, "sites.json"), `["a.com"]`)
	p := makePlan(t, reg, tfile(filepath.Join(dir, "a.com"), "site\n"))
	withData(t, p, "sites", filepath.Join(dir, "sites.json"), false)
	writeFile(t, filepath.Join(dir, "sites.json"), `["a.com", "b.com"]`)
	before := snapshotTree(t, dir)
	rep, err := a.Apply(context.Background(), p)
	var se *StaleError
	if !errors.As(err, &se) || rep != nil {
		t.Fatalf("apply: %v, %v; want a *StaleError and no report", rep, err)
	}
	if !strings.Contains(se.Error(), "1 data block changed on the host") || !strings.Contains(se.Error(), `data.jsonfile.sites: result: ["a.com"] at plan time, now ["a.com", "b.com"]`) {
		t.Errorf("error: %s", se.Error())
	}
	if after := snapshotTree(t, dir); after != before {
		t.Errorf("the host changed:\n%s\nthen\n%s", after, before)
	}
}
