package views

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
)

// WriteDOT writes a resource collection and its notification edges as a
// DOT digraph: nodes in collection order linked by dotted "next" edges
// (a child resource of a type written in HCL comes after its parent and
// is linked to it by a "declares" edge), then one edge per notification.
// blocks are the top-level resources and their children, depth first
// (eval.Flatten).
func WriteDOT(w io.Writer, blocks []*config.ResourceBlock, edges []*eval.Notification) error {
	var b strings.Builder
	b.WriteString("digraph toque {\n")
	b.WriteString("  rankdir = \"TB\";\n")
	b.WriteString("  node [shape = \"box\", fontname = \"monospace\"];\n")
	b.WriteString("  edge [fontname = \"monospace\"];\n")
	if len(blocks) > 0 {
		b.WriteString("\n  // The resource collection, in the order it converges.\n")
	}
	for i, rb := range blocks {
		attrs := []string{"label = " + strconv.Quote(fmt.Sprintf("%d. %s", i+1, rb.Address()))}
		if isNothing(rb) {
			attrs = append(attrs, `style = "dashed"`, `tooltip = "action nothing: runs only when notified"`)
		}
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(rb.Address()), strings.Join(attrs, ", "))
	}
	for i := 1; i < len(blocks); i++ {
		fmt.Fprintf(&b, "  %s -> %s [style = \"dotted\", arrowhead = \"none\", color = \"gray\"];\n",
			strconv.Quote(blocks[i-1].Address()), strconv.Quote(blocks[i].Address()))
	}
	for _, rb := range blocks {
		if rb.Parent != "" {
			fmt.Fprintf(&b, "  %s -> %s [label = \"declares\", color = \"gray\"];\n", strconv.Quote(rb.Parent), strconv.Quote(rb.Address()))
		}
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
