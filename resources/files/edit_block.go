package files

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// FileBlockType returns the built-in "file_block" type: a block of lines
// between two marker lines in a file toque does not own, as Ansible's
// blockinfile manages one.
func FileBlockType() resources.Type {
	const typ = "file_block"
	props := []*resources.Property{
		{Name: "name", Type: cty.String, NameProperty: true, Identity: true,
			Description: "The block's name, in its default markers; defaults to the block label."},
		editPathProperty(),
		{Name: "block", Type: cty.String, NonState: true,
			Description: "The lines between the markers (a final newline is dropped; \"\" leaves the markers alone); required by create."},
		{Name: "marker", Type: cty.String, NonState: true, Validate: validateMarker,
			Description: "The marker lines' template: {mark} is replaced by marker_begin, then marker_end. Default: \"# {mark} TOQUE MANAGED BLOCK NAME\"."},
		{Name: "marker_begin", Type: cty.String, NonState: true, Default: cty.StringVal("BEGIN"), Validate: validateMarkerWord("marker_begin"),
			Description: "What {mark} is in the first marker line."},
		{Name: "marker_end", Type: cty.String, NonState: true, Default: cty.StringVal("END"), Validate: validateMarkerWord("marker_end"),
			Description: "What {mark} is in the last marker line."},
		{Name: "insert_after", Type: cty.String, NonState: true, Validate: validatePattern(typ, "insert_after", "EOF"),
			Description: "Where create adds a block the file does not have: after the last line this regular expression matches, or at the end (also \"EOF\", the default, and when no line matches)."},
		{Name: "insert_before", Type: cty.String, NonState: true, Validate: validatePattern(typ, "insert_before", "BOF"),
			Description: "Where create adds a block the file does not have: before the last line this regular expression matches (\"BOF\": at the start; at the end when no line matches)."},
	}
	return &editType{ed: blockEditor{}, schema: &resources.Schema{
		Name:          typ,
		Description:   "Manages a block of lines between marker lines in a file toque does not own.",
		Properties:    append(props, editProperties(typ)...),
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
		// Two blocks of one name in one file would undo each other.
		Identified: true,
	}}
}

func validateMarker(v cty.Value) error {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	m := v.AsString()
	switch {
	case strings.Count(m, "{mark}") != 1:
		return fmt.Errorf("marker must hold {mark} once, which the first marker line has as marker_begin and the last as marker_end: %q", m)
	case strings.ContainsAny(m, "\n\r"):
		return errors.New("marker must be one line")
	case !trimmed(m):
		return errors.New("marker must not start or end with white space: lines are compared as they are")
	}
	return nil
}

func validateMarkerWord(prop string) func(cty.Value) error {
	return func(v cty.Value) error {
		if v.IsNull() || !v.IsKnown() {
			return nil
		}
		if v.AsString() == "" || strings.ContainsAny(v.AsString(), "\n\r") {
			return fmt.Errorf("%s must be a word on one line", prop)
		}
		return nil
	}
}

// blockEditor is file_block's edit.
type blockEditor struct{}

func (blockEditor) inputs() []string {
	return []string{"block", "marker", "marker_begin", "marker_end", "insert_after", "insert_before"}
}

// markers are the first and last marker lines of r's block.
func markers(r *resources.Resource) (string, string) {
	m := r.String("marker")
	if m == "" {
		m = "# {mark} TOQUE MANAGED BLOCK " + r.String("name")
	}
	return strings.Replace(m, "{mark}", r.String("marker_begin"), 1), strings.Replace(m, "{mark}", r.String("marker_end"), 1)
}

// blockLines are the lines of r's block.
func blockLines(r *resources.Resource) []string {
	b := strings.TrimSuffix(r.String("block"), "\n")
	if b == "" {
		return nil
	}
	return strings.Split(b, "\n")
}

func (blockEditor) check(action string, r *resources.Resource) error {
	if err := checkInsert(r); err != nil {
		return err
	}
	begin, end := markers(r)
	if begin == end {
		return &resources.PropertyError{Property: "marker_end", Err: fmt.Errorf("the markers are the same line, %q: give marker_begin and marker_end different values", begin)}
	}
	if action == "create" && !r.IsSet("block") {
		return errors.New("the create action needs block: the lines to have between the markers")
	}
	for i, l := range blockLines(r) {
		if l == begin || l == end {
			return &resources.PropertyError{Property: "block", Err: fmt.Errorf("line %d of block is a marker line, %q, which would end the block early", i+1, l)}
		}
	}
	return nil
}

func (blockEditor) edit(action string, r *resources.Resource, text string) (string, string, error) {
	t := splitText(text)
	begin, end := markers(r)
	var bs, es []int
	for i := range t.lines {
		switch t.bare(i) {
		case begin:
			bs = append(bs, i)
		case end:
			es = append(es, i)
		}
	}
	switch {
	case len(bs) > 1 || len(es) > 1:
		return "", "", fmt.Errorf("the file has %d lines %q and %d lines %q: toque cannot tell which block is %s's; remove the extra marker lines by hand", len(bs), begin, len(es), end, r.Address())
	case len(bs) != len(es):
		have, lack := begin, end
		if len(es) == 1 {
			have, lack = end, begin
		}
		return "", "", fmt.Errorf("the file has the marker line %q of %s but not %q: the block was damaged; mend it by hand", have, r.Address(), lack)
	case len(bs) == 1 && es[0] < bs[0]:
		return "", "", fmt.Errorf("the file's marker line %q (line %d) comes before %q (line %d): the block was damaged; mend it by hand", end, es[0]+1, begin, bs[0]+1)
	}
	found := len(bs) == 1
	if action == "delete" {
		if !found {
			return text, "the block is not in the file", nil
		}
		t.lines = append(t.lines[:bs[0]], t.lines[es[0]+1:]...)
		return t.String(), fmt.Sprintf("removes the block (lines %d to %d)", bs[0]+1, es[0]+1), nil
	}
	want := append(append([]string{begin}, blockLines(r)...), end)
	lines := make([]string, len(want))
	for i, l := range want {
		lines[i] = t.line(l)
	}
	if found {
		same := es[0]-bs[0]+1 == len(want)
		for i := 0; same && i < len(want); i++ {
			same = t.bare(bs[0]+i) == want[i]
		}
		if same {
			return text, fmt.Sprintf("the block is in the file already (lines %d to %d)", bs[0]+1, es[0]+1), nil
		}
		t.lines = append(t.lines[:bs[0]], append(lines, t.lines[es[0]+1:]...)...)
		return t.String(), fmt.Sprintf("replaces the block (lines %d to %d)", bs[0]+1, es[0]+1), nil
	}
	at, where, err := insertAt(t, r.String("insert_after"), r.String("insert_before"))
	if err != nil {
		return "", "", err
	}
	t.insert(at, lines...)
	return t.String(), "adds the block " + where, nil
}
