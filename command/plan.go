package command

import (
	"crypto/ed25519"
	"flag"
	"strings"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/plan/planner"
	"github.com/toquehq/toque/policy"
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
	signKey          string
	updateLocal      bool
	color            colorFlags
	md               markdownFlags
	attrs            attrFlags
}

func (a *planArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.out, "out", "", "Write the plan to this file, for `toque apply FILE`.")
	fs.BoolVar(&a.json, "json", false, "Print the plan as JSON (the format of `show -json`).")
	fs.BoolVar(&a.detailedExitCode, "detailed-exitcode", false, "Exit 0 with no changes, 1 on error, 2 with changes.")
	fs.IntVar(&a.parallelism, "parallelism", 10, "Read at most N resources at once.")
	fs.StringVar(&a.signKey, "sign-key", "", "Sign the saved plan with this private key file.")
	fs.BoolVar(&a.updateLocal, "update-local", false, "In policy mode, first lock again the local cookbooks edited since the lock was written.")
	a.color.register(fs)
	a.md.register(fs)
	a.attrs.register(fs)
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
  -sign-key=KEYFILE    Sign the saved plan with this private key (made by
                       'toque keygen'; mode 0600), so that a host running
                       'apply -verify-key' accepts it. Needs -out. Default:
                       TOQUE_SIGN_KEY when set (ignored without -out).
  -update-local        In policy mode, first lock again the cookbooks
                       policy.hcl reads from local paths that were edited
                       since the lock was written, as 'toque update NAME…'
                       does, and say what moved. A lock stale for another
                       reason (policy.hcl, an include) is still refused.
  -no-color            No colour (also NO_COLOR=1). Colour is only used on a
                       terminal.
` + attrHelp + `
  The plan records every attribute with where it came from, so
  'toque apply FILE' needs none of them again.
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
		return c.fail(a.color.noColor, "plan takes no arguments (got %q); use -chdir=DIR to plan another directory", strings.Join(fs.Args(), " "))
	}
	if a.parallelism < 1 {
		return c.fail(a.color.noColor, "-parallelism must be at least 1")
	}
	if err := a.md.check(fs, a.json); err != nil {
		return c.fail(a.color.noColor, "%s", err)
	}
	// The signing key is read before planning, so a bad key fails at once.
	var signKey ed25519.PrivateKey
	if a.out != "" || isSet(fs, "sign-key") {
		sign, err := pickKey(c.Env, "sign-key", isSet(fs, "sign-key"), a.signKey, envSignKey)
		if err != nil {
			return c.fail(a.color.noColor, "%s", err)
		}
		if sign.path != "" && a.out == "" {
			return c.fail(a.color.noColor, "-sign-key signs the saved plan: give -out=FILE too")
		}
		if sign.path != "" {
			if signKey, err = plan.LoadSigningKey(c.path(sign.path)); err != nil {
				return c.fail(a.color.noColor, "%s: %s", sign.from, err)
			}
		}
	}
	if a.updateLocal {
		if st := c.updateLocal(a.color.noColor, a.json || a.md.markdown); st >= 0 {
			return st
		}
	}
	view := views.NewPlan(c.view(a.color.noColor), a.json, a.md.markdown)
	if a.out != "" {
		// An older plan at -out goes first: if this one fails or is
		// interrupted, no plan is left there to be applied by mistake.
		if err := plan.RemoveStale(c.path(a.out)); err != nil {
			return c.fail(a.color.noColor, "%s", err)
		}
	}

	// A plan only printed as text (no -out, -json or -markdown) keeps
	// nothing of its unchanged resources but their count and addresses.
	printOnly := a.out == "" && !a.json && !a.md.markdown
	p, diags := c.makePlan(a.parallelism, &a.attrs, printOnly)
	var enc *plan.Encoded
	// The plan is encoded (a large part of a large plan's time) only when
	// something reads the bytes or their digest: the file, JSON, Markdown.
	// The text of a plan not saved shows no digest (PlanOptions.NoDigest).
	if p != nil && (a.out != "" || a.json || a.md.markdown) {
		var err error
		if enc, err = p.Encode(); err != nil {
			diags = diags.Append(err)
			p = nil
		} else if signKey != nil && a.out != "" {
			if err := enc.Sign(signKey); err != nil {
				diags = diags.Append(err)
				p = nil
			}
		}
	}
	if a.out != "" && p != nil {
		// The file is written before anything is printed, so a closed
		// stdout cannot leave an older plan in its place. An errored plan
		// is written too (apply refuses it), for the same reason.
		if err := plan.WriteEncoded(c.path(a.out), enc); err != nil {
			diags = diags.Append(diag.Errorf("cannot save the plan: %w", err))
		}
	}
	o := views.PlanOptions{SavedTo: a.out, Markdown: a.md.options(a.out), NoDigest: enc == nil}
	if p != nil {
		o.Unfinished = c.unfinishedApplies(p.Host.Hostname)
	}
	if enc != nil {
		o.Digest = enc.Digest
		if a.out != "" {
			// Said as show says it, so plan and show print the same.
			o.Signature = &views.SignatureInfo{}
			if k := enc.Signer(); k != nil {
				o.Signature = &views.SignatureInfo{Signed: true, Fingerprint: k.Fingerprint()}
			}
		}
	}
	if err := view.Show(p, diags, o); err != nil && !readerGone(err) {
		// The plan could not be printed (Markdown over its size limit):
		// nothing reached stdout; say why on stderr. (A closed stdout, as
		// in toque plan | head, is the reader having seen enough: the plan
		// file is written already.)
		diags = diag.Diagnostics{}.Append(err)
		c.view(a.color.noColor).Diagnostics(diags)
	}
	if st := views.ExitStatus(diags); st != ExitOK || p == nil || p.Errored {
		return max(st, ExitError)
	}
	if a.detailedExitCode && p.HasChanges() {
		return ExitChanges
	}
	return ExitOK
}

