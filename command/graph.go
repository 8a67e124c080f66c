package command

import (
	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/diag"
)

// GraphCommand is `toque graph`.
type GraphCommand struct {
	*Base
}

func (c *GraphCommand) Synopsis() string {
	return "Print the resource collection and its notifications as DOT"
}

func (c *GraphCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] graph [options]

  Prints the resource collection and its notification edges in Graphviz's
  DOT language, for example: toque graph | dot -Tsvg > graph.svg

  Resources are the nodes, in collection order (the order they converge),
  joined by dotted "next" edges; a resource whose action is nothing is
  drawn dashed. A child resource (declared in an action of a resource type
  written in HCL) follows its parent, which a "declares" edge joins to it.
  Each notification is an edge from the notifier to the
  target, labelled with the action and timing; edges declared by a
  subscribes block are dashed and say so. The host is neither read nor
  changed: expressions that depend on host facts are left out.

Options:

  -no-color            No colour in error messages (also NO_COLOR=1).
` + attrHelp
}

func (c *GraphCommand) Run(args []string) int {
	var col colorFlags
	var attrs attrFlags
	fs := c.newFlagSet("graph", c.Help)
	col.register(fs)
	attrs.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		return c.fail(col.noColor, "graph takes no arguments; use -chdir=DIR to graph another directory")
	}
	v := c.view(col.noColor)
	cfg, pol, diags := c.loadConfig(&attrs)
	var edges []*eval.Notification
	var blocks []*config.ResourceBlock
	if cfg != nil && !diags.HasErrors() {
		// The resources as validate evaluates them (the host unknown),
		// with the child resources of types written in HCL.
		reg, d := eval.Types(cfg, c.Registry)
		diags = diags.Append(d)
		if !d.HasErrors() {
			insts, d := eval.Resources(cfg, reg, pol.scope)
			diags = diags.Append(d)
			for _, inst := range eval.Flatten(insts) {
				blocks = append(blocks, inst.Block)
				edges = append(edges, inst.Notifies...)
			}
		}
	}
	if cfg != nil && !diags.HasErrors() {
		if err := views.WriteDOT(c.Streams.Stdout, blocks, edges); err != nil && !readerGone(err) {
			diags = diags.Append(diag.Errorf("writing the graph: %w", err))
		}
	}
	v.Diagnostics(diags)
	return max(views.ExitStatus(diags), boolStatus(cfg == nil))
}

// boolStatus is ExitError when failed, else ExitOK.
func boolStatus(failed bool) int {
	if failed {
		return ExitError
	}
	return ExitOK
}
