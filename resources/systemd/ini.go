package systemd

import (
	"fmt"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// renderUnitINI renders a unit file from an HCL object (or map) of
// sections, each an object of keys, as Chef's systemd_unit does from a
// Hash:
//
//	{ Unit = { Description = "web", After = ["network.target"] },
//	  Service = { ExecStart = "/usr/bin/web" },
//	  Install = { WantedBy = "multi-user.target" } }
//
// becomes [Unit], [Service] and [Install] sections of KEY=VALUE lines. A
// list value repeats its key, once per element, in order (After=,
// Environment=, an ExecStart= that resets the list with ""); a null value
// is left out. HCL objects do not keep the order they were written in, so
// sections are in systemd's conventional order — Unit first, Install
// last, the others by name — and keys by name: unit files mean the same
// whatever the order of different keys. Strings are written as they are,
// numbers in decimal, bools as true or false. A line break in a value, a
// key or section name systemd would not read, and a nested object are
// errors.
func renderUnitINI(v cty.Value) (string, error) {
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return "", fmt.Errorf("content must be a string (the unit file) or an object of sections, not %s", v.Type().FriendlyName())
	}
	sections := v.AsValueMap()
	names := make([]string, 0, len(sections))
	for name := range sections {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := sectionRank(names[i]), sectionRank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for _, name := range names {
		if err := checkSectionName(name); err != nil {
			return "", err
		}
		sec := sections[name]
		if sec.IsNull() {
			continue
		}
		if !sec.Type().IsObjectType() && !sec.Type().IsMapType() {
			return "", fmt.Errorf("section %s must be an object of keys (%s = { Key = \"value\" }), not %s", name, name, sec.Type().FriendlyName())
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s]\n", name)
		keys := sec.AsValueMap()
		knames := make([]string, 0, len(keys))
		for k := range keys {
			knames = append(knames, k)
		}
		sort.Strings(knames)
		for _, k := range knames {
			if err := checkKeyName(name, k); err != nil {
				return "", err
			}
			lines, err := iniValues(keys[k])
			if err != nil {
				return "", fmt.Errorf("%s.%s: %w", name, k, err)
			}
			for _, l := range lines {
				fmt.Fprintf(&b, "%s=%s\n", k, l)
			}
		}
	}
	return b.String(), nil
}

// sectionRank puts [Unit] first and [Install] last.
func sectionRank(name string) int {
	switch name {
	case "Unit":
		return 0
	case "Install":
		return 2
	}
	return 1
}

func checkSectionName(name string) error {
	if name == "" || strings.ContainsAny(name, "[]\n\r") {
		return fmt.Errorf("%q is not a section name systemd reads (no brackets or line breaks)", name)
	}
	return nil
}

func checkKeyName(section, key string) error {
	if key == "" {
		return fmt.Errorf("section %s has an empty key", section)
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%s.%s: %q is not a key systemd reads (letters, digits, - and _ only)", section, key, key)
		}
	}
	return nil
}

// iniValues is the value of one key, one element per line it writes.
func iniValues(v cty.Value) ([]string, error) {
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	if ty.IsListType() || ty.IsTupleType() || ty.IsSetType() {
		var out []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				continue
			}
			s, err := iniScalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := iniScalar(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

// iniScalar writes one value.
func iniScalar(v cty.Value) (string, error) {
	var s string
	switch v.Type() {
	case cty.String:
		s = v.AsString()
	case cty.Number:
		f := v.AsBigFloat()
		if f.IsInt() {
			i, _ := f.Int(nil)
			s = i.String()
		} else {
			s = f.Text('f', -1)
		}
	case cty.Bool:
		s = "false"
		if v.True() {
			s = "true"
		}
	default:
		return "", fmt.Errorf("a value must be a string, number, bool or a list of them, not %s", v.Type().FriendlyName())
	}
	if strings.ContainsAny(s, "\n\r") {
		return "", fmt.Errorf("the value %q has a line break; write one value per list element, or give content as a string", s)
	}
	return s, nil
}

// normalizeUnitContent is content's Normalize: a string is the unit file
// as it is; an object (or map) is rendered to one (renderUnitINI).
func normalizeUnitContent(v cty.Value) (cty.Value, error) {
	if !v.IsWhollyKnown() || v.IsNull() {
		return v, nil
	}
	if v.Type() == cty.String {
		return v, nil
	}
	s, err := renderUnitINI(v)
	if err != nil {
		return cty.NilVal, err
	}
	return cty.StringVal(s), nil
}
