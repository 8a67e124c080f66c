package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toquehq/toque/command/views"
)

var digestLine = regexp.MustCompile(`Plan digest: (sha256:[0-9a-f]{64})`)

// planDigest is the digest `toque show` prints for the plan file.
func (e *env) planDigest(file string) string {
	e.t.Helper()
	r := e.must(0, "show", file)
	m := digestLine.FindStringSubmatch(r.stdout)
	if m == nil {
		e.t.Fatalf("show prints no digest:\n%s", r)
	}
	return m[1]
}

// TestE2EMarkdownMaxBytes: a limit one byte short of the whole Markdown
// cuts sections from the end, and says so, keeping the head (the address
// lists). (The limit depends on the whole's length, which a script's
// golden output cannot know: it holds the host name.)
func TestE2EMarkdownMaxBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("old.txt", "old\n", 0o644)
	e.recipe("site.hcl", `
file "ROOT/index.html" {
  content = "<h1>hello</h1>\n"
}
file "ROOT/old.txt" {
  action = "delete"
}
`)
	e.must(0, "plan", "-out=plan.out")
	md := e.must(0, "show", "-markdown", "plan.out").stdout
	limit := len(md) - 1
	small := e.must(0, "show", "-markdown", fmt.Sprintf("-max-bytes=%d", limit), "plan.out").stdout
	if len(small) > limit || !strings.Contains(small, "truncated=true") ||
		!strings.Contains(small, fmt.Sprintf("left out to stay under %d bytes; run `toque show plan.out`", limit)) {
		t.Errorf("-max-bytes=%d (%d bytes):\n%s", limit, len(small), small)
	}
	if !strings.Contains(small, "- **delete** (1)") {
		t.Errorf("the cut output lost the address lists:\n%s", small)
	}
}

func TestE2EApplyExpectDigest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("site.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	digest := e.planDigest("plan.out")
	hexDigits := strings.TrimPrefix(digest, "sha256:")
	other := strings.Repeat("0", 64)
	before := e.snapshot()

	refused := []struct {
		name string
		args []string
		want string
	}{
		{"another digest", []string{"apply", "-expect-digest=sha256:" + other, "plan.out"}, "not the plan that was reviewed"},
		{"not hex", []string{"apply", "-expect-digest=" + strings.Repeat("z", 64), "plan.out"}, "not hexadecimal"},
		{"too short", []string{"apply", "-expect-digest=" + hexDigits[:40], "plan.out"}, "want 64 hexadecimal digits"},
		{"another algorithm", []string{"apply", "-expect-digest=md5:" + hexDigits, "plan.out"}, "a plan digest is sha256"},
		{"empty", []string{"apply", "-expect-digest=", "plan.out"}, "want 64 hexadecimal digits"},
		{"no plan file", []string{"apply", "-expect-digest=" + digest}, "needs a plan file"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			r := e.must(1, c.args...)
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, r)
			}
			sameSnapshot(t, before, e.snapshot())
		})
	}

	// A new plan made after review (here: the recipe changed) has another
	// digest, and is refused under the reviewed one.
	e.recipe("site.hcl", `file "ROOT/a.conf" { content = "changed after review\n" }`)
	e.must(0, "plan", "-out=plan.out")
	r := e.must(1, "apply", "-expect-digest="+digest, "plan.out")
	if !strings.Contains(r.stderr, digest) {
		t.Errorf("the refusal does not name the expected digest:\n%s", r)
	}
	sameSnapshot(t, before, e.snapshot())

	// The reviewed plan applies, whichever way the digest is written.
	e.recipe("site.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	digest = e.planDigest("plan.out")
	e.must(0, "apply", "-expect-digest="+strings.ToUpper(strings.TrimPrefix(digest, "sha256:")), "plan.out")
	if e.read("a.conf") != "a\n" {
		t.Error("the reviewed plan was not applied")
	}
}

func TestE2EApplyJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("b.conf", "b-old\n", 0o644)
	e.recipe("site.hcl", `
file "ROOT/a.conf" { content = "a\n" }
file "ROOT/b.conf" { content = "b\n" }
file "ROOT/c.conf" { content = "c\n" }
`)
	e.must(0, "plan", "-out=plan.out")
	digest := e.planDigest("plan.out")
	e.write("a.conf", "a\n", 0o644) // already done, as after an interrupted run

	r := e.must(0, "apply", "-json", "-expect-digest="+digest, "plan.out")
	evs := readEvents(t, r.stdout)
	want := "apply_start already_done resource_start resource_end resource_start resource_end summary"
	if got := eventTypes(evs); got != want {
		t.Fatalf("events %q, want %q\n%s", got, want, r)
	}
	if evs[0]["plan_digest"] != digest || evs[0]["format_version"] != views.EventsFormatVersion {
		t.Errorf("apply_start: %v", evs[0])
	}
	if evs[3]["address"] != "file["+e.root+"/b.conf]" || evs[3]["kind"] != "update" || evs[3]["outcome"] != "changed" {
		t.Errorf("resource_end: %v", evs[3])
	}
	if _, ok := evs[3]["duration_ms"].(float64); !ok {
		t.Errorf("resource_end without a duration: %v", evs[3])
	}
	sum := evs[len(evs)-1]
	if sum["outcome"] != "complete" || sum["changed"].(float64) != 2 || sum["already_done"].(float64) != 1 {
		t.Errorf("summary: %v", sum)
	}
	if strings.Contains(r.stdout, "Apply complete!") || strings.Contains(r.stdout, "Creating") {
		t.Errorf("text progress in -json mode:\n%s", r.stdout)
	}

	// A stale plan: the error event carries exit code 3 and the difference.
	e.recipe("site.hcl", `file "ROOT/d.conf" { content = "d\n" }`)
	e.write("d.conf", "d-old\n", 0o644)
	e.must(0, "plan", "-out=plan.out")
	e.write("d.conf", "someone else\n", 0o644)
	r = e.must(3, "apply", "-json", "plan.out")
	evs = readEvents(t, r.stdout)
	if got := eventTypes(evs); got != "apply_start error" {
		t.Fatalf("stale run events %q\n%s", got, r)
	}
	last := evs[1]
	if last["error_kind"] != "stale" || last["exit_code"].(float64) != 3 {
		t.Errorf("stale error event: %v", last)
	}
	if st, ok := last["stale"].([]any); !ok || len(st) == 0 || st[0].(map[string]any)["property"] != "content" {
		t.Errorf("stale event lacks the difference: %v", last)
	}
	if !strings.Contains(r.stderr, "stale") {
		t.Errorf("no human error on stderr:\n%s", r)
	}

	// Refusals before any apply are error events too.
	r = e.must(1, "apply", "-json", "-expect-digest="+strings.Repeat("1", 64), "plan.out")
	evs = readEvents(t, r.stdout)
	if eventTypes(evs) != "error" || evs[0]["error_kind"] != "digest_mismatch" || evs[0]["exit_code"].(float64) != 1 {
		t.Errorf("digest mismatch: %v", evs)
	}
	os.WriteFile(filepath.Join(e.dir, "plan.out"), []byte("not a plan"), 0o600)
	r = e.must(1, "apply", "-json", "plan.out")
	evs = readEvents(t, r.stdout)
	if eventTypes(evs) != "error" || evs[0]["error_kind"] != "plan_refused" {
		t.Errorf("not a plan: %v", evs)
	}
	r = e.must(1, "apply", "-json")
	if !strings.Contains(r.stderr, "-json needs a plan file") {
		t.Errorf("-json without a plan file:\n%s", r)
	}
}
