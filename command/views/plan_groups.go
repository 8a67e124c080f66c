package views

import (
	"fmt"
	"strings"

	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// Resource groups in the text plan: a group's guards are shown once, in
// an entry of the group's own before the first of its resources shown;
// the resources they skip are listed together in one entry, and not one
// by one.

// renderGrouped renders the resource of s (a resource of the plan, not a
// notified run) as renderStep does, after its group's entry when it is
// the first of its group shown, and without the guards that entry shows.
// A resource its group's guards skip is shown by the group's skip entry,
// once.
func renderGrouped(bw *errWriter, pt painter, gv *plan.GroupView, p *plan.Plan, reg *resources.Registry, r *plan.Resource, label string) {
	if g, first := gv.SkippedGroup(r); g != nil {
		if first {
			bw.printf("\n")
			renderGroupSkip(bw, pt, g, p.Show(reg, r))
		}
		return
	}
	s, g := gv.Guarded(p.Show(reg, r))
	bw.printf("\n")
	if g != nil {
		renderGroupGuards(bw, pt, g)
		bw.printf("\n")
	}
	renderStep(bw, pt, s, label)
}

// renderGroupGuards renders a group's entry: its guards, as the first of
// its resources shown evaluated them.
func renderGroupGuards(bw *errWriter, pt painter, g *plan.ShownGroup) {
	bw.printf("  %s\n", pt.bold(fmt.Sprintf("# %s: the guards of its %s", EscapeLine(g.Address), resourcesWord(g.Members))))
	for _, sg := range g.Guards {
		renderGuardLine(bw, pt, sg)
	}
}

// renderGroupSkip renders the entry of the resources a group's guards
// skip; s is the first of them.
func renderGroupSkip(bw *errWriter, pt painter, g *plan.ShownGroup, s *plan.Shown) {
	bw.printf("  %s\n", pt.bold(fmt.Sprintf("# %s skipped: %s", EscapeLine(g.Address), EscapeLine(g.Why))))
	for _, sg := range s.Guards {
		if sg.Group != g.Name {
			continue
		}
		verdict, details := guardLine(sg)
		switch {
		case strings.Contains(EscapeLine(g.Why), verdict):
			// The headline gives its verdict.
			if details != "" {
				bw.printf("  %s\n", pt.faint("#   "+details))
			}
		default:
			renderGuardLine(bw, pt, sg)
		}
	}
	addrs := make([]string, len(g.Skipped))
	for i, a := range g.Skipped {
		addrs[i] = EscapeLine(a)
	}
	bw.printf("  %s\n", pt.faint(fmt.Sprintf("#   skips %s: %s", skipsWord(g), words.Join(addrs, ""))))
}

// renderGuardLine renders one guard's verdict and details.
func renderGuardLine(bw *errWriter, pt painter, sg plan.ShownGuard) {
	verdict, details := guardLine(sg)
	if sg.AtApply {
		line := "#   " + pt.skip("?") + " " + verdict
		if details != "" {
			line = strings.TrimSuffix(line, ")") + "; " + strings.TrimPrefix(details, "(")
		}
		bw.printf("  %s\n", pt.faint(line))
		renderWaits(bw, pt, sg.After)
		return
	}
	if details != "" {
		verdict += " " + details
	}
	bw.printf("  %s\n", pt.faint("#   "+verdict))
}

func resourcesWord(n int) string {
	if n == 1 {
		return "1 resource"
	}
	return fmt.Sprintf("%d resources", n)
}

// markdownGrouped is the Markdown sections of r (a resource of the plan
// with something to show) as markdownResource renders it: after its
// group's section when it is the first of its group shown, without the
// guards that section shows; for a resource its group's guards skip, the
// group's skip section, once (none after that).
func markdownGrouped(gv *plan.GroupView, p *plan.Plan, reg *resources.Registry, r *plan.Resource) []mdSection {
	if g, first := gv.SkippedGroup(r); g != nil {
		if !first {
			return nil
		}
		return []mdSection{{text: markdownGroupSkip(g, p.Show(reg, r)), resources: len(g.Skipped)}}
	}
	s, g := gv.Guarded(p.Show(reg, r))
	var out []mdSection
	if g != nil {
		out = append(out, mdSection{text: markdownGroupGuards(g)})
	}
	return append(out, mdSection{text: markdownResource(s), resources: 1})
}

// markdownGroupGuards renders a group's guards, as the first of its
// resources shown evaluated them.
func markdownGroupGuards(g *plan.ShownGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary>%s: the guards of its %s</summary>\n\n", htmlCode(g.Address), resourcesWord(g.Members))
	b.WriteString("**Guards**\n\n")
	for _, sg := range g.Guards {
		b.WriteString(markdownGuard(sg))
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// markdownGroupSkip renders the resources a group's guards skip; s is the
// first of them.
func markdownGroupSkip(g *plan.ShownGroup, s *plan.Shown) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary><code>?</code> %s skipped: %s</summary>\n\n", htmlCode(g.Address), htmlCode(g.Why))
	b.WriteString("**Guards**\n\n")
	for _, sg := range s.Guards {
		if sg.Group == g.Name {
			b.WriteString(markdownGuard(sg))
		}
	}
	fmt.Fprintf(&b, "\n**Skips** %s\n\n", skipsWord(g))
	for _, a := range g.Skipped {
		fmt.Fprintf(&b, "- %s\n", mdCode(a))
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// skipsWord says how many of a group's resources its guards skip.
func skipsWord(g *plan.ShownGroup) string {
	if len(g.Skipped) == g.Members {
		return "its " + resourcesWord(g.Members)
	}
	return fmt.Sprintf("%d of its %s", len(g.Skipped), resourcesWord(g.Members))
}
