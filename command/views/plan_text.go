package views

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/fatih/color"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// RenderOptions controls RenderText.
type RenderOptions struct {
	// Color writes ANSI colours. Nothing global is changed: the renderer
	// colours only when this is set.
	Color bool
	// SavedTo is the plan file the plan was written to, if any; the output
	// then ends with how to apply it.
	SavedTo string
	// Width wraps the summary's address lists; 0 means 80.
	Width int
	// Digest is the plan's digest when the caller has it already (from
	// Encode); empty means compute it, unless NoDigest is set.
	Digest string
	// NoDigest leaves the "Plan digest" line out (PlanOptions.NoDigest).
	NoDigest bool
	// Registry holds this build's resource types, whose schemas decide
	// defaults, sensitivity and what a resource is shown by. Required.
	Registry *resources.Registry
	// Signature says who signed the plan; nil says nothing about it.
	Signature *SignatureInfo
	// Unfinished are the applies on this host that stopped part-way
	// (plan only): the text ends with a warning that says so.
	Unfinished []apply.UnfinishedApply
}

// painter colours text when enabled, and is the identity otherwise.
type painter struct {
	create, update, del, run, skip, bold, faint, hunk func(a ...any) string
}

func newPainter(enabled bool) painter {
	mk := func(attrs ...color.Attribute) func(a ...any) string {
		if !enabled {
			return fmt.Sprint
		}
		c := color.New(attrs...)
		c.EnableColor()
		return c.SprintFunc()
	}
	return painter{
		create: mk(color.FgGreen),
		update: mk(color.FgYellow),
		del:    mk(color.FgRed),
		run:    mk(color.FgCyan),
		skip:   mk(color.FgMagenta),
		bold:   mk(color.Bold),
		faint:  mk(color.Faint),
		hunk:   mk(color.FgCyan),
	}
}

// symbol is the sign shown before a resource of kind k.
func (pt painter) symbol(k resources.Kind) string {
	switch k {
	case resources.Create:
		return pt.create("+")
	case resources.Update:
		return pt.update("~")
	case resources.Delete:
		return pt.del("-")
	case resources.Run:
		return pt.run("!")
	case resources.Skip:
		return pt.skip("?")
	}
	return " "
}

