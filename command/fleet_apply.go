package command

import (
	"flag"
	"path/filepath"
	"strings"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// FleetApplyCommand is `toque fleet apply BUNDLE`.
type FleetApplyCommand struct {
	*Base
}

type fleetApplyArgs struct {
	fleet        fleetFlags
	verifyKey    string
	expectDigest string
	result       string
	json         bool
}

func (a *fleetApplyArgs) register(fs *flag.FlagSet) {
	a.fleet.register(fs)
	fs.StringVar(&a.verifyKey, "verify-key", "", "Apply only a bundle signed by one of these public keys.")
	fs.StringVar(&a.expectDigest, "expect-digest", "", "Refuse the bundle unless its digest is this.")
	fs.StringVar(&a.result, "result", "", "Write every host's outcome to this file (default: the bundle's name with .result).")
	fs.BoolVar(&a.json, "json", false, "Print progress as JSON events, one per line.")
}

func (c *FleetApplyCommand) Synopsis() string {
	return "Apply a fleet plan's plans to their hosts, in rolling batches"
}

func (c *FleetApplyCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] fleet apply [options] BUNDLE

  Applies the plans of BUNDLE (made by 'toque fleet plan -out=BUNDLE') to
  their hosts, in the batches of the inventory's rollout: a canary batch
  first, then the next batch only while no more hosts failed than
  max_failures allows. Each host gets its own plan.out and runs toque apply
  on it: it refuses a plan that is not its own (toque checks the host key
  and machine id first) or that it no longer matches (stale), exactly as
  toque apply does on one host. Hosts whose plan has no changes are not
  contacted. No recipe is read again.

  Every host's outcome (applied, no-changes, already-applied, stale,
  failed, unreachable, refused, unknown, interrupted, not-started,
  not-planned) is written to the result file, which -limit reads:
  'toque fleet apply -limit @fleet.result:failed,unknown fleet.plan'.

  Ctrl-C starts no further host and lets the hosts applying finish the
  resource in hand; a second Ctrl-C aborts them.

Options:

` + fleetFlagsHelp + `  -verify-key=FILE     Refuse the bundle, before anything else, unless it is
                       signed by one of the public keys in FILE. Default:
                       TOQUE_VERIFY_KEY when set.
  -expect-digest=HEX   Refuse the bundle unless its digest is HEX (as fleet
                       plan and fleet show print it).
  -result=FILE         Where to write the outcomes (default: BUNDLE with its
                       extension replaced by .result: fleet.result).
  -json                Print progress as JSON events, one per line
                       (docs/fleet.md).

Exit status: 0 every host applied its plan, had none, or had applied it
already; 1 nothing was applied (bad input, a refused bundle, no host
matched); 3 hosts were stale (their plans no longer match them) and none
failed; 5 interrupted; 7 a host failed, was unreachable, refused its plan
or its outcome is unknown (the rollout stops once more hosts failed than
max_failures allows).
`
}

func (c *FleetApplyCommand) Run(args []string) int {
	var a fleetApplyArgs
	fs := c.newFlagSet("fleet apply", c.Help)
	a.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	nc := a.fleet.color.noColor
	view := views.NewFleetApply(c.view(nc), a.json)
	var diags diag.Diagnostics
	finish := func() int {
		view.Diagnostics(diags)
		return max(views.ExitStatus(diags), ExitError)
	}
	usage := func(format string, args ...any) int {
		diags = diags.Append(diag.Errorf(format, args...).WithKind(views.KindUsage))
		return finish()
	}
	if fs.NArg() != 1 {
		return usage("fleet apply needs one argument, the bundle: toque fleet apply BUNDLE (made by toque fleet plan -out=BUNDLE)")
	}
	name := fs.Arg(0)
	verify, err := pickKey(c.Env, "verify-key", isSet(fs, "verify-key"), a.verifyKey, envVerifyKey)
	if err != nil {
		return usage("%s", err)
	}
	want := ""
	if isSet(fs, "expect-digest") {
		if want, err = parseDigest(a.expectDigest); err != nil {
			return usage("%s", err)
		}
	}
	b, _, _, d := c.readBundle(name, verify, false)
	if diags = diags.Append(d); diags.HasErrors() {
		return finish()
	}
	if want != "" && b.Digest != want {
		diags = diags.Append(diag.Errorf("the fleet plan's digest is %s, but -expect-digest wants %s: this is not the fleet plan that was reviewed, so nothing was applied", b.Digest, want).WithKind(views.KindDigestMismatch))
		return finish()
	}
	if b.Manifest.PlanFormat != plan.FormatVersion {
		diags = diags.Append(diag.Errorf("%s holds plans of format %d, made by toque %s; this toque (%s) ships agents that apply format %d: make a new fleet plan with this toque. Nothing was applied", name, b.Manifest.PlanFormat, b.Manifest.ToqueVersion, Version, plan.FormatVersion).WithKind(views.KindPlanRefused))
		return finish()
	}
	inv, selected, d := c.loadFleet(&a.fleet)
	if diags = diags.Append(d); diags.HasErrors() {
		return finish()
	}
	// The hosts: the bundle's, among those -limit selects; each must be
	// in the inventory, which says how to reach it.
	inSel := map[string]bool{}
	for _, h := range selected {
		inSel[h] = true
	}
	var hosts, missing []string
	for _, e := range b.Manifest.Hosts {
		if len(a.fleet.limits) > 0 && !inSel[e.Alias] {
			continue
		}
		if inv.Host(e.Alias) == nil {
			missing = append(missing, e.Alias)
			continue
		}
		hosts = append(hosts, e.Alias)
	}
	if len(missing) > 0 {
		return usage("%s holds plans for %s, which %s does not declare: toque does not know how to reach them. Give the inventory the fleet plan was made with, or leave them out with -limit", name, strings.Join(missing, ", "), a.fleet.inventory)
	}
	if len(hosts) == 0 {
		return usage("-limit %s selects no host of %s", strings.Join(a.fleet.limits, " "), name)
	}
	agents, err := c.fleetAgents()
	if err != nil {
		diags = diags.Append(err)
		return finish()
	}
	ssh, err := c.fleetSSH(inv)
	if err != nil {
		diags = diags.Append(err)
		return finish()
	}
	resultFile := a.result
	if resultFile == "" {
		resultFile = strings.TrimSuffix(name, filepath.Ext(name)) + ".result"
	}
	ap := &fleet.Applier{
		Inventory: inv, Bundle: b, BundlePath: name, Hosts: hosts, SSH: ssh, Agents: agents,
		Rollout: inv.Rollout, Hooks: view, Stop: c.Stop, Logger: c.Logger.Named("fleet"),
	}
	view.Start(name, b.Digest, len(hosts), inv.Rollout)
	r := ap.Apply(c.Ctx)
	// The result file keeps the last outcome of every host of the bundle:
	// the hosts this run left out keep theirs.
	runOutcomes := &fleet.Result{Hosts: r.Hosts, Stopped: r.Stopped, Bundle: r.Bundle, BundleDigest: r.BundleDigest}
	if prev, err := fleet.ReadResult(c.path(resultFile)); err == nil {
		r.Merge(prev, b.Manifest.Aliases())
	}
	werr := fleet.WriteResult(c.path(resultFile), r)
	view.Summary(runOutcomes, resultFile, werr)
	st := views.FleetApplyExit(runOutcomes)
	if werr != nil && st == ExitOK {
		st = ExitError
	}
	return st
}
