package command

import (
	"flag"
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/diag"
)

// attrFlags holds -attr and -attr-file, in the order given: a later one
// wins over an earlier one, as Terraform's -var and -var-file do.
type attrFlags struct {
	args []attrArg
}

// attrArg is one -attr (PATH=VALUE) or -attr-file (FILE).
type attrArg struct {
	file  bool
	value string
}

// attrValue appends to attrFlags; one per flag name, so both keep their
// common order.
type attrValue struct {
	flags *attrFlags
	file  bool
}

func (v attrValue) String() string { return "" }

func (v attrValue) Set(s string) error {
	v.flags.args = append(v.flags.args, attrArg{file: v.file, value: s})
	return nil
}

func (a *attrFlags) register(fs *flag.FlagSet) {
	fs.Var(attrValue{a, false}, "attr", "Set a node attribute: -attr 'web.port=8080' (repeatable).")
	fs.Var(attrValue{a, true}, "attr-file", "Set node attributes from a JSON or HCL file (repeatable).")
}

// attrHelp is the options' text in the commands' help.
const attrHelp = `  -attr 'PATH=VALUE'   Set the node attribute PATH (web.port) to VALUE: a
                       number, true/false, a quoted string, a list, a map or
                       a function call (sensitive("…")); any other word is a
                       string (nginx, 1.7.0, 0755). Repeatable.
  -attr-file=FILE      Set node attributes from FILE: JSON (*.json, every
                       string literal, as chef-client -j reads) or HCL
                       (web = { port = 8080 }; name it prod.attrs, say: the
                       directory's *.hcl files are recipes). Repeatable.

  Command-line attributes are at the normal level: above every recipe's and
  policy's default, below every override. Later ones win over earlier ones.
`

// commandLine parses and evaluates -attr and -attr-file into node
// attribute writes. Their sources are kept for the snippets of
// diagnostics. Malformed arguments are errors that name the flag, or the
// file and line.
func (b *Base) commandLine(a *attrFlags) ([]config.AttributeWrite, diag.Diagnostics) {
	var diags diag.Diagnostics
	if a == nil || len(a.args) == 0 {
		return nil, diags
	}
	var args []eval.AttributeArg
	for _, arg := range a.args {
		if arg.file {
			ea, d := eval.AttrFile(arg.value, b.path(arg.value))
			diags = diags.Append(d)
			if ea.File != nil {
				b.files[arg.value] = ea.File
			}
			if !d.HasErrors() {
				args = append(args, ea)
			}
			continue
		}
		ea, err := eval.AttrFlag(arg.value, b.workDir())
		if err != nil {
			diags = diags.Append(diag.Errorf("%s", err).WithKind(views.KindUsage))
			continue
		}
		// Each -attr is a one-line source of its own, for snippets; the
		// same path given twice gets a second name.
		name := ea.Filename
		for n := 2; b.files[name] != nil; n++ {
			name = fmt.Sprintf("%s #%d", ea.Filename, n)
		}
		ea.Filename = name
		src := ea.Src
		if ea.Sensitive {
			// A value written with sensitive() is not shown in snippets.
			src = append(src[:ea.ValueStart.Byte:ea.ValueStart.Byte], "(sensitive)"...)
		}
		b.files[name] = &hcl.File{Body: hcl.EmptyBody(), Bytes: src}
		args = append(args, ea)
	}
	// The arguments that parsed are evaluated even when others did not,
	// so that every error is reported at once.
	writes, d := eval.CommandLineAttributes(args)
	return writes, diags.Append(d)
}
