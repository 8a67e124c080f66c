package fleet

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/toquehq/toque/internal/words"
)

// Select picks the hosts of the inventory that -limit names, in inventory
// order; no -limit is every host. Each -limit holds items separated by
// commas:
//
//	web-01          a host
//	web             a group: its hosts
//	web-*           a glob over host aliases
//	!db-*           leave out what the item names (any of the above)
//	@fleet.result   the hosts of a result file that did not succeed
//	@fleet.result:failed,unknown   its hosts with these outcomes
//
// An @ item takes the rest of its -limit, commas included. An item that
// names no host is an error (a typo would otherwise act on fewer hosts
// than meant, or on all of them). path resolves a result file's name.
func (inv *Inventory) Select(limits []string, path func(string) string) ([]string, error) {
	if len(limits) == 0 {
		out := make([]string, len(inv.Hosts))
		for i, h := range inv.Hosts {
			out[i] = h.Alias
		}
		return out, nil
	}
	in, out := map[string]bool{}, map[string]bool{}
	includes := 0
	var errs []error
	for _, l := range limits {
		for _, item := range splitLimit(l) {
			exclude := false
			if rest, ok := strings.CutPrefix(item, "!"); ok {
				exclude, item = true, rest
			}
			if item == "" {
				errs = append(errs, fmt.Errorf("-limit %q has an empty item", l))
				continue
			}
			hosts, err := inv.match(item, path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			target := in
			if exclude {
				target = out
			} else {
				includes++
			}
			for _, h := range hosts {
				target[h] = true
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var sel []string
	for _, h := range inv.Hosts {
		if (includes == 0 || in[h.Alias]) && !out[h.Alias] {
			sel = append(sel, h.Alias)
		}
	}
	if len(sel) == 0 {
		return nil, noMatchf("-limit %s leaves no host of %s", words.Printable(strings.Join(limits, " ")), inv.Path)
	}
	return sel, nil
}

// splitLimit splits one -limit at commas, an @ item taking the rest.
func splitLimit(l string) []string {
	var items []string
	for l != "" {
		if strings.HasPrefix(l, "@") || strings.HasPrefix(l, "!@") {
			return append(items, strings.TrimSpace(l))
		}
		item, rest, _ := strings.Cut(l, ",")
		items = append(items, strings.TrimSpace(item))
		l = rest
	}
	return items
}

// match is the hosts one item names.
func (inv *Inventory) match(item string, resolve func(string) string) ([]string, error) {
	if file, ok := strings.CutPrefix(item, "@"); ok {
		return inv.fromResult(file, resolve)
	}
	var out []string
	if g := inv.Group(item); g != nil {
		out = append(out, g.Members...)
	}
	if h := inv.Host(item); h != nil {
		out = append(out, h.Alias)
	}
	if isGlob(item) {
		if _, err := path.Match(item, ""); err != nil {
			return nil, fmt.Errorf("-limit %q is not a valid glob: %v", item, err)
		}
		for _, h := range inv.Hosts {
			if ok, _ := path.Match(item, h.Alias); ok {
				out = append(out, h.Alias)
			}
		}
	}
	if len(out) == 0 {
		names := make([]string, 0, len(inv.Hosts)+len(inv.Groups))
		for _, h := range inv.Hosts {
			names = append(names, h.Alias)
		}
		for _, g := range inv.Groups {
			names = append(names, g.Name)
		}
		return nil, noMatchf("-limit %q names no host or group of %s, nor matches a host's alias.%s", words.Printable(item), inv.Path, words.DidYouMean(item, names))
	}
	return out, nil
}

// fromResult is the hosts of a result file with the given outcomes
// (FILE:OUTCOME,…), or that did not succeed (FILE).
func (inv *Inventory) fromResult(spec string, resolve func(string) string) ([]string, error) {
	file, list, hasList := strings.Cut(spec, ":")
	want := map[Outcome]bool{}
	if hasList {
		for _, o := range strings.Split(list, ",") {
			o = strings.TrimSpace(o)
			if !validOutcome(o) {
				names := make([]string, len(Outcomes))
				for i, x := range Outcomes {
					names[i] = string(x)
				}
				return nil, fmt.Errorf("-limit @%s: %q is not an outcome; the outcomes are %s.%s", words.Printable(spec), words.Printable(o), strings.Join(names, ", "), words.DidYouMean(o, names))
			}
			want[Outcome(o)] = true
		}
	}
	r, err := ReadResult(resolve(file))
	if err != nil {
		return nil, fmt.Errorf("-limit @%s: %w", words.Printable(spec), err)
	}
	var out, unknown []string
	for _, h := range r.Hosts {
		if (hasList && want[h.Outcome]) || (!hasList && !h.Outcome.Succeeded()) {
			if inv.Host(h.Alias) == nil {
				unknown = append(unknown, h.Alias)
				continue
			}
			out = append(out, h.Alias)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("-limit @%s names %s, which %s does not declare any more: remove it from the result file or give the hosts another way", words.Printable(spec), words.Printable(strings.Join(unknown, ", ")), inv.Path)
	}
	if len(out) == 0 {
		what := "did not succeed"
		if hasList {
			var os []Outcome
			for o := range want {
				os = append(os, o)
			}
			sortOutcomes(os)
			what = "is " + outcomeList(os)
		}
		return nil, noMatchf("-limit @%s: no host of %s %s", words.Printable(spec), words.Printable(file), what)
	}
	return out, nil
}

// noMatch is an error of ErrNoMatch with a message of its own.
type noMatch struct{ msg string }

func noMatchf(format string, args ...any) error { return &noMatch{fmt.Sprintf(format, args...)} }

func (e *noMatch) Error() string        { return e.msg }
func (e *noMatch) Is(target error) bool { return target == ErrNoMatch }
