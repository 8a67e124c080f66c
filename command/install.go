package command

import (
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
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
  reported, all at once, and no lock is written; so is every file of the
  policy's cookbooks (recipes, attribute files, resource types,
  templates) that does not parse, at its line and column.

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
		return b.fail(col.noColor, "install takes no arguments; to move the pins of named includes or cookbooks, run toque update NAME…")
	}
	if !policy.Exists(b.workDir()) {
		return b.fail(col.noColor, "%s holds no policy.hcl; %s works on a policy (see docs/policies.md)", b.workDir(), name)
	}
	v := b.view(col.noColor)
	ws, err := b.workspace(state)
	if err != nil {
		diags := diag.Diagnostics{}.Append(err)
		v.Diagnostics(diags)
		return views.ExitStatus(diags)
	}
	res, hdiags := ws.Install(b.ReadCtx, policy.InstallOptions{Update: update, Names: fs.Args()})
	b.addFiles(ws.Parser.Files())
	diags := diag.Diagnostics{}.Append(hdiags)
	if res == nil && !diags.HasErrors() {
		diags = diags.Append(diag.Errorf("%s wrote no lock", name))
	}
	if !diags.HasErrors() {
		if res.Written {
			views.Messages{V: v}.LockWritten(res.Lock, res.Changes, policy.LockFileName)
		} else {
			views.Messages{V: v}.LockUpToDate(res.Lock)
		}
	}
	v.Diagnostics(diags)
	return views.ExitStatus(diags)
}