// RenderText writes p for reviewers, in Terraform's style: each resource
// with work, its changes and diffs, the summary, and the plan's digest
// (unless NoDigest).
// Unchanged resources are counted, not listed. What it shows of a resource
// is derived from the values apply uses (plan.Show); sensitive values are
// never shown; every string that came from recipes, the host or the plan
// file is escaped, so it cannot drive the reviewer's terminal.
func RenderText(w io.Writer, p *plan.Plan, o RenderOptions) error {
	pt := newPainter(o.Color)
	bw := &errWriter{w: w}
	reg, err := registryFor(p, o.Registry)
	if err != nil {
		return err
	}
	hostName := EscapeLine(p.Host.Hostname)
	if hostName == "" {
		hostName = "this host"
	}

	if p.Errored {
		bw.printf("%s\n", pt.del(pt.bold("Error: planning failed; this plan is incomplete and cannot be applied.")))
		for _, e := range p.Errors {
			bw.printf("  %s\n", indentRest(Escape(e), "  "))
		}
		bw.printf("\n")
	}

	var work, skipped []*plan.Resource
	for _, r := range p.Resources {
		switch {
		case r.AnyWork():
			work = append(work, r)
		case r.Kind == resources.Skip:
			skipped = append(skipped, r)
		}
	}

	if len(work) == 0 {
		if p.Errored {
			bw.printf("No changes could be planned on %s.\n", hostName)
		} else {
			bw.printf("%s\n", pt.bold(fmt.Sprintf("No changes. %s already matches the recipes%s.", hostName, policyNote(p))))
		}
		renderData(bw, pt, p, reg)
		gv := p.Groups()
		for _, r := range skipped {
			renderGrouped(bw, pt, gv, p, reg, r, "")
		}
	} else {
		bw.printf("toque will perform the following actions on %s%s:\n", pt.bold(hostName), policyNote(p))
		renderData(bw, pt, p, reg)
		tree := p.Tree()
		gv := p.Groups()
		for i, r := range p.Resources {
			for si := 0; si < r.Steps(); si++ {
				for _, nr := range p.RunsAtStep(i, si, true) {
					bw.printf("\n")
					renderResource(bw, pt, p.ShowNotified(reg, nr))
				}
				if view := r.StepView(si); view.Kind != resources.NoOp && view.Kind != "" {
					renderGrouped(bw, pt, gv, p, reg, view, actionLabel(r, si))
				} else if view.Kind == resources.NoOp && tree.StepChildWork(i, si) {
					// Nothing of its own to do, but its children change:
					// it counts as changed (its notifications fire).
					bw.printf("\n")
					renderThroughChildren(bw, pt, view, actionLabel(r, si))
				}
				for _, nr := range p.RunsAtStep(i, si, false) {
					bw.printf("\n")
					renderResource(bw, pt, p.ShowNotified(reg, nr))
				}
			}
		}
		for _, nr := range p.RunsAt(len(p.Resources), false) {
			bw.printf("\n")
			renderResource(bw, pt, p.ShowNotified(reg, nr))
		}
	}
	for _, r := range p.Resources {
		if r.Action == "nothing" && r.Kind == resources.NoOp && p.Why(r) == plan.ReasonNotNotified {
			bw.printf("\n  %s\n", pt.faint("# "+EscapeLine(r.Address)+": "+plan.ReasonNotNotified))
		}
	}

	bw.printf("\n")
	renderSummary(bw, pt, p, o.Width)
	if digest := o.Digest; digest != "" || !o.NoDigest {
		if digest == "" {
			digest = p.Digest()
		}
		bw.printf("\nPlan digest: %s\n", EscapeLine(digest))
	}
	if line := o.Signature.line(); line != "" {
		bw.printf("%s\n", line)
	}
	if o.SavedTo != "" && p.Errored {
		bw.printf("Saved the plan to %s; being incomplete, it cannot be applied.\n", EscapeLine(o.SavedTo))
	} else if o.SavedTo != "" {
		saved := EscapeLine(o.SavedTo)
		bw.printf("Saved the plan to %s. To apply exactly this plan: toque apply %s\n", saved, EscapeLine(ShellQuote(o.SavedTo)))
	}
	renderUnfinishedText(bw, pt, o.Unfinished)
	return bw.err
}

// registryFor is reg with the resource types written in HCL that p
// carries. A plan whose types cannot be rebuilt was refused when it was
// read; its resources of those types are then shown as of an unknown
// type. reg is this build's types: there is no default, since the
// schemas decide what is shown (a sensitive property is never).
func registryFor(p *plan.Plan, reg *resources.Registry) (*resources.Registry, error) {
	if reg == nil {
		return nil, errors.New("rendering a plan: no resource types to show it with")
	}
	if p != nil {
		if withTypes, err := p.TypeRegistry(reg); err == nil {
			return withTypes, nil
		}
	}
	return reg, nil
}

// errWriter remembers the first write error so rendering code stays
// linear; RenderText returns it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, a...)
}

func indentRest(s, ind string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+ind)
}

// headline words what happens to a resource and why; why is escaped.
func headline(r *plan.Resource, why string) string {
	addr := EscapeLine(r.Address)
	why = EscapeLine(why)
	if strings.HasPrefix(why, "notified by ") && r.Kind != resources.Run && r.Kind != resources.Skip {
		// A notified run: say why it happens.
		return strings.TrimSuffix(headline(&plan.Resource{Address: r.Address, Kind: r.Kind}, ""), " is unchanged") + ": " + why
	}
	unless := ""
	if r.HasGuardAtApply() {
		unless = ", unless a guard decided at apply skips it"
	}
	switch r.Kind {
	case resources.Create:
		return addr + " will be created" + unless
	case resources.Update:
		return addr + " will be updated in place" + unless
	case resources.Delete:
		return addr + " will be deleted" + unless
	case resources.Run:
		if why != "" {
			return addr + " will run" + unless + ": " + why
		}
		return addr + " will run" + unless
	case resources.Skip:
		if why != "" {
			return addr + " skipped: " + why
		}
		return addr + " skipped"
	}
	return addr + " is unchanged"
}

