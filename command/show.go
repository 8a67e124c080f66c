package command

import (
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// ShowCommand is `toque show PLANFILE`.
type ShowCommand struct {
	*Base
}

func (c *ShowCommand) Synopsis() string { return "Show a saved plan" }

func (c *ShowCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] show [options] PLANFILE

  Shows a plan saved by 'toque plan -out=PLANFILE', as plan printed it, with
  the plan's digest and who signed it. It needs only the file, not the host
  it was made on. What it shows is derived from the values apply runs.

Options:

  -json       Print the documented machine-readable form (docs/plan-json.md).
              Sensitive values are never included.
  -markdown   Print Markdown for a pull-request comment (docs/markdown.md):
              a title, the summary, the addresses by action, the digest,
              and one collapsible section per resource.
  -changes-only
              With -markdown: leave out unchanged and skipped resources.
  -max-bytes=N
              With -markdown: keep the output under N bytes (default
              60000) by leaving out whole resource sections from the end,
              and say so. A limit too small for the summary is an error.
  -verify-key=FILE
              Refuse the plan unless it is signed by one of the public keys
              in FILE (one per line), as 'apply -verify-key' does. Default:
              TOQUE_VERIFY_KEY when set.
  -no-color   No colour (also NO_COLOR=1).
`
}

func (c *ShowCommand) Run(args []string) int {
	var asJSON bool
	var verifyKey string
	var col colorFlags
	var md markdownFlags
	fs := c.newFlagSet("show", c.Help)
	fs.BoolVar(&asJSON, "json", false, "")
	fs.StringVar(&verifyKey, "verify-key", "", "")
	col.register(fs)
	md.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if err := md.check(fs, asJSON); err != nil {
		return c.fail(col.noColor, "%s", err)
	}
	if fs.NArg() != 1 {
		return c.fail(col.noColor, "show needs exactly one argument, the plan file: toque show PLANFILE")
	}
	verify, err := pickKey(c.Env, "verify-key", isSet(fs, "verify-key"), verifyKey, envVerifyKey)
	if err != nil {
		return c.fail(col.noColor, "%s", err)
	}
	f, diags := c.readPlanFile(c.path(fs.Arg(0)), verify)
	o := views.PlanOptions{Markdown: md.options(fs.Arg(0))}
	var p *plan.Plan
	if f != nil {
		p, o.Digest, o.Signature = f.Plan, f.Digest, signatureInfo(f)
	}
	view := views.NewPlan(c.view(col.noColor), asJSON, md.markdown)
	if err := view.Show(p, diags, o); err != nil && !readerGone(err) {
		diags = diags.Append(err)
		c.view(col.noColor).Diagnostics(diag.Diagnostics{}.Append(err))
	}
	return views.ExitStatus(diags)
}
