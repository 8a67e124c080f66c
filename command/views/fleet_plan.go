package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// FleetPlanData is what fleet plan and fleet show print: a bundle's
// manifest and its hosts' plans, decoded.
type FleetPlanData struct {
	Manifest *fleet.Manifest
	// Plans are the hosts' plans, by alias (hosts planned: changes, no
	// changes, error).
	Plans map[string]*plan.Plan
	// Digest is the bundle's digest; "" for a fleet plan not saved.
	Digest    string
	Signature *SignatureInfo
	// SavedTo is the bundle written (fleet plan -out).
	SavedTo string
	// MaxBytes bounds the Markdown (DefaultMarkdownBytes when 0).
	MaxBytes int
}

// FleetPlan is the view of fleet plan (progress, then the review) and
// fleet show (the review).
type FleetPlan interface {
	fleet.PlanHooks
	Show(d FleetPlanData, diags diag.Diagnostics) error
}

// NewFleetPlan returns the view for the chosen output. progress prints a
// line per host as it is planned (fleet plan, text only).
func NewFleetPlan(v *View, asJSON, markdown, progress bool) FleetPlan {
	switch {
	case asJSON:
		return &fleetPlanJSON{v: v}
	case markdown:
		return &fleetPlanMarkdown{v: v}
	}
	return &fleetPlanText{v: v, progress: progress}
}

// ChangesText is the text of a plan's changes with nothing that names its
// host: what RenderText prints, without colour, digest or its first line
// ("toque will perform the following actions on HOST:"). Two hosts whose
// changes are identical have the same text; it is what fleet groups by.
func ChangesText(p *plan.Plan, reg *resources.Registry) (string, error) {
	var buf bytes.Buffer
	if err := RenderText(&buf, p, RenderOptions{Registry: reg, NoDigest: true}); err != nil {
		return "", err
	}
	s := buf.String()
	if first, rest, ok := strings.Cut(s, "\n"); ok && strings.HasPrefix(first, "toque will perform the following actions on ") {
		s = strings.TrimLeft(rest, "\n")
	}
	return s, nil
}

func (v *View) fleetChanges(p *plan.Plan) (string, error) { return ChangesText(p, v.Registry) }

// fleetReview is what every rendering of a fleet plan says.
type fleetReview struct {
	classes   []fleet.Class
	noChanges []string
	errored   []failGroup
	unreached []failGroup
	renderErr map[string]error
	total     int
}

func (v *View) review(d FleetPlanData) fleetReview {
	r := fleetReview{total: len(d.Manifest.Hosts)}
	var changed []string
	var errored, unreached []fleet.HostEntry
	for _, h := range d.Manifest.Hosts {
		switch h.Status {
		case fleet.StatusChanges:
			if d.Plans[h.Alias] != nil {
				changed = append(changed, h.Alias)
			}
		case fleet.StatusNoChanges:
			r.noChanges = append(r.noChanges, h.Alias)
		case fleet.StatusUnreachable:
			unreached = append(unreached, h)
		default:
			errored = append(errored, h)
		}
	}
	r.errored, r.unreached = groupFailures(errored), groupFailures(unreached)
	r.classes, r.renderErr = fleet.GroupChanges(changed, func(alias string) (string, error) {
		return v.fleetChanges(d.Plans[alias])
	})
	return r
}

// failGroup is hosts that could not be planned for the same reason.
type failGroup struct {
	hosts           []string
	failure, detail string
}

// groupFailures puts hosts with the same failure and the same words
// together, in the order of their first host.
func groupFailures(es []fleet.HostEntry) []failGroup {
	var out []failGroup
	index := map[[2]string]int{}
	for _, e := range es {
		k := [2]string{e.Failure, e.Error}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, failGroup{failure: e.Failure, detail: e.Error})
		}
		out[i].hosts = append(out[i].hosts, e.Alias)
	}
	return out
}

func (r fleetReview) failedHosts(gs []failGroup) int {
	n := 0
	for _, g := range gs {
		n += len(g.hosts)
	}
	return n
}