// actionLabel names the action of step si of a resource of several
// actions (" (action start, 2 of 2)"); "" for a resource of one.
func actionLabel(r *plan.Resource, si int) string {
	if r.Steps() < 2 {
		return ""
	}
	return fmt.Sprintf(" (action %s, %d of %d)", r.StepView(si).Action, si+1, r.Steps())
}

func renderResource(bw *errWriter, pt painter, s *plan.Shown) { renderStep(bw, pt, s, "") }

// renderThroughChildren renders a resource whose own step is a no-op but
// whose child resources change (they are rendered after it).
func renderThroughChildren(bw *errWriter, pt painter, r *plan.Resource, label string) {
	bw.printf("  %s\n", pt.bold("# "+EscapeLine(r.Address)+EscapeLine(label)+" changes through its child resources below"))
	for _, n := range r.Notifications {
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   notifies %s with %s (%s)", EscapeLine(n.Target), EscapeLine(n.Action), EscapeLine(n.Timing))))
	}
}

// renderStep renders one resource, or one action of a resource of
// several (label names it).
func renderStep(bw *errWriter, pt painter, s *plan.Shown, label string) {
	r := s.Resource
	head := headline(r, s.Why)
	if label != "" {
		addr := EscapeLine(r.Address)
		head = addr + EscapeLine(label) + strings.TrimPrefix(head, addr)
	}
	bw.printf("  %s\n", pt.bold("# "+head))
	if r.Sensitive {
		bw.printf("  %s\n", pt.faint("#   (sensitive resource: every value is hidden)"))
	}
	if s.UnknownType {
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   (type %s is not a resource type of this build of toque: apply refuses this plan)", EscapeLine(strconv.Quote(r.Type)))))
	}
	for _, from := range r.Provided {
		bw.printf("  %s\n", pt.faint("#   "+EscapeLine(from)))
	}
	why := EscapeLine(s.Why)
	if why != "" && len(s.Guards) == 0 && (r.Kind == resources.Update && len(s.Changes) == 0 || r.Kind == resources.Delete) {
		// No property changes to show (a lock, a touch): the reason is
		// what the update does. A delete has none either, and its reason
		// says what goes ("removes the link, not what it points to", the
		// packages apt removes with it).
		bw.printf("  %s\n", pt.faint("#   "+why))
	}
	for _, g := range s.Guards {
		verdict, details := guardLine(g)
		if g.AtApply {
			// ? decided at apply: only_if `test -f x` (fails now; …)
			line := "#   " + pt.skip("?") + " " + verdict
			if details != "" {
				line = strings.TrimSuffix(line, ")") + "; " + strings.TrimPrefix(details, "(")
			}
			bw.printf("  %s\n", pt.faint(line))
			renderWaits(bw, pt, g.After)
			continue
		}
		if strings.Contains(why, verdict) && (len(s.Guards) == 1 || (r.Kind == resources.Skip && g.Decided)) {
			// The headline already gives this guard's verdict.
			if details != "" {
				bw.printf("  %s\n", pt.faint("#   "+details))
			}
			continue
		}
		if details != "" {
			verdict += " " + details
		}
		bw.printf("  %s\n", pt.faint("#   "+verdict))
	}
	for _, l := range s.Lazy {
		line := fmt.Sprintf("#   %s is known at apply (%s)", EscapeLine(l.Property), EscapeLine(l.Source))
		if len(l.Reads) > 0 {
			reads := make([]string, len(l.Reads))
			for i, rd := range l.Reads {
				reads[i] = rd.Property + " = " + rd.Value
				if strings.HasPrefix(rd.Property, "recipe file ") {
					reads[i] = rd.Property + " " + rd.Value
				}
			}
			line += ", reading " + EscapeLine(strings.Join(reads, ", "))
		}
		bw.printf("  %s\n", pt.faint(line))
		renderWaits(bw, pt, l.After)
	}
	for _, a := range s.Awaits {
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   %s is known at apply: it needs %s", EscapeLine(a.Property), EscapeLine(a.What))))
		renderWaits(bw, pt, a.After)
	}
	for _, st := range s.Steps {
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   runs %s (%s)", EscapeLine(st.Label), EscapeLine(st.Source))))
	}
	for _, n := range r.Notifications {
		verb := "notifies"
		if n.Subscribe {
			verb = "notifies (by its subscribes)"
		}
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   %s %s with %s (%s)", verb, EscapeLine(n.Target), EscapeLine(n.Action), EscapeLine(n.Timing))))
	}
	block := fmt.Sprintf("%s %s", EscapeLine(r.Type), EscapeLine(strconv.Quote(r.Name)))
	sym := pt.symbol(r.Kind)
	changing := (r.Kind == resources.Create || r.Kind == resources.Update) && (len(s.Changes) > 0 || len(s.Unmanaged) > 0)
	if !changing && len(s.Context) == 0 {
		bw.printf("  %s %s\n", sym, block)
		return
	}
	bw.printf("  %s %s {\n", sym, block)
	width := 0
	for _, c := range s.Changes {
		width = max(width, len(EscapeLine(c.Property)))
	}
	for _, id := range s.Context {
		width = max(width, len(EscapeLine(id.Property)))
	}
	for _, id := range s.Context {
		// What the resource names: new with the thing on create, context
		// (no marker) otherwise, as Terraform shows an id.
		prop := EscapeLine(id.Property)
		name := prop + strings.Repeat(" ", width-len(prop))
		lead := "        "
		if r.Kind == resources.Create {
			lead = "      " + pt.create("+") + " "
		}
		if text, ok := multiline(id.Value); ok {
			// Scripts read best as written: a heredoc, not one escaped line.
			bw.printf("%s%s = <<EOT\n", lead, name)
			for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				bw.printf("            %s\n", Escape(line))
			}
			bw.printf("          EOT\n")
			continue
		}
		bw.printf("%s%s = %s\n", lead, name, EscapeLine(id.Value))
	}
	if !changing {
		bw.printf("    }\n")
		return
	}
	for _, c := range s.Changes {
		renderChange(bw, pt, r.Kind, c, width)
	}
	for _, u := range s.Unmanaged {
		cur := EscapeLine(unquote(u.Value))
		if !strings.HasPrefix(cur, "(") || !strings.HasSuffix(cur, ")") {
			cur = "(" + cur + ")"
		}
		bw.printf("        %s\n", pt.faint(fmt.Sprintf("# %s: not set in the recipe, left as it is %s", EscapeLine(u.Property), cur)))
	}
	bw.printf("    }\n")
}

