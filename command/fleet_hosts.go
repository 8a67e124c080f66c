package command

import (
	"errors"
	"strings"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/fleet"
	"github.com/toquehq/toque/internal/parallel"
)

// FleetHostsCommand is `toque fleet hosts`.
type FleetHostsCommand struct {
	*Base
}

func (c *FleetHostsCommand) Synopsis() string {
	return "List the inventory's hosts with their settings and ssh's"
}

func (c *FleetHostsCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] fleet hosts [options]

  Lists the hosts of the inventory (those -limit selects): their groups,
  recipes, become, ssh options, environment and attribute files, and the
  settings ssh will use for each (ssh -G, with the inventory's ssh_config
  and options): user, host name, port, ProxyJump, identity files, host key
  checking. It connects to no host.

Options:

` + fleetFlagsHelp + `  -all                 Every setting ssh -G prints.
  -json                One JSON document.
`
}

func (c *FleetHostsCommand) Run(args []string) int {
	var f fleetFlags
	var all, asJSON bool
	fs := c.newFlagSet("fleet hosts", c.Help)
	f.register(fs)
	fs.BoolVar(&all, "all", false, "")
	fs.BoolVar(&asJSON, "json", false, "")
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		return c.fail(f.color.noColor, "fleet hosts takes no arguments (got %q)", strings.Join(fs.Args(), " "))
	}
	v := c.view(f.color.noColor)
	inv, hosts, diags := c.loadFleet(&f)
	v.Diagnostics(diags)
	if diags.HasErrors() {
		return views.ExitStatus(diags)
	}
	ssh := &fleet.SSH{ConfigFile: inv.SSHConfig, Logger: c.Logger.Named("ssh")}
	out := make([]views.FleetHost, len(hosts))
	parallel.For(len(hosts), 8, func(i int) {
		h := inv.Host(hosts[i])
		r, err := ssh.Resolve(c.ReadCtx, h.Alias, h.Options)
		out[i] = views.FleetHost{Host: h, Route: r, Err: err}
	})
	if err := v.FleetHosts(out, asJSON, all); err != nil && !readerGone(err) {
		return ExitError
	}
	for _, h := range out {
		var ce *fleet.ConnectError
		if errors.As(h.Err, &ce) {
			return ExitError
		}
	}
	return ExitOK
}
