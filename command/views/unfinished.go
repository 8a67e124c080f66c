package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/plan"
)

// The applies on this host that stopped part-way, as plan shows them in
// every form (apply.Unfinished): what each left undone, and how to finish
// it. A new plan does not show again what an unfinished apply left undone
// when what would trigger it is unchanged (a notifier in its planned state
// notifies nothing), so without this a plan after a failed reload says
// "No changes." while the host runs the old configuration.

// unfinishedHead is the first line of the warning.
func unfinishedHead(n int) string {
	if n == 1 {
		return "An earlier apply on this host did not finish."
	}
	return fmt.Sprintf("%d earlier applies on this host did not finish.", n)
}

// unfinishedWhat words one unfinished apply: which plan, how and when it
// stopped.
func unfinishedWhat(u apply.UnfinishedApply) string {
	what := "The apply of plan " + plan.ShortDigest(u.PlanDigest)
	if u.PlanFile != "" {
		what = "The apply of " + EscapeLine(u.PlanFile) + " (plan " + plan.ShortDigest(u.PlanDigest) + ")"
	}
	at := u.Stopped.UTC().Format(time.RFC3339)
	switch u.Outcome {
	case "failed":
		return what + " failed at " + at + "."
	case "interrupted":
		return what + " was interrupted at " + at + "."
	}
	return what + " stopped without recording its end (killed, or still running); its last record is of " + at + "."
}

// notDoneLines are what an unfinished apply left undone, one line each.
func notDoneLines(u apply.UnfinishedApply) []string {
	var out []string
	for _, s := range u.NotDone {
		addr := EscapeLine(s.Address)
		if s.Notified {
			addr += " (notified run)"
		}
		line := addr + ": " + EscapeLine(s.Outcome)
		if s.Reason != "" {
			line += ": " + EscapeLine(s.Reason)
		}
		out = append(out, line)
	}
	return out
}

// finishWords says how to finish an unfinished apply.
func finishWords(u apply.UnfinishedApply) string {
	if u.PlanFile == "" {
		return "It applied a plan it made itself, so it cannot be resumed: this plan does not do again what it left undone when what would trigger it is unchanged (a notifier in its planned state notifies nothing); do that by hand, or change what triggers it and plan again."
	}
	return "This plan does not do again what it left undone when what would trigger it is unchanged (a notifier in its planned state notifies nothing). To finish it, fix what failed and apply that plan again: toque apply " + ShellQuote(u.PlanFile) + " (it resumes, and does only what is left)."
}

// renderUnfinishedText writes the warning for the text plan.
func renderUnfinishedText(bw *errWriter, pt painter, us []apply.UnfinishedApply) {
	if len(us) == 0 {
		return
	}
	head := unfinishedHead(len(us))
	bw.printf("\n%s\n", pt.del(pt.bold("Warning: "+strings.ToLower(head[:1])+head[1:])))
	for _, u := range us {
		bw.printf("  %s\n", unfinishedWhat(u))
		if lines := notDoneLines(u); len(lines) > 0 {
			bw.printf("  It left undone:\n")
			for _, l := range lines {
				bw.printf("    %s\n", l)
			}
		}
		bw.printf("  %s\n", EscapeLine(finishWords(u)))
	}
}

// renderUnfinishedMarkdown writes the warning for the Markdown plan:
// toque's words as text, what came from outside (addresses, paths,
// reasons) in code spans.
func renderUnfinishedMarkdown(b *strings.Builder, us []apply.UnfinishedApply) {
	if len(us) == 0 {
		return
	}
	fmt.Fprintf(b, "> [!WARNING]\n> %s\n", mdText(unfinishedHead(len(us))))
	for _, u := range us {
		what := "The apply of plan " + mdCode(plan.ShortDigest(u.PlanDigest))
		if u.PlanFile != "" {
			what = "The apply of " + mdCode(u.PlanFile) + " (plan " + mdCode(plan.ShortDigest(u.PlanDigest)) + ")"
		}
		at := u.Stopped.UTC().Format(time.RFC3339)
		switch u.Outcome {
		case "failed":
			what += " failed at " + at + "."
		case "interrupted":
			what += " was interrupted at " + at + "."
		default:
			what += " stopped without recording its end (killed, or still running); its last record is of " + at + "."
		}
		fmt.Fprintf(b, ">\n> %s\n", what)
		if len(u.NotDone) > 0 {
			b.WriteString("> It left undone:\n")
		}
		for _, st := range u.NotDone {
			line := mdCode(st.Address)
			if st.Notified {
				line += " (notified run)"
			}
			line += ": " + mdText(st.Outcome)
			if st.Reason != "" {
				line += ": " + mdCode(st.Reason)
			}
			fmt.Fprintf(b, "> - %s\n", line)
		}
		if u.PlanFile == "" {
			fmt.Fprintf(b, ">\n> %s\n", mdText(finishWords(u)))
		} else {
			fmt.Fprintf(b, ">\n> %s %s %s\n", mdText("This plan does not do again what it left undone when what would trigger it is unchanged (a notifier in its planned state notifies nothing). To finish it, fix what failed and apply that plan again:"),
				mdCode("toque apply "+ShellQuote(u.PlanFile)), mdText("(it resumes, and does only what is left)."))
		}
	}
	b.WriteString("\n")
}
