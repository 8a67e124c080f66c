package resourcetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// NewRes builds a resource the way the config loader would (BuildRes);
// its name is the name property's value.
func NewRes(t *testing.T, typ resources.Type, action string, vals map[string]any) *resources.Resource {
	t.Helper()
	return BuildRes(t, typ, "", action, vals)
}

// RunRes builds a resource labelled name (the name property defaults to
// it) with the type's default action.
func RunRes(t *testing.T, typ resources.Type, name string, vals map[string]any) *resources.Resource {
	t.Helper()
	return BuildRes(t, typ, name, "", vals)
}

// BuildRes builds a resource the way the config loader would: Go values
// become cty values, converted to each property's type, then normalised and
// validated. With a label, the name property defaults to it; without one,
// the name is the name property's value.
func BuildRes(t *testing.T, typ resources.Type, label, action string, vals map[string]any) *resources.Resource {
	t.Helper()
	s := typ.Schema()
	out := map[string]cty.Value{}
	for k, v := range vals {
		p := s.Property(k)
		if p == nil {
			t.Fatalf("type %s has no property %q", s.Name, k)
		}
		cv := toCty(t, v)
		if p.Type != cty.DynamicPseudoType {
			var err error
			if cv, err = convert.Convert(cv, p.Type); err != nil {
				t.Fatalf("converting %s: %v", k, err)
			}
		}
		if p.Normalize != nil {
			n, err := p.Normalize(cv)
			if err != nil {
				t.Fatalf("normalising %s: %v", k, err)
			}
			cv = n
		}
		if p.Validate != nil {
			if err := p.Validate(cv); err != nil {
				t.Fatalf("validating %s: %v", k, err)
			}
		}
		out[k] = cv
	}
	name := label
	if np := s.NameProperty(); np != nil {
		if v, ok := out[np.Name]; ok && label == "" {
			name = v.AsString()
		} else if !ok && label != "" {
			out[np.Name] = cty.StringVal(label)
		}
	}
	return resources.NewResource(s, name, action, out)
}

// toCty turns a test's Go value into a cty value.
func toCty(t *testing.T, v any) cty.Value {
	t.Helper()
	switch x := v.(type) {
	case cty.Value:
		return x
	case string:
		return cty.StringVal(x)
	case int:
		return cty.NumberIntVal(int64(x))
	case float64:
		return cty.NumberFloatVal(x)
	case bool:
		return cty.BoolVal(x)
	case []string:
		vs := make([]cty.Value, len(x))
		for i, s := range x {
			vs[i] = cty.StringVal(s)
		}
		return cty.TupleVal(vs)
	case []int:
		vs := make([]cty.Value, len(x))
		for i, n := range x {
			vs[i] = cty.NumberIntVal(int64(n))
		}
		return cty.TupleVal(vs)
	case map[string]string:
		m := map[string]cty.Value{}
		for k, s := range x {
			m[k] = cty.StringVal(s)
		}
		return cty.ObjectVal(m)
	}
	t.Fatalf("toCty: unsupported value %T", v)
	return cty.NilVal
}

// TestEnv is an Env with a state directory in a temp dir.
func TestEnv(t *testing.T) *resources.Env {
	t.Helper()
	return &resources.Env{StateDir: t.TempDir(), Logger: hclog.NewNullLogger()}
}

// Load reads r's live state from its LoadView, as the planner does.
func Load(t *testing.T, typ resources.Type, r *resources.Resource) *resources.State {
	t.Helper()
	st, err := typ.Load(context.Background(), r.LoadView())
	if err != nil {
		t.Fatalf("Load %s: %v", r.Address(), err)
	}
	return st
}

// Plan loads and plans r, failing the test on error.
func Plan(t *testing.T, typ resources.Type, r *resources.Resource) (*resources.State, *resources.Step) {
	t.Helper()
	st := Load(t, typ, r)
	step, err := resources.PlanStep(typ, r, st)
	if err != nil {
		t.Fatalf("Plan %s: %v", r.Address(), err)
	}
	return st, step
}

// PlanErr loads and plans r, expecting a Plan error containing want.
func PlanErr(t *testing.T, typ resources.Type, r *resources.Resource, want string) {
	t.Helper()
	st := Load(t, typ, r)
	step, err := resources.PlanStep(typ, r, st)
	if err == nil {
		t.Fatalf("Plan %s: want an error containing %q, got step %+v", r.Address(), want, step)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Plan %s: error %q does not contain %q", r.Address(), err, want)
	}
}

// Apply loads, plans and converges r, checks the step's kind, and then
// checks that a fresh plan is a no-op (idempotence).
func Apply(t *testing.T, typ resources.Type, env *resources.Env, r *resources.Resource, want resources.Kind) *resources.Step {
	t.Helper()
	st, step := Plan(t, typ, r)
	if step.Kind != want {
		t.Fatalf("%s: planned %s (%s), want %s", r.Address(), step.Kind, step.Reason, want)
	}
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err != nil {
		t.Fatalf("Converge %s: %v", r.Address(), err)
	}
	if r.EffectiveAction() == "touch" {
		return step
	}
	if _, again := Plan(t, typ, r); again.Kind != resources.NoOp {
		t.Fatalf("%s: after converging, planned %s (%s) with changes %v; want no-op", r.Address(), again.Kind, again.Reason, again.Changes)
	}
	return step
}

// ConvergeErr loads, plans and converges r, expecting a Converge error
// containing want.
func ConvergeErr(t *testing.T, typ resources.Type, env *resources.Env, r *resources.Resource, want string) {
	t.Helper()
	st, step := Plan(t, typ, r)
	err := resources.ConvergeStep(context.Background(), typ, env, r, st, step)
	if err == nil {
		t.Fatalf("Converge %s: want an error containing %q", r.Address(), want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Converge %s: error %q does not contain %q", r.Address(), err, want)
	}
}

// ChangedProps lists the properties a step changes.
func ChangedProps(step *resources.Step) []string {
	var out []string
	for _, c := range step.Changes {
		out = append(out, c.Property)
	}
	return out
}

// WriteFile writes path with content and mode, failing the test on an
// error.
func WriteFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// ReadFile reads path, failing the test on an error.
func ReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// PermOf returns the permission bits (with setuid, setgid, sticky) of path.
func PermOf(t *testing.T, path string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return uint32(st.Mode) & 07777
}

// InodeOf is the inode number of path.
func InodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// Whoami is the test's user and group, by name and by id, so that
// owner cases hold for root and for any other user.
func Whoami(t *testing.T) (user, uid, group, gid string) {
	t.Helper()
	uid, gid = strconv.Itoa(os.Geteuid()), strconv.Itoa(os.Getegid())
	return props.OwnerName(uint32(os.Geteuid())), uid, props.GroupName(uint32(os.Getegid())), gid
}

// SomeoneElse is a uid that is not the test's.
func SomeoneElse() string {
	if os.Geteuid() == 65534 {
		return "0"
	}
	return "65534"
}

// RequireRoot is for tests that give files to another user.
func RequireRoot(t *testing.T) {
	t.Helper()
	testenv.MustHave(t, testenv.Root)
}

// NoTempFiles fails the test when dir holds a temporary file a write
// left behind.
func NoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".toque-") {
			t.Errorf("temporary file left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// SHA256 is the hex sha256 of s.
func SHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
