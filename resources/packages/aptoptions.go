package packages

import (
	"fmt"
	"strconv"
	"strings"
)

// This file checks a package resource's options, the arguments toque adds
// to apt-get's command line for the plan's simulation (apt-get -s) and
// for apply. They are read as apt reads them (apt-pkg's CommandLine):
// "--name", "--name=value", "--no-name", and clusters of short options
// ("-yq"), where an option that takes a value takes the rest of its word
// ("-oFoo=bar", "-o=Foo=bar") or the next word ("-yo Foo=bar").
//
// Refused:
//   - Every option that sets a configuration item (-o, --option) unless
//     the item is on aptOptionItems: an item reaches everything apt does,
//     and some turn the plan's simulation into an install
//     (APT::Get::Simulate=false) or apply into a simulation that reports
//     a change (=true); Dpkg::Options can point dpkg at another root.
//   - -c and --config-file, which read a file of configuration items.
//   - The options that make apt do nothing while it succeeds: the
//     simulation's (-s and its aliases: toque simulates by itself),
//     --download-only, --print-uris, --help, --version.
//   - "--", after which apt reads every word as a package.
//
// The rest (--no-install-recommends, -t RELEASE, --no-upgrade…) changes
// what apt does in the simulation as it does in apply, so the plan shows
// it. Whatever passes, apply reads every package back after apt returns
// (packageType.readBack).

// aptOptionItems are the configuration items options may set, with the
// check of their value: each changes only what apt fetches or installs in
// a way the plan's simulation shows (recommended and suggested packages
// are Inst lines like any other), or how often it retries a download,
// and has no property of its own.
var aptOptionItems = map[string]func(string) error{
	"apt::install-recommends": aptBool,
	"apt::install-suggests":   aptBool,
	"acquire::retries":        aptCount,
}

// aptItemProperty names the property that sets an item toque passes
// itself, for the error that refuses it.
var aptItemProperty = map[string]string{
	"dpkg::options":       "set overwrite_config_files (dpkg's --force-confnew) rather than Dpkg::Options",
	"dpkg::lock::timeout": "set lock_timeout rather than DPkg::Lock::Timeout",
}

// aptArgChars are the short options that take a value; aptArgLongs the
// long ones.
const aptArgChars = "cotaPe"

var aptArgLongs = map[string]bool{
	"option": true, "config-file": true, "target-release": true, "default-release": true,
	"host-architecture": true, "build-profiles": true, "with-source": true, "error-on": true,
}

// aptShortLong names the short options this file refuses by their long
// name.
var aptShortLong = map[byte]string{'s': "simulate", 'd': "download-only", 'h': "help", 'v': "version", 'c': "config-file", 'o': "option"}

// aptNothing are the long options (and aliases) that make apt succeed
// without changing anything.
var aptNothing = map[string]bool{
	"simulate": true, "just-print": true, "dry-run": true, "recon": true, "no-act": true,
	"download-only": true, "print-uris": true, "help": true, "version": true,
}

// checkAptOptions checks options word by word, as apt reads them.
func checkAptOptions(words []string) error {
	for i := 0; i < len(words); i++ {
		w := words[i]
		// next is the value of an option that takes one: the rest of its
		// word, or else the next word (consumed).
		next := func(rest string) (string, string) {
			if rest != "" {
				return rest, w
			}
			if i+1 < len(words) {
				i++
				return words[i], w + " " + words[i]
			}
			return "", w
		}
		switch {
		case w == "--":
			return fmt.Errorf(`options: "--" ends apt's options, and apt would read every word after it as a package; name packages in package_name`)
		case strings.HasPrefix(w, "--"):
			name, value, hasValue := strings.Cut(w[2:], "=")
			name = strings.ToLower(name)
			shown := w
			if aptArgLongs[name] && !hasValue {
				value, shown = next("")
			}
			if err := checkAptOption(name, value, shown); err != nil {
				return err
			}
		case strings.HasPrefix(w, "-") && len(w) > 1:
			for j := 1; j < len(w); j++ {
				c := w[j]
				if c == '=' {
					break // the value of the option before it ("-q=2", "-s=1")
				}
				if c == '-' {
					continue // "-f-": the option before it, turned off
				}
				name := aptShortLong[c]
				if strings.IndexByte(aptArgChars, c) >= 0 {
					value, shown := next(strings.TrimPrefix(w[j+1:], "="))
					if err := checkAptOption(name, value, shown); err != nil {
						return err
					}
					break
				}
				if err := checkAptOption(name, "", w); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("options: %q is not an option; name packages in package_name", w)
		}
	}
	return nil
}

// checkAptOption checks one option, by its long name ("" for a short one
// this file does not name), with its value; shown is how the recipe wrote
// it.
func checkAptOption(name, value, shown string) error {
	base := strings.TrimPrefix(name, "no-")
	switch {
	case aptNothing[name] || aptNothing[base]:
		return fmt.Errorf("options: %q would make apply do nothing while reporting a change (toque runs apt's simulation itself, for the plan)", shown)
	case name == "config-file":
		return fmt.Errorf("options: %q reads an apt configuration file, which may set any configuration item (the plan's simulation into an install, apply into a simulation); toque does not pass it on", shown)
	case name == "option":
		return checkAptItem(value, shown)
	}
	return nil
}

// checkAptItem checks the "Item=value" of -o or --option.
func checkAptItem(item, shown string) error {
	if item == "" {
		return fmt.Errorf("options: %q gives no configuration item", shown)
	}
	key, value, ok := strings.Cut(item, "=")
	check := aptOptionItems[strings.ToLower(key)]
	switch {
	case check != nil && !ok:
		return fmt.Errorf("options: %q gives no value for %s (write %s=VALUE)", shown, key, key)
	case check != nil:
		if err := check(value); err != nil {
			return fmt.Errorf("options: %q: %v", shown, err)
		}
		return nil
	}
	why := "toque passes only " + allowedItems() + " this way: another item may turn the plan's simulation into an install (APT::Get::Simulate=false) or apply into a simulation (=true), or point dpkg elsewhere"
	lower := strings.ToLower(key)
	for prefix, p := range aptItemProperty {
		if lower == prefix || strings.HasPrefix(lower, prefix+"::") {
			why = p
		}
	}
	return fmt.Errorf("options: %q sets apt's configuration item %s; %s", shown, key, why)
}

func allowedItems() string {
	return "APT::Install-Recommends, APT::Install-Suggests and Acquire::Retries"
}

// aptBool accepts what apt reads as a boolean: a number, or yes/no words.
func aptBool(v string) error {
	switch strings.ToLower(v) {
	case "yes", "true", "with", "on", "enable", "no", "false", "without", "off", "disable":
		return nil
	}
	if _, err := strconv.Atoi(v); err == nil {
		return nil
	}
	return fmt.Errorf("%q is not a yes or no (true, false, 1, 0)", v)
}

// aptCount accepts a whole number of 0 or more.
func aptCount(v string) error {
	if n, err := strconv.Atoi(v); err != nil || n < 0 {
		return fmt.Errorf("%q is not a whole number of 0 or more", v)
	}
	return nil
}
