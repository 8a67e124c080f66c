package views

import (
	"bytes"
	"fmt"

	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// PlanOptions says how plan and show print a plan.
type PlanOptions struct {
	// SavedTo is the plan file the plan was written to ("" for none): the
	// text ends with how to apply it.
	SavedTo string
	// Digest is the plan's digest when the caller has it (the encoded or
	// verified file's); "" computes it.
	Digest string
	// Markdown holds the Markdown options (ignored by other forms).
	Markdown MarkdownOptions
}

// Plan is the view of `toque plan`, `toque show` and the plan shown by
// `toque apply` without a plan file: the plan (nil when none could be
// made) and the command's diagnostics, printed once, at the end.
type Plan interface {
	Show(p *plan.Plan, diags diag.Diagnostics, o PlanOptions) error
}

// NewPlan returns the plan view for the chosen output: JSON (-json),
// Markdown (-markdown) or text.
func NewPlan(v *View, asJSON, markdown bool) Plan {
	switch {
	case asJSON:
		return &planJSON{v}
	case markdown:
		return &planMarkdown{v}
	}
	return &planText{v}
}

// planText prints diagnostics on stderr and the plan on stdout, as a
// reviewer reads it. An errored plan is not shown: its errors are the
// diagnostics.
type planText struct{ v *View }

func (t *planText) Show(p *plan.Plan, diags diag.Diagnostics, o PlanOptions) error {
	t.v.Diagnostics(diags)
	if p == nil || p.Errored {
		return nil
	}
	return RenderText(t.v.Streams.Stdout, p, RenderOptions{Color: t.v.Color, SavedTo: o.SavedTo, Digest: o.Digest})
}

// planJSON prints one JSON document on stdout: the plan in the format of
// docs/plan-json.md, with every diagnostic. Stderr keeps the text form of
// the diagnostics for people reading a CI log.
type planJSON struct{ v *View }

func (j *planJSON) Show(p *plan.Plan, diags diag.Diagnostics, _ PlanOptions) error {
	j.v.Diagnostics(diags)
	b, err := JSONView(p, j.v.JSONDiagnostics(diags))
	if err != nil {
		return fmt.Errorf("cannot render the plan as JSON: %w", err)
	}
	_, err = j.v.Streams.Stdout.Write(b)
	return err
}

// planMarkdown prints the plan as Markdown for a pull-request comment;
// diagnostics go to stderr. Nothing reaches stdout when the plan does not
// fit the size limit.
type planMarkdown struct{ v *View }

func (m *planMarkdown) Show(p *plan.Plan, diags diag.Diagnostics, o PlanOptions) error {
	m.v.Diagnostics(diags)
	if p == nil {
		return nil
	}
	var buf bytes.Buffer
	mo := o.Markdown
	if mo.Digest == "" {
		mo.Digest = o.Digest
	}
	if err := RenderMarkdown(&buf, p, mo); err != nil {
		return fmt.Errorf("cannot render the plan as Markdown: %w", err)
	}
	if _, err := m.v.Streams.Stdout.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("cannot write the Markdown: %w", err)
	}
	return nil
}
