package command

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/diag"
)

// ExitHostsFailed is fleet apply's exit status when a host failed, could
// not be reached, refused its plan, or its outcome is unknown.
const ExitHostsFailed = views.ExitHostsFailed

// FleetCommand is `toque fleet`: its subcommands' help.
type FleetCommand struct {
	*Base
}

func (c *FleetCommand) Synopsis() string {
	return "Plan and apply many hosts over ssh, with one reviewed bundle"
}

func (c *FleetCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] fleet <subcommand> [options] [args]

  Plans the hosts of an inventory (fleet.hcl), each with its own toque
  over ssh, into one bundle of plans to review, then applies exactly those
  plans in rolling batches. Each host refuses a plan that is not its own
  or that it no longer matches. See docs/fleet.md.
`
}

func (c *FleetCommand) Run(args []string) int {
	fs := c.newFlagSet("fleet", c.Help)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		return c.fail(false, "toque fleet has no subcommand %q: plan, show, apply or hosts", fs.Arg(0))
	}
	return cli.RunResultHelp
}

// fleetFlags are the options of the fleet commands that read the
// inventory.
type fleetFlags struct {
	inventory string
	limits    []string
	color     colorFlags
}

type limitValue struct{ f *fleetFlags }

func (l limitValue) String() string { return "" }
func (l limitValue) Set(s string) error {
	l.f.limits = append(l.f.limits, s)
	return nil
}

func (f *fleetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.inventory, "inventory", "fleet.hcl", "The inventory file.")
	fs.Var(limitValue{f}, "limit", "Only these hosts: names, groups, globs, @RESULT[:OUTCOME,…] (repeatable).")
	f.color.register(fs)
}

const fleetFlagsHelp = `  -inventory=FILE      The inventory (default fleet.hcl).
  -limit=LIST          Only these hosts: host aliases, group names, globs
                       (web-*), !ITEM to leave some out, and @FILE or
                       @FILE:OUTCOME,… for the hosts of an earlier fleet
                       apply's result file (@fleet.result:failed,unknown;
                       @fleet.result alone: those that did not succeed).
                       Comma-separated, repeatable. An item that names no
                       host is an error.
  -no-color            No colour (also NO_COLOR=1).
`

// loadFleet reads the inventory and selects the hosts -limit names.
func (b *Base) loadFleet(f *fleetFlags) (*fleet.Inventory, []string, diag.Diagnostics) {
	var diags diag.Diagnostics
	inv, hd := fleet.LoadInventory(f.inventory, b.path(f.inventory))
	if inv != nil && inv.File != nil {
		b.files[f.inventory] = inv.File
	}
	diags = diags.Append(hd)
	if hd.HasErrors() {
		return nil, nil, diags
	}
	hosts, err := inv.Select(f.limits, b.path)
	if err != nil {
		return nil, nil, diags.Append(diag.Errorf("%s", err).WithKind(views.KindUsage))
	}
	return inv, hosts, diags
}

// fleetSSH makes the ssh transport, on toque's own directory of control
// sockets (the masters persist between commands).
func (b *Base) fleetSSH(inv *fleet.Inventory) (*fleet.SSH, error) {
	dir, err := fleet.ControlDir(b.Env.Getenv("XDG_RUNTIME_DIR"))
	if err != nil {
		return nil, err
	}
	return &fleet.SSH{ConfigFile: inv.SSHConfig, ControlDir: dir, Logger: b.Logger.Named("ssh")}, nil
}

// fleetAgents finds the agents to ship (TOQUE_AGENT_DIR, beside this
// toque, or this toque).
func (b *Base) fleetAgents() (*fleet.Agents, error) {
	self, _ := os.Executable()
	dir := b.Env.Getenv(fleet.AgentDirEnv)
	if dir != "" {
		dir = b.Env.abs(dir)
	}
	// The agents' digests are kept beside the masters (none when that
	// directory cannot be had: fleetSSH says why).
	cache, _ := fleet.ControlDir(b.Env.Getenv("XDG_RUNTIME_DIR"))
	as, err := fleet.FindAgents(dir, self, runtime.GOOS+"/"+runtime.GOARCH, cache)
	if err != nil {
		return nil, err
	}
	if len(as.ByPlatform) == 0 {
		return nil, fmt.Errorf("found no toque agent to ship to the hosts in %s: build them with make release (dist/toque-linux-amd64, dist/toque-linux-arm64) and set %s=dist", as.Searched, fleet.AgentDirEnv)
	}
	return as, nil
}

// limitsNote is -limit as the manifest records it.
func limitsNote(limits []string) []string {
	out := make([]string, 0, len(limits))
	for _, l := range limits {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}
