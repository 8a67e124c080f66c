package command

import (
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/eval"
)

// ValidateCommand is `toque validate`.
type ValidateCommand struct {
	*Base
}

func (c *ValidateCommand) Synopsis() string { return "Check the recipes without reading the host" }

func (c *ValidateCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] validate [options]

  Checks the recipes' syntax and every resource against its type's schema:
  unknown types and properties, wrong types, bad actions, missing required
  properties, references to node attributes that are not written, and
  every data block against its data source. Host facts and data blocks'
  answers are treated as unknown; the host is neither read nor changed.

Options:

  -json                Print the result as JSON: {"valid": …, "error_count": …,
                       "warning_count": …, "diagnostics": […]}.
  -no-color            No colour (also NO_COLOR=1).
` + attrHelp
}

func (c *ValidateCommand) Run(args []string) int {
	var asJSON bool
	var col colorFlags
	var attrs attrFlags
	fs := c.newFlagSet("validate", c.Help)
	fs.BoolVar(&asJSON, "json", false, "")
	col.register(fs)
	attrs.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		return c.fail(col.noColor, "validate takes no arguments; use -chdir=DIR to validate another directory")
	}
	cfg, pol, diags := c.loadConfig(&attrs) // policy mode when policy.hcl is present
	if cfg != nil && !diags.HasErrors() {
		reg, tdiags := eval.Types(cfg, c.Registry)
		diags = diags.Append(tdiags)
		if !tdiags.HasErrors() {
			diags = diags.Append(eval.CheckData(cfg, reg, pol.scope))
			_, ediags := eval.Resources(cfg, reg, pol.scope)
			diags = diags.Append(ediags)
		}
	}
	if err := views.NewValidate(c.view(col.noColor), asJSON).Result(diags); err != nil {
		diags = diags.Append(err)
	}
	return views.ExitStatus(diags)
}
