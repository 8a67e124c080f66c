package command

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
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
	// expectDigest, verifyKey and json only apply with a plan file;
	// attrs only without one.
	expectDigest string
	verifyKey    string
	json         bool
	attrs        attrFlags
	// verify runs the end-state check (apply.Applier.SkipVerify).
	verify bool
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
                       root, else $XDG_STATE_HOME/toque). It must be owned
                       by the user toque runs as and writable by no one
                       else; it is created 0700.
  -lock-timeout=DUR    Wait up to DUR for another apply to finish (default
                       0s: fail at once, naming the holder). Besides the
                       state directory's lock, apply takes a host-wide one:
                       TOQUE_HOST_LOCK, else /run/toque/apply.lock as root.
  -parallelism=N       Read at most N resources at once while planning
                       (only without PLANFILE).
  -no-color            No colour (also NO_COLOR=1).
  -expect-digest=HEX   Refuse the plan file unless its digest is HEX
                       ("sha256:HEX" or the 64 hex digits 'toque show'
                       prints): the plan applied is the plan reviewed.
  -verify-key=FILE     Refuse the plan file, before anything else, unless
                       it is signed by one of the public keys in FILE (one
                       per line; see 'toque keygen'). Default:
                       TOQUE_VERIFY_KEY when set; then apply without a plan
                       file is refused too.
  -json                Print progress as JSON events, one object per line
                       (docs/apply-json.md), instead of text. Needs PLANFILE.
  -verify=false        Skip the end-state check: by default, once the plan
                       is carried out, apply reads every resource again (as
                       a no-op plan does) and lists, with exit status 7,
                       those that did not end as the plan predicted.

  Only without PLANFILE (a saved plan records the attributes it was made
  with):

` + attrHelp + `
  A saved plan is applied once: its journal, in the state directory, makes
  a second apply of a finished plan fail, and an apply of a plan whose
  apply was interrupted or failed resume it, never repeating what was done.

Exit status: 0 done, 1 error, 3 stale plan (nothing changed), 4 the apply
lock is held by another toque, 5 interrupted (the report says what ran;
apply the plan again to resume), 6 the plan was already applied (nothing
changed), 7 the plan was carried out but some resources did not end as it
predicted (they are listed).
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
	fs.StringVar(&a.verifyKey, "verify-key", "", "")
	fs.BoolVar(&a.json, "json", false, "")
	fs.BoolVar(&a.verify, "verify", true, "")
	a.color.register(fs)
	a.attrs.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	view := views.NewApply(c.view(a.color.noColor), a.json, nil)
	var diags diag.Diagnostics
	finish := func() int {
		st := views.ExitStatus(diags)
		view.Diagnostics(diags, st)
		return st
	}
	usage := func(format string, args ...any) int {
		diags = diags.Append(diag.Errorf(format, args...).WithKind(views.KindUsage))
		return finish()
	}

	verify, err := pickKey(c.Env, "verify-key", set["verify-key"], a.verifyKey, envVerifyKey)
	if err != nil {
		return usage("%s", err)
	}
	wantDigest := ""
	if set["expect-digest"] {
		d, err := parseDigest(a.expectDigest)
		if err != nil {
			return usage("%s", err)
		}
		wantDigest = d
	}
	var p *plan.Plan
	var digest string   // the file's verified checksum, or computed for a fresh plan
	var planFile string // the plan file applied, "" for a fresh plan
	switch fs.NArg() {
	case 0:
		switch {
		case set["expect-digest"]:
			return usage("-expect-digest needs a plan file: toque apply -expect-digest=HEX PLANFILE (without one, apply makes a new plan, which nobody reviewed)")
		case a.json:
			return usage("-json needs a plan file: toque apply -json PLANFILE (apply without one asks for confirmation, which a JSON stream cannot)")
		case verify.path != "":
			return usage("%s names the keys whose signed plans this host applies, so apply needs a signed plan file: toque apply PLANFILE (without one, apply makes a new plan, which nobody signed)", verify.from)
		case a.parallelism < 1:
			return usage("-parallelism must be at least 1")
		}
		var st int
		p, digest, st = c.planAndConfirm(a)
		if p == nil {
			return st
		}
	case 1:
		for _, name := range []string{"auto-approve", "parallelism"} {
			if set[name] {
				return usage("apply PLANFILE takes no planning flags (-%s): the plan file is applied exactly as it was reviewed", name)
			}
		}
		for _, name := range []string{"attr", "attr-file"} {
			if set[name] {
				return usage("apply PLANFILE takes no -%s: the plan was made with its attributes, and is applied exactly as it was reviewed. Give -%s to 'toque plan'", name, name)
			}
		}
		var d diag.Diagnostics
		planFile = c.path(fs.Arg(0))
		p, digest, d = c.readVerifiedPlan(planFile, verify)
		if d.HasErrors() {
			diags = diags.Append(d)
			return finish()
		}
	default:
		return usage("apply takes at most one argument, the plan file (got %q)", strings.Join(fs.Args(), " "))
	}
	if digest == "" {
		digest = p.Digest()
	}
	if wantDigest != "" && digest != wantDigest {
		diags = diags.Append(diag.Errorf(
			"the plan's digest is %s, but -expect-digest wants %s: this is not the plan that was reviewed, so nothing was applied. Apply the reviewed plan file, or review this one", digest, wantDigest).WithKind(views.KindDigestMismatch))
		return finish()
	}

	view.Start(p, digest)
	acked := make(chan struct{})
	defer close(acked)
	go func() {
		select {
		case <-c.Stop:
			view.Stopping()
		case <-acked:
		}
	}()
	applier := &apply.Applier{
		Registry:    c.Registry,
		StateDir:    stateDir(c.Env, a.stateDir),
		HostLock:    hostLock(c.Env),
		Logger:      c.Logger.Named("apply"),
		Hooks:       view,
		LockTimeout: a.lockTimeout,
		Stop:        c.Stop,
		PlanDigest:  digest,
		PlanFile:    planFile,
		// Values known only at apply are evaluated by package eval, which
		// apply does not import (docs/design.md, "Values known at apply").
		Resolver:   eval.Resolver{},
		SkipVerify: !a.verify,
	}
	report, err := applier.Apply(c.Ctx, p)
	if report != nil {
		view.Summary(report)
	}
	diags = diags.Append(err)
	return finish()
}

