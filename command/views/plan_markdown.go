package views

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"net/url"
	"strings"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/guard"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// DefaultMarkdownBytes is the Markdown output's size limit when
// MarkdownOptions.MaxBytes is 0: under GitHub's 65,536-character limit for
// a comment, with room to spare.
const DefaultMarkdownBytes = 60000

// MarkdownMarker starts the hidden HTML comment that opens every Markdown
// rendering of a plan; CI scripts find an earlier comment by it.
const MarkdownMarker = "<!-- toque-plan "

// ErrMarkdownTooSmall is returned by RenderMarkdown when MaxBytes cannot hold
// even the title, the summary and the address lists.
var ErrMarkdownTooSmall = errors.New("the Markdown size limit is too small")

// MarkdownOptions controls RenderMarkdown.
type MarkdownOptions struct {
	// ChangesOnly leaves out unchanged and skipped resources: their address
	// lists and their details (the summary line still counts them).
	ChangesOnly bool
	// MaxBytes bounds the output; 0 means DefaultMarkdownBytes. When the
	// whole rendering does not fit, whole <details> sections are dropped
	// from the end, and the output says so.
	MaxBytes int
	// PlanFile is the plan file's name, used in the hint shown when details
	// were left out ("run `toque show plan.out`"); "" words it generically.
	PlanFile string
	// Digest is the plan's digest when the caller has it already (from
	// Encode); empty means compute it once.
	Digest string
	// Color is ignored: Markdown has no colours. It is here so callers can
	// pass the same choices to every renderer.
	Color bool
	// Registry holds this build's resource types. Required.
	Registry *resources.Registry
	// Signature says who signed the plan; nil says nothing about it.
	Signature *SignatureInfo
	// Unfinished are the applies on this host that stopped part-way
	// (plan only): a warning under the title says so.
	Unfinished []apply.UnfinishedApply
}

