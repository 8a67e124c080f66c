package packages

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/resources"
)

// PackageProvider is the package type's seam to one package manager: apt
// and dpkg on Debian and its derivatives (pkgprovider_apt.go), dnf and
// rpm on RHEL and Fedora's family (pkgprovider_dnf.go). The package
// type decides what an action means (Chef's semantics, the plan, the
// staleness rules) and asks its provider only for facts and for the
// commands that change the host, so another family (dnf and rpm, apk) is a
// new provider and a line in choosePackageProvider, never a change to the
// type. docs/packages.md says how to add one.
//
// Every method but Change only reads. A provider starts processes only
// through internal/shellexec.
type PackageProvider interface {
	// Name is the provider's name in plans and errors: "apt".
	Name() string
	// Installed returns what the package database says of each named
	// package, in one go (one process, not one per package): the
	// installed version, the state, whether it is held. A name the
	// database does not know gets a PackageInfo with State PkgAbsent.
	Installed(ctx context.Context, names []string) (map[string]*PackageInfo, error)
	// Offered fills in, for each of infos, in one go, what the configured
	// repositories offer: the candidate and the versions on offer. The
	// package type does not ask about packages it only removes or purges.
	Offered(ctx context.Context, infos []*PackageInfo) error
	// Inspect reads a local package file (the package resource's source):
	// its name, version and architecture.
	Inspect(ctx context.Context, file string) (*PackageFile, error)
	// Simulate says what op would do, without doing it: every package it
	// would install, upgrade, downgrade or remove, its target's
	// dependencies included. An error means the package manager refuses
	// op (unmet dependencies, a conflict), in its own words.
	Simulate(ctx context.Context, op *PackageOp) (*PackageOutcome, error)
	// Change carries out op. Its error holds the package manager's output.
	Change(ctx context.Context, env *resources.Env, op *PackageOp) error
	// Sources lists the repositories the provider searches, for a plan
	// error about a package none of them has.
	Sources(ctx context.Context) ([]string, error)
	// CompareVersions orders two versions of this package manager: < 0,
	// 0 or > 0. It is pure.
	CompareVersions(a, b string) int
	// ValidVersion checks a version's syntax without I/O.
	ValidVersion(v string) error
}

// PackageInfo is one package as the host knows it.
type PackageInfo struct {
	Name string
	// Installed is the version in the package database ("" when none),
	// whatever State says of it.
	Installed string
	// State is the package's state in the database: installed,
	// config-files (removed, its configuration left), a broken state
	// (half-installed, unpacked, half-configured), or "" when the
	// database does not list it.
	State PackageState
	// Held is set when the package is held at its version (apt-mark hold):
	// the package manager will not change it unless told to.
	Held bool
	// Candidate is the version an install without a version gets ("" when
	// no repository offers one).
	Candidate string
	// Versions are the versions the repositories offer, newest first.
	Versions []string
}

// PackageState is where a package stands in the package database.
type PackageState string

const (
	PkgAbsent      PackageState = ""
	PkgInstalled   PackageState = "installed"
	PkgConfigFiles PackageState = "config-files"
	// PkgBroken is a package an install or removal left half-way: dpkg's
	// half-installed, unpacked, half-configured.
	PkgBroken PackageState = "broken"
)

// PackageFile is a local package file.
type PackageFile struct {
	Name, Version, Arch string
	// SHA256 is the file's digest, so a plan made from it goes stale when
	// it is replaced.
	SHA256 string
}

// PackageOp is one call of the package manager on behalf of one resource:
// every package of it, in one transaction.
type PackageOp struct {
	// Verb is install, remove or purge.
	Verb    string
	Targets []PackageTarget
	// Options are the recipe's extra arguments for the package manager.
	Options []string
	// OverwriteConfig replaces configuration files the administrator
	// changed with the package's new version (dpkg --force-confnew);
	// otherwise they are kept (--force-confdef --force-confold).
	OverwriteConfig bool
	// LockTimeout is how long to wait for the package database's lock,
	// which another process (an unattended upgrade) may hold.
	LockTimeout time.Duration
	// Timeout bounds the whole call.
	Timeout time.Duration
	// Archives, when set, is a directory holding the exact package files
	// the plan read (its sha256s), under the package manager's names: the
	// install takes them from there and downloads nothing (apt-get
	// --no-download -o Dir::Cache::archives=…). Simulations ignore it.
	Archives string
}