// headline is the review's first sentence.
func (r fleetReview) headline() string {
	var parts []string
	changed := 0
	for _, c := range r.classes {
		changed += len(c.Hosts)
	}
	if changed > 0 {
		kinds := ""
		if len(r.classes) > 1 {
			kinds = fmt.Sprintf(" (%d different sets of changes)", len(r.classes))
		}
		parts = append(parts, fmt.Sprintf("%s with changes%s", hostCount(changed), kinds))
	}
	if n := len(r.noChanges); n > 0 {
		parts = append(parts, fmt.Sprintf("%s without changes", hostCount(n)))
	}
	if n := r.failedHosts(r.errored) + len(r.renderErr); n > 0 {
		parts = append(parts, fmt.Sprintf("%s whose plan failed", hostCount(n)))
	}
	if n := r.failedHosts(r.unreached); n > 0 {
		parts = append(parts, fmt.Sprintf("%s unreachable", hostCount(n)))
	}
	if len(parts) == 0 {
		return "No hosts."
	}
	return fmt.Sprintf("Fleet plan of %s: %s.", hostCount(r.total), strings.Join(parts, ", "))
}

func hostCount(n int) string {
	if n == 1 {
		return "1 host"
	}
	return fmt.Sprintf("%d hosts", n)
}

// hostList is aliases for a line: all of them up to max, then how many
// more.
func hostList(aliases []string, max int) string {
	esc := make([]string, 0, min(len(aliases), max))
	for i, a := range aliases {
		if i == max {
			return strings.Join(esc, ", ") + fmt.Sprintf(", … and %d more", len(aliases)-max)
		}
		esc = append(esc, EscapeLine(a))
	}
	return strings.Join(esc, ", ")
}

// classTitle says who a class is: the largest "N hosts will make the same
// changes", an outlier "1 host differs".
func classTitle(i int, c fleet.Class, classes []fleet.Class) string {
	switch {
	case len(classes) == 1 && len(c.Hosts) == 1:
		return "1 host has changes"
	case len(classes) == 1:
		return fmt.Sprintf("%d hosts, the same changes", len(c.Hosts))
	case i == 0 && len(c.Hosts) > 1:
		return fmt.Sprintf("%d hosts, the same changes", len(c.Hosts))
	case len(c.Hosts) == 1:
		return "1 host differs"
	}
	return fmt.Sprintf("%d hosts differ, the same way", len(c.Hosts))
}

// fleetPlanText prints progress lines, then the review.
type fleetPlanText struct {
	v        *View
	progress bool
	mu       sync.Mutex
	warned   map[string][]string // warning text → hosts
}

func (t *fleetPlanText) HostPlanned(e fleet.HostEntry, p *plan.Plan, stderr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := strings.TrimSpace(stderr); w != "" && e.Status != fleet.StatusError {
		if t.warned == nil {
			t.warned = map[string][]string{}
		}
		t.warned[w] = append(t.warned[w], e.Alias)
	}
	if !t.progress {
		return
	}
	pt := newPainter(t.v.Color)
	fmt.Fprintf(t.v.Streams.Stdout, "%s: %s\n", pt.bold(EscapeLine(e.Alias)), hostStatusLine(e, p))
}

