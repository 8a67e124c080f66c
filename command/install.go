package command

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/toquehq/toque/policy"
)

// InstallCommand is `toque install`.
type InstallCommand struct {
	*Base
}

func (c *InstallCommand) Synopsis() string { return "Resolve policy.hcl into policy.lock.json" }

func (c *InstallCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] install [options]

  Resolves policy.hcl into policy.lock.json: reads its cookbooks, fetches
  every include_policy (path, git, server, remote), merges them and writes
  the lock. Pins the existing lock records (git commits, server revisions,
  remote lock digests) are kept for every source that did not change; use
  'toque update' to move them. Conflicts between included policies are
  reported, all at once, and no lock is written.

  Git sources are fetched with the git binary into bare mirrors under the
  cache directory (TOQUE_CACHE_DIR, else STATE_DIR/cache). The servers and
  remote URLs policy.hcl names get TOQUE_POLICY_TOKEN, when set, as a
  bearer token: over https or to loopback only, never across a redirect.

Options:

  -state-dir=DIR   State directory (its cache/ holds fetched sources).
  -no-color        No colour (also NO_COLOR=1).
`
}

func (c *InstallCommand) Run(args []string) int {
	return c.Base.runInstall("install", c.Help, args, false)
}

// runInstall is install and update.
func (b *Base) runInstall(name string, help func() string, args []string, update bool) int {
	var state string
	var col colorFlags
	fs := b.newFlagSet(name, help)
	fs.StringVar(&state, "state-dir", "", "")
	col.register(fs)
	if st := b.parseFlags(fs, args, help); st >= 0 {
		return st
	}
	if !update && fs.NArg() > 0 {
		b.errorf("install takes no arguments; to move the pins of named includes or cookbooks, run toque update NAME…")
		return ExitError
	}
	if !policy.Exists(b.workDir()) {
		b.errorf("%s holds no policy.hcl; %s works on a policy (see docs/policies.md)", b.workDir(), name)
		return ExitError
	}
	ws := b.workspace(state)
	res, diags := ws.Install(b.ReadCtx, policy.InstallOptions{Update: update, Names: fs.Args()})
	b.showDiags(diags, ws.Parser.Files(), col.enabled(b.Streams.Stderr))
	if res == nil || diags.HasErrors() {
		return ExitError
	}
	if !res.Written {
		fmt.Fprintf(b.Streams.Stdout, "No changes: the lock is up to date (revision %s).\n", res.Lock.RevisionID)
		return ExitOK
	}
	printLockSummary(b.Streams.Stdout, res.Lock)
	printLockChanges(b.Streams.Stdout, res.Changes)
	fmt.Fprintf(b.Streams.Stdout, "\nWrote %s.\n", policy.LockFileName)
	return ExitOK
}

// printLockChanges lists what moved from the previous lock.
func printLockChanges(w io.Writer, c *policy.LockChanges) {
	fmt.Fprintln(w)
	switch {
	case c.OldRevision == "":
		fmt.Fprintln(w, "No lock before: everything above is new.")
	case c.Empty():
		fmt.Fprintln(w, "No changes to the policy; the lock's recorded inputs changed, so it is written again.")
		return
	case c.OldRevision == c.NewRevision:
		fmt.Fprintf(w, "Changes (revision %s unchanged):\n", shortID(c.NewRevision))
	default:
		fmt.Fprintf(w, "Changes, revision %s → %s:\n", shortID(c.OldRevision), shortID(c.NewRevision))
	}
	if c.OldRevision == "" {
		return // the summary above lists everything
	}
	if c.RunList != nil {
		fmt.Fprintf(w, "  ~ run list: %s → %s\n", strings.Join(c.RunList.Old, ", "), strings.Join(c.RunList.New, ", "))
	}
	for _, cb := range c.Cookbooks {
		switch cb.Kind {
		case policy.Added:
			fmt.Fprintf(w, "  + cookbook %s %s (%s) from %s\n", cb.Name, cb.New.Version, shortID(cb.New.Identifier), cb.New.Source)
		case policy.Removed:
			fmt.Fprintf(w, "  - cookbook %s %s (%s)\n", cb.Name, cb.Old.Version, shortID(cb.Old.Identifier))
		default:
			fmt.Fprintf(w, "  ~ cookbook %s %s (%s) → %s (%s)", cb.Name, cb.Old.Version, shortID(cb.Old.Identifier), cb.New.Version, shortID(cb.New.Identifier))
			if cb.Old.Source != cb.New.Source {
				fmt.Fprintf(w, ", from %s → %s", cb.Old.Source, cb.New.Source)
			}
			fmt.Fprintln(w)
		}
	}
	for _, inc := range c.Includes {
		switch inc.Kind {
		case policy.Added:
			fmt.Fprintf(w, "  + include %s: policy %s revision %s from %s\n", inc.Name, inc.New.PolicyName, shortID(inc.New.RevisionID), describePin(inc.New.SourceOptions))
		case policy.Removed:
			fmt.Fprintf(w, "  - include %s: policy %s revision %s\n", inc.Name, inc.Old.PolicyName, shortID(inc.Old.RevisionID))
		default:
			fmt.Fprintf(w, "  ~ include %s: revision %s → %s, pin %s → %s\n", inc.Name, shortID(inc.Old.RevisionID), shortID(inc.New.RevisionID),
				describePin(inc.Old.SourceOptions), describePin(inc.New.SourceOptions))
		}
	}
	for _, a := range c.Attributes {
		p := strings.Join(a.Path, ".")
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

func shortID(id string) string { return id[:min(10, len(id))] }

func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(b)); len(r) > 80 {
		return string(r[:77]) + "…"
	}
	return string(b)
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

// printLockSummary lists what a lock pins.
func printLockSummary(w io.Writer, l *policy.Lock) {
	fmt.Fprintf(w, "Policy %s, revision %s\n", l.Name, l.RevisionID)
	fmt.Fprintf(w, "Run list: %s\n", strings.Join(l.RunList, ", "))
	for _, inc := range l.IncludedPolicyLocks {
		fmt.Fprintf(w, "  include %s: policy %s revision %s from %s\n", inc.Name, inc.PolicyName, shortID(inc.RevisionID), describePin(inc.SourceOptions))
	}
	names := make([]string, 0, len(l.CookbookLocks))
	for n := range l.CookbookLocks {
		names = append(names, n)
	}
	sortStrings(names)
	for _, n := range names {
		cl := l.CookbookLocks[n]
		fmt.Fprintf(w, "  cookbook %s %s (%s) from %s\n", n, cl.Version, cl.Identifier[:min(10, len(cl.Identifier))], cl.Source)
	}
}
