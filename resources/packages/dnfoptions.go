package packages

import (
	"fmt"
	"sort"
	"strings"
)

// This file checks a package resource's options for dnf. dnf reads its
// command line with Python's argparse ("--name value", "--name=value",
// short options clustered or followed by their value), and almost every
// option changes how toque must read or run it: -q hides the transaction
// table the plan reads, --downloadonly and --setopt=tsflags=test make
// apply succeed doing nothing, --installroot and -c point dnf elsewhere,
// --refresh moves the candidate between the plan and apply. So only the
// options below pass, each changing what dnf resolves in a way the
// plan's simulation (the same line with -C --assumeno) shows.

// dnfLongOptions are the options options may give, with whether each
// takes a value.
var dnfLongOptions = map[string]bool{
	"enablerepo": true, "disablerepo": true, "repo": true, "repoid": true,
	"exclude": true, "excludepkgs": true, "disableexcludes": true, "disableexcludepkgs": true,
	"releasever": true, "setopt": true, "enableplugin": true, "disableplugin": true,
	"nobest": false, "best": false, "allowerasing": false, "skip-broken": false,
	"noautoremove": false, "nodocs": false, "nogpgcheck": false, "noplugins": false,
}

// dnfShortOptions are the short forms of dnfLongOptions.
var dnfShortOptions = map[byte]string{'x': "exclude"}

// dnfSetopts are the configuration options --setopt may set: each changes
// only what dnf resolves or how it downloads, as the simulation shows.
var dnfSetopts = map[string]bool{
	"install_weak_deps": true, "clean_requirements_on_remove": true, "best": true,
	"retries": true, "timeout": true, "max_parallel_downloads": true, "minrate": true,
	"skip_if_unavailable": true,
}

// checkDnfOptions checks options word by word, as dnf reads them.
func checkDnfOptions(words []string) error {
	for i := 0; i < len(words); i++ {
		w := words[i]
		var name, value string
		hasValue := false
		switch {
		case w == "--":
			return fmt.Errorf(`options: "--" ends dnf's options, and dnf would read every word after it as a package; name packages in package_name`)
		case strings.HasPrefix(w, "--"):
			name, value, hasValue = strings.Cut(w[2:], "=")
		case strings.HasPrefix(w, "-") && len(w) > 1:
			long, ok := dnfShortOptions[w[1]]
			if !ok {
				return fmt.Errorf("options: %q is not an option toque passes to dnf (it passes %s)", w, dnfAllowed())
			}
			name = long
			if len(w) > 2 {
				value, hasValue = strings.TrimPrefix(w[2:], "="), true
			}
		default:
			return fmt.Errorf("options: %q is not an option; name packages in package_name", w)
		}
		takes, ok := dnfLongOptions[name]
		if !ok {
			return fmt.Errorf("options: %q is not an option toque passes to dnf: it may change how dnf reads or runs (quiet output, download only, another root or configuration, a refreshed cache); toque passes %s", w, dnfAllowed())
		}
		switch {
		case takes && !hasValue:
			if i+1 >= len(words) || strings.HasPrefix(words[i+1], "-") {
				return fmt.Errorf("options: %q needs a value", w)
			}
			i++
			value = words[i]
		case !takes && hasValue:
			return fmt.Errorf("options: %q takes no value", w)
		}
		if takes && strings.ContainsAny(value, "\n\r") {
			return fmt.Errorf("options: the value of --%s holds a line break", name)
		}
		if name == "setopt" {
			key, _, ok := strings.Cut(value, "=")
			if _, k, repo := strings.Cut(key, "."); repo {
				key = k
			}
			if !ok || !dnfSetopts[key] {
				return fmt.Errorf("options: --setopt=%s: toque passes only %s this way (other settings can make apply do nothing, tsflags=test, or point dnf elsewhere, reposdir, cachedir…)", value, setoptList())
			}
		}
	}
	return nil
}

func dnfAllowed() string {
	var out []string
	for k := range dnfLongOptions {
		out = append(out, "--"+k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func setoptList() string {
	var out []string
	for k := range dnfSetopts {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
