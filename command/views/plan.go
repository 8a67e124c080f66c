package views

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// PlanOptions says how plan and show print a plan.
type PlanOptions struct {
	// SavedTo is the plan file the plan was written to ("" for none): the
	// text ends with how to apply it.
	SavedTo string
	// Digest is the plan's digest when the caller has it (the encoded or
	// verified file's); "" computes it, unless NoDigest is set.
	Digest string
	// NoDigest leaves the digest out of the text: the plan was neither
	// saved nor read from a file nor is it about to be applied, so no
	// file or journal can ever carry its digest (its salt and creation
	// time are new on every run), and encoding a large plan only to print
	// it is a large part of a no-op plan's time. JSON and Markdown, whose
	// formats carry a digest, compute it anyway.
	NoDigest bool
	// Markdown holds the Markdown options (ignored by other forms).
	Markdown MarkdownOptions
	// Signature says who signed the plan (show, plan -sign-key); nil says
	// nothing about signatures.
	Signature *SignatureInfo
	// Unfinished are the applies on this host that stopped part-way (plan
	// only): every form says what they left undone and how to finish them.
	Unfinished []apply.UnfinishedApply
}

// SignatureInfo is who signed a plan, as reviewers are told.
type SignatureInfo struct {
	// Signed is false for a plan that carries no signature.
	Signed bool
	// Fingerprint names the signing key ("SHA256:…").
	Fingerprint string
	// Trusted is set when the key is one of the trusted keys given
	// (-verify-key); Comment is that key's comment there.
	Trusted bool
	Comment string
}

// line is the sentence the text rendering prints, "" for nil.
func (s *SignatureInfo) line() string {
	switch {
	case s == nil:
		return ""
	case !s.Signed:
		return "Not signed."
	case s.Trusted && s.Comment != "":
		return fmt.Sprintf("Signed by key %s (%s), one of the trusted keys.", EscapeLine(s.Fingerprint), EscapeLine(s.Comment))
	case s.Trusted:
		return fmt.Sprintf("Signed by key %s, one of the trusted keys.", EscapeLine(s.Fingerprint))
	}
	return fmt.Sprintf("Signed by key %s.", EscapeLine(s.Fingerprint))
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
// diagnostics; but one whose only errors are resources that need root (a
// plan made as another user) is, and lists them, one line each, at its
// top.
type planText struct{ v *View }

func (t *planText) Show(p *plan.Plan, diags diag.Diagnostics, o PlanOptions) error {
	shown := p != nil && (!p.Errored || onlyNeedsRoot(diags))
	if shown && p.Errored {
		diags = withoutErrors(diags) // the plan lists them
	}
	t.v.Diagnostics(diags)
	if !shown {
		return nil
	}
	// Buffered: a plan of 10,000 changes is 80,000 lines, each a write(2)
	// otherwise.
	w := bufio.NewWriterSize(t.v.Streams.Stdout, 64<<10)
	err := RenderText(w, p, RenderOptions{Color: t.v.Color, SavedTo: o.SavedTo, Digest: o.Digest, NoDigest: o.NoDigest, Registry: t.v.Registry, Signature: o.Signature, Unfinished: o.Unfinished})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// withoutErrors is diags without its errors (its warnings).
func withoutErrors(diags diag.Diagnostics) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range diags {
		if d.Severity != diag.Error {
			out = append(out, d)
		}
	}
	return out
}

// planJSON prints one JSON document on stdout: the plan in the format of
// docs/plan-json.md, with every diagnostic. Stderr keeps the text form of
// the diagnostics for people reading a CI log.
type planJSON struct{ v *View }

func (j *planJSON) Show(p *plan.Plan, diags diag.Diagnostics, o PlanOptions) error {
	j.v.Diagnostics(diags)
	b, err := JSONView(p, JSONOptions{Diagnostics: j.v.JSONDiagnostics(diags), Registry: j.v.Registry, Digest: o.Digest, Signature: o.Signature, Unfinished: o.Unfinished})
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
	if mo.Registry == nil {
		mo.Registry = m.v.Registry
	}
	if mo.Signature == nil {
		mo.Signature = o.Signature
	}
	if mo.Unfinished == nil {
		mo.Unfinished = o.Unfinished
	}
	if err := RenderMarkdown(&buf, p, mo); err != nil {
		return fmt.Errorf("cannot render the plan as Markdown: %w", err)
	}
	if _, err := m.v.Streams.Stdout.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("cannot write the Markdown: %w", err)
	}
	return nil
}
