package command

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
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
  drawn dashed. Each notification is an edge from the notifier to the
  target, labelled with the action and timing; edges declared by a
  subscribes block are dashed and say so. The host is neither read nor
  changed: expressions that depend on host facts are left out.

Options:

  -no-color   No colour in error messages (also NO_COLOR=1).
`
}

func (c *GraphCommand) Run(args []string) int {
	var col colorFlags
	fs := c.newFlagSet("graph", c.Help)
	col.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		c.errorf("graph takes no arguments; use -chdir=DIR to graph another directory")
		return ExitError
	}
	cfg, pol, diags := c.loadConfig()
	files := pol.files(cfg)
	var edges []*config.Notification
	if cfg != nil && !diags.HasErrors() {
		var d hcl.Diagnostics
		edges, d = cfg.Notifications(c.Registry, &config.Scope{Node: cfg.Attributes.Node(), Host: host.Unknown()})
		diags = append(diags, d...)
	}
	c.showDiags(diags, files, col.enabled(c.Env, c.Streams.Stderr))
	if cfg == nil || diags.HasErrors() {
		return ExitError
	}
	if err := WriteDOT(c.Streams.Stdout, cfg, edges); err != nil {
		c.errorf("writing the graph: %s", err)
		return ExitError
	}
	return ExitOK
}

// WriteDOT writes cfg's resource collection and notification edges as a
// DOT digraph: nodes in collection order linked by dotted "next" edges,
// then one edge per notification.
func WriteDOT(w io.Writer, cfg *config.Config, edges []*config.Notification) error {
	var b strings.Builder
	b.WriteString("digraph toque {\n")
	b.WriteString("  rankdir = \"TB\";\n")
	b.WriteString("  node [shape = \"box\", fontname = \"monospace\"];\n")
	b.WriteString("  edge [fontname = \"monospace\"];\n")
	if len(cfg.Resources) > 0 {
		b.WriteString("\n  // The resource collection, in the order it converges.\n")
	}
	for i, rb := range cfg.Resources {
		attrs := []string{"label = " + strconv.Quote(fmt.Sprintf("%d. %s", i+1, rb.Address()))}
		if isNothing(rb) {
			attrs = append(attrs, `style = "dashed"`, `tooltip = "action nothing: runs only when notified"`)
		}
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(rb.Address()), strings.Join(attrs, ", "))
	}
	for i := 1; i < len(cfg.Resources); i++ {
		fmt.Fprintf(&b, "  %s -> %s [style = \"dotted\", arrowhead = \"none\", color = \"gray\"];\n",
			strconv.Quote(cfg.Resources[i-1].Address()), strconv.Quote(cfg.Resources[i].Address()))
	}
	if len(edges) > 0 {
		b.WriteString("\n  // Notifications: notifier -> target, labelled ACTION (TIMING).\n")
	}
	for _, e := range edges {
		label := fmt.Sprintf("%s (%s)", e.Action, e.Timing)
		attrs := []string{}
		if e.Subscribe {
			label += " [subscribes]"
			attrs = append(attrs, `style = "dashed"`)
		}
		attrs = append([]string{"label = " + strconv.Quote(label)}, attrs...)
		fmt.Fprintf(&b, "  %s -> %s [%s];\n", strconv.Quote(e.Notifier.Address()), strconv.Quote(e.Target.Address()), strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// isNothing reports whether rb's action is the literal "nothing".
func isNothing(rb *config.ResourceBlock) bool {
	if rb.Meta.Action == nil {
		return false
	}
	v, d := rb.Meta.Action.Value(nil)
	if d.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return false
	}
	return v.AsString() == "nothing"
}
