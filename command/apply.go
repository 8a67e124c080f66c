package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// ApplyCommand is `toque apply [PLANFILE]`.
type ApplyCommand struct {
	*Base
}

type applyArgs struct {
	autoApprove bool
	stateDir    string
	lockTimeout time.Duration
	parallelism int
	color       colorFlags
	// expectDigest and json only apply with a plan file.
	expectDigest string
	json         bool
}

func (c *ApplyCommand) Synopsis() string {
	return "Carry out a saved plan (or plan, confirm and apply)"
}

func (c *ApplyCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] apply [options] [PLANFILE]

  With PLANFILE (made by 'toque plan -out=PLANFILE'), carries out exactly
  that plan. No recipe is read again: what was reviewed is what runs. The
  plan is refused when its checksum fails, when it was made by an
  incompatible version of toque or on another host, and, before anything is
  changed, when the host no longer matches what the plan read (a stale
  plan: every difference is listed).

  Without PLANFILE, plans, shows the plan and asks for 'yes' before applying
  it (-auto-approve skips the question).

Options:

  -auto-approve        Apply without asking (only without PLANFILE).
  -state-dir=DIR       Where backups, reports and the apply lock live
                       (default: TOQUE_STATE_DIR, else /var/lib/toque as
                       root, else $XDG_STATE_HOME/toque).
  -lock-timeout=DUR    Wait up to DUR for another apply to finish (default
                       0s: fail at once, naming the holder).
  -parallelism=N       Read at most N resources at once while planning
                       (only without PLANFILE).
  -no-color            No colour (also NO_COLOR=1).
  -expect-digest=HEX   Refuse the plan file unless its digest is HEX
                       ("sha256:HEX" or the 64 hex digits 'toque show'
                       prints): the plan applied is the plan reviewed.
  -json                Print progress as JSON events, one object per line
                       (docs/apply-json.md), instead of text. Needs PLANFILE.

