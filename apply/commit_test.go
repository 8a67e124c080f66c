package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// commitRegistry is the built-in file type (which stages creates) with the
// test script type (which does not).
func commitRegistry() *resources.Registry {
	file, _ := builtin.Registry().Lookup("file")
	return resources.NewRegistry(file, newScriptType())
}

func bfile(path, content string) spec {
	return spec{typ: "file", name: path, values: map[string]cty.Value{"content": cty.StringVal(content), "mode": cty.StringVal("0640")}}
}

// applyOnce applies the scenario's plan in a fresh directory, with or
// without group commit, and returns what an observer sees: the progress,
// the outcomes with their reasons and errors, the journal's events, the
// files left, and the error; paths are given as ROOT/….
func applyOnce(t *testing.T, grouped bool, scenario func(dir string) []spec, prepare, between func(dir string)) string {
	t.Helper()
	defer func(old bool, max int) { groupCommit, commitGroupMax = old, max }(groupCommit, commitGroupMax)
	groupCommit, commitGroupMax = grouped, 7 // several groups in one apply
	dir := t.TempDir()
	if prepare != nil {
		prepare(dir)
	}
	a, h := newApplier(t, commitRegistry())
	p := makePlan(t, a.Registry, scenario(dir)...)
	if between != nil {
		between(dir)
	}
	rep, err := a.Apply(context.Background(), p)
	var b strings.Builder
	fmt.Fprintf(&b, "error: %v\n", err)
	for _, ev := range h.Events() {
		fmt.Fprintf(&b, "hook: %s\n", ev)
	}
	if rep != nil {
		for _, rr := range rep.Resources {
			fmt.Fprintf(&b, "report: %s %s %q %q %q\n", rr.Address, rr.Outcome, rr.Reason, rr.DiffersFromPlan, rr.Error)
		}
	}
	journals, _ := filepath.Glob(filepath.Join(a.StateDir, "journal", "*.jsonl"))
	for _, j := range journals {
		data, _ := os.ReadFile(j)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev journalEvent
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Event != "" {
				fmt.Fprintf(&b, "journal: %s %s %s\n", ev.Event, ev.Address, ev.Outcome)
			}
		}
	}
	var files []string
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		files = append(files, fmt.Sprintf("file: %s %04o %q", path, fi.Mode().Perm(), data))
		return nil
	})
	sort.Strings(files)
	b.WriteString(strings.Join(files, "\n"))
	return strings.ReplaceAll(b.String(), dir, "ROOT")
}

// TestGroupCommitIsOneAtATime: staging creates and committing them in
// groups is invisible: the same progress, outcomes, journal and files as
// converging each resource on its own, in success and in failure.
func TestGroupCommitIsOneAtATime(t *testing.T) {
	cases := map[string]struct {
		specs            func(dir string) []spec
		prepare, between func(dir string)
	}{
		"creates, updates and runs": {
			specs: func(dir string) []spec {
				var s []spec
				for i := range 20 {
					s = append(s, bfile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), fmt.Sprintf("new %d\n", i)))
					if i%6 == 3 {
						s = append(s, tscript(fmt.Sprintf("run%d", i), "echo run >> "+filepath.Join(dir, "runs.log")))
					}
				}
				// An update (not staged) between creates, and an unchanged file.
				s = append(s, bfile(filepath.Join(dir, "old"), "updated\n"), bfile(filepath.Join(dir, "same"), "same\n"))
				return append(s, bfile(filepath.Join(dir, "last"), "last\n"))
			},
			prepare: func(dir string) {
				writeFile(t, filepath.Join(dir, "old"), "old\n")
				writeFile(t, filepath.Join(dir, "same"), "same\n")
				os.Chmod(filepath.Join(dir, "same"), 0o640)
			},
		},
		"a create that fails ends the group": {
			specs: func(dir string) []spec {
				return []spec{
					bfile(filepath.Join(dir, "a"), "a\n"),
					bfile(filepath.Join(dir, "b"), "b\n"),
					bfile(filepath.Join(dir, "missing", "c"), "c\n"), // no parent directory
					bfile(filepath.Join(dir, "d"), "d\n"),
				}
			},
		},
		"creates already done since the plan": {
			specs: func(dir string) []spec {
				return []spec{bfile(filepath.Join(dir, "a"), "a\n"), bfile(filepath.Join(dir, "b"), "b\n"), bfile(filepath.Join(dir, "c"), "c\n")}
			},
			between: func(dir string) {
				writeFile(t, filepath.Join(dir, "b"), "b\n")
				os.Chmod(filepath.Join(dir, "b"), 0o640)
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			one := applyOnce(t, false, c.specs, c.prepare, c.between)
			grouped := applyOnce(t, true, c.specs, c.prepare, c.between)
			if one != grouped {
				t.Errorf("group commit differs from one at a time\n--- one at a time\n%s\n--- grouped\n%s", one, grouped)
			}
			if strings.Contains(grouped, "toque-tmp") {
				t.Errorf("a temporary file was left:\n%s", grouped)
			}
		})
	}
}

// TestGroupCommitFailureReportsTheResource checks the failing scenario's
// substance, beyond its sameness with one at a time.
func TestGroupCommitFailureReportsTheResource(t *testing.T) {
	dir := t.TempDir()
	a, h := newApplier(t, commitRegistry())
	p := makePlan(t, a.Registry, bfile(filepath.Join(dir, "a"), "a\n"), bfile(filepath.Join(dir, "missing", "c"), "c\n"), bfile(filepath.Join(dir, "d"), "d\n"))
	rep, err := a.Apply(context.Background(), p)
	var re *ResourceError
	if !errors.As(err, &re) || !strings.Contains(re.Address, "missing") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Apply: %v, want the failure of the create without a parent", err)
	}
	if got := readFile(t, filepath.Join(dir, "a")); got != "a\n" {
		t.Errorf("a = %q: the create before the failure was not committed", got)
	}
	mustNotExist(t, filepath.Join(dir, "d"))
	want := map[string]string{
		"file[" + filepath.Join(dir, "a") + "]":            OutcomeChanged,
		"file[" + filepath.Join(dir, "missing", "c") + "]": OutcomeFailed,
		"file[" + filepath.Join(dir, "d") + "]":            OutcomeNotStarted,
	}
	if got := outcomes(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	if ev := h.Events(); len(ev) != 4 || !strings.HasPrefix(ev[3], "post file[") || !strings.HasSuffix(ev[3], " failed") {
		t.Errorf("hooks %q", ev)
	}
}
