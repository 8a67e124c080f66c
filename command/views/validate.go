package views

import (
	"fmt"

	"github.com/toquehq/toque/internal/diag"
)

// Validate is the view of `toque validate`.
type Validate interface {
	Result(diags diag.Diagnostics) error
}

// NewValidate returns the text view, or with asJSON the JSON document
// {"valid", "error_count", "warning_count", "diagnostics"}.
func NewValidate(v *View, asJSON bool) Validate {
	if asJSON {
		return validateJSON{v}
	}
	return validateText{v}
}

type validateText struct{ v *View }

func (t validateText) Result(diags diag.Diagnostics) error {
	t.v.Diagnostics(diags)
	if diags.HasErrors() {
		return nil
	}
	_, err := fmt.Fprintln(t.v.Streams.Stdout, "Success! The recipes are valid.")
	return err
}

// validateJSON prints only the JSON document: validate -json is read by
// editors and CI, and its diagnostics are all in it.
type validateJSON struct{ v *View }

func (j validateJSON) Result(diags diag.Diagnostics) error {
	errs, warns := diags.Count()
	b, err := marshalIndent(struct {
		Valid        bool             `json:"valid"`
		ErrorCount   int              `json:"error_count"`
		WarningCount int              `json:"warning_count"`
		Diagnostics  []JSONDiagnostic `json:"diagnostics"`
	}{!diags.HasErrors(), errs, warns, j.v.JSONDiagnostics(diags)})
	if err != nil {
		return err
	}
	_, err = j.v.Streams.Stdout.Write(b)
	return err
}
