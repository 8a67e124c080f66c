package command

import (
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/plan"
)

// VersionCommand is `toque version`.
type VersionCommand struct {
	*Base
}

func (c *VersionCommand) Synopsis() string { return "Print toque's version" }

func (c *VersionCommand) Help() string {
	return `
Usage: toque version

  Prints toque's version, the plan file format it reads and writes, and the
  Go version and platform it was built for.
`
}

func (c *VersionCommand) Run(args []string) int {
	fs := c.newFlagSet("version", c.Help)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	views.Messages{V: c.view(false)}.Version(Version, plan.FormatVersion)
	return ExitOK
}
