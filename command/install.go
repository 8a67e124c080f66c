package command

import (
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
  cache directory (TOQUE_CACHE_DIR, else STATE_DIR/cache). Policy servers
  get TOQUE_POLICY_TOKEN, when set, as a bearer token.

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
	lock, diags := ws.Install(b.ReadCtx, policy.InstallOptions{Update: update, Names: fs.Args()})
	b.showDiags(diags, ws.Parser.Files(), col.enabled(b.Env, b.Streams.Stderr))
	if lock == nil || diags.HasErrors() {
		return ExitError
	}
	printLockSummary(b.Streams.Stdout, lock)
	fmt.Fprintf(b.Streams.Stdout, "\nWrote %s.\n", policy.LockFileName)
	return ExitOK
}

// printLockSummary lists what a lock pins.
func printLockSummary(w io.Writer, l *policy.Lock) {
	fmt.Fprintf(w, "Policy %s, revision %s\n", l.Name, l.RevisionID)
	fmt.Fprintf(w, "Run list: %s\n", strings.Join(l.RunList, ", "))
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
		fmt.Fprintf(w, "  include %s: policy %s revision %s from %s\n", inc.Name, inc.PolicyName, inc.RevisionID[:min(10, len(inc.RevisionID))], pin)
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