// renderWaits names the earlier resources a deferred value or guard waits
// for: those that could change what it reads.
func renderWaits(bw *errWriter, pt painter, after []string) {
	if len(after) == 0 {
		return
	}
	bw.printf("  %s\n", pt.faint("#     waits for "+EscapeLine(strings.Join(after, ", "))))
}

// unquote shows a display form without the quotes of a plain string, as
// design §11 does for "left as it is (0600)".
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil && !strings.ContainsAny(u, "\n\t") {
			return u
		}
	}
	return s
}

func renderChange(bw *errWriter, pt painter, kind resources.Kind, c plan.ShownChange, width int) {
	prop := EscapeLine(c.Property)
	name := prop + strings.Repeat(" ", max(0, width-len(prop)))
	sym, paint := pt.update("~"), pt.update
	if kind == resources.Create || c.Before == "" {
		sym, paint = pt.create("+"), pt.create
	}
	suffix := ""
	if c.Default {
		suffix = " " + pt.faint("(default)")
	}
	switch {
	case c.Diff != "" && !c.Sensitive:
		bw.printf("      %s %s:%s\n", sym, prop, suffix)
		for _, line := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
			bw.printf("          %s\n", diffLine(pt, Escape(line)))
		}
	case c.Sensitive && c.KnownAtApply:
		bw.printf("      %s %s = %s%s\n", sym, name, EscapeLine(c.After), suffix)
	case c.Sensitive:
		bw.printf("      %s %s = %s%s\n", sym, name, plan.Sensitive, suffix)
	case c.Before != "" && kind != resources.Create:
		bw.printf("      %s %s = %s %s %s%s\n", sym, name, EscapeLine(c.Before), paint("->"), EscapeLine(c.After), suffix)
	default:
		bw.printf("      %s %s = %s%s\n", sym, name, EscapeLine(c.After), suffix)
	}
	if c.DiffNote != "" && !c.Sensitive {
		bw.printf("        %s\n", pt.faint("# "+prop+": "+EscapeLine(c.DiffNote)))
	}
}