// hostStatusLine is one host's planning outcome in a few words.
func hostStatusLine(e fleet.HostEntry, p *plan.Plan) string {
	switch e.Status {
	case fleet.StatusChanges:
		c := p.Counts()
		return fmt.Sprintf("%d to create, %d to update, %d to delete, %d to run", c.Create, c.Update, c.Delete, c.Run)
	case fleet.StatusNoChanges:
		return "no changes"
	case fleet.StatusUnreachable:
		return "unreachable (" + EscapeLine(e.Failure) + "): " + EscapeLine(firstLine(e.Error))
	}
	return "planning failed (" + EscapeLine(e.Failure) + "): " + EscapeLine(firstLine(e.Error))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func (t *fleetPlanText) Show(d FleetPlanData, diags diag.Diagnostics) error {
	t.v.Diagnostics(diags)
	if d.Manifest == nil {
		return nil
	}
	w := &errWriter{w: t.v.Streams.Stdout}
	pt := newPainter(t.v.Color)
	r := t.v.review(d)
	if t.progress && len(d.Manifest.Hosts) > 0 {
		w.printf("\n")
	}
	t.mu.Lock()
	warned := t.warned
	t.mu.Unlock()
	if len(warned) > 0 {
		keys := make([]string, 0, len(warned))
		for k := range warned {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.printf("%s %s:\n%s\n\n", pt.update("Warning from"), hostList(warned[k], 10), indentLines(Escape(k), "  "))
		}
	}
	w.printf("%s\n", pt.bold(r.headline()))
	for i, c := range r.classes {
		w.printf("\n%s: %s\n\n", pt.bold(classTitle(i, c, r.classes)), hostList(c.Hosts, 20))
		w.printf("%s", indentLines(c.Text, "  "))
	}
	if len(r.noChanges) > 0 {
		w.printf("\n%s: %s\n", pt.bold("No changes"), hostList(r.noChanges, 20))
	}
	if len(r.errored) > 0 || len(r.renderErr) > 0 {
		w.printf("\n%s\n", pt.del(pt.bold("Planning failed:")))
		for _, g := range r.errored {
			w.printf("  %s: %s\n", hostList(g.hosts, 20), indentRest(Escape(g.detail), "    "))
		}
		for _, a := range sortedErrKeys(r.renderErr) {
			w.printf("  %s: cannot show its plan: %s\n", EscapeLine(a), EscapeLine(r.renderErr[a].Error()))
		}
	}
	if len(r.unreached) > 0 {
		w.printf("\n%s\n", pt.del(pt.bold("Unreachable:")))
		for _, g := range r.unreached {
			w.printf("  %s: %s: %s\n", hostList(g.hosts, 20), EscapeLine(g.failure), indentRest(Escape(g.detail), "    "))
		}
	}
	if d.Digest != "" {
		w.printf("\nFleet plan digest: %s\n", EscapeLine(d.Digest))
		if line := d.Signature.line(); line != "" {
			w.printf("%s\n", line)
		}
	}
	if d.SavedTo != "" {
		w.printf("Saved the fleet plan to %s. To apply exactly these plans: toque fleet apply %s\n", EscapeLine(d.SavedTo), EscapeLine(ShellQuote(d.SavedTo)))
	}
	return w.err
}

func sortedErrKeys(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// indentLines puts ind before every non-empty line of s.
func indentLines(s, ind string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString(ind)
		}
		b.WriteString(l)
	}
	return b.String()
}

// fleetPlanMarkdown prints the review as Markdown for a pull request: one
// section per set of identical changes.
type fleetPlanMarkdown struct{ v *View }

func (m *fleetPlanMarkdown) HostPlanned(fleet.HostEntry, *plan.Plan, string) {}

