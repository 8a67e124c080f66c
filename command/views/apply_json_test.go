package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toquehq/toque/apply"
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

func TestEventWriterStreamsHooks(t *testing.T) {
	var buf bytes.Buffer
	ew := NewEventWriter(&buf, nil)
	p := &plan.Plan{Host: plan.Host{Hostname: "web-01"}, Resources: []*plan.Resource{
		{Address: "file[/done]", Kind: "create", Reason: "does not exist"},
		{Address: "tscript[slow]", Kind: "run", Action: "run", Reason: "no guard: runs every time"},
		{Address: "file[/later]", Kind: "create", Action: "create", Reason: "does not exist"},
	}}
	ew.Start(p, "sha256:testdigest")
	ew.AlreadyDone(p.Resources[0])
	ew.PreApply(p.Resources[1])
	ew.Heartbeat(p.Resources[1], 150*time.Millisecond)
	ew.PostApply(p.Resources[1], apply.ResourceReport{Address: "tscript[slow]", Kind: "run", Outcome: apply.OutcomeChanged, DurationMS: 150})
	ew.PreApply(p.Resources[2])
	ew.PostApply(p.Resources[2], apply.ResourceReport{Address: "file[/later]", Kind: "create", Outcome: apply.OutcomeChanged, DiffersFromPlan: "exists: does not exist at plan time, now exists"})
	ew.Summary(&apply.Report{PlanDigest: "sha256:testdigest", Changed: 2, AlreadyDone: 1, Path: "/state/reports/r.json"})
	if ew.Err() != nil {
		t.Fatal(ew.Err())
	}
	evs := decodeEvents(t, buf.Bytes())
	want := []string{EventApplyStart, EventAlreadyDone,
		EventResourceStart, EventHeartbeat, EventResourceEnd,
		EventResourceStart, EventDiffersFromPlan, EventResourceEnd,
		EventSummary}
	if got := eventTypes(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	start := evs[0]
	if start["plan_digest"] != "sha256:testdigest" || start["format_version"] != EventsFormatVersion || start["resources"].(float64) != 3 {
		t.Errorf("apply_start: %v", start)
	}
	if hb := evs[3]; hb["elapsed_ms"].(float64) != 150 || hb["address"] != "tscript[slow]" {
		t.Errorf("heartbeat: %v", hb)
	}
	if end := evs[4]; end["outcome"] != apply.OutcomeChanged || end["duration_ms"].(float64) != 150 {
		t.Errorf("resource_end: %v", end)
	}
	if end := evs[7]; end["differs_from_plan"] == "" || end["kind"] != "create" {
		t.Errorf("resource_end after a difference: %v", end)
	}
	sum := evs[len(evs)-1]
	if sum["outcome"] != "complete" || sum["changed"].(float64) != 2 || sum["already_done"].(float64) != 1 || sum["report"] == "" {
		t.Errorf("summary: %v", sum)
	}
}

func TestEventWriterNotificationsAndErrors(t *testing.T) {
	var buf bytes.Buffer
	fixed := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ew := NewEventWriter(&buf, func() time.Time { return fixed })
	ew.Summary(&apply.Report{Interrupted: true, Notified: []apply.ResourceReport{
		{Address: "execute[reload]", Kind: "run", Outcome: apply.OutcomeChanged, Reason: "notified by file[/etc/x] (delayed)", DurationMS: 7},
	}})
	stale := &apply.StaleError{Resources: []apply.StaleResource{{Address: "file[/a]", Planned: "update", Now: "update",
		Differences: []plan.Difference{{Property: "content", Then: "(3 bytes, sha256:aa…)", Now: "(4 bytes, sha256:bb…)"}}}}}
	ew.Error("", stale, stale.Error(), 3, nil)
	held := &apply.LockHeldError{PID: 42, User: "root", Since: fixed, Path: "/state/apply.lock"}
	ew.Error("", held, held.Error(), 4, nil)
	ew.Error(KindDigestMismatch, errors.New("digest differs"), "digest differs", 1, nil)

	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`{"type":"notification_fired","time":"2025-01-02T03:04:05Z","address":"execute[reload]","kind":"run","outcome":"changed","duration_ms":7,"reason":"notified by file[/etc/x] (delayed)","error":"","differs_from_plan":"","known_at_apply":[],"decided_at_apply":[]}`,
		`{"type":"summary","time":"2025-01-02T03:04:05Z","outcome":"interrupted","plan_digest":"","changed":0,"unchanged":0,"already_done":0,"done_earlier":0,"failed":0,"skipped":0,"not_started":0,"notified":1,"interrupted":true,"resumed":false,"plan_finished":false,"duration_ms":0,"report":"","verified":false,"did_not_end_as_planned":0,"not_as_planned":[]}`,
		`{"type":"error","time":"2025-01-02T03:04:05Z","error_kind":"stale","message":` + mustJSON(t, stale.Error()) + `,"exit_code":3,"stale":[{"address":"file[/a]","property":"content","then":"(3 bytes, sha256:aa…)","now":"(4 bytes, sha256:bb…)","planned":"update","needed":"update"}],"diagnostics":[]}`,
		`{"type":"error","time":"2025-01-02T03:04:05Z","error_kind":"lock_held","message":` + mustJSON(t, held.Error()) + `,"exit_code":4,"lock_holder":{"pid":42,"user":"root","hostname":"","since":"2025-01-02T03:04:05Z","path":"/state/apply.lock","host_wide":false,"state_dir":""},"diagnostics":[]}`,
		`{"type":"error","time":"2025-01-02T03:04:05Z","error_kind":"digest_mismatch","message":"digest differs","exit_code":1,"diagnostics":[]}`,
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
	ew.Error("", errors.New("x"), "x", 1, nil)
	ew.Error("", errors.New("y"), "y", 1, nil)
	if ew.Err() == nil || w.n != 1 {
		t.Errorf("err %v after %d writes", ew.Err(), w.n)
	}
}

func TestEventWriterResumedApply(t *testing.T) {
	var buf bytes.Buffer
	fixed := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ew := NewEventWriter(&buf, func() time.Time { return fixed })
	r := &plan.Resource{Address: "execute[migrate]", Kind: "run"}
	ew.Warning(&apply.JournalDamage{Path: "/state/journal/j.jsonl", Offset: 100, Bytes: 12})
	ew.Resumed(r, apply.ResourceReport{Address: r.Address, Kind: "run", Outcome: apply.OutcomeDoneEarlier, Reason: "changed by an earlier apply of this plan at 2025-01-02T03:00:00Z; not done again"})
	ew.Summary(&apply.Report{Resumed: true, PlanFinished: true, DoneEarlier: 2, Notified: []apply.ResourceReport{
		{Address: "execute[reload]", Kind: "run", Outcome: apply.OutcomeDoneEarlier},
	}})
	applied := &apply.AlreadyAppliedError{PlanDigest: "sha256:abc", At: fixed}
	ew.Error("", applied, applied.Error(), 6, nil)

	evs := decodeEvents(t, buf.Bytes())
	if got, want := eventTypes(evs), []string{EventDiagnostic, EventDoneEarlier, EventSummary, EventError}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q (a run done earlier is not a notification fired in this apply)", got, want)
	}
	d := evs[0]["diagnostic"].(map[string]any)
	if d["severity"] != "warning" || d["kind"] != KindJournal || !strings.Contains(d["detail"].(string), "/state/journal/j.jsonl ends with 12 bytes") {
		t.Errorf("warning: %v", d)
	}
	if e := evs[1]; e["address"] != "execute[migrate]" || !strings.HasPrefix(e["reason"].(string), "changed by an earlier apply") {
		t.Errorf("done_earlier: %v", e)
	}
	if s := evs[2]; s["resumed"] != true || s["plan_finished"] != true || s["done_earlier"].(float64) != 2 || s["notified"].(float64) != 0 {
		t.Errorf("summary: %v", s)
	}
	if e := evs[3]; e["error_kind"] != KindAlreadyApplied || e["exit_code"].(float64) != 6 {
		t.Errorf("error: %v", e)
	}
}
