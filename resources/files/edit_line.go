package files

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// FileLineType returns the built-in "file_line" type: one line of a file
// toque does not own, as Ansible's lineinfile and Chef's line cookbook
// (append_if_no_line, replace_or_add, delete_lines) manage one.
func FileLineType() resources.Type {
	const typ = "file_line"
	props := []*resources.Property{
		{Name: "name", Type: cty.String, NameProperty: true, Identity: true,
			Description: "A name for the resource; defaults to the block label. Not compared."},
		editPathProperty(),
		{Name: "line", Type: cty.String, NonState: true, Validate: validateOneLine("line", "; use file_block for several lines"),
			Description: "The whole line, without its newline; required by create, and by delete when match is unset."},
		{Name: "match", Type: cty.String, NonState: true, Validate: validatePattern(typ, "match", ""),
			Description: "A regular expression (RE2) matched against each line: create replaces the last line it matches with line; delete removes every line it matches."},
		{Name: "backrefs", Type: cty.Bool, NonState: true, Default: cty.False,
			Description: "With match, create replaces the last line match matches with line, in which $1 stands for match's first group ($${name} in HCL for a named one; Ansible's backrefs), and changes nothing when no line matches; delete does not take it."},
		{Name: "insert_after", Type: cty.String, NonState: true, Validate: validatePattern(typ, "insert_after", "EOF"),
			Description: "Where create adds a line no line matches: after the last line this regular expression matches, or at the end (also \"EOF\", the default, and when no line matches)."},
		{Name: "insert_before", Type: cty.String, NonState: true, Validate: validatePattern(typ, "insert_before", "BOF"),
			Description: "Where create adds a line no line matches: before the last line this regular expression matches (\"BOF\": at the start; at the end when no line matches)."},
	}
	return &editType{ed: lineEditor{}, schema: &resources.Schema{
		Name:          typ,
		Description:   "Manages one line of a file toque does not own: present (added or replacing the line a pattern matches) or absent.",
		Properties:    append(props, editProperties(typ)...),
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

// lineEditor is file_line's edit.
type lineEditor struct{}

func (lineEditor) inputs() []string {
	return []string{"line", "match", "backrefs", "insert_after", "insert_before"}
}

func (lineEditor) check(action string, r *resources.Resource) error {
	if err := checkInsert(r); err != nil {
		return err
	}
	if r.Bool("backrefs") {
		switch {
		case action != "create":
			return &resources.PropertyError{Property: "backrefs", Err: fmt.Errorf("backrefs is for create, which rewrites the line match matches; %s does not take it", action)}
		case !r.IsSet("match"):
			return &resources.PropertyError{Property: "backrefs", Err: errors.New("backrefs needs match: its groups are what $1… in line stand for")}
		case r.IsSet("insert_after") || r.IsSet("insert_before"):
			return &resources.PropertyError{Property: "backrefs", Err: errors.New("with backrefs, create adds no line when match matches none, so insert_after and insert_before would do nothing: leave them out")}
		}
	}
	switch {
	case action == "create" && !r.IsSet("line"):
		return errors.New("the create action needs line: the line to have in the file")
	case action == "delete" && !r.IsSet("line") && !r.IsSet("match"):
		return errors.New("the delete action needs line (the line to remove) or match (a pattern of the lines to remove)")
	}
	return nil
}

// checkInsert refuses insert_after and insert_before together.
func checkInsert(r *resources.Resource) error {
	if r.IsSet("insert_after") && r.IsSet("insert_before") {
		return &resources.PropertyError{Property: "insert_before", Err: errors.New("set insert_after or insert_before, not both")}
	}
	return nil
}

func (lineEditor) edit(action string, r *resources.Resource, text string) (string, string, error) {
	t := splitText(text)
	line, match := r.String("line"), r.String("match")
	var re *regexp.Regexp
	if match != "" {
		var err error
		if re, err = compilePattern(match); err != nil {
			return "", "", &resources.PropertyError{Property: "match", Err: err}
		}
	}
	if action == "delete" {
		var gone []int
		keep := t.lines[:0:0]
		for i := range t.lines {
			if (re != nil && re.MatchString(t.bare(i))) || (re == nil && t.bare(i) == line) {
				gone = append(gone, i)
				continue
			}
			keep = append(keep, t.lines[i])
		}
		switch {
		case len(gone) == 0 && re != nil:
			return text, fmt.Sprintf("no line matches %q", match), nil
		case len(gone) == 0:
			return text, "the line is not in the file", nil
		}
		t.lines = keep
		what := "removes " + lineNumbers(gone)
		if re != nil {
			verb := "matches"
			if len(gone) > 1 {
				verb = "match"
			}
			what += fmt.Sprintf(", which %s %q", verb, match)
		}
		return t.String(), what, nil
	}
	if r.Bool("backrefs") {
		i := t.lastMatch(re)
		if i < 0 {
			return text, fmt.Sprintf("no line matches %q (with backrefs, no line is added)", match), nil
		}
		// The groups of a match within one line hold no line break.
		bare := t.bare(i)
		line = string(re.ExpandString(nil, line, bare, re.FindStringSubmatchIndex(bare)))
	}
	if re != nil {
		if i := t.lastMatch(re); i >= 0 {
			if t.bare(i) == line {
				return text, fmt.Sprintf("line %d is the line already (the last that matches %q)", i+1, match), nil
			}
			t.lines[i] = t.line(line)
			return t.String(), fmt.Sprintf("replaces line %d, the last that matches %q", i+1, match), nil
		}
	}
	if i := slices.IndexFunc(t.lines, func(l string) bool { return strings.TrimSuffix(l, "\r") == line }); i >= 0 {
		return text, fmt.Sprintf("the line is in the file already (line %d)", i+1), nil
	}
	at, where, err := insertAt(t, r.String("insert_after"), r.String("insert_before"))
	if err != nil {
		return "", "", err
	}
	t.insert(at, t.line(line))
	return t.String(), "adds the line " + where, nil
}