// updateLocal is plan -update-local: in policy mode, the local cookbooks
// of policy.hcl edited since the lock was written are locked again (as
// toque update NAME… does) before planning, and the command says so (on
// stderr when stdout is machine output). It returns an exit status when
// the plan must not go on, else -1.
func (b *Base) updateLocal(noColor, machine bool) int {
	if !policy.Exists(b.workDir()) {
		return b.fail(noColor, "-update-local locks a policy's edited local cookbooks again, but %s holds no policy.hcl", b.workDir())
	}
	dir, err := b.readCacheDir()
	v := b.view(noColor)
	if err != nil {
		diags := diag.Diagnostics{}.Append(err)
		v.Diagnostics(diags)
		return views.ExitStatus(diags)
	}
	ws := b.workspaceIn(dir)
	names, res, hdiags := ws.UpdateLocal(b.ReadCtx)
	b.addFiles(ws.Parser.Files())
	if hdiags.HasErrors() {
		diags := diag.Diagnostics{}.Append(hdiags)
		v.Diagnostics(diags)
		return max(views.ExitStatus(diags), ExitError)
	}
	if res != nil && res.Written {
		views.Messages{V: v}.LocalCookbooksLocked(names, res.Changes, policy.LockFileName, machine)
	}
	return -1
}

// unfinishedApplies are the applies on this host that stopped part-way
// and that no finished apply came after (apply.Unfinished): what they left
// undone is not in a new plan when what would trigger it is unchanged, so
// the plan says so. A state directory that cannot be read says nothing
// (the log says why): a plan does not need it.
func (b *Base) unfinishedApplies(host string) []apply.UnfinishedApply {
	us, err := apply.Unfinished(stateDir(b.Env, ""), host)
	if err != nil {
		b.Logger.Warn("cannot read the apply journals for unfinished applies", "error", err)
	}
	return us
}

// makePlan loads the recipes (with the command line's attributes) and
// plans them against this host. It returns the plan (nil when nothing
// could be planned) and the diagnostics; a signal that stopped planning is
// a views.ErrInterrupted diagnostic.
func (b *Base) makePlan(parallelism int, attrs *attrFlags, printOnly bool) (*plan.Plan, diag.Diagnostics) {
	cfg, pol, diags := b.loadConfig(attrs) // policy mode when policy.hcl is present
	if diags.HasErrors() || cfg == nil {
		return nil, diags
	}
	facts, err := host.Detect(b.ReadCtx)
	if err != nil {
		return nil, diags.Append(diag.Sourceless(diag.Error, "Cannot read the host's facts", err.Error()))
	}
	pl := &planner.Planner{
		Registry:    b.Registry,
		Parallelism: parallelism,
		Logger:      b.Logger.Named("plan"),
		Host:        facts,
		Version:     Version,
		PrintOnly:   printOnly,
		Unhosted:    pol.unhosted,
		// Nothing reads the recipes' syntax trees after evaluation but
		// diagnostics, which get what they need from the files' bytes.
		ReleaseSyntax: true,
	}
	p, pdiags := pl.Plan(b.ReadCtx, cfg)
	if b.ReadCtx.Err() != nil {
		// Interrupted: every resource still being read failed with the
		// cancellation; one message says it better.
		return nil, diags.Append(views.ErrInterrupted)
	}
	pol.stamp(p)
	return p, diags.Append(pdiags)
}
