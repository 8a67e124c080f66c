package command

import (
	"crypto/ed25519"
	"flag"
	"strings"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// FleetPlanCommand is `toque fleet plan`.
type FleetPlanCommand struct {
	*Base
}

type fleetPlanArgs struct {
	fleet            fleetFlags
	out              string
	signKey          string
	detailedExitCode bool
	json             bool
	parallel         int
	md               markdownFlags
}

func (a *fleetPlanArgs) register(fs *flag.FlagSet) {
	a.fleet.register(fs)
	fs.StringVar(&a.out, "out", "", "Save the bundle of plans to this file.")
	fs.StringVar(&a.signKey, "sign-key", "", "Sign the bundle and every plan with this private key file.")
	fs.BoolVar(&a.detailedExitCode, "detailed-exitcode", false, "Exit 0 with no changes, 1 on error, 2 with changes.")
	fs.BoolVar(&a.json, "json", false, "Print the fleet plan as JSON.")
	fs.IntVar(&a.parallel, "parallel", 0, "Plan at most N hosts at once (default: the rollout's parallel).")
	a.md.register(fs)
}

func (c *FleetPlanCommand) Synopsis() string {
	return "Plan every host of the inventory, and save the plans as one bundle"
}

func (c *FleetPlanCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] fleet plan [options]

  Plans every host of the inventory (fleet.hcl) in parallel, each on the
  host itself, with its own toque: toque connects with the system ssh
  client, ships the toque agent and the recipes when the host lacks them,
  and brings back the host's plan. Nothing on the hosts is changed (their
  guards and load_current_value scripts run, as toque plan runs them).

  The hosts whose changes are identical are shown once, together; hosts
  whose changes differ stand out. With -out=FILE the plans are saved as a
  bundle (a manifest and each host's plan.out) for
  'toque fleet apply FILE', which applies exactly those plans.

Options:

` + fleetFlagsHelp + `  -out=FILE            Save the bundle to FILE (mode 0600). An older bundle
                       there is removed first.
  -sign-key=KEYFILE    Sign the bundle (and each host's plan, as toque plan
                       -sign-key would) with this key (toque keygen).
                       Needs -out. Default: TOQUE_SIGN_KEY when set.
  -detailed-exitcode   Exit 0 when no host would change, 1 when a host
                       could not be planned, 2 when hosts have changes: a
                       drift check.
  -parallel=N          Plan at most N hosts at once (default: the
                       inventory's rollout parallel, 20).
  -json                Print the manifest and the groups of hosts with
                       identical changes as JSON (docs/fleet.md).
  -markdown            Print Markdown for a pull request: one section per
                       set of identical changes; -max-bytes=N (default
                       60000).
`
}

func (c *FleetPlanCommand) Run(args []string) int {
	var a fleetPlanArgs
	fs := c.newFlagSet("fleet plan", c.Help)
	a.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	nc := a.fleet.color.noColor
	if fs.NArg() > 0 {
		return c.fail(nc, "fleet plan takes no arguments (got %q)", strings.Join(fs.Args(), " "))
	}
	if err := a.md.check(fs, a.json); err != nil {
		return c.fail(nc, "%s", err)
	}
	if a.md.changesOnly {
		return c.fail(nc, "fleet plan -markdown shows changes only already: -changes-only is for toque plan and show")
	}
	if a.parallel < 0 {
		return c.fail(nc, "-parallel must be at least 1")
	}
	var signKey ed25519.PrivateKey
	if a.out != "" || isSet(fs, "sign-key") {
		sign, err := pickKey(c.Env, "sign-key", isSet(fs, "sign-key"), a.signKey, envSignKey)
		if err != nil {
			return c.fail(nc, "%s", err)
		}
		if sign.path != "" && a.out == "" {
			return c.fail(nc, "-sign-key signs the saved bundle: give -out=FILE too")
		}
		if sign.path != "" {
			if signKey, err = plan.LoadSigningKey(c.path(sign.path)); err != nil {
				return c.fail(nc, "%s: %s", sign.from, err)
			}
		}
	}
	view := views.NewFleetPlan(c.view(nc), a.json, a.md.markdown, !a.json && !a.md.markdown)
	inv, hosts, diags := c.loadFleet(&a.fleet)
	if diags.HasErrors() {
		view.Show(views.FleetPlanData{}, diags)
		return views.ExitStatus(diags)
	}
	if a.out != "" {
		if err := fleet.RemoveStaleBundle(c.path(a.out)); err != nil {
			return c.fail(nc, "%s", err)
		}
	}
	agents, err := c.fleetAgents()
	if err != nil {
		diags = diags.Append(err)
		view.Show(views.FleetPlanData{}, diags)
		return views.ExitStatus(diags)
	}
	ssh, err := c.fleetSSH(inv)
	if err != nil {
		return c.fail(nc, "%s", err)
	}
	parallel := a.parallel
	if parallel == 0 {
		parallel = inv.Rollout.Parallel
	}
	pl := &fleet.Planner{
		Inventory: inv, Hosts: hosts, SSH: ssh, Agents: agents, Registry: c.Registry,
		Parallel: parallel, SignKey: signKey, Version: Version, Hooks: view, Logger: c.Logger.Named("fleet"),
	}
	res, err := pl.Plan(c.ReadCtx)
	if err != nil {
		if c.ReadCtx.Err() != nil {
			err = views.ErrInterrupted
		}
		diags = diags.Append(err)
		view.Show(views.FleetPlanData{}, diags)
		return views.ExitStatus(diags)
	}
	res.Manifest.Limit = limitsNote(a.fleet.limits)
	data := views.FleetPlanData{Manifest: &res.Manifest, Plans: res.Plans, MaxBytes: a.md.maxBytes}
	if a.out != "" {
		digest, err := fleet.WriteBundle(c.path(a.out), res.Manifest, res.Files, signKey)
		if err != nil {
			diags = diags.Append(diag.Errorf("cannot save the fleet plan: %w", err))
		} else {
			data.Digest, data.SavedTo = digest, a.out
			data.Signature = &views.SignatureInfo{}
			if signKey != nil {
				k := plan.PublicKeyOf(signKey, "")
				data.Signature = &views.SignatureInfo{Signed: true, Fingerprint: k.Fingerprint()}
			}
		}
	}
	if err := view.Show(data, diags); err != nil && !readerGone(err) {
		c.view(nc).Diagnostics(diag.Diagnostics{}.Append(err))
		return ExitError
	}
	if st := views.ExitStatus(diags); st != ExitOK {
		return st
	}
	st := res.Manifest.Statuses()
	if st[fleet.StatusError] > 0 || st[fleet.StatusUnreachable] > 0 {
		return ExitError
	}
	if a.detailedExitCode && st[fleet.StatusChanges] > 0 {
		return ExitChanges
	}
	return ExitOK
}
