package files

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// IniSettingType returns the built-in "ini_setting" type: one key of one
// section of an INI file toque does not own, as Ansible's ini_file manages
// one; every other line, comments and order included, stays as it is.
func IniSettingType() resources.Type {
	const typ = "ini_setting"
	props := []*resources.Property{
		{Name: "key", Type: cty.String, NameProperty: true, Identity: true, Validate: validateIniKey,
			Description: "The key; defaults to the block label."},
		editPathProperty(),
		{Name: "section", Type: cty.String, Identity: true, Default: cty.StringVal(""), Validate: validateIniSection,
			Description: "The section, as in [section]; \"\" (the default) is the top of the file, before any section."},
		{Name: "value", Type: cty.String, NonState: true, Validate: validateIniValue,
			Description: "The value; required by create."},
	}
	return &editType{ed: iniEditor{}, schema: &resources.Schema{
		Name:          typ,
		Description:   "Manages one key of one section of an INI file toque does not own, keeping its comments and order.",
		Properties:    append(props, editProperties(typ)...),
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
		// One key of one section of one file: two resources of it would
		// undo each other.
		Identified: true,
	}}
}

func validateIniKey(v cty.Value) error {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	k := v.AsString()
	switch {
	case k == "":
		return errors.New("key is empty")
	case strings.ContainsAny(k, "\n\r"):
		return errors.New("key must be one line")
	case strings.ContainsAny(k, "=[]"):
		return fmt.Errorf("key %q holds %q: in an INI file, = ends a key and [ ] make a section header, so the file would not read back as this key", k, string(k[strings.IndexAny(k, "=[]")]))
	case strings.HasPrefix(k, ";") || strings.HasPrefix(k, "#"):
		return fmt.Errorf("key %q starts with %q, which makes the line a comment", k, k[:1])
	case !trimmed(k):
		return fmt.Errorf("key %q starts or ends with white space, which INI readers drop", k)
	}
	return nil
}

func validateIniSection(v cty.Value) error {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	s := v.AsString()
	switch {
	case strings.ContainsAny(s, "\n\r"):
		return errors.New("section must be one line")
	case strings.ContainsAny(s, "[]"):
		return fmt.Errorf("section %q holds a bracket, which would end its header [%s] early", s, s)
	case !trimmed(s):
		return fmt.Errorf("section %q starts or ends with white space, which INI readers drop", s)
	}
	return nil
}

func validateIniValue(v cty.Value) error {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	s := v.AsString()
	switch {
	case strings.ContainsAny(s, "\n\r"):
		return errors.New("value must be one line: an INI value ends at its line's end")
	case !trimmed(s):
		return fmt.Errorf("value %q starts or ends with white space, which INI readers drop: it would never read back as it is", s)
	}
	return nil
}

// iniEditor is ini_setting's edit.
type iniEditor struct{}

func (iniEditor) inputs() []string { return []string{"value"} }

func (iniEditor) check(action string, r *resources.Resource) error {
	if action == "create" && !r.IsSet("value") {
		return errors.New("the create action needs value")
	}
	return nil
}

// iniHeader is the section a line ([name]) starts, if it is a header.
func iniHeader(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return strings.TrimSpace(s[1 : len(s)-1]), true
	}
	return "", false
}

// iniKey is the key of a line that is not a header, comment or blank: what
// is before its =, or the whole line (a key without a value).
func iniKey(s string) string {
	if i := strings.IndexByte(s, '='); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

func sectionName(s string) string {
	if s == "" {
		return "the top of the file"
	}
	return "[" + s + "]"
}

func (iniEditor) edit(action string, r *resources.Resource, text string) (string, string, error) {
	t := splitText(text)
	section, key, value := r.String("section"), r.String("key"), r.String("value")
	cur := ""
	// Where the section is: its header (-1 for the top, or a section not
	// in the file), its last line that is not blank or a comment, whether
	// it is in the file, and the first header of the file.
	header, last, firstHeader := -1, -1, -1
	present := section == ""
	var at []int // the key's lines in the section
	for i := range t.lines {
		s := strings.TrimSpace(t.bare(i))
		if name, ok := iniHeader(s); ok {
			cur = name
			if firstHeader < 0 {
				firstHeader = i
			}
			if cur == section && !present {
				present, header, last = true, i, i
			}
			continue
		}
		if cur != section || s == "" || s[0] == ';' || s[0] == '#' {
			continue
		}
		last = i
		if iniKey(s) == key {
			at = append(at, i)
		}
	}
	where := sectionName(section)
	if action == "delete" {
		if len(at) == 0 {
			return text, fmt.Sprintf("%s is not in %s", key, where), nil
		}
		for j := len(at) - 1; j >= 0; j-- {
			t.lines = append(t.lines[:at[j]], t.lines[at[j]+1:]...)
		}
		return t.String(), fmt.Sprintf("removes %s from %s (%s)", key, where, lineNumbers(at)), nil
	}
	if len(at) > 0 {
		var changed []int
		was := ""
		for _, i := range at {
			raw := t.bare(i)
			eq := strings.IndexByte(raw, '=')
			if eq < 0 {
				t.lines[i] = t.line(strings.TrimRight(raw, " \t") + " = " + value)
				changed = append(changed, i)
				continue
			}
			old := strings.TrimSpace(raw[eq+1:])
			if old == value {
				continue
			}
			if was == "" {
				was = old
			}
			rest := raw[eq+1:]
			space := rest[:len(rest)-len(strings.TrimLeft(rest, " \t"))]
			t.lines[i] = t.line(raw[:eq+1] + space + value)
			changed = append(changed, i)
		}
		if len(changed) == 0 {
			return text, fmt.Sprintf("%s = %s in %s already (%s)", key, value, where, lineNumbers(at)), nil
		}
		what := fmt.Sprintf("sets %s in %s (%s)", key, where, lineNumbers(changed))
		if was != "" {
			what += fmt.Sprintf(", which was %q", was)
		}
		return t.String(), what, nil
	}
	line := t.line(key + " = " + value)
	switch {
	case present && last >= 0:
		t.insert(last+1, line)
		after := fmt.Sprintf("line %d", last+1)
		if last == header {
			after = "its header, " + after
		}
		return t.String(), fmt.Sprintf("adds %s = %s to %s, after %s", key, value, where, after), nil
	case present && firstHeader >= 0: // the top of the file, which has no key yet
		t.insert(firstHeader, line)
		return t.String(), fmt.Sprintf("adds %s = %s at the top of the file, before line %d", key, value, firstHeader+1), nil
	case present:
		t.insert(len(t.lines), line)
		return t.String(), fmt.Sprintf("adds %s = %s at the end", key, value), nil
	}
	add := []string{t.line("[" + section + "]"), line}
	if n := len(t.lines); n > 0 && strings.TrimSpace(t.bare(n-1)) != "" {
		add = append([]string{t.line("")}, add...)
	}
	t.insert(len(t.lines), add...)
	return t.String(), fmt.Sprintf("adds %s with %s = %s at the end", where, key, value), nil
}
