package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// fakeGH stands in for the GitHub CLI in the CI example's tests: a shell
// script that records every call and keeps pull-request comments as files,
// so the scripts can be run twice and seen to update their comment. It
// honours --jq through the real jq, as gh does with its built-in one, so
// the scripts' jq filters are really evaluated. Other GET paths answer from
// $FAKE_GH/responses/<path with every non-alphanumeric byte as _>.json.
const fakeGH = `#!/bin/sh
set -eu
state=${FAKE_GH:?}
printf '%s\n' "$*" >> "$state/calls"
[ "$1" = api ] || { echo "fake gh: only 'gh api' is faked, got: $*" >&2; exit 2; }
shift
method=GET path= jqexpr= body=
while [ $# -gt 0 ]; do
  case "$1" in
    --method|-X) method=$2; shift 2 ;;
    --jq|-q) jqexpr=$2; shift 2 ;;
    --paginate) shift ;;
    -F|--field)
      case "$2" in
        body=@*) body=${2#body=@} ;;
        *) echo "fake gh: unexpected field $2" >&2; exit 2 ;;
      esac
      shift 2 ;;
    -*) echo "fake gh: unexpected flag $1" >&2; exit 2 ;;
    *) path=$1; shift ;;
  esac
done
mkdir -p "$state/comments"
case "$method $path" in
  "GET repos/"*/issues/*/comments)
    if ls "$state/comments/"*.json >/dev/null 2>&1; then
      out=$(jq -s 'sort_by(.id)' "$state/comments/"*.json)
    else
      out='[]'
    fi ;;
  "POST repos/"*/issues/*/comments)
    n=$(ls "$state/comments" | wc -l)
    id=$((1001 + n))
    jq -Rs --argjson id "$id" --arg user "${FAKE_GH_USER:-github-actions[bot]}" \
      '{id: $id, user: {login: $user}, body: ., html_url: "https://github.example/c/\($id)"}' < "$body" > "$state/comments/$id.json"
    out=$(cat "$state/comments/$id.json") ;;
  "PATCH repos/"*/issues/comments/*)
    id=${path##*/}
    [ -f "$state/comments/$id.json" ] || { echo "fake gh: HTTP 404 for comment $id" >&2; exit 1; }
    jq --rawfile b "$body" '.body = $b' "$state/comments/$id.json" > "$state/comments/$id.tmp"
    mv "$state/comments/$id.tmp" "$state/comments/$id.json"
    out=$(cat "$state/comments/$id.json") ;;
  "GET "*)
    key=$(printf '%s' "$path" | tr -c 'A-Za-z0-9' '_')
    [ -f "$state/responses/$key.json" ] || { echo "fake gh: HTTP 404 for $path" >&2; exit 1; }
    out=$(cat "$state/responses/$key.json") ;;
  *) echo "fake gh: unexpected call $method $path" >&2; exit 2 ;;
esac
if [ -n "$jqexpr" ]; then
  printf '%s\n' "$out" | jq -r "$jqexpr"
else
  printf '%s\n' "$out"
fi
`

// ciEnv runs the CI example's scripts against a scratch host directory,
// with the built toque and the fake gh first on PATH.
type ciEnv struct {
	*env
	bin, gh, out, scripts, recipes string
}

func newCIEnv(t *testing.T) *ciEnv {
	t.Helper()
	// The scripts are bash; the fake gh needs jq to evaluate --jq filters.
	testenv.MustHave(t, testenv.Bash, testenv.Jq)
	e := newEnv(t)
	base := filepath.Dir(e.dir)
	c := &ciEnv{env: e, bin: filepath.Join(base, "bin"), gh: filepath.Join(base, "gh"), out: filepath.Join(base, "out")}
	for _, d := range []string{c.bin, filepath.Join(c.gh, "responses")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.bin, "gh"), []byte(fakeGH), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(toqueBin, filepath.Join(c.bin, "toque")); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c.scripts = filepath.Join(wd, "..", "examples", "ci", "scripts")
	// The example's own recipes, planned against the scratch root.
	src, err := os.ReadFile(filepath.Join(wd, "..", "examples", "ci", "recipes", "site.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	e.recipe("site.hcl", string(src))
	return c
}

// script runs one of the example's scripts with args and extra env.
func (c *ciEnv) script(name string, extra []string, args ...string) result {
	c.t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(c.scripts, name)}, args...)...)
	cmd.Dir = filepath.Dir(c.dir)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(),
		"PATH="+c.bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TOQUE_STATE_DIR="+c.state, "TOQUE_HOST_LOCK="+c.hostLock, "NO_COLOR=1",
		"TOQUE_DIR="+c.dir, "CI_SCRATCH="+c.root,
		"FAKE_GH="+c.gh, "GH_REPO=acme/infra", "PR_NUMBER=7", "APPLY_EVENTS="+filepath.Join(c.out, "apply.jsonl"))
	cmd.Env = append(cmd.Env, extra...)
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			c.t.Fatalf("running %s: %v", name, err)
		}
		code = ee.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

