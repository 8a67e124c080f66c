package files

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// editors builds resources of the three editor types on path.
func editors(t *testing.T, path string) []*resources.Resource {
	fl, fb, is := FileLineType(), FileBlockType(), IniSettingType()
	return []*resources.Resource{
		resourcetest.BuildRes(t, is, "port", "", map[string]any{"path": path, "section": "server", "value": "8080"}),
		resourcetest.BuildRes(t, fl, "comment", "", map[string]any{"path": path, "line": "; managed in part by toque", "insert_before": "BOF"}),
		resourcetest.BuildRes(t, fb, "extra", "", map[string]any{"path": path, "block": "[extra]\na = 1"}),
		// Planned on what the block leaves: it goes after a line the block added.
		resourcetest.BuildRes(t, fl, "after-extra", "", map[string]any{"path": path, "line": "; the block is toque's", "insert_after": "^# END TOQUE MANAGED BLOCK extra$"}),
		resourcetest.BuildRes(t, is, "host", "delete", map[string]any{"path": path, "section": "server"}),
		// Already satisfied once the others ran: a no-op.
		resourcetest.BuildRes(t, is, "port2", "", map[string]any{"key": "port", "path": path, "section": "server", "value": "8080"}),
	}
}

// TestEditsCompose: editors of one file of the three types, in one
// batch, are each planned on what those before them leave; applying them
// in order, each read again right before it converges, gives each the
// step it was planned with, and the file the plan showed. The file is
// read once for the whole batch.
func TestEditsCompose(t *testing.T) {
	dir := publicDir(t)
	path := filepath.Join(dir, "app.ini")
	const start = "[server]\nport = 80\nhost = 0.0.0.0\n"
	resourcetest.WriteFile(t, path, start, 0o644)
	rs := editors(t, path)
	views := make([]*resources.Resource, len(rs))
	for i, r := range rs {
		views[i] = r.LoadView()
	}
	reads := resources.NewReads()
	defer reads.Close()
	ctx := resources.WithReads(context.Background(), reads)
	before := editReads.Load()
	states, err := FileLineType().(resources.BatchLoader).LoadAll(ctx, views)
	if err != nil {
		t.Fatal(err)
	}
	if n := editReads.Load() - before; n != 1 {
		t.Fatalf("the batch read the file %d times, want once", n)
	}
	typeOf := func(r *resources.Resource) resources.Type {
		return map[string]resources.Type{"file_line": FileLineType(), "file_block": FileBlockType(), "ini_setting": IniSettingType()}[r.Type]
	}
	var planned []*resources.Step
	content := start
	for i, r := range rs {
		step, err := resources.PlanStep(typeOf(r), r, states[i])
		if err != nil {
			t.Fatalf("%s: %v", r.Address(), err)
		}
		planned = append(planned, step)
		if c := step.Change("content"); c != nil {
			if c.Before.AsString() != content {
				t.Fatalf("%s is planned on %q, want %q", r.Address(), c.Before.AsString(), content)
			}
			content = c.After.AsString()
			if i > 0 && !strings.Contains(c.Note, "planned on the content") {
				t.Errorf("%s: note %q", r.Address(), c.Note)
			}
		}
	}
	if content != "; managed in part by toque\n[server]\nport = 8080\n# BEGIN TOQUE MANAGED BLOCK extra\n[extra]\na = 1\n# END TOQUE MANAGED BLOCK extra\n; the block is toque's\n" {
		t.Fatalf("the plan's result:\n%s", content)
	}
	if planned[len(planned)-1].Kind != resources.NoOp {
		t.Fatalf("the last editor: %+v", planned[len(planned)-1])
	}

	// Apply: each read on its own right before it converges.
	env := resourcetest.TestEnv(t)
	for i, r := range rs {
		st, err := typeOf(r).Load(context.Background(), r.LoadView())
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(st.Values) != fmt.Sprint(states[i].Values) || fmt.Sprint(st.Extra) != fmt.Sprint(states[i].Extra) {
			t.Fatalf("%s: apply reads %v, the plan read %v", r.Address(), st.Values, states[i].Values)
		}
		step, err := resources.PlanStep(typeOf(r), r, st)
		if err != nil {
			t.Fatal(err)
		}
		if step.Kind != planned[i].Kind || fmt.Sprint(resourcetest.ChangedProps(step)) != fmt.Sprint(resourcetest.ChangedProps(planned[i])) {
			t.Fatalf("%s: apply plans %+v, the plan %+v", r.Address(), step, planned[i])
		}
		if c := step.Change("content"); c != nil && !c.After.RawEquals(planned[i].Change("content").After) {
			t.Fatalf("%s: apply would write %q, the plan showed %q", r.Address(), c.After.AsString(), planned[i].Change("content").After.AsString())
		}
		if err := resources.ConvergeStep(context.Background(), typeOf(r), env, r, st, step); err != nil {
			t.Fatal(err)
		}
	}
	if got := resourcetest.ReadFile(t, path); got != content {
		t.Fatalf("the file holds\n%s\nthe plan showed\n%s", got, content)
	}
}