Exit status: 0 done, 1 error, 3 stale plan (nothing changed), 4 the apply
lock is held by another toque, 5 interrupted (the report says what ran).
`
}

func (c *ApplyCommand) Run(args []string) int {
	var a applyArgs
	fs := c.newFlagSet("apply", c.Help)
	fs.BoolVar(&a.autoApprove, "auto-approve", false, "")
	fs.StringVar(&a.stateDir, "state-dir", "", "")
	fs.DurationVar(&a.lockTimeout, "lock-timeout", 0, "")
	fs.IntVar(&a.parallelism, "parallelism", 10, "")
	fs.StringVar(&a.expectDigest, "expect-digest", "", "")
	fs.BoolVar(&a.json, "json", false, "")
	a.color.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	outColor := a.color.enabled(c.Env, c.Streams.Stdout)
	ev, wantDigest, err := c.checkPlanFileFlags(a, set, fs.NArg())
	if err != nil {
		return c.fail(ev, apply.ErrorKindUsage, ExitError, err)
	}

	var p *plan.Plan
	var digest string // the file's verified checksum, or computed for a fresh plan
	switch fs.NArg() {
	case 0:
		if a.parallelism < 1 {
			c.errorf("-parallelism must be at least 1")
			return ExitError
		}
		var st int
		p, st = c.planAndConfirm(a, outColor)
		if p == nil {
			return st
		}
	case 1:
		for _, name := range []string{"auto-approve", "parallelism"} {
			if set[name] {
				c.errorf("apply PLANFILE takes no planning flags (-%s): the plan file is applied exactly as it was reviewed", name)
				return ExitError
			}
		}
		var err error
		p, digest, err = c.readVerifiedPlan(c.path(fs.Arg(0)))
		if err != nil {
			return c.fail(ev, apply.ErrorKindPlanRefused, ExitError, err)
		}
	default:
		return c.fail(ev, apply.ErrorKindUsage, ExitError, fmt.Errorf("apply takes at most one argument, the plan file (got %q)", strings.Join(fs.Args(), " ")))
	}
	if digest == "" {
		digest = p.Digest()
	}
	if wantDigest != "" && digest != wantDigest {
		return c.fail(ev, apply.ErrorKindDigestMismatch, ExitError, fmt.Errorf(
			"the plan's digest is %s, but -expect-digest wants %s: this is not the plan that was reviewed, so nothing was applied. Apply the reviewed plan file, or review this one", digest, wantDigest))
	}
	if !p.HasChanges() && ev == nil {
		fmt.Fprintf(c.Streams.Stdout, "No changes. %s already matches the plan.\n", p.Host.Hostname)
	}

	view := &applyView{w: c.Streams.Stdout, color: outColor}
	var hooks apply.Hooks = view
	if ev != nil {
		hooks = ev
		ev.Start(p, digest)
	}
	applier := &apply.Applier{
		Registry:    c.Registry,
		StateDir:    c.stateDir(a.stateDir),
		Logger:      c.Logger.Named("apply"),
		Hooks:       hooks,
		LockTimeout: a.lockTimeout,
		Stop:        c.Stop,
		PlanDigest:  digest,
	}
	report, err := applier.Apply(c.Ctx, p)
	if report != nil {
		if ev != nil {
			ev.Summary(report)
		} else {
			view.summary(report)
		}
	}
	if err == nil {
		return ExitOK
	}
	if ev != nil {
		ev.Error("", err, exitCodeOf(err))
	}
	var stale *apply.StaleError
	var held *apply.LockHeldError
	var intr *apply.InterruptedError
	switch {
	case errors.As(err, &stale):
		c.errorf("%s", err)
		return ExitStale
	case errors.As(err, &held):
		c.errorf("%s", err)
		return ExitLockHeld
	case errors.As(err, &intr):
		c.errorf("%s", err)
		return ExitInterrupted
	}
	c.errorf("%s", err)
	return ExitError
}

// readVerifiedPlan reads a plan file and checks that it may be applied
// here. It returns the plan and its digest.
func (b *Base) readVerifiedPlan(path string) (*plan.Plan, string, error) {
	p, digest, err := plan.ReadWithDigest(path)
	if err != nil {
		return nil, "", err
	}
	if err := plan.Applicable(p); err != nil {
		return nil, "", err
	}
	facts, err := host.Detect(b.ReadCtx)
	if err != nil {
		return nil, "", fmt.Errorf("cannot read the host's identity: %w", err)
	}
	if err := plan.VerifyHost(p, facts.Identity); err != nil {
		return nil, "", err
	}
	return p, digest, nil
}

// planAndConfirm plans, shows the plan and asks for "yes". It returns the
// plan to apply, or nil and the status to exit with.
func (c *ApplyCommand) planAndConfirm(a applyArgs, outColor bool) (*plan.Plan, int) {
	p, files, diags := c.makePlan(a.parallelism)
	if c.interrupted() {
		return nil, ExitInterrupted
	}
	c.showDiags(diags, files, a.color.enabled(c.Env, c.Streams.Stderr))
	if p == nil || p.Errored || diags.HasErrors() {
		return nil, ExitError
	}
	plan.RenderText(c.Streams.Stdout, p, plan.RenderOptions{Color: outColor})
	if !p.HasChanges() {
		return nil, ExitOK
	}
	if !a.autoApprove {
		answer, err := c.ui().Ask("\nDo you want to perform these actions on " + p.Host.Hostname + "?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value:")
		if err != nil || strings.TrimSpace(answer) != "yes" {
			fmt.Fprintln(c.Streams.Stdout, "\nApply cancelled.")
			return nil, ExitError
		}
	}
	fmt.Fprintln(c.Streams.Stdout)
	return p, ExitOK
}

// applyView prints apply's progress, Terraform style.
type applyView struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
}

var _ apply.Hooks = (*applyView)(nil)

func (v *applyView) paint(attr color.Attribute, s string) string {
	if !v.color {
		return s
	}
	c := color.New(attr, color.Bold)
	c.EnableColor()
	return c.Sprint(s)
}

func verbs(k resources.Kind) (ing, done string) {
	switch k {
	case resources.Create:
		return "Creating…", "Creation complete"
	case resources.Update:
		return "Modifying…", "Modifications complete"
	case resources.Delete:
		return "Deleting…", "Deletion complete"
	case resources.Run:
		return "Running…", "Run complete"
	}
	return "Converging…", "Complete"
}

func (v *applyView) PreApply(r *plan.Resource) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ing, _ := verbs(r.Kind)
	fmt.Fprintf(v.w, "%s: %s\n", v.paint(color.FgWhite, r.Address), ing)
}

func (v *applyView) PostApply(r *plan.Resource, rr apply.ResourceReport) {
	v.mu.Lock()
	defer v.mu.Unlock()
	d := time.Duration(rr.DurationMS) * time.Millisecond
	_, done := verbs(r.Kind)
	switch rr.Outcome {
	case apply.OutcomeFailed, apply.OutcomeFailedIgnored:
		fmt.Fprintf(v.w, "%s: %s after %s: %s\n", v.paint(color.FgRed, r.Address), rr.Outcome, roundDur(d), rr.Error)
	case apply.OutcomeUnchanged:
		fmt.Fprintf(v.w, "%s: already in the planned state, nothing to do\n", r.Address)
	case apply.OutcomeSkipped:
		fmt.Fprintf(v.w, "%s: skipped, a guard decided (see the note)\n", v.paint(color.FgMagenta, r.Address))
	default:
		fmt.Fprintf(v.w, "%s: %s after %s\n", v.paint(color.FgGreen, r.Address), done, roundDur(d))
	}
	if rr.DiffersFromPlan != "" {
		fmt.Fprintf(v.w, "  note: differs from plan: %s\n", rr.DiffersFromPlan)
	}
}

func (v *applyView) Heartbeat(r *plan.Resource, elapsed time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ing, _ := verbs(r.Kind)
	fmt.Fprintf(v.w, "%s: Still %s [%s elapsed]\n", r.Address, strings.ToLower(strings.TrimSuffix(ing, "…"))+"…", roundDur(elapsed))
}

func (v *applyView) AlreadyDone(r *plan.Resource) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(v.w, "%s: already in its planned state (done earlier), skipping\n", r.Address)
}

func (v *applyView) summary(rep *apply.Report) {
	v.mu.Lock()
	defer v.mu.Unlock()
	head := "Apply complete!"
	if rep.Interrupted {
		head = "Apply interrupted!"
	} else if rep.Failed > 0 {
		head = "Apply failed!"
	}
	fmt.Fprintf(v.w, "\n%s Resources: %d changed, %d unchanged, %d failed, %d skipped.\n", v.paint(color.FgGreen, head), rep.Changed, rep.Unchanged, rep.Failed, rep.Skipped)
	if rep.Path != "" {
		fmt.Fprintf(v.w, "Report: %s\n", rep.Path)
	}
}

func roundDur(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return d.Round(time.Second).String()
}
