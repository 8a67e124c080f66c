package command

// UpdateCommand is `toque update [NAME…]`.
type UpdateCommand struct {
	*Base
}

func (c *UpdateCommand) Synopsis() string { return "Move the pins of policy.lock.json" }

func (c *UpdateCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] update [options] [NAME…]

  Like install, but moves pins: git refs are fetched and followed to their
  current commit, policy groups to the revision they hold now, remote lock
  URLs to their current content. With names, only the named include_policy
  blocks and cookbooks move; every other pin is kept.

Options:

  -state-dir=DIR   State directory (its cache/ holds fetched sources).
  -no-color        No colour (also NO_COLOR=1).
`
}

func (c *UpdateCommand) Run(args []string) int {
	return c.Base.runInstall("update", c.Help, args, true)
}
