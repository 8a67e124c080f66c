package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// unitType ("tunit") is a file whose change leaves a "reload" for later,
// as systemd_unit leaves a daemon-reload: the job appends "reload" to its
// log, or fails when fail is set. It batches with the next tunit.
type unitType struct {
	*fileType
	log  string
	fail bool
}

func newUnitType(log string) *unitType {
	ft := newFileType()
	ft.schema.Name = "tunit"
	return &unitType{fileType: ft, log: log}
}

func (t *unitType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *unitType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	if err := resources.ConvergeStep(ctx, t.fileType, env, desired, current, step); err != nil {
		return err
	}
	return env.Later.Defer(ctx, resources.Job{
		Key:         "reload",
		What:        "test reload",
		BatchesWith: func(r *resources.Resource) bool { return r.Type == "tunit" },
		Run: func(context.Context) error {
			if t.fail {
				return errors.New("reload exploded")
			}
			return appendLine(t.log, "reload")
		},
	})
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(line + "\n")
	return err
}

func tunit(path, content string) spec {
	s := tfile(path, content)
	s.typ = "tunit"
	return s
}

// Work a type defers runs once after a batch of the resources that batch
// with it, before the next resource that does not, and at the end of the
// apply; a resource that changes nothing defers nothing.
func TestApplyDefersWorkPastABatch(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	unit := newUnitType(log)
	reg := resources.NewRegistry(newFileType(), newScriptType(), unit)
	a, _ := newApplier(t, reg)
	writeFile(t, filepath.Join(dir, "same"), "same\n")
	p := makePlan(t, reg,
		tunit(filepath.Join(dir, "a"), "a\n"),
		tunit(filepath.Join(dir, "same"), "same\n"),
		tunit(filepath.Join(dir, "b"), "b\n"),
		tscript("c", "echo c >> "+log),
		tunit(filepath.Join(dir, "d"), "d\n"),
	)
	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, log), "reload\nc\nreload\n"; got != want {
		t.Errorf("log %q, want %q: one reload after a and b, before c; one at the end after d", got, want)
	}

	// Nothing changed: nothing deferred.
	os.Remove(log)
	b, _ := newApplier(t, reg)
	p = makePlan(t, reg, tunit(filepath.Join(dir, "a"), "a\n"))
	if _, err := b.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, log)
}

// Deferred work that fails fails the resource it had to come before (which
// is not converged), and at the end it fails the apply.
func TestApplyDeferredWorkFails(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	unit := newUnitType(log)
	unit.fail = true
	reg := resources.NewRegistry(newFileType(), newScriptType(), unit)

	a, _ := newApplier(t, reg)
	p := makePlan(t, reg, tunit(filepath.Join(dir, "a"), "a\n"), tscript("c", "echo c >> "+log))
	rep, err := a.Apply(context.Background(), p)
	var re *ResourceError
	if !errors.As(err, &re) || re.Address != "tscript[c]" || !strings.Contains(err.Error(), "test reload: reload exploded") {
		t.Fatalf("want tscript[c] to fail on the deferred reload, got %v", err)
	}
	if o := outcomes(rep); o["tunit["+filepath.Join(dir, "a")+"]"] != OutcomeChanged || o["tscript[c]"] != OutcomeFailed {
		t.Errorf("outcomes %v", o)
	}
	mustNotExist(t, log) // c never ran

	b, _ := newApplier(t, reg)
	p = makePlan(t, reg, tunit(filepath.Join(dir, "b"), "b\n"))
	rep, err = b.Apply(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "at the end of the apply") || !strings.Contains(err.Error(), "reload exploded") {
		t.Fatalf("want the final reload's failure, got %v", err)
	}
	if rep == nil || rep.PlanFinished {
		t.Errorf("report %+v: the plan did not finish cleanly", rep)
	}
}

// A resource of several actions goes stale, as one of one action does,
// when its first action would do the same kind of work from another
// reading than the plan's: the reviewer saw a diff from other content.
func TestApplyStaleSeveralActions(t *testing.T) {
	reg := testRegistry()
	a, _ := newApplier(t, reg)
	path := filepath.Join(t.TempDir(), "f")
	writeFile(t, path, "old\n")
	p := makePlan(t, reg, tfile(path, "new\n"))
	p.Resources[0].Then = []*plan.ActionStep{{Action: "create", Kind: resources.NoOp, Reason: "already in the desired state", StepReason: "already in the desired state"}}
	writeFile(t, path, "someone else's\n")
	_, err := a.Apply(context.Background(), p)
	var se *StaleError
	if !errors.As(err, &se) || len(se.Resources) != 1 || !strings.Contains(fmt.Sprint(se.Resources[0].Differences), "content") {
		t.Fatalf("want a stale plan naming content, got %v", err)
	}
	if got := readFile(t, path); got != "someone else's\n" {
		t.Errorf("a stale plan changed the file: %q", got)
	}
}