// PackageTarget is one package of an op: a name and the exact version to
// install (install), or a local file (install from source).
type PackageTarget struct {
	Name, Version, File string
}

// PackageOutcome is what an op would do, as the package manager says.
type PackageOutcome struct {
	// Changes lists every package the op installs, upgrades, downgrades,
	// removes or purges, in the package manager's order.
	Changes []PackageChange
}

// PackageChange is one package an op changes: From is the version it
// leaves ("" when newly installed), To the version it installs ("" when
// removed).
type PackageChange struct {
	Name, From, To string
	// Arch is the architecture of the package installed ("amd64", "all"),
	// "" when the package manager did not say.
	Arch string
	// Repo is the repository the package it installs comes from, as the
	// package manager names it ("" when it did not say: apt).
	Repo  string
	Purge bool
}

// Words says what the change does: "installs toque-dep 1.0", "upgrades
// libfoo 1.0 → 1.2", "removes toque-app 1.0".
func (c PackageChange) Words() string {
	switch {
	case c.To == "" && c.Purge:
		return "purges " + c.Name
	case c.To == "":
		return strings.TrimSpace("removes " + c.Name + " " + c.From)
	case c.From == "":
		return "installs " + c.Name + " " + c.To
	case c.From == c.To:
		return "reinstalls " + c.Name + " " + c.To
	}
	return "changes " + c.Name + " " + c.From + " → " + c.To
}

// choosePackageProvider picks the provider for a host of this lineage
// (host.Lineage: ID, then ID_LIKE). Add a family here.
func choosePackageProvider(lineage []string) (PackageProvider, error) {
	for _, id := range lineage {
		switch id {
		case "debian", "ubuntu":
			return newAptProvider(), nil
		case "rhel", "centos", "fedora", "rocky", "almalinux", "amzn":
			return newDnfProvider(), nil
		}
	}
	what := "os-release could not be read"
	if len(lineage) > 0 {
		what = "os-release says ID=" + lineage[0]
		if len(lineage) > 1 {
			what += ", ID_LIKE=" + strings.Join(lineage[1:], " ")
		}
	}
	return nil, fmt.Errorf("toque has no package provider for this host (%s): it manages packages with apt and dpkg, on Debian, Ubuntu and the distributions derived from them, and with dnf and rpm, on RHEL, CentOS, Rocky, AlmaLinux, Fedora and Amazon Linux", what)
}

// hostPackageProvider is the provider for this host, from its os-release.
func hostPackageProvider() (PackageProvider, error) {
	return choosePackageProvider(host.Lineage())
}

// validPackageName checks a package name without I/O, before the provider
// is known: Debian's rule (lower-case letters, digits, + - ., at least two
// characters, starting with a letter or digit), optionally followed by
// :ARCH, or rpm's (validRPMName: upper-case letters and _ too, one
// character is enough). It is also what keeps a name from reading as an
// option, a path or a pattern on apt's or dnf's command line: no leading
// -, no / * ? [ ] or spaces, no "..".
func validPackageName(s string) error {
	if validRPMName(s) {
		return nil
	}
	name, arch, hasArch := strings.Cut(s, ":")
	if len(name) < 2 {
		return fmt.Errorf("package name %q is too short: a package name has at least two characters", s)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && strings.ContainsRune("+-.", c))
		if !ok {
			return fmt.Errorf("package name %q: %q is not allowed (letters, digits, and + - . _ after the first character)", s, string(c))
		}
	}
	if strings.Contains(name, "..") {
		return fmt.Errorf("package name %q: \"..\" is not allowed", s)
	}
	if hasArch {
		if arch == "" || strings.ContainsFunc(arch, func(c rune) bool { return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') }) {
			return fmt.Errorf("package name %q: the architecture after ':' must be lower-case letters, digits and -", s)
		}
	}
	return nil
}

// uniqueNames returns names without repeats, in first-seen order.
func uniqueNames(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