func (m *fleetPlanMarkdown) Show(d FleetPlanData, diags diag.Diagnostics) error {
	m.v.Diagnostics(diags)
	if d.Manifest == nil {
		return nil
	}
	r := m.v.review(d)
	limit := d.MaxBytes
	if limit <= 0 {
		limit = DefaultMarkdownBytes
	}
	var head, tail bytes.Buffer
	fmt.Fprintf(&head, "### toque fleet plan: %s\n\n", mdText(strings.TrimSuffix(r.headline(), ".")))
	if d.Digest != "" {
		fmt.Fprintf(&head, "Fleet plan digest: %s", mdCode(d.Digest))
		if line := d.Signature.line(); line != "" {
			fmt.Fprintf(&head, " · %s", mdText(line))
		}
		head.WriteString("\n\n")
	}
	if len(r.errored) > 0 || len(r.unreached) > 0 || len(r.renderErr) > 0 {
		tail.WriteString("#### Hosts without a plan\n\n| host | status | why |\n| --- | --- | --- |\n")
		for _, g := range r.errored {
			fmt.Fprintf(&tail, "| %s | plan failed (%s) | %s |\n", mdHosts(g.hosts), mdText(g.failure), mdCode(firstLine(g.detail)))
		}
		for _, a := range sortedErrKeys(r.renderErr) {
			fmt.Fprintf(&tail, "| %s | cannot be shown | %s |\n", mdCode(a), mdCode(r.renderErr[a].Error()))
		}
		for _, g := range r.unreached {
			fmt.Fprintf(&tail, "| %s | unreachable (%s) | %s |\n", mdHosts(g.hosts), mdText(g.failure), mdCode(firstLine(g.detail)))
		}
		tail.WriteString("\n")
	}
	if len(r.noChanges) > 0 {
		fmt.Fprintf(&tail, "**No changes** on %s: %s\n", hostCount(len(r.noChanges)), mdHosts(r.noChanges))
	}
	out := head.Bytes()
	left := 0
	for i, c := range r.classes {
		var sec bytes.Buffer
		fmt.Fprintf(&sec, "#### %s\n\n", mdText(classTitle(i, c, r.classes)))
		fmt.Fprintf(&sec, "<details><summary>%s</summary>\n\n%s\n\n</details>\n\n", mdText(hostCount(len(c.Hosts))), mdHosts(c.Hosts))
		sec.WriteString(mdFence("", strings.TrimRight(c.Text, "\n")))
		sec.WriteString("\n")
		if len(out)+sec.Len()+tail.Len() > limit {
			left = len(r.classes) - i
			break
		}
		out = append(out, sec.Bytes()...)
	}
	if left > 0 {
		out = append(out, fmt.Sprintf("_%d more set(s) of changes left out to stay under %d bytes: run_ %s _to see them._\n\n", left, limit, mdCode("toque fleet show "+d.SavedTo))...)
	}
	out = append(out, tail.Bytes()...)
	if len(out) > limit {
		return fmt.Errorf("the fleet plan's summary alone is %d bytes, over -max-bytes=%d", len(out), limit)
	}
	_, err := m.v.Streams.Stdout.Write(out)
	return err
}

// mdHosts lists aliases as code spans.
func mdHosts(aliases []string) string {
	parts := make([]string, len(aliases))
	for i, a := range aliases {
		parts[i] = mdCode(a)
	}
	return strings.Join(parts, ", ")
}

// fleetPlanJSON prints one JSON document: the manifest, and the hosts
// grouped by identical changes (docs/fleet.md).
type fleetPlanJSON struct{ v *View }

func (j *fleetPlanJSON) HostPlanned(fleet.HostEntry, *plan.Plan, string) {}

// FleetPlanJSONVersion is the version of fleet plan -json's document.
const FleetPlanJSONVersion = "1.0"

func (j *fleetPlanJSON) Show(d FleetPlanData, diags diag.Diagnostics) error {
	j.v.Diagnostics(diags)
	type class struct {
		Hosts   []string `json:"hosts"`
		Changes string   `json:"changes"`
	}
	doc := struct {
		FormatVersion string          `json:"format_version"`
		Digest        string          `json:"digest"`
		Signer        string          `json:"signer"`
		Manifest      *fleet.Manifest `json:"manifest"`
		Classes       []class         `json:"classes"`
		Diagnostics   []any           `json:"diagnostics"`
	}{FormatVersion: FleetPlanJSONVersion, Digest: d.Digest, Manifest: d.Manifest, Classes: []class{}, Diagnostics: []any{}}
	if d.Signature != nil && d.Signature.Signed {
		doc.Signer = d.Signature.Fingerprint
	}
	if d.Manifest != nil {
		r := j.v.review(d)
		for _, c := range r.classes {
			doc.Classes = append(doc.Classes, class{Hosts: c.Hosts, Changes: c.Text})
		}
	}
	for _, dg := range j.v.JSONDiagnostics(diags) {
		doc.Diagnostics = append(doc.Diagnostics, dg)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = j.v.Streams.Stdout.Write(append(b, '\n'))
	return err
}