func diffLine(pt painter, line string) string {
	switch {
	case strings.HasPrefix(line, "@@"):
		return pt.hunk(line)
	case strings.HasPrefix(line, "+"):
		return pt.create(line)
	case strings.HasPrefix(line, "-"):
		return pt.del(line)
	case strings.HasPrefix(line, `\`):
		return pt.faint(line)
	}
	return line
}

// guardLine words one guard, escaped: its verdict, and the details a
// reviewer needs to trust it — "(bash; cwd /opt from the guard, JAVA_HOME
// inherited; exit 0 in 4 ms)" — empty when there are none (expressions).
func guardLine(g plan.ShownGuard) (verdict, details string) {
	verdict = EscapeLine(g.Verdict)
	if g.Form == "expression" {
		return verdict, ""
	}
	if d := guardDetails(g); len(d) > 0 {
		details = "(" + EscapeLine(strings.Join(d, "; ")) + ")"
	}
	return verdict, details
}

// guardDetails lists what a script guard ran with and how it went.
func guardDetails(g plan.ShownGuard) []string {
	var parts []string
	switch g.Interpreter {
	case "", "default":
		parts = append(parts, "/bin/sh")
	default:
		parts = append(parts, g.Interpreter)
	}
	inherited := map[string]bool{}
	for _, k := range g.Inherited {
		inherited[k] = true
	}
	// Every parameter the guard runs with, with its value: what runs is
	// what is shown, whether it was inherited or given.
	var settings []string
	for _, p := range g.Params {
		from := " from the guard"
		if inherited[p.Property] {
			from = " inherited"
		}
		if p.Property == "environment" {
			settings = append(settings, p.Value+from)
			continue
		}
		settings = append(settings, p.Property+" "+p.Value+from)
	}
	if len(settings) > 0 {
		parts = append(parts, strings.Join(settings, ", "))
	}
	if g.ExitCode != nil {
		parts = append(parts, fmt.Sprintf("exit %d in %d ms", *g.ExitCode, g.DurationMS))
	}
	if g.Warning != "" {
		parts = append(parts, "warning: "+g.Warning)
	}
	return parts
}

func renderSummary(bw *errWriter, pt painter, p *plan.Plan, width int) {
	c := p.Counts()
	bw.printf("%s\n", pt.bold(fmt.Sprintf("Plan: %d to create, %d to update, %d to delete, %d to run, %d skipped, %d unchanged%s.",
		c.Create, c.Update, c.Delete, c.Run, c.Skip, c.NoOp, deferredCounts(c))))
	if width <= 0 {
		width = 80
	}
	groups := []struct {
		label string
		kind  resources.Kind
	}{
		{"create:", resources.Create},
		{"update:", resources.Update},
		{"delete:", resources.Delete},
		{"run:", resources.Run},
		{"skip:", resources.Skip},
	}
	for _, g := range groups {
		addrs := p.AddressesOf(g.kind)
		if len(addrs) == 0 {
			continue
		}
		for i, a := range addrs {
			addrs[i] = EscapeLine(a)
		}
		label := fmt.Sprintf("  %-8s", g.label)
		bw.printf("%s%s\n", label, wrapList(addrs, width-len(label), strings.Repeat(" ", len(label))))
	}
	for _, g := range []struct {
		label string
		addrs []string
	}{
		{"decided at apply:", p.DecidedAtApply()},
		{"known at apply:", p.KnownAtApply()},
	} {
		if len(g.addrs) == 0 {
			continue
		}
		addrs := make([]string, len(g.addrs))
		for i, a := range g.addrs {
			addrs[i] = EscapeLine(a)
		}
		label := fmt.Sprintf("  %-18s", g.label)
		bw.printf("%s%s\n", label, wrapList(addrs, width-len(label), strings.Repeat(" ", len(label))))
	}
}

// deferredCounts is the summary's note of what waits for apply: "; 1
// decided at apply, 2 with values known at apply", "" when nothing does.
func deferredCounts(c plan.Counts) string {
	var parts []string
	if c.DecidedAtApply > 0 {
		parts = append(parts, fmt.Sprintf("%d decided at apply", c.DecidedAtApply))
	}
	if c.KnownAtApply > 0 {
		parts = append(parts, fmt.Sprintf("%d with values known at apply", c.KnownAtApply))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// wrapList joins items with ", ", starting a new line (indented by ind)
// before an item that would pass width.
func wrapList(items []string, width int, ind string) string {
	var b strings.Builder
	col := 0
	for i, it := range items {
		piece := it
		if i < len(items)-1 {
			piece += ","
		}
		if i > 0 {
			if col+1+len(piece) > width && col > 0 {
				b.WriteString("\n" + ind)
				col = 0
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(piece)
		col += len(piece)
	}
	return b.String()
}

// ShellQuote quotes s (a path, a word) for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '@' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// multiline returns the text of a quoted display string that spans lines.
func multiline(display string) (string, bool) {
	if len(display) < 2 || display[0] != '"' || !strings.Contains(display, `\n`) {
		return "", false
	}
	text, err := strconv.Unquote(display)
	if err != nil || !strings.Contains(strings.TrimSuffix(text, "\n"), "\n") {
		return "", false
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "EOT" {
			// A line that would read as the heredoc's end: one escaped
			// line cannot be misread.
			return "", false
		}
	}
	return text, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// policyNote names the policy a plan was made from, and its lock's
// revision: " (policy myapp, lock revision 1a2b3c4d5e)", "" in directory
// mode.
func policyNote(p *plan.Plan) string {
	if p.Policy == "" && p.LockRevision == "" {
		return ""
	}
	rev := p.LockRevision
	if len(rev) > 10 {
		rev = rev[:10]
	}
	return fmt.Sprintf(" (policy %s, lock revision %s)", EscapeLine(p.Policy), EscapeLine(rev))
}

// renderData lists the data blocks the plan read: what each read or ran,
// how long it took, and its answer's shape and digest (the answer itself
// is in show -json).
func renderData(bw *errWriter, pt painter, p *plan.Plan, reg *resources.Registry) {
	for _, d := range p.Data {
		if d == nil {
			continue
		}
		s := p.ShowData(reg, d)
		bw.printf("\n  %s\n", pt.faint(fmt.Sprintf("# %s read in %d ms: %s", EscapeLine(d.Address), d.DurationMS, EscapeLine(s.Reads))))
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   answer: %s, %s", EscapeLine(s.Answer), EscapeLine(d.Digest))))
	}
}