// readVerifiedPlan reads a plan file (under the trusted keys of verify,
// first of all) and checks that it may be applied here. It returns the
// plan and its digest.
func (b *Base) readVerifiedPlan(path string, verify keyOption) (*plan.Plan, string, diag.Diagnostics) {
	f, diags := b.readPlanFile(path, verify)
	if diags.HasErrors() {
		return nil, "", diags
	}
	refuse := func(err error) (*plan.Plan, string, diag.Diagnostics) {
		return nil, "", diags.Append(diag.Errorf("%w", err).WithKind(views.KindPlanRefused))
	}
	if err := plan.Applicable(f.Plan); err != nil {
		return refuse(err)
	}
	facts, err := host.Detect(b.ReadCtx)
	if err != nil {
		return refuse(fmt.Errorf("cannot read the host's identity: %w", err))
	}
	if err := plan.VerifyHost(f.Plan, facts.Identity); err != nil {
		return refuse(err)
	}
	return f.Plan, f.Digest, nil
}

// planAndConfirm plans, shows the plan and asks for "yes". It returns the
// plan to apply and its digest, or nil and the status to exit with.
func (c *ApplyCommand) planAndConfirm(a applyArgs) (*plan.Plan, string, int) {
	p, diags := c.makePlan(a.parallelism, &a.attrs, false)
	if p != nil && (p.Errored || diags.HasErrors()) {
		p = nil
	}
	// A plan with changes is about to be applied: its digest keys the
	// journal and the report, so it is shown. A plan without any is not
	// applied, and its digest would name nothing.
	o := views.PlanOptions{NoDigest: true}
	if p != nil && p.HasChanges() {
		o = views.PlanOptions{Digest: p.Digest()}
	}
	if err := views.NewPlan(c.view(a.color.noColor), false, false).Show(p, diags, o); err != nil {
		c.view(a.color.noColor).Diagnostics(diag.Diagnostics{}.Append(err))
		return nil, "", ExitError
	}
	if p == nil {
		return nil, "", views.ExitStatus(diags.Append(diag.Errorf("no plan to apply")))
	}
	if !p.HasChanges() {
		return nil, "", ExitOK
	}
	if !a.autoApprove {
		answer, err := c.ui().Ask("\nDo you want to perform these actions on " + p.Host.Hostname + "?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value:")
		if err != nil || strings.TrimSpace(answer) != "yes" {
			fmt.Fprintln(c.Streams.Stdout, "\nApply cancelled.")
			return nil, "", ExitError
		}
	}
	fmt.Fprintln(c.Streams.Stdout)
	return p, o.Digest, ExitOK
}