// TestEditsApartRefused: an editor read on its own (as the planner reads
// one with guards, a notified one, or a child resource of another level)
// of a file a batch composed is refused at plan, naming the others; a
// later batch of the same file is refused the same way.
func TestEditsApartRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	resourcetest.WriteFile(t, path, "a\n", 0o644)
	fl := FileLineType()
	one := resourcetest.BuildRes(t, fl, "one", "", map[string]any{"path": path, "line": "b"})
	two := resourcetest.BuildRes(t, fl, "two", "", map[string]any{"path": path, "line": "c"})
	reads := resources.NewReads()
	defer reads.Close()
	ctx := resources.WithReads(context.Background(), reads)
	if _, err := fl.(resources.BatchLoader).LoadAll(ctx, []*resources.Resource{one.LoadView()}); err != nil {
		t.Fatal(err)
	}
	st, err := fl.Load(ctx, two.LoadView())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resources.PlanStep(fl, two, st); err == nil || !strings.Contains(err.Error(), "which file_line[one] edits too") {
		t.Fatalf("plan: %v", err)
	}
	// A batch member read again on its own is not refused.
	st, err = fl.Load(ctx, one.LoadView())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resources.PlanStep(fl, one, st); err != nil {
		t.Fatal(err)
	}
	// Another batch (a level of child resources) of the same file.
	states, err := fl.(resources.BatchLoader).LoadAll(ctx, []*resources.Resource{two.LoadView()})
	if err != nil || states[0] != nil {
		t.Fatalf("a later batch of the file: %v %v", states, err)
	}
	// Outside a batch of reads (apply), nothing is refused.
	st, err = fl.Load(context.Background(), two.LoadView())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resources.PlanStep(fl, two, st); err != nil {
		t.Fatal(err)
	}
}

// TestEditsFight: editors of one file that undo each other (a file_line
// changing a line of a file_block), or one that would edit the file again
// once made, are refused at plan, naming the one that undoes it: the next
// plan would never be a no-op.
func TestEditsFight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	resourcetest.WriteFile(t, path, "#A\n#A\nx\n", 0o644)
	fl, fb := FileLineType(), FileBlockType()
	rs := []*resources.Resource{
		resourcetest.BuildRes(t, fb, "b", "", map[string]any{"path": path, "block": "a = 1"}),
		resourcetest.BuildRes(t, fl, "x", "", map[string]any{"path": path, "line": "y", "match": "^x$"}),
		resourcetest.BuildRes(t, fl, "in-block", "", map[string]any{"path": path, "line": "a = 2", "match": "^a = "}),
		// Its match matches two lines: made again, it replaces the other.
		resourcetest.BuildRes(t, fl, "unstable", "", map[string]any{"path": path, "line": "A = 1", "match": "^#A"}),
	}
	views := make([]*resources.Resource, len(rs))
	for i, r := range rs {
		views[i] = r.LoadView()
	}
	states, err := fl.(resources.BatchLoader).LoadAll(context.Background(), views)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"file_line[in-block], declared after file_block[b], changes what file_block[b] puts in",
		"",
		"",
		"file_line[unstable] would edit " + path + " again on the next apply",
	}
	for i, r := range rs {
		typ := fl
		if r.Type == "file_block" {
			typ = fb
		}
		_, err := resources.PlanStep(typ, r, states[i])
		switch {
		case want[i] == "" && err != nil:
			t.Errorf("%s: %v", r.Address(), err)
		case want[i] != "" && (err == nil || !strings.Contains(err.Error(), want[i])):
			t.Errorf("%s: %v, want %q", r.Address(), err, want[i])
		}
	}
}

// TestEditReadsOncePerFile: a batch of 1,000 file_line resources over
// 100 files reads each file once — the Speed line of the editors
// (docs/resource-authors.md). It logs the batch's time beside 100 reads
// of the same files by the file type.
func TestEditReadsOncePerFile(t *testing.T) {
	dir := publicDir(t)
	fl, ft := FileLineType(), FileType()
	var rs, files []*resources.Resource
	for f := range 100 {
		path := filepath.Join(dir, fmt.Sprintf("f%03d.conf", f))
		var b strings.Builder
		for k := range 60 {
			fmt.Fprintf(&b, "key_%d = %d\n", k, k)
		}
		resourcetest.WriteFile(t, path, b.String(), 0o644)
		files = append(files, resourcetest.BuildRes(t, ft, "", "", map[string]any{"path": path, "content": b.String()}))
		for j := range 10 {
			vals := map[string]any{"path": path, "line": fmt.Sprintf("key_%d = changed", j), "match": fmt.Sprintf("^key_%d =", j)}
			if j%2 == 1 {
				vals = map[string]any{"path": path, "line": fmt.Sprintf("extra_%d = on", j)}
			}
			rs = append(rs, resourcetest.BuildRes(t, fl, fmt.Sprintf("f%03d-%d", f, j), "", vals).LoadView())
		}
	}
	reads := resources.NewReads()
	defer reads.Close()
	ctx := resources.WithReads(context.Background(), reads)
	before, start := editReads.Load(), time.Now()
	states, err := fl.(resources.BatchLoader).LoadAll(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if _, err := resources.PlanStep(fl, r, states[i]); err != nil {
			t.Fatal(err)
		}
	}
	edits := time.Since(start)
	if n := editReads.Load() - before; n != 100 {
		t.Fatalf("1,000 editors of 100 files read %d files, want 100", n)
	}
	start = time.Now()
	for _, r := range files {
		if _, err := ft.Load(ctx, r.LoadView()); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("1,000 file_line over 100 files: 100 reads, read and planned in %v; 100 file resources of the same files read in %v", edits.Round(time.Microsecond), time.Since(start).Round(time.Microsecond))
}
