package views

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/toquehq/toque/fleet"
)

// FleetHost is one host of toque fleet hosts: its settings from the
// inventory, and ssh's effective settings for it (ssh -G), or why ssh
// could not give them.
type FleetHost struct {
	Host  *fleet.Host
	Route *fleet.Route
	Err   error
}

// fleetSSHSettings are the ssh -G settings fleet hosts shows without -all.
var fleetSSHSettings = []string{"user", "hostname", "port", "proxyjump", "proxycommand", "identityfile", "certificatefile", "stricthostkeychecking", "userknownhostsfile", "connecttimeout"}

// FleetHosts prints the hosts: text (with every ssh -G setting when all)
// or one JSON document.
func (v *View) FleetHosts(hosts []FleetHost, asJSON, all bool) error {
	if asJSON {
		type jh struct {
			Alias       string              `json:"alias"`
			Groups      []string            `json:"groups"`
			Recipes     string              `json:"recipes"`
			Become      string              `json:"become"`
			Options     map[string]string   `json:"options"`
			Environment map[string]string   `json:"environment"`
			Attributes  []string            `json:"attribute_files"`
			SSH         map[string][]string `json:"ssh"`
			Error       string              `json:"error"`
		}
		out := []jh{}
		for _, fh := range hosts {
			h := fh.Host
			j := jh{Alias: h.Alias, Groups: append([]string{}, h.Groups...), Recipes: h.RecipesName, Become: h.Become, Options: map[string]string{}, Environment: h.Environment, Attributes: []string{}}
			if j.Environment == nil {
				j.Environment = map[string]string{}
			}
			for _, o := range h.Options {
				j.Options[o.Name] = o.Value
			}
			for _, l := range h.Layers {
				j.Attributes = append(j.Attributes, l.Name)
			}
			if fh.Route != nil {
				j.SSH = fh.Route.Settings
			}
			if fh.Err != nil {
				j.Error = fh.Err.Error()
			}
			out = append(out, j)
		}
		b, err := json.MarshalIndent(map[string]any{"hosts": out}, "", "  ")
		if err != nil {
			return err
		}
		_, err = v.Streams.Stdout.Write(append(b, '\n'))
		return err
	}
	w := &errWriter{w: v.Streams.Stdout}
	pt := newPainter(v.Color)
	for i, fh := range hosts {
		h := fh.Host
		if i > 0 {
			w.printf("\n")
		}
		w.printf("%s\n", pt.bold(EscapeLine(h.Alias)))
		if len(h.Groups) > 0 {
			w.printf("  groups:      %s\n", EscapeLine(strings.Join(h.Groups, ", ")))
		}
		w.printf("  recipes:     %s\n", EscapeLine(h.RecipesName))
		if h.Become != "" {
			w.printf("  become:      %s (sudo -n)\n", EscapeLine(h.Become))
		}
		for _, o := range h.Options {
			w.printf("  option:      %s=%s\n", EscapeLine(o.Name), EscapeLine(o.Value))
		}
		for _, k := range sortedMapKeys(h.Environment) {
			w.printf("  environment: %s=%s\n", EscapeLine(k), EscapeLine(h.Environment[k]))
		}
		for _, l := range h.Layers {
			w.printf("  attributes:  %s\n", EscapeLine(l.Name))
		}
		if fh.Err != nil {
			w.printf("  ssh:         %s\n", pt.del(indentRest(Escape(fh.Err.Error()), "               ")))
			continue
		}
		if fh.Route == nil {
			continue
		}
		names := fleetSSHSettings
		if all {
			names = fh.Route.SettingNames()
		}
		for _, n := range names {
			vals := fh.Route.Settings[n]
			if len(vals) == 0 || (!all && (vals[0] == "none" || vals[0] == "")) {
				continue
			}
			for _, val := range vals {
				w.printf("  ssh %-*s %s\n", 22, EscapeLine(n), EscapeLine(val))
			}
		}
	}
	return w.err
}

func sortedMapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
