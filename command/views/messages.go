package views

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/toquehq/toque/policy"
)

// Messages are the short outputs of the commands that have no view of
// their own (install, update, export, fmt, version): each writes stdout.
type Messages struct{ V *View }

// LockWritten summarises a lock install or update wrote: the policy and
// its revision, the run list, each include with its pin, each cookbook;
// then what changed from the lock there was.
func (m Messages) LockWritten(l *policy.Lock, changes *policy.LockChanges, file string) {
	w := m.V.Streams.Stdout
	fmt.Fprintf(w, "Policy %s, revision %s\n", EscapeLine(l.Name), l.RevisionID)
	fmt.Fprintf(w, "Run list: %s\n", EscapeLine(strings.Join(l.RunList, ", ")))
	for _, inc := range l.IncludedPolicyLocks {
		fmt.Fprintf(w, "  include %s: policy %s revision %s from %s\n", EscapeLine(inc.Name), EscapeLine(inc.PolicyName), short(inc.RevisionID), EscapeLine(describePin(inc.SourceOptions)))
	}
	names := make([]string, 0, len(l.CookbookLocks))
	for n := range l.CookbookLocks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cl := l.CookbookLocks[n]
		fmt.Fprintf(w, "  cookbook %s %s (%s) from %s\n", EscapeLine(n), EscapeLine(cl.Version), short(cl.Identifier), EscapeLine(cl.Source))
	}
	if changes != nil {
		m.lockChanges(changes)
	}
	fmt.Fprintf(w, "\nWrote %s.\n", file)
}

// LockUpToDate says install or update left the lock as it was.
func (m Messages) LockUpToDate(l *policy.Lock) {
	fmt.Fprintf(m.V.Streams.Stdout, "No changes: the lock is up to date (revision %s).\n", l.RevisionID)
}

// LocalCookbooksLocked says that plan -update-local locked the edited
// local cookbooks names again before planning, and what moved: on stdout
// before the plan's text, on stderr when stdout carries JSON or Markdown.
func (m Messages) LocalCookbooksLocked(names []string, changes *policy.LockChanges, file string, toStderr bool) {
	w := m.V.Streams.Stdout
	if toStderr {
		w = m.V.Streams.Stderr
	}
	what := "cookbook"
	if len(names) > 1 {
		what = "cookbooks"
	}
	fmt.Fprintf(w, "Edited local %s %s locked again (as toque update %s does).\n", what, EscapeLine(strings.Join(names, ", ")), EscapeLine(strings.Join(names, " ")))
	if changes != nil {
		lockChangesTo(w, changes)
	}
	fmt.Fprintf(w, "\nWrote %s.\n\n", file)
}

// lockChanges lists what moved from the previous lock.
func (m Messages) lockChanges(c *policy.LockChanges) {
	lockChangesTo(m.V.Streams.Stdout, c)
}

