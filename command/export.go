package command

import (
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/policy"
)

// ExportCommand is `toque export DIR`.
type ExportCommand struct {
	*Base
}

func (c *ExportCommand) Synopsis() string {
	return "Write the lock and its cookbooks in the policy server layout"
}

func (c *ExportCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] export [options] DIR

  Writes policy.lock.json and every locked cookbook to DIR in the policy
  server layout, so that a static web server or object store serving DIR
  can be the 'server' (or 'remote') of an include_policy block:

    policies/NAME/revisions/REVISION_ID
    policy_groups/GROUP/policies/NAME      (with -policy-group)
    NAME.lock.json
    cookbook_artifacts/NAME/IDENTIFIER     (a manifest of the cookbook's files)
    file_store/SHA256                      (the files' bytes)

  The lock must be current (run toque install first).

Options:

  -policy-group=GROUP   Also publish the lock as GROUP's policy.
  -state-dir=DIR        State directory (its cache/ holds fetched sources).
`
}

func (c *ExportCommand) Run(args []string) int {
	var group, state string
	fs := c.newFlagSet("export", c.Help)
	fs.StringVar(&group, "policy-group", "", "")
	fs.StringVar(&state, "state-dir", "", "")
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() != 1 {
		return c.fail(false, "export takes one argument, the directory to write: toque export DIR")
	}
	if !policy.Exists(c.workDir()) {
		return c.fail(false, "%s holds no policy.hcl; export works on a policy (see docs/policies.md)", c.workDir())
	}
	out := c.path(fs.Arg(0))
	ws, err := c.workspace(state)
	var res *policy.ExportResult
	if err == nil {
		res, err = ws.Export(c.ReadCtx, out, group)
	}
	if err != nil {
		diags := diag.Diagnostics{}.Append(diag.Errorf("cannot export: %w", err))
		c.view(false).Diagnostics(diags)
		return views.ExitStatus(diags)
	}
	views.Messages{V: c.view(false)}.Exported(res.RevisionID, out, len(res.Files))
	return ExitOK
}
