package packages

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// This file picks a package resource's provider — the host's, from
// os-release, or the one its provider property names — and holds what
// differs between providers without being a method of PackageProvider:
// the checks of names, versions and options made once the provider is
// known, how a pin matches a version, and the words of the plan.

// providerTools are, for each provider a recipe may name, the programs
// it runs: the provider property's HostCheck refuses one whose programs
// this host lacks.
var providerTools = map[string][]string{
	"apt": {"apt-get", "apt-cache", "dpkg-query"},
	"dnf": {"dnf", "rpm"},
}

// newNamedProvider returns the production provider of that name.
func newNamedProvider(name string) (PackageProvider, error) {
	switch name {
	case "apt":
		return newAptProvider(), nil
	case "dnf":
		return newDnfProvider(), nil
	}
	return nil, fmt.Errorf("toque has no package provider %q (it has %s)", name, providerNames())
}

func providerNames() string {
	var out []string
	for n := range providerTools {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, " and ")
}

// validateProviderName checks the provider property without I/O.
func validateProviderName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	if _, ok := providerTools[v.AsString()]; !ok {
		return fmt.Errorf("provider %q: toque has no such package provider (it has %s)", v.AsString(), providerNames())
	}
	return nil
}

// checkProviderOnHost is the provider property's HostCheck: the
// provider's programs must be installed on this host.
func checkProviderOnHost(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	name := v.AsString()
	var missing []string
	for _, tool := range providerTools[name] {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("provider %q needs %s, which this host does not have (not in PATH): install it, or leave provider unset to use the host's own package manager", name, strings.Join(missing, " and "))
	}
	return nil
}

// providerOf is the provider for r: the one its provider property names,
// else the host's. Each is made once per type.
func (t *packageType) providerOf(r *resources.Resource) (PackageProvider, error) {
	name := r.String("provider")
	if name == "" {
		return t.providerFor()
	}
	t.namedMu.Lock()
	defer t.namedMu.Unlock()
	if p, ok := t.namedProvs[name]; ok {
		return p, nil
	}
	named := t.named
	if named == nil {
		named = newNamedProvider
	}
	p, err := named(name)
	if err != nil {
		return nil, err
	}
	if t.namedProvs == nil {
		t.namedProvs = map[string]PackageProvider{}
	}
	t.namedProvs[name] = p
	return p, nil
}

// pinMatcher is a provider whose pins may leave part of a version out
// (dnf: "2.0" pins 2.0 of any release, as dnf's NAME-VERSION does).
type pinMatcher interface {
	MatchesPin(pin, version string) bool
}

// pinMatches reports whether version (as the provider reports it) is
// what pin asks for: the same string, or, for a pinMatcher, a version
// it matches.
func pinMatches(prov PackageProvider, pin, version string) bool {
	if pin == version {
		return true
	}
	if m, ok := prov.(pinMatcher); ok && version != "" {
		return m.MatchesPin(pin, version)
	}
	return false
}

// checkForProvider checks a resource's names, versions, options and
// source file for its provider, once it is known: what the checks made
// at decoding (valid for some provider) leave to it.
func checkForProvider(prov PackageProvider, r *resources.Resource, reqs []pkgRequest) error {
	for _, q := range reqs {
		if prov.Name() == "dnf" && strings.Contains(q.name, ":") {
			return fmt.Errorf("package name %q: NAME:ARCH is apt's form; dnf names an architecture as NAME.ARCH", q.name)
		}
		if q.version != "" {
			if err := prov.ValidVersion(q.version); err != nil {
				return fmt.Errorf("%s: %w", prov.Name(), err)
			}
		}
	}
	opts := props.StringList(r.Get("options"))
	// apt's options were checked at decoding (what passes there only
	// because dnf accepts it, apt refuses itself: an unknown option).
	switch prov.Name() {
	case "dnf":
		if err := checkDnfOptions(opts); err != nil {
			return err
		}
		if r.Bool("overwrite_config_files") {
			return errors.New("overwrite_config_files is dpkg's (--force-confnew); rpm decides by the package's %config marks: leave it unset with dnf")
		}
	}
	if src := r.String("source"); src != "" {
		ext := map[string]string{"apt": ".deb", "dnf": ".rpm"}[prov.Name()]
		if ext != "" && filepath.Ext(src) != ext {
			return fmt.Errorf("source %s: %s installs a local package file only from a path ending in %s (dnf reads any other word as a package name)", src, prov.Name(), ext)
		}
		if strings.ContainsAny(src, "*?[]{}") {
			return fmt.Errorf("source %s: the path holds a globbing character", src)
		}
	}
	return nil
}

// providerWords are the words of the plan that name a provider's types
// and files.
type providerWords struct {
	repoType, updateType, lists string
	// purge is what the plan adds to a purge's reason ("" for none).
	purge string
}

func wordsFor(prov PackageProvider) providerWords {
	if prov != nil && prov.Name() == "dnf" {
		return providerWords{repoType: "yum_repository", updateType: "dnf_makecache", lists: "dnf's metadata cache",
			purge: "with dnf, purge is remove: rpm keeps nothing of a removed package but the configuration files changed since (FILE.rpmsave)"}
	}
	return providerWords{repoType: "apt_repository", updateType: "apt_update", lists: "apt's lists"}
}

// removeLeavesConfig says whether a removed package keeps a state of its
// own (dpkg's config-files, which only purge clears): not with rpm.
func removeLeavesConfig(prov PackageProvider) bool { return prov.Name() != "dnf" }

// validRPMName is rpm's rule for a package name, as toque accepts it: a
// letter, digit or _, then letters, digits and . _ + -, no "..".
func validRPMName(s string) bool {
	if s == "" || strings.Contains(s, "..") {
		return false
	}
	for i, c := range s {
		ok := isAlnum(c) || c == '_' || (i > 0 && strings.ContainsRune(".+-", c))
		if !ok {
			return false
		}
	}
	return true
}
