package apply

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/plan"
)

// decodeEvents parses a JSON-lines stream, failing on any line that is not
// one JSON object with a type and an RFC 3339 time.
func decodeEvents(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON object per line: %q: %v", sc.Text(), err)
		}
		if _, ok := ev["type"].(string); !ok {
			t.Fatalf("event without a type: %q", sc.Text())
		}
		if _, err := time.Parse(time.RFC3339Nano, ev["time"].(string)); err != nil {
			t.Fatalf("event time: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

func eventTypes(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev["type"].(string))
	}
	return out
}

func TestEventWriterStreamsAnApply(t *testing.T) {
	dir := t.TempDir()
	a, _ := newApplier(t, testRegistry())
	var buf bytes.Buffer
	ew := NewEventWriter(&buf, nil)
	a.Hooks = ew
	a.Heartbeat = 40 * time.Millisecond
	done, made, slow := filepath.Join(dir, "done"), filepath.Join(dir, "made"), filepath.Join(dir, "later")
	p := makePlan(t, a.Registry,
		tfile(done, "done\n"),
		tscript("slow", "sleep 0.15; printf partial > "+slow),
		tfile(slow, "final\n"),
		tfile(made, "made\n"))
	writeFile(t, done, "done\n") // already in its planned state

	ew.Start(p, a.PlanDigest)
	rep, err := a.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ew.Summary(rep)
	if ew.Err() != nil {
		t.Fatal(ew.Err())
	}
	evs := decodeEvents(t, buf.Bytes())
	types := eventTypes(evs)
	// Heartbeats are timing-dependent; the rest is not.
	var fixed []string
	beats := 0
	for _, ty := range types {
		if ty == EventHeartbeat {
			beats++
			continue
		}
		fixed = append(fixed, ty)
	}
	want := []string{EventApplyStart, EventAlreadyDone,
		EventResourceStart, EventResourceEnd,
		EventResourceStart, EventDiffersFromPlan, EventResourceEnd,
		EventResourceStart, EventResourceEnd,
		EventSummary}
	if !reflect.DeepEqual(fixed, want) {
		t.Fatalf("events %q, want %q", types, want)
	}
	if beats == 0 {
		t.Error("no heartbeat for a 150ms resource at a 40ms interval")
	}
	start := evs[0]
	if start["plan_digest"] != "sha256:testdigest" || start["format_version"] != EventsFormatVersion || start["resources"].(float64) != 4 {
		t.Errorf("apply_start: %v", start)
	}
	var ends []map[string]any
	for _, ev := range evs {
		if ev["type"] == EventResourceEnd {
			ends = append(ends, ev)
		}
	}
	if ends[0]["address"] != "tscript[slow]" || ends[0]["outcome"] != OutcomeChanged || ends[0]["duration_ms"].(float64) < 100 {
		t.Errorf("resource_end of the slow script: %v", ends[0])
	}
	if ends[1]["differs_from_plan"] == "" || ends[1]["kind"] != "create" {
		t.Errorf("resource_end after a difference: %v", ends[1])
	}
	sum := evs[len(evs)-1]
	if sum["outcome"] != "complete" || sum["changed"].(float64) != 3 || sum["already_done"].(float64) != 1 || sum["report"] == "" {
		t.Errorf("summary: %v", sum)
	}
}

func TestEventWriterNotificationsAndErrors(t *testing.T) {
	var buf bytes.Buffer
	fixed := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ew := NewEventWriter(&buf, func() time.Time { return fixed })
	ew.Summary(&Report{Interrupted: true, Notified: []ResourceReport{
		{Address: "execute[reload]", Kind: "run", Outcome: OutcomeChanged, Reason: "notified by file[/etc/x] (delayed)", DurationMS: 7},
	}})
	stale := &StaleError{Resources: []StaleResource{{Address: "file[/a]", Planned: "update", Now: "update",
		Differences: []plan.Difference{{Property: "content", Then: "(3 bytes, sha256:aa…)", Now: "(4 bytes, sha256:bb…)"}}}}}
	ew.Error("", stale, 3)
	ew.Error("", &LockHeldError{PID: 42, User: "root", Since: fixed, Path: "/state/apply.lock"}, 4)
	ew.Error(ErrorKindDigestMismatch, errors.New("digest differs"), 1)

	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`{"type":"notification_fired","time":"2025-01-02T03:04:05Z","address":"execute[reload]","kind":"run","outcome":"changed","duration_ms":7,"reason":"notified by file[/etc/x] (delayed)","error":"","differs_from_plan":""}`,
		`{"type":"summary","time":"2025-01-02T03:04:05Z","outcome":"interrupted","plan_digest":"","changed":0,"unchanged":0,"already_done":0,"failed":0,"skipped":0,"not_started":0,"notified":1,"interrupted":true,"duration_ms":0,"report":""}`,
		`{"type":"error","time":"2025-01-02T03:04:05Z","error_kind":"stale","message":` + mustJSON(t, stale.Error()) + `,"exit_code":3,"stale":[{"address":"file[/a]","property":"content","then":"(3 bytes, sha256:aa…)","now":"(4 bytes, sha256:bb…)","planned":"update","needed":"update"}]}`,
		`{"type":"error","time":"2025-01-02T03:04:05Z","error_kind":"lock_held","message":` + mustJSON(t, (&LockHeldError{PID: 42, User: "root", Since: fixed, Path: "/state/apply.lock"}).Error()) + `,"exit_code":4,"lock_holder":{"pid":42,"user":"root","hostname":"","since":"2025-01-02T03:04:05Z","path":"/state/apply.lock"}}`,
		`{"type":"error","time":"2025-01-02T03:04:05Z","error_kind":"digest_mismatch","message":"digest differs","exit_code":1}`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events:\n%s", len(got), buf.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func mustJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failingWriter fails every write.
type failingWriter struct{ n int }

func (f *failingWriter) Write(b []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestEventWriterStopsAfterAWriteError(t *testing.T) {
	w := &failingWriter{}
	ew := NewEventWriter(w, nil)
	ew.Error("", errors.New("x"), 1)
	ew.Error("", errors.New("y"), 1)
	if ew.Err() == nil || w.n != 1 {
		t.Errorf("err %v after %d writes", ew.Err(), w.n)
	}
}
