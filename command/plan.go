package command

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
)

// PlanCommand is `toque plan`.
type PlanCommand struct {
	*Base
}

// planArgs are plan's flags.
type planArgs struct {
	out              string
	json             bool
	detailedExitCode bool
	parallelism      int
	color            colorFlags
	md               markdownFlags
}

func (a *planArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.out, "out", "", "Write the plan to this file, for `toque apply FILE`.")
	fs.BoolVar(&a.json, "json", false, "Print the plan as JSON (the format of `show -json`).")
	fs.BoolVar(&a.detailedExitCode, "detailed-exitcode", false, "Exit 0 with no changes, 1 on error, 2 with changes.")
	fs.IntVar(&a.parallelism, "parallelism", 10, "Read at most N resources at once.")
	a.color.register(fs)
	a.md.register(fs)
}

func (c *PlanCommand) Synopsis() string { return "Show what toque would change, and save it for apply" }

func (c *PlanCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] plan [options]

  Reads the recipes in the working directory (every *.hcl and *.hcl.json
  file, in lexical order), reads the live state of every resource they
  declare, and shows what apply would change. Nothing on the host is changed.

  With -out=FILE the plan is saved; 'toque apply FILE' then carries out
  exactly that plan, and refuses it if the host no longer matches.

Options:

  -out=FILE            Save the plan to FILE (mode 0600). An empty plan is
                       saved too, so an old file cannot be applied by mistake.
  -json                Print the plan in the JSON format of 'show -json'.
  -markdown            Print the plan as Markdown for a pull-request comment
                       (see 'toque show -help'); with -changes-only and
                       -max-bytes=N (default 60000).
  -detailed-exitcode   Exit 0 when nothing would change, 1 on error, 2 when
                       the plan has changes.
  -parallelism=N       Read at most N resources at once (default 10).
  -no-color            No colour (also NO_COLOR=1). Colour is only used on a
                       terminal.
`
}

func (c *PlanCommand) Run(args []string) int {
	var a planArgs
	fs := c.newFlagSet("plan", c.Help)
	a.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		c.errorf("plan takes no arguments (got %q); use -chdir=DIR to plan another directory", strings.Join(fs.Args(), " "))
		return ExitError
	}
	if a.parallelism < 1 {
		c.errorf("-parallelism must be at least 1")
		return ExitError
	}
	if err := a.md.check(fs, a.json); err != nil {
		c.errorf("%s", err)
		return ExitError
	}
	color := a.color.enabled(c.Env, c.Streams.Stdout)

	p, files, diags := c.makePlan(a.parallelism)
	if c.interrupted() {
		return ExitInterrupted
	}
	c.showDiags(diags, files, a.color.enabled(c.Env, c.Streams.Stderr))
	if p == nil {
		return ExitError
	}
	enc, err := p.Encode()
	if err != nil {
		c.errorf("%s", err)
		return ExitError
	}
	mdFailed := false
	if a.json {
		b, err := plan.JSONView(p)
		if err != nil {
			c.errorf("%s", err)
			return ExitError
		}
		fmt.Fprintln(c.Streams.Stdout, string(b))
	} else if a.md.markdown {
		// Rendered before the file is written, which happens anyway.
		mdFailed = !c.writeMarkdown(p, a.md, a.out, enc.Digest)
	} else if !p.Errored {
		plan.RenderText(c.Streams.Stdout, p, plan.RenderOptions{Color: color, SavedTo: a.out, Digest: enc.Digest})
	}
	if a.out != "" {
		// An errored plan is written too (apply refuses it), so an older
		// plan file at the same path cannot be applied by mistake.
		if err := plan.WriteEncoded(c.path(a.out), enc); err != nil {
			c.errorf("cannot save the plan: %s", err)
			return ExitError
		}
	}
	if p.Errored || diags.HasErrors() || mdFailed {
		return ExitError
	}
	if a.detailedExitCode && p.HasChanges() {
		return ExitChanges
	}
	return ExitOK
}

// makePlan loads the recipes and plans them against this host. It returns
// the plan (nil when nothing could be planned), the parsed files for
// rendering diagnostics, and the diagnostics.
func (b *Base) makePlan(parallelism int) (*plan.Plan, map[string]*hcl.File, hcl.Diagnostics) {
	cfg, pol, diags := b.loadConfig() // policy mode when policy.hcl is present
	files := pol.files(cfg)
	if diags.HasErrors() || cfg == nil {
		return nil, files, diags
	}
	facts, err := host.Detect(b.ReadCtx)
	if err != nil {
		return nil, files, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the host's facts",
			Detail:   err.Error(),
		})
	}
	planner := &plan.Planner{
		Registry:    b.Registry,
		Parallelism: parallelism,
		Logger:      b.Logger.Named("plan"),
		Host:        facts,
		Version:     Version,
	}
	p, pdiags := planner.Plan(b.ReadCtx, cfg)
	if b.ReadCtx.Err() != nil {
		// Interrupted: every resource still being read failed with the
		// cancellation; one message says it better (see interrupted).
		return nil, files, nil
	}
	pol.stamp(p)
	diags = append(diags, pdiags...)
	return p, files, diags
}

// interrupted reports (and says) whether a signal stopped a read-only
// phase. Nothing was changed, and no plan file was written.
func (b *Base) interrupted() bool {
	if b.ReadCtx.Err() == nil {
		return false
	}
	b.errorf("interrupted: stopped before finishing; nothing was changed and no plan was saved")
	return true
}