// RenderMarkdown writes p as GitHub-flavoured Markdown for a pull-request
// comment: a hidden marker comment (host, format version, digest, whether
// the output was cut), a status title, a warning when anything is deleted,
// the summary line and the affected addresses grouped by action, the plan's
// digest, then one collapsible <details> section per resource with its
// property changes, content diffs, guard verdicts and notifications.
//
// The output never exceeds MaxBytes. When it must cut, the head (marker,
// title, warning, summary, address lists, digest) is kept whole and whole
// <details> sections are dropped from the end, with a visible note. A limit
// too small for the head is an error wrapping ErrMarkdownTooSmall, and
// nothing is written. Sensitive values are shown only as "(sensitive)".
//
// What it shows of a resource is derived from the values apply uses
// (plan.Show). Every string that came from recipes, the host or the plan
// file (names, values, content, commands, reasons) is written only inside
// a code span, a fenced code block or an HTML-escaped <code> element, with
// control characters and bidirectional overrides escaped: it cannot become
// a link, an image, HTML, a mention or a new block in the comment.
func RenderMarkdown(w io.Writer, p *plan.Plan, o MarkdownOptions) error {
	if p == nil {
		return errors.New("render Markdown: no plan")
	}
	limit := o.MaxBytes
	if limit == 0 {
		limit = DefaultMarkdownBytes
	}
	if limit < 0 {
		return fmt.Errorf("%w: %d bytes is not a size", ErrMarkdownTooSmall, limit)
	}

	if o.Digest == "" {
		o.Digest = p.Digest()
	}
	reg, err := registryFor(p, o.Registry)
	if err != nil {
		return err
	}
	o.Registry = reg
	head := markdownHead(p, o)
	sections := markdownSections(p, o)

	// Sizes first, so that finding the longest prefix of sections that
	// fits costs one pass, not one rendering per candidate.
	size := func(kept int) int {
		n := len(markdownMarker(p, o.Digest, kept < len(sections))) + len(head)
		dropped := 0
		for i, s := range sections {
			if i < kept {
				n += 1 + len(s.text)
			} else {
				dropped += s.resources
			}
		}
		if kept < len(sections) {
			n += 1 + len(truncationNote(dropped, len(sections)-kept, limit, o.PlanFile))
		}
		return n
	}
	kept := len(sections)
	if size(kept) > limit {
		// Walk down from the full output, keeping running totals.
		total := len(head)
		for _, s := range sections {
			total += 1 + len(s.text)
		}
		dropped := 0
		marker := len(markdownMarker(p, o.Digest, true))
		for kept > 0 {
			kept--
			total -= 1 + len(sections[kept].text)
			dropped += sections[kept].resources
			if marker+total+1+len(truncationNote(dropped, len(sections)-kept, limit, o.PlanFile)) <= limit {
				break
			}
		}
		if size(kept) > limit {
			need := size(0)
			return fmt.Errorf("%w: %d bytes cannot hold the plan's title, summary and address lists, which need %d bytes; raise the limit (-max-bytes) to at least %d",
				ErrMarkdownTooSmall, limit, need, need)
		}
	}

	var b bytes.Buffer
	b.WriteString(markdownMarker(p, o.Digest, kept < len(sections)))
	b.WriteString(head)
	dropped := 0
	for i, s := range sections {
		if i < kept {
			b.WriteString("\n")
			b.WriteString(s.text)
		} else {
			dropped += s.resources
		}
	}
	if kept < len(sections) {
		b.WriteString("\n")
		b.WriteString(truncationNote(dropped, len(sections)-kept, limit, o.PlanFile))
	}
	if b.Len() > limit {
		return fmt.Errorf("render Markdown: %d bytes rendered for a limit of %d (a bug in the size accounting)", b.Len(), limit)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// mdSection is one <details> section and how many resources it covers.
type mdSection struct {
	text      string
	resources int
}

func markdownMarker(p *plan.Plan, digest string, truncated bool) string {
	return fmt.Sprintf("%shost=%s format=%d digest=%s truncated=%t -->\n",
		MarkdownMarker, url.PathEscape(p.Host.Hostname), p.FormatVersion, digest, truncated)
}

func truncationNote(resourcesLeft, sections, limit int, planFile string) string {
	what := fmt.Sprintf("%d resources' details were", resourcesLeft)
	if resourcesLeft == 1 {
		what = "1 resource's details were"
	}
	if resourcesLeft == 0 {
		what = fmt.Sprintf("%d sections were", sections)
	}
	show := "run `toque show` on the plan file"
	if planFile != "" {
		show = "run " + mdCode("toque show "+ShellQuote(planFile))
	}
	return fmt.Sprintf("_%s left out to stay under %d bytes; %s for all of them._\n", what, limit, show)
}

// markdownHead is the part that is never cut: title, warnings, summary,
// address lists and digest.
func markdownHead(p *plan.Plan, o MarkdownOptions) string {
	var b strings.Builder
	c := p.Counts()
	hostName := p.Host.Hostname
	if hostName == "" {
		hostName = "this host"
	}

	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.Create, "to create")
	add(c.Update, "to update")
	add(c.Delete, "to delete")
	add(c.Run, "to run")
	status := "no changes"
	if len(parts) > 0 {
		status = strings.Join(parts, ", ")
	}
	if p.Errored {
		fmt.Fprintf(&b, "## toque plan for %s failed\n\n", mdCode(hostName))
		b.WriteString("> [!CAUTION]\n> Planning failed part-way: this plan is incomplete and cannot be applied. Fix the errors below and plan again.\n\n")
		if len(p.Errors) > 0 {
			b.WriteString(mdFence("text", Escape(strings.Join(p.Errors, "\n"))))
			b.WriteString("\n")
		}
	} else {
		fmt.Fprintf(&b, "## toque plan for %s: %s\n\n", mdCode(hostName), status)
	}
	if p.Policy != "" || p.LockRevision != "" {
		fmt.Fprintf(&b, "Policy %s, lock revision %s.\n\n", mdCode(p.Policy), mdCode(p.LockRevision))
	}
	renderUnfinishedMarkdown(&b, o.Unfinished)
	if c.Delete > 0 {
		noun := "resources"
		if c.Delete == 1 {
			noun = "resource"
		}
		fmt.Fprintf(&b, "> [!WARNING]\n> This plan **deletes %d %s** on %s. Check the **delete** list below before you approve it.\n\n", c.Delete, noun, mdCode(hostName))
	}
	fmt.Fprintf(&b, "**Plan: %d to create, %d to update, %d to delete, %d to run, %d skipped, %d unchanged%s.**\n\n",
		c.Create, c.Update, c.Delete, c.Run, c.Skip, c.NoOp, deferredCounts(c))
	if c.DecidedAtApply+c.KnownAtApply > 0 {
		b.WriteString("> [!NOTE]\n> Some of this plan is decided at apply: a guard written `lazy(…)` runs right before its resource converges, and a value written `lazy(…)` is evaluated then, because an earlier resource of this plan could change what it reads. The plan shows what each would do if its guards let it, and the expression of each value, not the value.")
		if awaitsAny(p) {
			b.WriteString(" A value shown `" + plan.KnownAtApplyByType + "` is one its resource type knows only once an earlier resource of this plan has run (the version of a package that only a repository this plan adds offers): the resource is read and planned again right before it converges, and fails if it is still missing.")
		}
		b.WriteString("\n\n")
	}

	groups := []struct {
		label string
		kind  resources.Kind
	}{
		{"create", resources.Create},
		{"update", resources.Update},
		{"delete", resources.Delete},
		{"run", resources.Run},
		{"skip", resources.Skip},
	}
	listed := false
	for _, g := range groups {
		if g.kind == resources.Skip && o.ChangesOnly {
			continue
		}
		var addrs []string
		for _, a := range p.AddressesOf(g.kind) {
			addrs = append(addrs, mdCode(a))
		}
		if len(addrs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- **%s** (%d): %s\n", g.label, len(addrs), strings.Join(addrs, ", "))
		listed = true
	}
	for _, g := range []struct {
		label string
		addrs []string
	}{{"decided at apply", p.DecidedAtApply()}, {"values known at apply", p.KnownAtApply()}} {
		if len(g.addrs) == 0 {
			continue
		}
		var addrs []string
		for _, a := range g.addrs {
			addrs = append(addrs, mdCode(a))
		}
		fmt.Fprintf(&b, "- **%s** (%d): %s\n", g.label, len(addrs), strings.Join(addrs, ", "))
		listed = true
	}
	if listed {
		b.WriteString("\n")
	}
	markdownData(&b, p, o.Registry)
	fmt.Fprintf(&b, "Plan digest: %s\n", mdCode(o.Digest))
	if sig := o.Signature; sig != nil {
		switch {
		case !sig.Signed:
			b.WriteString("\nNot signed.\n")
		case sig.Trusted && sig.Comment != "":
			fmt.Fprintf(&b, "\nSigned by key %s (%s), one of the trusted keys.\n", mdCode(sig.Fingerprint), mdCode(sig.Comment))
		case sig.Trusted:
			fmt.Fprintf(&b, "\nSigned by key %s, one of the trusted keys.\n", mdCode(sig.Fingerprint))
		default:
			fmt.Fprintf(&b, "\nSigned by key %s.\n", mdCode(sig.Fingerprint))
		}
	}
	return b.String()
}

// markdownSections renders one <details> section per resource with
// something to show, in plan order, and one for the unchanged resources.
func markdownSections(p *plan.Plan, o MarkdownOptions) []mdSection {
	var out []mdSection
	var unchanged []string
	notified := func(slot int, before bool) {
		for _, nr := range p.RunsAtStep(slot, 0, before) {
			if nr.Kind == resources.NoOp || (nr.Kind == resources.Skip && o.ChangesOnly) {
				continue
			}
			out = append(out, mdSection{text: markdownResource(p.ShowNotified(o.Registry, nr)), resources: 1})
		}
	}
	tree := p.Tree()
	gv := p.Groups()
	for i, r := range p.Resources {
		if r.Steps() > 1 && (r.AnyWork() || tree.ChildWork(i)) {
			// One section per action that works, each with the notified
			// runs in its turn.
			for si := 0; si < r.Steps(); si++ {
				for _, nr := range p.RunsAtStep(i, si, true) {
					out = append(out, mdSection{text: markdownResource(p.ShowNotified(o.Registry, nr)), resources: 1})
				}
				if view := r.StepView(si); view.Kind.IsWork() || (view.Kind == resources.Skip && !o.ChangesOnly) {
					out = append(out, markdownGrouped(gv, p, o.Registry, view)...)
				} else if view.Kind == resources.NoOp && tree.StepChildWork(i, si) {
					out = append(out, mdSection{text: markdownThroughChildren(view, si, r.Steps()), resources: 1})
				}
				for _, nr := range p.RunsAtStep(i, si, false) {
					out = append(out, mdSection{text: markdownResource(p.ShowNotified(o.Registry, nr)), resources: 1})
				}
			}
			continue
		}
		notified(i, true)
		switch r.Kind {
		case resources.Create, resources.Update, resources.Delete, resources.Run:
		case resources.Skip:
			if o.ChangesOnly {
				notified(i, false)
				continue
			}
		default:
			if r.Kind == resources.NoOp && tree.StepChildWork(i, 0) {
				// Nothing of its own to do, but its children change: it
				// counts as changed (its notifications fire).
				out = append(out, mdSection{text: markdownThroughChildren(r, 0, 1), resources: 1})
				notified(i, false)
				continue
			}
			if r.Action == "nothing" && p.HasNotifiedWork(r.Address) {
				// Counted, and shown, by its notified run.
				notified(i, false)
				continue
			}
			if r.Action == "nothing" && p.Why(r) == plan.ReasonNotNotified {
				unchanged = append(unchanged, mdCode(r.Address)+": action nothing, nothing notifies it in this plan")
			} else {
				unchanged = append(unchanged, mdCode(r.Address))
			}
			notified(i, false)
			continue
		}
		out = append(out, markdownGrouped(gv, p, o.Registry, r)...)
		notified(i, false)
	}
	notified(len(p.Resources), false)
	if len(unchanged) > 0 && !o.ChangesOnly {
		var b strings.Builder
		noun := "resources"
		if len(unchanged) == 1 {
			noun = "resource"
		}
		fmt.Fprintf(&b, "<details><summary>%d unchanged %s</summary>\n\n", len(unchanged), noun)
		for _, a := range unchanged {
			fmt.Fprintf(&b, "- %s\n", a)
		}
		b.WriteString("\n</details>\n")
		out = append(out, mdSection{text: b.String(), resources: len(unchanged)})
	}
	return out
}

func markdownSign(k resources.Kind) string {
	switch k {
	case resources.Create:
		return "+"
	case resources.Update:
		return "~"
	case resources.Delete:
		return "-"
	case resources.Run:
		return "!"
	case resources.Skip:
		return "?"
	}
	return " "
}

// markdownHeadline words what happens to a resource, for its <summary>.
func markdownHeadline(k resources.Kind) string {
	switch k {
	case resources.Create:
		return "will be created"
	case resources.Update:
		return "will be updated in place"
	case resources.Delete:
		return "will be deleted"
	case resources.Run:
		return "will run"
	case resources.Skip:
		return "skipped"
	}
	return "is unchanged"
}

// htmlCode is s as an HTML <code> element, on one line, escaped.
func htmlCode(s string) string {
	return "<code>" + html.EscapeString(EscapeLine(s)) + "</code>"
}

// markdownThroughChildren renders a resource (step si of n) whose own step
// is a no-op but whose child resources change; they follow it.
func markdownThroughChildren(r *plan.Resource, si, n int) string {
	var b strings.Builder
	label := ""
	if n > 1 {
		label = fmt.Sprintf(" (action %s, %d of %d)", r.Action, si+1, n)
	}
	fmt.Fprintf(&b, "<details><summary><code>~</code> %s%s changes through its child resources below</summary>\n\n", htmlCode(r.Address), html.EscapeString(EscapeLine(label)))
	if r.Source.Filename != "" {
		fmt.Fprintf(&b, "Declared at %s; action %s.\n\n", mdCode(fmt.Sprintf("%s:%d", r.Source.Filename, r.Source.Line)), mdCode(r.Action))
	}
	if len(r.Notifications) > 0 {
		b.WriteString("**Notifies**\n\n")
		for _, nt := range r.Notifications {
			fmt.Fprintf(&b, "- %s with %s, %s\n", mdCode(nt.Target), mdCode(nt.Action), mdTiming(nt.Timing))
		}
		b.WriteString("\n")
	}
	b.WriteString("</details>\n")
	return b.String()
}

// markdownResource renders one resource's <details> section.
func markdownResource(s *plan.Shown) string {
	r := s.Resource
	var b strings.Builder
	head := markdownHeadline(r.Kind)
	if r.HasGuardAtApply() && r.Kind.IsWork() {
		head += ", unless a guard decided at apply skips it"
	}
	fmt.Fprintf(&b, "<details><summary><code>%s</code> %s %s", markdownSign(r.Kind), htmlCode(r.Address), head)
	if s.Why != "" {
		b.WriteString(": " + htmlCode(s.Why))
	}
	b.WriteString("</summary>\n\n")

	if r.Source.Filename != "" {
		fmt.Fprintf(&b, "Declared at %s; action %s.\n\n", mdCode(fmt.Sprintf("%s:%d", r.Source.Filename, r.Source.Line)), mdCode(r.Action))
	}
	if r.Sensitive {
		b.WriteString("_Sensitive resource: every value is hidden._\n\n")
	}
	for _, st := range s.Steps {
		fmt.Fprintf(&b, "Runs %s (%s).\n\n", mdCode(st.Label), mdCode(st.Source))
	}
	if s.UnknownType {
		fmt.Fprintf(&b, "_Type %s is not a resource type of this build of toque: apply refuses this plan._\n\n", mdCode(r.Type))
	}

	// Context (what the resource names or runs), then property changes,
	// in one diff block; content diffs, one block each.
	var props []string
	for _, cv := range s.Context {
		sign := "  "
		if r.Kind == resources.Create {
			sign = "+ "
		}
		if text, ok := multiline(cv.Value); ok {
			props = append(props, sign+EscapeLine(cv.Property)+" = <<EOT")
			props = append(props, prefixLines(sign+"    ", Escape(strings.TrimSuffix(text, "\n")))...)
			props = append(props, sign+"EOT")
			continue
		}
		props = append(props, sign+EscapeLine(cv.Property)+" = "+EscapeLine(cv.Value))
	}
	var diffs []plan.ShownChange
	for _, c := range s.Changes {
		if c.Diff != "" && !c.Sensitive {
			diffs = append(diffs, c)
			continue
		}
		props = append(props, propertyLines(r.Kind, c)...)
	}
	if len(s.Changes) > 0 || len(s.Unmanaged) > 0 {
		for _, u := range s.Unmanaged {
			props = append(props, "  # "+EscapeLine(u.Property)+": not set in the recipe, left as it is: "+EscapeLine(u.Value))
		}
	}
	if len(props) > 0 {
		b.WriteString(mdFence("diff", strings.Join(props, "\n")))
		b.WriteString("\n")
	}
	for _, c := range diffs {
		label := "**" + mdCode(c.Property) + "**"
		if c.Default {
			label += " (default)"
		}
		b.WriteString(label + ":\n\n")
		if c.DiffNote != "" {
			b.WriteString("_Note:_ " + mdCode(c.DiffNote) + "\n\n")
		}
		b.WriteString(mdFence("diff", Escape(strings.TrimRight(c.Diff, "\n"))))
		b.WriteString("\n")
	}

	if len(s.Lazy)+len(s.Awaits) > 0 {
		b.WriteString("**Known at apply**\n\n")
		for _, a := range s.Awaits {
			fmt.Fprintf(&b, "- %s = %s: the resource type knows it once it has %s, and reads and plans the resource again right before it converges\n", mdCode(a.Property), mdCode(plan.KnownAtApplyByType), EscapeLine(a.What))
			if len(a.After) > 0 {
				fmt.Fprintf(&b, "  - waits for %s\n", mdList(a.After))
			}
		}
		for _, l := range s.Lazy {
			fmt.Fprintf(&b, "- %s = %s, evaluated right before the resource converges (%s)\n", mdCode(l.Property), mdCode(l.KnownAtApply()), mdCode(l.Source))
			for _, rd := range l.Reads {
				fmt.Fprintf(&b, "  - reads %s = %s\n", mdCode(rd.Property), mdCode(rd.Value))
			}
			if len(l.After) > 0 {
				fmt.Fprintf(&b, "  - waits for %s\n", mdList(l.After))
			}
		}
		b.WriteString("\n")
	}
	if len(s.Guards) > 0 {
		b.WriteString("**Guards**\n\n")
		for _, g := range s.Guards {
			b.WriteString(markdownGuard(g))
		}
		b.WriteString("\n")
	}
	if len(r.Notifications) > 0 {
		b.WriteString("**Notifies**\n\n")
		for _, n := range r.Notifications {
			via := ""
			if n.Subscribe {
				via = " (declared by the target's subscribes)"
			}
			fmt.Fprintf(&b, "- %s with %s, %s%s\n", mdCode(n.Target), mdCode(n.Action), mdTiming(n.Timing), via)
		}
		b.WriteString("\n")
	}
	b.WriteString("</details>\n")
	return b.String()
}

// mdTiming is a notification's timing: the word for a timing toque knows,
// a code span for anything else.
func mdTiming(t string) string {
	switch t {
	case plan.TimingBefore, plan.TimingImmediately, plan.TimingDelayed:
		return t
	}
	return mdCode(t)
}

// propertyLines renders one property change as diff lines: "-"/"+" pairs
// for a value that changes, "+" for a new one, "!" for a hidden one. The
// marker is always in column 0; values are on one line, escaped.
func propertyLines(kind resources.Kind, c plan.ShownChange) []string {
	var lines []string
	suffix := ""
	if c.Default {
		suffix = "  # default"
	}
	prop := EscapeLine(c.Property)
	switch {
	case c.Sensitive:
		sign := "+"
		if kind == resources.Update && c.Before != "" {
			sign = "!"
		}
		after := plan.Sensitive
		if c.KnownAtApply {
			after = EscapeLine(c.After) // "(known at apply; sensitive)"
		}
		lines = append(lines, sign+" "+prop+" = "+after+suffix)
		return lines
	case kind == resources.Create || c.Before == "":
		lines = append(lines, "+ "+prop+" = "+EscapeLine(c.After)+suffix)
	default:
		lines = append(lines, "- "+prop+" = "+EscapeLine(c.Before))
		lines = append(lines, "+ "+prop+" = "+EscapeLine(c.After)+suffix)
	}
	if c.DiffNote != "" {
		lines = append(lines, "  # "+prop+": "+EscapeLine(c.DiffNote))
	}
	return lines
}

// markdownGuard renders one guard as a list item: its command in a code
// span, what it ran with in another, its output (if any) in a code block
// inside the item.
func markdownGuard(g plan.ShownGuard) string {
	var b strings.Builder
	verdict := guard.ConditionWord(g.Kind, g.Form, g.Passed)
	effect := ""
	if g.Decided {
		effect = " — **decided: skip**"
	}
	if g.AtApply {
		verdict = "— **decided at apply** (" + mdText(g.Now) + ")"
	}
	details := ""
	if g.Form != "expression" {
		if d := guardDetails(g); len(d) > 0 {
			details = " (" + mdCode(strings.Join(d, "; ")) + ")"
		}
	}
	fmt.Fprintf(&b, "- %s %s %s%s%s\n", mdCode(g.Kind), mdCode(g.Command), verdict, details, effect)
	if len(g.After) > 0 {
		fmt.Fprintf(&b, "  - waits for %s\n", mdList(g.After))
	}
	if out := strings.TrimRight(g.Output, "\n"); out != "" {
		for _, line := range strings.Split(strings.TrimSuffix(mdFence("text", Escape(out)), "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String()
}

// mdList is items as code spans, separated by commas.
func mdList(items []string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = mdCode(it)
	}
	return strings.Join(out, ", ")
}

// prefixLines splits s into lines, each starting with prefix.
func prefixLines(prefix, s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return lines
}

// mdFence puts body in a fenced code block, its fence longer than any run
// of backticks the body holds, so no content can close it early.
func mdFence(lang, body string) string {
	fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	return fence + lang + "\n" + body + "\n" + fence + "\n"
}

// mdCode is an inline code span holding s verbatim, whatever backticks it
// holds; line breaks, other control characters and bidirectional
// overrides are shown escaped (EscapeLine).
func mdCode(s string) string {
	s = EscapeLine(s)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") && strings.TrimSpace(s) != "") {
		s = " " + s + " "
	}
	if s == "" {
		s = " "
	}
	return fence + s + fence
}

// mdText escapes s for Markdown running text: no character of it can start
// emphasis, a link, HTML, an entity or a table cell, and control
// characters and bidirectional overrides are escaped. It is for toque's
// own words; text from outside goes in code spans (mdCode).
func mdText(s string) string {
	s = EscapeLine(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// awaitsAny reports whether a resource of p has a value its type knows
// only at apply (plan.Resource.Awaits).
func awaitsAny(p *plan.Plan) bool {
	for _, r := range p.Resources {
		if r != nil && len(r.Awaits) > 0 {
			return true
		}
	}
	return false
}

// markdownData lists the data blocks the plan read: what each read or
// ran, how long it took, its answer's shape and digest.
func markdownData(b *strings.Builder, p *plan.Plan, reg *resources.Registry) {
	if len(p.Data) == 0 {
		return
	}
	b.WriteString("Read at plan:\n\n")
	for _, d := range p.Data {
		if d == nil {
			continue
		}
		s := p.ShowData(reg, d)
		fmt.Fprintf(b, "- %s (%d ms): %s; answer: %s, %s\n", mdCode(d.Address), d.DurationMS, mdCode(s.Reads), mdText(s.Answer), mdCode(d.Digest))
	}
	b.WriteString("\n")
}
