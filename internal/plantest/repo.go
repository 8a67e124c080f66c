package plantest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/resources"
)

// FakeRepo is a package manager kept in files, for tests of a value a
// resource type knows only at apply: Dir/lists/NAME holds the version its
// lists offer of package NAME, Dir/repo/NAME what a repository offers,
// which the lists hold only once updated, and Dir/installed/NAME the
// version installed. Its types are fake_package, as package (a package
// the lists do not offer is installed at a version known at apply), and
// fake_update, as apt_update (it copies repo into lists, and meets
// fake_package's need at apply).
type FakeRepo struct{ Dir string }

// NamespaceFakeSource is the namespace of fake_package's need.
const NamespaceFakeSource = "fake-source"

// Types are the repository's resource types.
func (r FakeRepo) Types() []resources.Type {
	return []resources.Type{&fakePackage{r, fakePackageSchema()}, &fakeUpdate{r, fakeUpdateSchema()}}
}

func fakePackageSchema() *resources.Schema {
	return &resources.Schema{
		Name: "fake_package",
		Properties: []*resources.Property{
			{Name: "package_name", Type: cty.String, NameProperty: true},
			{Name: "version", Type: cty.String},
		},
		Actions: []string{"install"}, DefaultAction: "install",
	}
}

func fakeUpdateSchema() *resources.Schema {
	return &resources.Schema{
		Name:       "fake_update",
		Properties: []*resources.Property{{Name: "name", Type: cty.String, NameProperty: true}},
		Actions:    []string{"update"}, DefaultAction: "update",
	}
}

// read is the content of Dir/sub/name, "" when there is none.
func (r FakeRepo) read(sub, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.Dir, sub, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

type fakePackage struct {
	repo   FakeRepo
	schema *resources.Schema
}

func (t *fakePackage) Schema() *resources.Schema { return t.schema }

// Load reads the installed version, the candidate ("candidate", "(none)"
// when the lists do not offer it) and the architecture ("arch", from
// Dir/arch), which nothing deferred is known from.
func (t *fakePackage) Load(_ context.Context, d *resources.Resource) (*resources.State, error) {
	name := d.String("package_name")
	st := &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{}}
	inst, err := t.repo.read("installed", name)
	if err != nil {
		return nil, err
	}
	if inst != "" {
		st.Exists, st.Values["version"] = true, cty.StringVal(inst)
	}
	cand, err := t.repo.read("lists", name)
	if err != nil {
		return nil, err
	}
	if cand == "" {
		cand = "(none)"
	}
	st.Extra["candidate"] = cand
	arch, err := t.repo.read("", "arch")
	if err != nil {
		return nil, err
	}
	st.Extra["arch"] = arch
	return st, nil
}

// Plan installs the candidate, or, when the lists offer none, a version
// known at apply, once an earlier fake_update has run.
func (t *fakePackage) Plan(_ string, d *resources.Resource, cur *resources.State) (*resources.Step, error) {
	name := d.String("package_name")
	if cur.Exists {
		return &resources.Step{Kind: resources.NoOp, Reason: name + " is installed"}, nil
	}
	if cand := cur.Extra["candidate"]; cand != "(none)" {
		return &resources.Step{Kind: resources.Create, Reason: name + " is not installed; the candidate is " + cand, Groups: []string{"version"},
			Changes: []resources.Change{{Property: "version", Before: cty.NilVal, After: cty.StringVal(cand)}}}, nil
	}
	return &resources.Step{Kind: resources.Create, Reason: name + " is not available now", Groups: []string{"version"},
		Changes: []resources.Change{{Property: "version", Before: cty.NilVal, After: cty.UnknownVal(cty.String)}},
		Needs: []resources.Need{{Namespace: NamespaceFakeSource, Value: "lists", AtApply: true, Property: "version",
			What:    "a repository that offers package " + name,
			Missing: fmt.Sprintf("package %s is not in the lists (searched: %s)", name, filepath.Join(t.repo.Dir, "lists"))}},
	}, nil
}

// KnownFrom: the version is known from the candidate.
func (t *fakePackage) KnownFrom(property, fact string) bool {
	return property == "version" && fact == "candidate"
}

// Converge installs the candidate the reading holds.
func (t *fakePackage) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *fakePackage) converge(_ context.Context, _ *resources.Env, d *resources.Resource, cur *resources.State, _ *resources.Step) error {
	cand := cur.Extra["candidate"]
	if cand == "(none)" {
		return fmt.Errorf("no repository offers %s", d.String("package_name"))
	}
	dir := filepath.Join(t.repo.Dir, "installed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, d.String("package_name")), []byte(cand+"\n"), 0o644)
}

type fakeUpdate struct {
	repo   FakeRepo
	schema *resources.Schema
}

func (t *fakeUpdate) Schema() *resources.Schema { return t.schema }
func (t *fakeUpdate) Load(context.Context, *resources.Resource) (*resources.State, error) {
	return &resources.State{Exists: true, Values: map[string]cty.Value{}}, nil
}
func (t *fakeUpdate) Plan(_ string, d *resources.Resource, _ *resources.State) (*resources.Step, error) {
	if d.Action == "nothing" {
		return &resources.Step{Kind: resources.NoOp, Reason: "action is nothing"}, nil
	}
	return &resources.Step{Kind: resources.Run, Reason: "update runs every time"}, nil
}

// Meets: an update that runs reads the repository into the lists.
func (t *fakeUpdate) Meets(d *resources.Resource, n resources.Need) bool {
	return n.Namespace == NamespaceFakeSource && (d.Action == "update" || d.Action == "")
}

// Converge copies the repository into the lists.
func (t *fakeUpdate) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *fakeUpdate) converge(context.Context, *resources.Env, *resources.Resource, *resources.State, *resources.Step) error {
	src, dst := filepath.Join(t.repo.Dir, "repo"), filepath.Join(t.repo.Dir, "lists")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Inst makes an instance of the repository's type typ (fake_package,
// fake_update) named name at line line of a fake recipe.
func (r FakeRepo) Inst(typ, name, action string, line int) *eval.Instance {
	var t resources.Type
	for _, x := range r.Types() {
		if x.Schema().Name == typ {
			t = x
		}
	}
	id := t.Schema().Properties[0].Name
	rng := hcl.Range{Filename: "recipes/default.hcl", Start: hcl.Pos{Line: line, Column: 1}, End: hcl.Pos{Line: line, Column: 20}}
	return &eval.Instance{
		Block:    &config.ResourceBlock{Type: typ, Name: name, DeclRange: rng},
		Type:     t,
		Resource: resources.NewResource(t.Schema(), name, action, map[string]cty.Value{id: cty.StringVal(name)}),
	}
}
