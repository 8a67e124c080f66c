package views

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fatih/color"

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
	// Encode); empty means compute it.
	Digest string
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
// with work, its changes and diffs, the summary, and the plan's digest.
// Unchanged resources are counted, not listed. Sensitive values are never
// shown: the plan's Changes and Current already hold only "(sensitive)".
func RenderText(w io.Writer, p *plan.Plan, o RenderOptions) error {
	pt := newPainter(o.Color)
	bw := &errWriter{w: w}
	hostName := p.Host.Hostname
	if hostName == "" {
		hostName = "this host"
	}

	if p.Errored {
		bw.printf("%s\n", pt.del(pt.bold("Error: planning failed; this plan is incomplete and cannot be applied.")))
		for _, e := range p.Errors {
			bw.printf("  %s\n", indentRest(e, "  "))
		}
		bw.printf("\n")
	}

	var work, skipped []*plan.Resource
	for _, r := range p.Resources {
		switch r.Kind {
		case resources.Create, resources.Update, resources.Delete, resources.Run:
			work = append(work, r)
		case resources.Skip:
			skipped = append(skipped, r)
		}
	}

	if len(work) == 0 {
		if p.Errored {
			bw.printf("No changes could be planned on %s.\n", hostName)
		} else {
			bw.printf("%s\n", pt.bold(fmt.Sprintf("No changes. %s already matches the recipes.", hostName)))
		}
		for _, r := range skipped {
			bw.printf("\n")
			renderResource(bw, pt, r)
		}
	} else {
		bw.printf("toque will perform the following actions on %s:\n", pt.bold(hostName))
		for i, r := range p.Resources {
			for _, nr := range p.RunsAt(i, true) {
				bw.printf("\n")
				renderResource(bw, pt, p.NotifiedView(nr))
			}
			if r.Kind != resources.NoOp && r.Kind != "" {
				bw.printf("\n")
				renderResource(bw, pt, r)
			}
			for _, nr := range p.RunsAt(i, false) {
				bw.printf("\n")
				renderResource(bw, pt, p.NotifiedView(nr))
			}
		}
		for _, nr := range p.RunsAt(len(p.Resources), false) {
			bw.printf("\n")
			renderResource(bw, pt, p.NotifiedView(nr))
		}
	}
	for _, r := range p.Resources {
		if r.Reason == plan.ReasonNotNotified {
			bw.printf("\n  %s\n", pt.faint("# "+r.Address+": "+r.Reason))
		}
	}

	bw.printf("\n")
	renderSummary(bw, pt, p, o.Width)
	digest := o.Digest
	if digest == "" {
		digest = p.Digest()
	}
	bw.printf("\nPlan digest: %s\n", digest)
	if o.SavedTo != "" {
		bw.printf("Saved the plan to %s. To apply exactly this plan: toque apply %s\n", o.SavedTo, shellQuote(o.SavedTo))
	}
	return bw.err
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

func headline(r *plan.Resource) string {
	if strings.HasPrefix(r.Reason, "notified by ") && r.Kind != resources.Run && r.Kind != resources.Skip {
		// A notified run: say why it happens.
		return strings.TrimSuffix(headline(&plan.Resource{Address: r.Address, Kind: r.Kind}), " is unchanged") + ": " + r.Reason
	}
	switch r.Kind {
	case resources.Create:
		return r.Address + " will be created"
	case resources.Update:
		return r.Address + " will be updated in place"
	case resources.Delete:
		return r.Address + " will be deleted"
	case resources.Run:
		if r.Reason != "" {
			return r.Address + " will run: " + r.Reason
		}
		return r.Address + " will run"
	case resources.Skip:
		if r.Reason != "" {
			return r.Address + " skipped: " + r.Reason
		}
		return r.Address + " skipped"
	}
	return r.Address + " is unchanged"
}

func renderResource(bw *errWriter, pt painter, r *plan.Resource) {
	bw.printf("  %s\n", pt.bold("# "+headline(r)))
	if r.Sensitive {
		bw.printf("  %s\n", pt.faint("#   (sensitive resource: every value is hidden)"))
	}
	for _, g := range r.Guards {
		verdict, details := guardLine(g)
		if strings.Contains(r.Reason, verdict) && (len(r.Guards) == 1 || (r.Kind == resources.Skip && g.Decided)) {
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
	for _, n := range r.Notifications {
		verb := "notifies"
		if n.Subscribe {
			verb = "notifies (by its subscribes)"
		}
		bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   %s %s with %s (%s)", verb, n.Target, n.Action, n.Timing)))
	}
	head := fmt.Sprintf("%s %s", r.Type, strconv.Quote(r.Name))
	sym := pt.symbol(r.Kind)
	changing := (r.Kind == resources.Create || r.Kind == resources.Update) && (len(r.Changes) > 0 || len(r.Unmanaged) > 0)
	if !changing && len(r.Context) == 0 {
		bw.printf("  %s %s\n", sym, head)
		return
	}
	bw.printf("  %s %s {\n", sym, head)
	width := 0
	for _, c := range r.Changes {
		width = max(width, len(c.Property))
	}
	for _, id := range r.Context {
		width = max(width, len(id.Property))
	}
	for _, id := range r.Context {
		// What the resource names: new with the thing on create, context
		// (no marker) otherwise, as Terraform shows an id.
		name := id.Property + strings.Repeat(" ", width-len(id.Property))
		lead := "        "
		if r.Kind == resources.Create {
			lead = "      " + pt.create("+") + " "
		}
		if text, ok := multiline(id.Value); ok {
			// Scripts read best as written: a heredoc, not one escaped line.
			bw.printf("%s%s = <<EOT\n", lead, name)
			for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				bw.printf("            %s\n", line)
			}
			bw.printf("          EOT\n")
			continue
		}
		bw.printf("%s%s = %s\n", lead, name, id.Value)
	}
	if !changing {
		bw.printf("    }\n")
		return
	}
	for _, c := range r.Changes {
		renderChange(bw, pt, r.Kind, c, width)
	}
	for _, u := range r.Unmanaged {
		cur := unquote(u.Current)
		if !strings.HasPrefix(cur, "(") || !strings.HasSuffix(cur, ")") {
			cur = "(" + cur + ")"
		}
		bw.printf("        %s\n", pt.faint(fmt.Sprintf("# %s: not set in the recipe, left as it is %s", u.Property, cur)))
	}
	bw.printf("    }\n")
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

func renderChange(bw *errWriter, pt painter, kind resources.Kind, c plan.Change, width int) {
	name := c.Property + strings.Repeat(" ", width-len(c.Property))
	sym, paint := pt.update("~"), pt.update
	if kind == resources.Create || c.Before == "" {
		sym, paint = pt.create("+"), pt.create
	}
	suffix := ""
	if c.Default {
		suffix = " " + pt.faint("(default)")
	}
	switch {
	case c.Diff != "":
		bw.printf("      %s %s:%s\n", sym, c.Property, suffix)
		for _, line := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
			bw.printf("          %s\n", diffLine(pt, line))
		}
	case c.Sensitive:
		bw.printf("      %s %s = %s%s\n", sym, name, plan.Sensitive, suffix)
	case c.Before != "" && kind != resources.Create:
		bw.printf("      %s %s = %s %s %s%s\n", sym, name, c.Before, paint("->"), c.After, suffix)
	default:
		bw.printf("      %s %s = %s%s\n", sym, name, c.After, suffix)
	}
	if c.DiffNote != "" && !c.Sensitive {
		bw.printf("        %s\n", pt.faint("# "+c.Property+": "+c.DiffNote))
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

// guardLine words one guard result: its verdict, and the details a
// reviewer needs to trust it — "(bash; cwd /opt from the guard, JAVA_HOME
// inherited; exit 0 in 4 ms)" — empty when there are none (expressions).
func guardLine(g plan.GuardResult) (verdict, details string) {
	verdict = plan.GuardVerdict(g)
	if g.Form == "expression" {
		return verdict, ""
	}
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
	from := func(k string) string {
		if inherited[k] {
			return " inherited"
		}
		return " from the guard"
	}
	var settings []string
	if g.Cwd != "" {
		settings = append(settings, "cwd "+g.Cwd+from("cwd"))
	}
	if len(g.Environment) > 0 {
		settings = append(settings, strings.Join(sortedKeys(g.Environment), " ")+from("environment"))
	}
	if g.User != "" {
		settings = append(settings, "user "+g.User+from("user"))
	}
	for _, k := range []string{"group", "path", "umask", "architecture", "interpreter"} {
		if inherited[k] {
			settings = append(settings, k+" inherited")
		}
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
	return verdict, "(" + strings.Join(parts, "; ") + ")"
}

func renderSummary(bw *errWriter, pt painter, p *plan.Plan, width int) {
	c := p.Counts()
	bw.printf("%s\n", pt.bold(fmt.Sprintf("Plan: %d to create, %d to update, %d to delete, %d to run, %d skipped, %d unchanged.",
		c.Create, c.Update, c.Delete, c.Run, c.Skip, c.NoOp)))
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
		var addrs []string
		for _, r := range p.Resources {
			if r.Kind == g.kind {
				addrs = append(addrs, r.Address)
			}
		}
		for _, nr := range p.NotifiedRuns {
			if nr.Kind == g.kind && !slices.Contains(addrs, nr.Address) {
				addrs = append(addrs, nr.Address)
			}
		}
		if len(addrs) == 0 {
			continue
		}
		label := fmt.Sprintf("  %-8s", g.label)
		bw.printf("%s%s\n", label, wrapList(addrs, width-len(label), strings.Repeat(" ", len(label))))
	}
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

// shellQuote quotes a path for the suggested command when it needs it.
func shellQuote(s string) string {
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
	if err != nil || !strings.Contains(strings.TrimSuffix(text, "\n"), "\n") || strings.Contains(text, "EOT\n") {
		return "", false
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
