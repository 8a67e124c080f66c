package command

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/host"
)

// ValidateCommand is `toque validate`.
type ValidateCommand struct {
	*Base
}

func (c *ValidateCommand) Synopsis() string { return "Check the recipes without reading the host" }

func (c *ValidateCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] validate [options]

  Checks the recipes' syntax and every resource against its type's schema:
  unknown types and properties, wrong types, bad actions, missing required
  properties, references to node attributes that are not written. Host
  facts are treated as unknown; the host is neither read nor changed.

Options:

  -json       Print the result as JSON: {"valid": …, "error_count": …,
              "warning_count": …, "diagnostics": […]}.
  -no-color   No colour (also NO_COLOR=1).
`
}

func (c *ValidateCommand) Run(args []string) int {
	var asJSON bool
	var col colorFlags
	fs := c.newFlagSet("validate", c.Help)
	fs.BoolVar(&asJSON, "json", false, "")
	col.register(fs)
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() > 0 {
		c.errorf("validate takes no arguments; use -chdir=DIR to validate another directory")
		return ExitError
	}
	cfg, pol, diags := c.loadConfig() // policy mode when policy.hcl is present
	files := pol.files(cfg)
	if cfg != nil && !diags.HasErrors() {
		_, ediags := cfg.Evaluate(c.Registry, &config.Scope{Node: cfg.Attributes.Node(), Host: host.Unknown()})
		diags = append(diags, ediags...)
	}
	if asJSON {
		return c.validateJSON(diags)
	}
	c.showDiags(diags, files, col.enabled(c.Env, c.Streams.Stderr))
	if diags.HasErrors() {
		return ExitError
	}
	fmt.Fprintln(c.Streams.Stdout, "Success! The recipes are valid.")
	return ExitOK
}

type jsonDiag struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *jsonRange `json:"range,omitempty"`
}

type jsonRange struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

func (c *ValidateCommand) validateJSON(diags hcl.Diagnostics) int {
	out := struct {
		Valid        bool       `json:"valid"`
		ErrorCount   int        `json:"error_count"`
		WarningCount int        `json:"warning_count"`
		Diagnostics  []jsonDiag `json:"diagnostics"`
	}{Valid: !diags.HasErrors(), Diagnostics: []jsonDiag{}}
	for _, d := range diags {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
			out.WarningCount++
		} else {
			out.ErrorCount++
		}
		if d.Subject != nil {
			jd.Range = &jsonRange{Filename: d.Subject.Filename, Line: d.Subject.Start.Line, Column: d.Subject.Start.Column}
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Fprintln(c.Streams.Stdout, string(b))
	if diags.HasErrors() {
		return ExitError
	}
	return ExitOK
}