func lockChangesTo(w io.Writer, c *policy.LockChanges) {
	fmt.Fprintln(w)
	switch {
	case c.OldRevision == "":
		fmt.Fprintln(w, "No lock before: everything above is new.")
		return
	case c.Empty():
		fmt.Fprintln(w, "No changes to the policy; the lock's recorded inputs changed, so it is written again.")
		return
	case c.OldRevision == c.NewRevision:
		fmt.Fprintf(w, "Changes (revision %s unchanged):\n", short(c.NewRevision))
	default:
		fmt.Fprintf(w, "Changes, revision %s → %s:\n", short(c.OldRevision), short(c.NewRevision))
	}
	if c.RunList != nil {
		fmt.Fprintf(w, "  ~ run list: %s → %s\n", EscapeLine(strings.Join(c.RunList.Old, ", ")), EscapeLine(strings.Join(c.RunList.New, ", ")))
	}
	for _, cb := range c.Cookbooks {
		name := EscapeLine(cb.Name)
		switch cb.Kind {
		case policy.Added:
			fmt.Fprintf(w, "  + cookbook %s %s (%s) from %s\n", name, EscapeLine(cb.New.Version), short(cb.New.Identifier), EscapeLine(cb.New.Source))
		case policy.Removed:
			fmt.Fprintf(w, "  - cookbook %s %s (%s)\n", name, EscapeLine(cb.Old.Version), short(cb.Old.Identifier))
		default:
			fmt.Fprintf(w, "  ~ cookbook %s %s (%s) → %s (%s)", name, EscapeLine(cb.Old.Version), short(cb.Old.Identifier), EscapeLine(cb.New.Version), short(cb.New.Identifier))
			if cb.Old.Source != cb.New.Source {
				fmt.Fprintf(w, ", from %s → %s", EscapeLine(cb.Old.Source), EscapeLine(cb.New.Source))
			}
			fmt.Fprintln(w)
		}
	}
	for _, inc := range c.Includes {
		name := EscapeLine(inc.Name)
		switch inc.Kind {
		case policy.Added:
			fmt.Fprintf(w, "  + include %s: policy %s revision %s from %s\n", name, EscapeLine(inc.New.PolicyName), short(inc.New.RevisionID), EscapeLine(describePin(inc.New.SourceOptions)))
		case policy.Removed:
			fmt.Fprintf(w, "  - include %s: policy %s revision %s\n", name, EscapeLine(inc.Old.PolicyName), short(inc.Old.RevisionID))
		default:
			fmt.Fprintf(w, "  ~ include %s: revision %s → %s, pin %s → %s\n", name, short(inc.Old.RevisionID), short(inc.New.RevisionID),
				EscapeLine(describePin(inc.Old.SourceOptions)), EscapeLine(describePin(inc.New.SourceOptions)))
		}
	}
	for _, a := range c.Attributes {
		p := EscapeLine(strings.Join(a.Path, "."))
		switch a.Kind {
		case policy.Added:
			fmt.Fprintf(w, "  + %s attribute %s = %s\n", a.Level, p, jsonValue(a.New))
		case policy.Removed:
			fmt.Fprintf(w, "  - %s attribute %s (was %s)\n", a.Level, p, jsonValue(a.Old))
		default:
			fmt.Fprintf(w, "  ~ %s attribute %s: %s → %s\n", a.Level, p, jsonValue(a.Old), jsonValue(a.New))
		}
	}
}

// describePin is an include's source and pin in one line.
func describePin(s policy.IncludeSource) string {
	switch {
	case s.Git != "":
		return fmt.Sprintf("git %s %s at %s", s.Git, s.Path, s.Sha)
	case s.Server != "":
		return fmt.Sprintf("server %s, revision %s", s.Server, s.PolicyRevisionID)
	case s.Remote != "":
		return fmt.Sprintf("%s (%s)", s.Remote, s.SHA256)
	}
	return fmt.Sprintf("path %s (%s)", s.Path, s.SHA256)
}

// jsonValue is an attribute value in one line, at most 80 characters.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return EscapeLine(fmt.Sprint(v))
	}
	r := []rune(EscapeLine(string(b)))
	if len(r) > 80 {
		return string(r[:77]) + "…"
	}
	return string(r)
}

func short(id string) string { return id[:min(10, len(id))] }

// Exported says where export wrote a policy.
func (m Messages) Exported(revision, dir string, files int) {
	fmt.Fprintf(m.V.Streams.Stdout, "Exported revision %s to %s (%d files).\n", revision, EscapeLine(dir), files)
}

// Formatted names a file fmt changed (or would change) and, with diff,
// shows the change as a unified diff.
func (m Messages) Formatted(file string, list, diff bool, before, after string) {
	name := m.V.rel(file)
	if list {
		fmt.Fprintln(m.V.Streams.Stdout, EscapeLine(name))
	}
	if diff {
		fmt.Fprint(m.V.Streams.Stdout, Escape(udiff.Unified("old/"+name, "new/"+name, before, after)))
	}
}

// Version prints toque's version, the plan format and the Go build.
func (m Messages) Version(version string, planFormat int) {
	fmt.Fprintf(m.V.Streams.Stdout, "toque v%s\nplan format %d\n%s %s/%s\n", version, planFormat, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// KeyMade says where keygen wrote a key pair and how to use it.
func (m Messages) KeyMade(private, public, fingerprint string) {
	fmt.Fprintf(m.V.Streams.Stdout, `Wrote the private key to %s (mode 0600) and the public key to %s.
Key fingerprint: %s

Sign plans with it:       toque plan -sign-key=%s -out=plan.out   (or TOQUE_SIGN_KEY)
Trust it on the host:     add the line of %s to the trusted keys file, then
                          toque apply -verify-key=FILE plan.out   (or TOQUE_VERIFY_KEY)
`, EscapeLine(private), EscapeLine(public), fingerprint, EscapeLine(ShellQuote(private)), EscapeLine(public))
}
