package apply

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

func TestApplyConvergesCreateUpdateDelete(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, testRegistry())
	newPath, oldPath, gonePath, samePath := filepath.Join(dir, "new"), filepath.Join(dir, "old"), filepath.Join(dir, "gone"), filepath.Join(dir, "same")
	writeFile(t, oldPath, "old\n")
	writeFile(t, gonePath, "bye\n")
	writeFile(t, samePath, "same\n")
	del := spec{typ: "tfile", name: gonePath, action: "delete"}
	p := makePlan(t, a.Registry, tfile(newPath, "new\n"), tfile(oldPath, "updated\n"), del, tfile(samePath, "same\n"))

	wantKinds := []resources.Kind{resources.Create, resources.Update, resources.Delete, resources.NoOp}
	for i, r := range p.Resources {
		if r.Kind != wantKinds[i] {
			t.Fatalf("test plan: %s kind %s, want %s", r.Address, r.Kind, wantKinds[i])
		}
	}

	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := readFile(t, newPath); got != "new\n" {
		t.Errorf("created file content %q", got)
	}
	if fi, err := os.Stat(newPath); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("created file mode: %v %v, want the default 0644", fi.Mode().Perm(), err)
	}
	if got := readFile(t, oldPath); got != "updated\n" {
		t.Errorf("updated file content %q", got)
	}
	mustNotExist(t, gonePath)

	want := map[string]string{
		"tfile[" + newPath + "]":  OutcomeChanged,
		"tfile[" + oldPath + "]":  OutcomeChanged,
		"tfile[" + gonePath + "]": OutcomeChanged,
		"tfile[" + samePath + "]": OutcomeUnchanged,
	}
	if got := outcomes(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	if rep.Changed != 3 || rep.Unchanged != 1 || rep.Failed != 0 || rep.Interrupted {
		t.Errorf("counts: %+v", rep)
	}
	if rep.Host != "test-host" || rep.PlanDigest != p.Digest() || rep.Started.IsZero() || rep.Finished.Before(rep.Started) {
		t.Errorf("report header: host %q digest %q started %v finished %v", rep.Host, rep.PlanDigest, rep.Started, rep.Finished)
	}
	wantEvents := []string{
		"pre tfile[" + newPath + "]", "post tfile[" + newPath + "] changed",
		"pre tfile[" + oldPath + "]", "post tfile[" + oldPath + "] changed",
		"pre tfile[" + gonePath + "]", "post tfile[" + gonePath + "] changed",
	}
	if got := h.Events(); !reflect.DeepEqual(got, wantEvents) {
		t.Errorf("hooks:\n got %q\nwant %q", got, wantEvents)
	}
}

