package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/resources"
)

// batchType is lcType that also reads in batches: LoadAll answers from
// states (nil: leave it to Load), or fails, or panics.
type batchType struct {
	*lcType
	calls      int
	sizes      []int
	states     map[string]*resources.State
	err        error
	panics     bool
	sawDesired bool
}

func (b *batchType) LoadAll(_ context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	b.calls++
	b.sizes = append(b.sizes, len(rs))
	if b.panics {
		panic("batch exploded")
	}
	if b.err != nil {
		return nil, b.err
	}
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		if _, ok := r.Values["content"]; ok {
			b.sawDesired = true
		}
		out[i] = b.states[r.Name]
	}
	return out, nil
}

func batchSubject(t *batchType, name string, guards ...*guard.Spec) *Subject {
	d := resources.NewResource(t.schema, name, "create", map[string]cty.Value{"path": cty.StringVal(name), "content": cty.StringVal("new")})
	return &Subject{Address: d.Address(), Type: t, Desired: d, Guards: guards, Salt: "s"}
}

func TestReadBatches(t *testing.T) {
	ctx := context.Background()
	lc := &Lifecycle{Registry: resources.Builtin()}
	newBatch := func() *batchType {
		return &batchType{lcType: newLCType(), states: map[string]*resources.State{
			"/a": {Exists: true, Values: map[string]cty.Value{"content": cty.StringVal("new")}},
			"/b": resources.Absent(),
		}}
	}

	t.Run("one call per type; the lifecycle uses the readings instead of Load", func(t *testing.T) {
		b, plain := newBatch(), newLCType()
		subs := []*Subject{batchSubject(b, "/a"), lcSubject(plain, "create"), batchSubject(b, "/b"), nil, batchSubject(b, "/c")}
		ReadBatches(ctx, nil, subs)
		if b.calls != 1 || b.sizes[0] != 3 || b.sawDesired {
			t.Fatalf("LoadAll calls %d sizes %v saw desired-state values %v", b.calls, b.sizes, b.sawDesired)
		}
		if subs[1].Read != nil || subs[4].Read != nil {
			t.Fatal("a type without LoadAll, and a nil reading, must be left to Load")
		}
		kinds := []resources.Kind{resources.NoOp, resources.Update, resources.Create, "", resources.Update}
		for i, s := range subs {
			if s == nil {
				continue
			}
			rd, err := lc.Evaluate(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if rd.Step.Kind != kinds[i] {
				t.Errorf("subject %d: %s, want %s", i, rd.Step.Kind, kinds[i])
			}
		}
		if b.loads != 1 || plain.loads != 1 {
			t.Errorf("Load calls: batch type %d (only /c, left nil), plain type %d", b.loads, plain.loads)
		}
	})

	t.Run("guards still decide first", func(t *testing.T) {
		b := newBatch()
		s := batchSubject(b, "/a", exprGuard(guard.OnlyIf, false))
		ReadBatches(ctx, nil, []*Subject{s})
		rd, err := lc.Evaluate(ctx, s)
		if err != nil || !rd.Skip || rd.State != nil {
			t.Fatalf("skip %v state %v err %v", rd.Skip, rd.State, err)
		}
	})

	for _, c := range []struct {
		name   string
		err    error
		panics bool
		want   string
	}{
		{"a failed batch fails every resource of it", errors.New("dpkg-query: no such database"), false, "reading the live state failed: dpkg-query: no such database"},
		{"a panicking batch fails every resource of it", nil, true, `resource type "lc" panicked`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBatch()
			b.err, b.panics = c.err, c.panics
			subs := []*Subject{batchSubject(b, "/a"), batchSubject(b, "/b")}
			ReadBatches(ctx, nil, subs)
			for _, s := range subs {
				_, err := lc.Evaluate(ctx, s)
				var le *LifecycleError
				if !errors.As(err, &le) || le.Phase != PhaseLoad || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want a load-phase error with %q", err, c.want)
				}
			}
			if b.loads != 0 {
				t.Errorf("Load was called %d times after the batch failed", b.loads)
			}
		})
	}

	t.Run("a reading count that does not match is the type's bug", func(t *testing.T) {
		b := newBatch()
		s := batchSubject(b, "/a")
		wrong := &shortBatch{b}
		s.Type = wrong
		ReadBatches(ctx, nil, []*Subject{s})
		if s.Read == nil || s.Read.Err == nil || !strings.Contains(s.Read.Err.Error(), "read 0 states for 1 resources") {
			t.Fatalf("read %+v", s.Read)
		}
	})
}

type shortBatch struct{ *batchType }

func (s *shortBatch) LoadAll(context.Context, []*resources.Resource) ([]*resources.State, error) {
	return nil, nil
}