func (c *ciEnv) mustScript(want int, name string, extra []string, args ...string) result {
	c.t.Helper()
	r := c.script(name, extra, args...)
	if r.code != want {
		c.t.Fatalf("%s %v: want exit %d, got %s", name, args, want, r)
	}
	return r
}

type fakeComment struct {
	ID   int    `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

func (c *ciEnv) comments() []fakeComment {
	c.t.Helper()
	files, _ := filepath.Glob(filepath.Join(c.gh, "comments", "*.json"))
	var out []fakeComment
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			c.t.Fatal(err)
		}
		var fc fakeComment
		if err := json.Unmarshal(b, &fc); err != nil {
			c.t.Fatalf("%s: %v", f, err)
		}
		out = append(out, fc)
	}
	return out
}

func (c *ciEnv) calls() []string {
	b, _ := os.ReadFile(filepath.Join(c.gh, "calls"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (c *ciEnv) respond(path string, body any) {
	c.t.Helper()
	key := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(path, "_")
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.gh, "responses", key+".json"), b, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *ciEnv) readOut(name string) string {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.out, name))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

func TestE2ECIPlanCommentsOnceThenUpdates(t *testing.T) {
	t.Parallel()
	c := newCIEnv(t)
	// Someone else's comment, quoting the marker, must be left alone.
	if err := os.MkdirAll(filepath.Join(c.gh, "comments"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(c.gh, "comments", "900.json"),
		[]byte(`{"id":900,"user":{"login":"alice"},"body":"<!-- toque-plan host=x format=1 --> quoted"}`), 0o644)

	c.mustScript(0, "plan.sh", nil, c.out)
	digest := strings.TrimSpace(c.readOut("plan.digest"))
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
		t.Fatalf("plan.digest = %q", digest)
	}
	md := c.readOut("plan.md")
	if !strings.Contains(md, "Plan digest: `"+digest+"`") || !strings.Contains(md, "`file[motd]`") {
		t.Fatalf("plan.md:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(c.root, "motd")); !os.IsNotExist(err) {
		t.Fatal("planning changed the host")
	}

	r := c.mustScript(0, "comment.sh", nil, filepath.Join(c.out, "plan.md"))
	if !strings.Contains(r.stdout, "posted https://github.example/c/") {
		t.Errorf("first run did not post:\n%s", r)
	}
	ours := func() []fakeComment {
		var out []fakeComment
		for _, fc := range c.comments() {
			if fc.User.Login == "github-actions[bot]" {
				out = append(out, fc)
			}
		}
		return out
	}
	first := ours()
	if len(first) != 1 || first[0].Body != md {
		t.Fatalf("after the first run: %+v", first)
	}
	id := first[0].ID

	// A new push: the recipe changes, the plan is made again, and the same
	// comment is updated in place.
	c.recipe("site.hcl", strings.Replace(c.readRecipe("site.hcl"), "Welcome to", "Hello from", 1))
	c.mustScript(0, "plan.sh", nil, c.out)
	md2 := c.readOut("plan.md")
	if md2 == md {
		t.Fatal("the second plan's Markdown is the same as the first's")
	}
	r = c.mustScript(0, "comment.sh", nil, filepath.Join(c.out, "plan.md"))
	if !strings.Contains(r.stdout, fmt.Sprintf("updated https://github.example/c/%d", id)) {
		t.Errorf("second run did not update comment %d:\n%s", id, r)
	}
	got := ours()
	if len(got) != 1 || got[0].ID != id || got[0].Body != md2 {
		t.Fatalf("after the second run, want comment %d with the new plan: %+v", id, got)
	}
	var methods []string
	for _, call := range c.calls() {
		switch {
		case strings.Contains(call, "--method POST"):
			methods = append(methods, "POST")
		case strings.Contains(call, fmt.Sprintf("--method PATCH repos/acme/infra/issues/comments/%d", id)):
			methods = append(methods, "PATCH")
		}
	}
	if strings.Join(methods, " ") != "POST PATCH" {
		t.Errorf("calls: %q", c.calls())
	}
	for _, fc := range c.comments() {
		if fc.ID == 900 && !strings.HasSuffix(fc.Body, "quoted") {
			t.Error("someone else's comment was changed")
		}
	}

	// Not Markdown from toque: refused before any call.
	os.WriteFile(filepath.Join(c.out, "other.md"), []byte("# hello\n"), 0o644)
	before := len(c.calls())
	r = c.mustScript(1, "comment.sh", nil, filepath.Join(c.out, "other.md"))
	if !strings.Contains(r.stderr, "plan marker") || len(c.calls()) != before {
		t.Errorf("a file without the marker: %s", r)
	}
}

func (e *env) readRecipe(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func TestE2ECIApplyOnlyTheReviewedPlan(t *testing.T) {
	t.Parallel()
	c := newCIEnv(t)
	c.mustScript(0, "plan.sh", nil, c.out)
	c.mustScript(0, "comment.sh", nil, filepath.Join(c.out, "plan.md"))
	hostLine := strings.SplitN(c.readOut("plan.md"), "\n", 2)[0]
	host := regexp.MustCompile(`host=(\S+)`).FindStringSubmatch(hostLine)[1]

	// After the merge: the merged commit's pull request, its head, and the
	// plan run of that head.
	c.respond("repos/acme/infra/commits/abc123/pulls", []map[string]any{{"number": 7}})
	c.respond("repos/acme/infra/pulls/7", map[string]any{"head": map[string]any{"sha": "def456"}})
	c.respond("repos/acme/infra/actions/workflows/toque.yml/runs?event=pull_request&status=success&head_sha=def456",
		map[string]any{"workflow_runs": []map[string]any{{"id": 555}}})
	r := c.mustScript(0, "reviewed.sh", []string{"MERGE_SHA=abc123"}, host)
	digest := strings.TrimSpace(c.readOut("plan.digest"))
	if want := fmt.Sprintf("pr=7\ndigest=%s\nrun_id=555\n", digest); r.stdout != want {
		t.Fatalf("reviewed.sh printed %q, want %q", r.stdout, want)
	}
	// No plan comment for another host: nothing was reviewed.
	r = c.mustScript(1, "reviewed.sh", []string{"MERGE_SHA=abc123"}, "other-host")
	if !strings.Contains(r.stderr, "no plan comment for other-host") {
		t.Errorf("%s", r)
	}

	plan := filepath.Join(c.out, "plan.out")
	before := c.snapshot()

	// No digest, a wrong digest, a tampered plan file: refused, host
	// untouched.
	r = c.mustScript(1, "apply.sh", nil, plan, "")
	if !strings.Contains(r.stderr, "no reviewed digest") {
		t.Errorf("%s", r)
	}
	r = c.mustScript(1, "apply.sh", nil, plan, "sha256:"+strings.Repeat("ab", 32))
	if !strings.Contains(r.stdout, "error (digest_mismatch)") {
		t.Errorf("wrong digest: %s", r)
	}
	sameSnapshot(t, before, c.snapshot())

	good, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(good), `Welcome to `, `Welcome at `, 1)
	if tampered == string(good) {
		t.Fatal("could not tamper with the plan file")
	}
	os.WriteFile(plan, []byte(tampered), 0o600)
	r = c.mustScript(1, "apply.sh", nil, plan, digest)
	if !strings.Contains(r.stdout, "error (plan_refused)") || !strings.Contains(r.stdout, "checksum") {
		t.Errorf("tampered plan: %s", r)
	}
	sameSnapshot(t, before, c.snapshot())

	// Another, valid plan (made after review) under the reviewed digest.
	other := filepath.Join(c.out, "other")
	c.mustScript(0, "plan.sh", nil, other)
	r = c.mustScript(1, "apply.sh", nil, filepath.Join(other, "plan.out"), digest)
	if !strings.Contains(r.stdout, "error (digest_mismatch)") {
		t.Errorf("a plan other than the reviewed one: %s", r)
	}
	sameSnapshot(t, before, c.snapshot())

	// The reviewed plan applies.
	os.WriteFile(plan, good, 0o600)
	r = c.mustScript(0, "apply.sh", nil, plan, digest)
	if !strings.Contains(r.stdout, "file[motd]: changed in") || !strings.Contains(r.stdout, "apply complete: 1 changed, 0 failed") {
		t.Errorf("apply log:\n%s", r)
	}
	if got := c.read("motd"); !strings.HasPrefix(got, "Welcome to ") {
		t.Errorf("motd = %q", got)
	}
	if evs := readEvents(t, c.readOut("apply.jsonl")); eventTypes(evs) != "apply_start resource_start resource_end summary" {
		t.Errorf("events: %s", eventTypes(evs))
	}
}