func TestApplyStalePlan(t *testing.T) {
	cases := []struct {
		name      string
		sensitive bool
		// change alters the host after the plan was made.
		change   func(t *testing.T, dir string)
		stale    string // the stale resource's file name
		property string
		then     string // substring of Then
		now      string // substring of Now
	}{
		{
			name:     "content changed by hand",
			change:   func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "upd"), "changed by hand\n") },
			stale:    "upd",
			property: "content",
			then:     "(4 bytes, sha256:",
			now:      "(16 bytes, sha256:",
		},
		{
			name:      "sensitive content changed by hand",
			sensitive: true,
			change:    func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "upd"), "changed by hand\n") },
			stale:     "upd",
			property:  "content",
			then:      plan.Sensitive,
			now:       plan.Sensitive,
		},
		{
			name:     "file to update was removed",
			change:   func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "upd")) },
			stale:    "upd",
			property: "exists",
			then:     "exists",
			now:      "does not exist",
		},
		{
			name: "no-op resource now needs work",
			change: func(t *testing.T, dir string) {
				if err := os.Chmod(filepath.Join(dir, "same"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			stale:    "same",
			property: "mode",
			then:     `"0644"`,
			now:      `"0600"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, h := newApplier(t, testRegistry())
			newPath, updPath, samePath := filepath.Join(dir, "new"), filepath.Join(dir, "upd"), filepath.Join(dir, "same")
			writeFile(t, updPath, "old\n")
			writeFile(t, samePath, "same\n")
			upd := tfile(updPath, "new\n")
			upd.sensitive = tc.sensitive
			same := tfile(samePath, "same\n")
			same.values["mode"] = cty.StringVal("644")
			p := makePlan(t, a.Registry, tfile(newPath, "new\n"), upd, same)

			tc.change(t, dir)
			before := map[string]string{}
			for _, f := range []string{updPath, samePath} {
				if b, err := os.ReadFile(f); err == nil {
					before[f] = string(b)
				}
			}

			rep, err := a.Apply(context.Background(), p)
			var se *StaleError
			if !errors.As(err, &se) {
				t.Fatalf("Apply error %v (%T), want *StaleError", err, err)
			}
			if rep != nil {
				t.Errorf("a stale plan returned a report")
			}
			if len(se.Resources) != 1 {
				t.Fatalf("stale resources %+v, want one", se.Resources)
			}
			sr := se.Resources[0]
			addr := "tfile[" + filepath.Join(dir, tc.stale) + "]"
			if sr.Address != addr {
				t.Errorf("stale resource %s, want %s", sr.Address, addr)
			}
			var found *plan.Difference
			for i := range sr.Differences {
				if sr.Differences[i].Property == tc.property {
					found = &sr.Differences[i]
				}
			}
			if found == nil {
				t.Fatalf("differences %+v lack %s", sr.Differences, tc.property)
			}
			if !strings.Contains(found.Then, tc.then) || !strings.Contains(found.Now, tc.now) {
				t.Errorf("difference %+v, want then ~ %q, now ~ %q", *found, tc.then, tc.now)
			}
			if msg := err.Error(); !strings.Contains(msg, addr+": "+tc.property+": ") || !strings.Contains(msg, " at plan time, now ") {
				t.Errorf("error message does not list the difference:\n%s", msg)
			}
			if tc.sensitive && (strings.Contains(err.Error(), "changed by hand") || strings.Contains(err.Error(), "sha256:")) {
				t.Errorf("error message shows a sensitive value:\n%s", err)
			}

			// Nothing changed: the resource to create was not created, the
			// others are as the test left them, no hook ran, no report.
			mustNotExist(t, newPath)
			for f, c := range before {
				if got := readFile(t, f); got != c {
					t.Errorf("%s changed to %q", f, got)
				}
			}
			if ev := h.Events(); len(ev) != 0 {
				t.Errorf("hooks ran: %q", ev)
			}
			if reports, _ := filepath.Glob(filepath.Join(ReportsDir(a.StateDir), "*")); len(reports) != 0 {
				t.Errorf("a refused apply wrote reports: %v", reports)
			}
		})
	}
}

func TestApplyAlreadyDone(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, testRegistry())
	newPath, updPath, gonePath := filepath.Join(dir, "new"), filepath.Join(dir, "upd"), filepath.Join(dir, "gone")
	writeFile(t, updPath, "old\n")
	writeFile(t, gonePath, "bye\n")
	p := makePlan(t, a.Registry, tfile(newPath, "new\n"), tfile(updPath, "new\n"), spec{typ: "tfile", name: gonePath, action: "delete"})

	// Someone (an earlier, interrupted apply of this plan) already did the
	// first two; the mode differs from the default but the recipe does not
	// set it, so the state is the planned one.
	if err := os.WriteFile(newPath, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, updPath, "new\n")

	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := map[string]string{
		"tfile[" + newPath + "]":  OutcomeAlreadyDone,
		"tfile[" + updPath + "]":  OutcomeAlreadyDone,
		"tfile[" + gonePath + "]": OutcomeChanged,
	}
	if got := outcomes(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	if rep.AlreadyDone != 2 || rep.Changed != 1 {
		t.Errorf("counts: already done %d, changed %d", rep.AlreadyDone, rep.Changed)
	}
	if fi, _ := os.Stat(newPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of an already-done file was changed to %v", fi.Mode().Perm())
	}
	mustNotExist(t, gonePath)
	wantEvents := []string{"done tfile[" + newPath + "]", "done tfile[" + updPath + "]", "pre tfile[" + gonePath + "]", "post tfile[" + gonePath + "] changed"}
	if got := h.Events(); !reflect.DeepEqual(got, wantEvents) {
		t.Errorf("hooks:\n got %q\nwant %q", got, wantEvents)
	}

	// The plan was applied: it is not applied again.
	rep, err = a.Apply(context.Background(), p)
	var aa *AlreadyAppliedError
	if !errors.As(err, &aa) || rep != nil {
		t.Fatalf("second Apply: %v, want *AlreadyAppliedError", err)
	}
	if got := h.Events(); len(got) != len(wantEvents) {
		t.Errorf("the second apply ran hooks: %q", got[len(wantEvents):])
	}
}

func TestApplyDiffersFromPlan(t *testing.T) {
	cases := []struct {
		name    string
		script  string // run by an earlier resource; %s is the file's path
		outcome string
	}{
		{"earlier resource made the file with other content", "printf partial > ", OutcomeChanged},
		{"earlier resource made the file as planned", "printf 'final\\n' > ", OutcomeUnchanged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, h := newApplier(t, testRegistry())
			path := filepath.Join(dir, "f")
			p := makePlan(t, a.Registry, tscript("make", tc.script+path), tfile(path, "final\n"))
			if p.Resources[1].Kind != resources.Create {
				t.Fatalf("test plan: %s", p.Resources[1].Kind)
			}
			rep, err := a.Apply(context.Background(), p)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			rr := resourceReport(t, rep, "tfile["+path+"]")
			if rr.Outcome != tc.outcome {
				t.Errorf("outcome %q, want %q (%+v)", rr.Outcome, tc.outcome, rr)
			}
			if !strings.Contains(rr.DiffersFromPlan, "exists: does not exist at plan time, now exists") {
				t.Errorf("differs from plan: %q", rr.DiffersFromPlan)
			}
			if got := readFile(t, path); got != "final\n" {
				t.Errorf("content %q", got)
			}
			if ev := h.Events(); ev[len(ev)-1] != "post tfile["+path+"] "+tc.outcome {
				t.Errorf("hooks: %q", ev)
			}
		})
	}
}

func TestApplyRefusesUnshownChange(t *testing.T) {
	cases := []struct {
		name   string
		script string // run by an earlier resource; the file's path is appended
		errMsg string
	}{
		{"would also change mode", "chmod 600 ", "would also change mode"},
		{"would create instead of update", "rm ", "refused to create: the plan showed update"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, _ := newApplier(t, testRegistry())
			path, after := filepath.Join(dir, "f"), filepath.Join(dir, "after")
			writeFile(t, path, "old\n")
			f := tfile(path, "new\n")
			f.values["mode"] = cty.StringVal("0644")
			p := makePlan(t, a.Registry, tscript("meddle", tc.script+path), f, tfile(after, "x"))
			if p.Resources[1].Kind != resources.Update || len(p.Resources[1].Changes) != 1 {
				t.Fatalf("test plan: %s %+v", p.Resources[1].Kind, p.Resources[1].Changes)
			}

			rep, err := a.Apply(context.Background(), p)
			var re *ResourceError
			if !errors.As(err, &re) || re.Address != "tfile["+path+"]" {
				t.Fatalf("Apply error %v, want a *ResourceError for the file", err)
			}
			if !strings.Contains(err.Error(), tc.errMsg) || !strings.Contains(err.Error(), "toque plan") {
				t.Errorf("error %q, want it to say %q and to plan again", err, tc.errMsg)
			}
			rr := resourceReport(t, rep, "tfile["+path+"]")
			if rr.Outcome != OutcomeFailed || rr.DiffersFromPlan == "" || rr.Error == "" {
				t.Errorf("report %+v", rr)
			}
			if b, err := os.ReadFile(path); err == nil && string(b) != "old\n" {
				t.Errorf("content changed to %q", b)
			}
			if got := resourceReport(t, rep, "tfile["+after+"]").Outcome; got != OutcomeNotStarted {
				t.Errorf("next resource: %s", got)
			}
			mustNotExist(t, after)
		})
	}
}

func TestApplyStopFinishesResourceInHand(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, testRegistry())
	stop := make(chan struct{})
	a.Stop = stop
	marker, f1, f2 := filepath.Join(dir, "marker"), filepath.Join(dir, "f1"), filepath.Join(dir, "f2")
	h.onPre = func(r *plan.Resource) {
		if r.Type == "tscript" {
			close(stop) // the first SIGINT arrives while the script runs
		}
	}
	p := makePlan(t, a.Registry, tscript("slow", "sleep 0.1; echo done > "+marker), tfile(f1, "1"), tfile(f2, "2"))

	rep, err := a.Apply(context.Background(), p)
	var ie *InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("Apply error %v, want *InterruptedError", err)
	}
	if ie.Aborted || ie.After != "tscript[slow]" || ie.NotStarted != 2 {
		t.Errorf("interrupted error %+v", ie)
	}
	if !rep.Interrupted || rep.Changed != 1 || rep.NotStarted != 2 {
		t.Errorf("report: %v interrupted=%v", outcomes(rep), rep.Interrupted)
	}
	if got := readFile(t, marker); got != "done\n" {
		t.Errorf("the resource in hand did not finish: %q", got)
	}
	mustNotExist(t, f1)
	mustNotExist(t, f2)
	if _, err := os.Stat(filepath.Join(ReportsDir(a.StateDir), "last.json")); err != nil {
		t.Errorf("no report after an interrupted run: %v", err)
	}
}

func TestApplyCancelAborts(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, testRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := filepath.Join(dir, "started")
	h.onPre = func(r *plan.Resource) {
		// The second SIGINT arrives while the script runs.
		go func() {
			testutil.Await(10*time.Second, func() bool { return testutil.Exists(started)() || ctx.Err() != nil })
			cancel()
		}()
	}
	f := filepath.Join(dir, "f")
	p := makePlan(t, a.Registry, tscript("hang", "touch '"+started+"'; sleep 10"), tfile(f, "x"))

	start := time.Now()
	rep, err := a.Apply(ctx, p)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("abort took %v", d)
	}
	var ie *InterruptedError
	if !errors.As(err, &ie) || !ie.Aborted {
		t.Fatalf("Apply error %v, want an aborted *InterruptedError", err)
	}
	if got := outcomes(rep); got["tscript[hang]"] != OutcomeFailed || got["tfile["+f+"]"] != OutcomeNotStarted || !rep.Interrupted {
		t.Errorf("outcomes %v", got)
	}
	mustNotExist(t, f)
}

func TestApplyResourceFailures(t *testing.T) {
	cases := []struct {
		name          string
		first         spec
		ignore        bool
		firstOutcome  string
		wantErr       string // "" when Apply succeeds
		nextConverged bool
	}{
		{"failing command stops the run", tscript("fail", "echo boom >&2; exit 3"), false, OutcomeFailed, "boom", false},
		{"failing command with ignore_failure", tscript("fail", "exit 3"), true, OutcomeFailedIgnored, "", true},
		{"panic in Converge", spec{typ: "tpanic", name: "p"}, false, OutcomeFailed, `panicked in Converge: converge exploded`, false},
		{"panic in Converge with ignore_failure", spec{typ: "tpanic", name: "p"}, true, OutcomeFailedIgnored, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, _ := newApplier(t, testRegistry())
			next := filepath.Join(dir, "next")
			first := tc.first
			first.ignoreFailure = tc.ignore
			p := makePlan(t, a.Registry, first, tfile(next, "x"))
			addr := p.Resources[0].Address

			rep, err := a.Apply(context.Background(), p)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
			} else {
				var re *ResourceError
				if !errors.As(err, &re) || re.Address != addr || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Apply error %v, want a *ResourceError for %s saying %q", err, addr, tc.wantErr)
				}
			}
			rr := resourceReport(t, rep, addr)
			if rr.Outcome != tc.firstOutcome || rr.Error == "" {
				t.Errorf("first resource: %+v", rr)
			}
			if rep.Failed != 1 {
				t.Errorf("failed count %d", rep.Failed)
			}
			if tc.nextConverged {
				if got := readFile(t, next); got != "x" {
					t.Errorf("next resource content %q", got)
				}
			} else {
				mustNotExist(t, next)
				if got := resourceReport(t, rep, "tfile["+next+"]").Outcome; got != OutcomeNotStarted {
					t.Errorf("next resource: %s", got)
				}
			}
		})
	}
}

func TestApplyPreflightErrorsChangeNothing(t *testing.T) {
	cases := []struct {
		name    string
		bad     func(p *plan.Plan)
		wantErr string
	}{
		{"unknown type", func(p *plan.Plan) { p.Resources[1].Type = "nosuch" }, `resource type "nosuch" is not known`},
		{"panic in Load", func(p *plan.Plan) {
			p.Resources[1].Desired["in"] = plan.Value{Value: cty.StringVal("Load")}
		}, "panicked in Load"},
		{"unknown kind", func(p *plan.Plan) { p.Resources[1].Kind = "explode" }, `unknown kind of step "explode"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, _ := newApplier(t, testRegistry())
			f := filepath.Join(dir, "f")
			p := makePlan(t, a.Registry, tfile(f, "x"), spec{typ: "tpanic", name: "p"})
			tc.bad(p)
			rep, err := a.Apply(context.Background(), p)
			var re *ResourceError
			if err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("Apply error %v, want a pre-flight error saying %q", err, tc.wantErr)
			}
			if rep != nil {
				t.Error("a report was returned")
			}
			mustNotExist(t, f)
		})
	}
}

