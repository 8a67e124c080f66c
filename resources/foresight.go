package resources

import (
	"context"
	"sort"
)

// Prediction is what a step says a thing it provides (Step.Provides) will
// be once it has run, as exactly as the plan can know it before anything
// runs: a package step reads each file, directory and unit its .debs
// ship, with a configuration file's content. Later resources of the plan
// that read that thing, and find the host lacks it, are planned from the
// prediction (Foresight) instead of from "does not exist".
//
// A prediction says only what the step's own input fixes (the bytes of
// the archive the plan pins by sha256). What a step decides only when it
// runs (a maintainer script creating an account, starting a service) is
// not predicted: a type that reads the thing says it is known at apply.
type Prediction struct {
	// By names the step and what it brings, for reviewers: "package[nginx]
	// (nginx-common 1.22.1-9+deb12u9)".
	By string
	// Facts describe the thing, in the vocabulary of its namespace.
	//
	// NamespacePath: "kind" (directory, file, symlink, hardlink), "mode"
	// (octal, "0644"), "owner" and "group" (names as the archive records
	// them), "uid" and "gid" (its numbers), "target" (a link's),
	// "conffile" ("yes" for a configuration file, which dpkg keeps when
	// the administrator changed it), "size" and "sha256" (a regular
	// file's), "package" (the binary package that ships it) and
	// "replaces" (the packages it may take files from, space-separated)
	// and "diverts" ("yes" when its package diverts the path with
	// dpkg-divert: another package's file there goes aside).
	//
	// NamespaceUnit: "can_reload" (yes/no: the unit has ExecReload=),
	// "install" (yes/no: it has an [Install] section), "path" (its file),
	// "scripts" (what the package's maintainer scripts do with it, in
	// words: "enabled and started by its postinst").
	Facts map[string]string
	// Content is the thing's exact content when the plan knows it (a
	// configuration file's, a unit file's); nil when only its size and
	// digest are known.
	Content []byte
	// ReadContent, when Content is nil, reads the thing's exact content on
	// demand (a regular file of an archive the plan pins by sha256, read
	// from it only when a resource of the plan manages that file); nil
	// when the plan knows only its size and digest.
	ReadContent func() ([]byte, error)
}

// Fact returns one fact of p, "" when p is nil or says nothing of it.
func (p *Prediction) Fact(name string) string {
	if p == nil {
		return ""
	}
	return p.Facts[name]
}

// Foresight is the predicted host of a plan: what the steps with work
// provide, with a prediction (Need.Prediction), in plan order. The
// planner makes it once every resource is read, and plans again, with
// the view of the steps before each (Before), the resources whose Load
// reads one of those things (Foreseer); apply's pre-flight makes it the
// same way from its own readings, so that a reading taken through it is
// compared like any other. A Foreseer's Load looks a thing up only when
// the host lacks it: where the host has it already, the host says what
// it is. It is never consulted right before a resource converges, when
// the earlier steps have run and the host itself says.
type Foresight struct {
	byKey map[string][]foreseen
	// upTo limits a view to the entries of positions below it; -1 sees
	// them all.
	upTo int
}

type foreseen struct {
	pos  int
	need Need
}

// NewForesight returns an empty Foresight.
func NewForesight() *Foresight { return &Foresight{byKey: map[string][]foreseen{}, upTo: -1} }

// Add records n, provided by the step of the resource at position pos
// (the plan's order); a need without a prediction is not recorded.
// Entries must be added in increasing pos.
func (f *Foresight) Add(pos int, n Need) {
	if f == nil || n.Prediction == nil {
		return
	}
	k := n.Namespace + "\x00" + n.Value
	f.byKey[k] = append(f.byKey[k], foreseen{pos, n})
}

// Empty reports whether f predicts nothing.
func (f *Foresight) Empty() bool { return f == nil || len(f.byKey) == 0 }

// Before is the view of f that the resource at position pos reads: what
// the steps before it predict.
func (f *Foresight) Before(pos int) *Foresight {
	if f == nil {
		return nil
	}
	return &Foresight{byKey: f.byKey, upTo: pos}
}

// Lookup returns the prediction of the thing value of namespace by the
// last step before the view's position that predicts it, and its need
// (What, By); nil when none does.
func (f *Foresight) Lookup(namespace, value string) *Prediction {
	n := f.lookup(namespace, value)
	if n == nil {
		return nil
	}
	return n.Prediction
}

func (f *Foresight) lookup(namespace, value string) *Need {
	if f == nil {
		return nil
	}
	es := f.byKey[namespace+"\x00"+value]
	for i := len(es) - 1; i >= 0; i-- {
		if f.upTo < 0 || es[i].pos < f.upTo {
			return &es[i].need
		}
	}
	return nil
}

// Providers lists, for the thing value of namespace, every prediction of
// it with the position of the step that makes it, in plan order,
// whatever the view: for the planner's checks of two steps that ship
// one path.
func (f *Foresight) Providers(namespace, value string) []ForeseenAt {
	if f == nil {
		return nil
	}
	es := f.byKey[namespace+"\x00"+value]
	out := make([]ForeseenAt, len(es))
	for i, e := range es {
		out[i] = ForeseenAt{Pos: e.pos, Need: e.need}
	}
	return out
}

// ForeseenAt is a prediction with the position of the step making it.
type ForeseenAt struct {
	Pos  int
	Need Need
}

// Keys lists the things f predicts, as (namespace, value) needs, sorted:
// for checks that walk them all.
func (f *Foresight) Keys() []Need {
	if f == nil {
		return nil
	}
	out := make([]Need, 0, len(f.byKey))
	for _, es := range f.byKey {
		out = append(out, Need{Namespace: es[0].need.Namespace, Value: es[0].need.Value})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Value < out[j].Value
	})
	return out
}

type foresightKey struct{}

// WithForesight returns ctx carrying f, for the Loads of the resources
// planned from it.
func WithForesight(ctx context.Context, f *Foresight) context.Context {
	return context.WithValue(ctx, foresightKey{}, f)
}

// ForesightOf is the Foresight ctx carries, or nil: Load reads the host
// alone.
func ForesightOf(ctx context.Context) *Foresight {
	f, _ := ctx.Value(foresightKey{}).(*Foresight)
	return f
}

// Foreseer is implemented by a type whose Load, where the host lacks the
// thing it reads, reads what an earlier step of the plan predicts it will
// be (ForesightOf): file, template and directory for the paths a package
// ships, service for the units. Foresees lists, from desired's identity
// alone and with no I/O, the things its Load looks up, so that the
// planner plans again only the resources an earlier prediction concerns.
type Foreseer interface {
	Type
	Foresees(desired *Resource) []Need
}

// ForeseenBy returns the first thing of needs that f predicts, and its
// prediction; nil when f predicts none of them.
func ForeseenBy(f *Foresight, needs []Need) (*Need, *Prediction) {
	for i := range needs {
		if p := f.Lookup(needs[i].Namespace, needs[i].Value); p != nil {
			return &needs[i], p
		}
	}
	return nil, nil
}

// ExtraUnknownAtPlan is the Extra key of a reading taken from a
// prediction that lists, comma-separated, the Extra keys and Values it
// could not know because what decides them runs only at apply (a unit's
// active and enablement states, which its package's maintainer scripts
// set). Apply does not note those as differences from the plan when the
// reading right before the resource converges has them.
const ExtraUnknownAtPlan = "unknown_at_plan"
