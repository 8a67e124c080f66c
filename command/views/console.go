package views

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// Console is the view of `toque console`. At a terminal it prompts and
// prints values laid out on several lines; otherwise (piped input, for
// scripts) it prints each value on one line, and nothing else on stdout.
type Console struct {
	v           *View
	interactive bool
}

// NewConsole returns the console's view; interactive when a person types.
func NewConsole(v *View, interactive bool) *Console {
	return &Console{v: v, interactive: interactive}
}

// Welcome says how to use the console, at a terminal.
func (c *Console) Welcome(hostname string) {
	if !c.interactive {
		return
	}
	fmt.Fprintf(c.v.Streams.Stdout, "toque console on %s: expressions see node, host and every function, as a recipe's properties do.\nType :help for help, exit or Ctrl-D to leave.\n\n", EscapeLine(hostname))
}

// PromptText is the prompt: "> ", or ". " while an expression continues
// on the next line. A line editor draws it itself.
func (c *Console) PromptText(continued bool) string {
	if continued {
		return ". "
	}
	return "> "
}

// Prompt asks for input, at a terminal: "> ", or ". " while an expression
// continues on the next line.
func (c *Console) Prompt(continued bool) {
	if !c.interactive {
		return
	}
	fmt.Fprint(c.v.Streams.Stdout, c.PromptText(continued))
}

// End ends the session's last prompt line, at a terminal.
func (c *Console) End() {
	if c.interactive {
		fmt.Fprintln(c.v.Streams.Stdout)
	}
}

// Value prints an expression's value.
func (c *Console) Value(v cty.Value) error {
	_, err := fmt.Fprintln(c.v.Streams.Stdout, Escape(ConsoleValue(v, c.interactive)))
	return err
}

// Sources prints what :source found: for each leaf at or below the path,
// its value and where it came from, then, when more than one level wrote
// it, what each level says, the winner last (as Chef's debug_value).
func (c *Console) Sources(srcs []eval.AttributeSource) error {
	var b strings.Builder
	for _, s := range srcs {
		fmt.Fprintf(&b, "%s = %s  # %s, %s\n", eval.PathString(s.Leaf.Path), hidden(s.Leaf.Value, s.Hidden), s.Leaf.Level, s.Leaf.Source)
		if len(s.Writes) < 2 {
			continue
		}
		width := 0
		for _, w := range s.Writes {
			width = max(width, len(w.Source))
		}
		for _, w := range s.Writes {
			fmt.Fprintf(&b, "    %-8s  %-*s  %s\n", w.Level, width, w.Source, hidden(w.Value, s.Hidden || w.Sensitive))
		}
	}
	_, err := fmt.Fprint(c.v.Streams.Stdout, Escape(b.String()))
	return err
}

func hidden(v cty.Value, hide bool) string {
	if hide {
		return plan.Sensitive
	}
	return ConsoleValue(v, false)
}

// Help prints the console's help.
func (c *Console) Help() {
	fmt.Fprint(c.v.Streams.Stdout, `Type an expression to see its value, as a resource property would see it:
  node.web.port                       the merged node attributes
  host.fqdn                           the host's facts
  upper(node.web.server)              every function recipes have
  provenance(node.web.port)           where a value was written: {level, source}
Commands:
  :source PATH     every level's value of PATH (node.web.port, or web.port)
                   and where each was written; the last one wins
  :help            this help
  exit, :quit      leave (also Ctrl-D)
An expression may go on over several lines while a bracket is open.
Values written with sensitive(), and attributes a sensitive resource
reads, are shown as (sensitive).
`)
}

// Diagnostics prints diagnostics on stderr.
func (c *Console) Diagnostics(diags diag.Diagnostics) { c.v.Diagnostics(diags) }

// ConsoleValue writes v in HCL syntax: on one line, or with multiline
// each element of a non-empty list or map on a line of its own. A value
// marked sensitive is (sensitive).
func ConsoleValue(v cty.Value, multiline bool) string {
	var b strings.Builder
	writeConsoleValue(&b, v, multiline, "")
	return b.String()
}

func writeConsoleValue(b *strings.Builder, v cty.Value, multiline bool, indent string) {
	switch {
	case v == cty.NilVal:
		b.WriteString("null")
		return
	case v.IsMarked():
		b.WriteString(plan.Sensitive)
		return
	case !v.IsKnown():
		b.WriteString("(unknown)")
		return
	case v.IsNull():
		b.WriteString("null")
		return
	}
	t := v.Type()
	switch {
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		if v.LengthInt() == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[")
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			if multiline {
				b.WriteString("\n" + indent + "  ")
			} else if i > 0 {
				b.WriteString(", ")
			}
			writeConsoleValue(b, e, multiline, indent+"  ")
			if multiline {
				b.WriteString(",")
			}
		}
		if multiline {
			b.WriteString("\n" + indent)
		}
		b.WriteString("]")
	case t.IsMapType() || t.IsObjectType():
		if v.LengthInt() == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, v.LengthInt())
		elems := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			keys = append(keys, k.AsString())
			elems[k.AsString()] = e
		}
		sort.Strings(keys)
		b.WriteString("{")
		for i, k := range keys {
			switch {
			case multiline:
				b.WriteString("\n" + indent + "  ")
			case i > 0:
				b.WriteString(", ")
			default:
				b.WriteString(" ")
			}
			if hclsyntax.ValidIdentifier(k) {
				b.WriteString(k)
			} else {
				b.Write(hclwrite.TokensForValue(cty.StringVal(k)).Bytes())
			}
			b.WriteString(" = ")
			writeConsoleValue(b, elems[k], multiline, indent+"  ")
		}
		if multiline {
			b.WriteString("\n" + indent + "}")
		} else {
			b.WriteString(" }")
		}
	default:
		b.Write(hclwrite.TokensForValue(v).Bytes())
	}
}