func TestApplyRefusesErroredPlan(t *testing.T) {
	dir := t.TempDir()
	a, _ := newApplier(t, testRegistry())
	f := filepath.Join(dir, "f")
	p := makePlan(t, a.Registry, tfile(f, "x"))
	p.Errored = true
	if _, err := a.Apply(context.Background(), p); err == nil || !strings.Contains(err.Error(), "errored") {
		t.Fatalf("Apply error %v, want a refusal", err)
	}
	mustNotExist(t, f)
	mustNotExist(t, a.StateDir)
}

func TestApplySkippedResource(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, testRegistry())
	f := filepath.Join(dir, "f")
	s := tfile(f, "x")
	s.skip = true
	p := makePlan(t, a.Registry, s)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if rr := rep.Resources[0]; rr.Outcome != OutcomeSkipped || rr.Reason != "only_if false" || rep.Skipped != 1 {
		t.Errorf("report %+v", rep)
	}
	mustNotExist(t, f)
	if ev := h.Events(); len(ev) != 0 {
		t.Errorf("hooks ran: %q", ev)
	}
}

func TestApplyHeartbeat(t *testing.T) {
	a, h := newApplier(t, testRegistry())
	a.Heartbeat = 60 * time.Millisecond
	p := makePlan(t, a.Registry, tscript("slow", "sleep 0.35"), tscript("fast", "true"))
	if _, err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	// The slow resource's beats only: on a loaded machine even "true" may
	// outlive one interval.
	beats := append([]time.Duration(nil), h.beatsOf["tscript[slow]"]...)
	h.mu.Unlock()
	// About one a beat for as long as the resource ran: 5 for 350 ms, more
	// when a loaded machine (or -race) stretches the sleep.
	if len(beats) < 3 || len(beats) > int(beats[len(beats)-1]/a.Heartbeat)+1 {
		t.Fatalf("heartbeats %v, want one every 60ms while the 350ms resource ran", beats)
	}
	for i := 1; i < len(beats); i++ {
		if beats[i] <= beats[i-1] {
			t.Errorf("elapsed times do not increase: %v", beats)
		}
	}
}

