package views

import (
	"fmt"
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
// its revision, the run list, each include with its pin, each cookbook.
func (m Messages) LockWritten(l *policy.Lock, file string) {
	w := m.V.Streams.Stdout
	fmt.Fprintf(w, "Policy %s, revision %s\n", EscapeLine(l.Name), l.RevisionID)
	fmt.Fprintf(w, "Run list: %s\n", EscapeLine(strings.Join(l.RunList, ", ")))
	for _, inc := range l.IncludedPolicyLocks {
		s := inc.SourceOptions
		pin := ""
		switch {
		case s.Git != "":
			pin = fmt.Sprintf("git %s %s at %s", s.Git, s.Path, s.Sha)
		case s.Server != "":
			pin = fmt.Sprintf("server %s, revision %s", s.Server, s.PolicyRevisionID)
		case s.Remote != "":
			pin = fmt.Sprintf("%s (%s)", s.Remote, s.SHA256)
		default:
			pin = fmt.Sprintf("path %s (%s)", s.Path, s.SHA256)
		}
		fmt.Fprintf(w, "  include %s: policy %s revision %s from %s\n", EscapeLine(inc.Name), EscapeLine(inc.PolicyName), short(inc.RevisionID), EscapeLine(pin))
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
	fmt.Fprintf(w, "\nWrote %s.\n", file)
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
`, EscapeLine(private), EscapeLine(public), fingerprint, EscapeLine(shellQuote(private)), EscapeLine(public))
}