func TestApplyReportWritten(t *testing.T) {
	dir := t.TempDir()
	a, _ := newApplier(t, testRegistry())
	fixed := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	a.Now = func() time.Time { return fixed }
	f, g := filepath.Join(dir, "f"), filepath.Join(dir, "g")
	writeFile(t, g, "g")
	p := makePlan(t, a.Registry, tfile(f, "x"), tfile(g, "g"), spec{typ: "tpanic", name: "p", ignoreFailure: true})

	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	wantPath := filepath.Join(ReportsDir(a.StateDir), "20250304T050607.000Z.json")
	if rep.Path != wantPath {
		t.Errorf("report path %q, want %q", rep.Path, wantPath)
	}
	for _, name := range []string{rep.Path, filepath.Join(ReportsDir(a.StateDir), "last.json")} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", name, fi.Mode().Perm())
		}
		var got Report
		b := []byte(readFile(t, name))
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got.Path = rep.Path
		if !reflect.DeepEqual(&got, rep) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, *rep)
		}
		if got.Changed != 1 || got.Unchanged != 1 || got.Failed != 1 || got.Resources[2].Outcome != OutcomeFailedIgnored {
			t.Errorf("%s counts: %+v", name, got)
		}
	}

	// A second run in the same instant gets its own file.
	rep2, err := a.Apply(context.Background(), makePlan(t, a.Registry, tfile(f, "y")))
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Path == rep.Path || !strings.HasPrefix(filepath.Base(rep2.Path), "20250304T050607.000Z") {
		t.Errorf("second report path %q", rep2.Path)
	}
	if _, err := os.Stat(rep.Path); err != nil {
		t.Errorf("first report gone: %v", err)
	}
}
