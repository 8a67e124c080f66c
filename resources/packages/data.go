package packages

import (
	"context"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// PackagesData is data "packages": the installed packages, with their
// versions, as the host's package provider reads them (on Debian,
// dpkg-query; on the RHEL family, rpm: one process).
//
//	data "packages" "all" {}                       # every installed package
//	data "packages" "web" { names = ["nginx"] }    # those of names that are installed
//
// It answers a map by package name: name, version, arch, and held (held
// at its version: apt-mark hold). Only installed packages are in it
// (neither removed ones whose configuration files remain nor ones a
// failed install left half-way). A package installed for several
// architectures is there once per architecture, as NAME:ARCH.
func PackagesData() resources.DataSource { return &packagesData{} }

type packagesData struct {
	// provider is the package provider; nil: the host's.
	provider PackageProvider
}

// InstalledLister is a PackageProvider that lists what is installed, for
// data "packages" (names nil: every package).
type InstalledLister interface {
	InstalledPackages(ctx context.Context, names []string) ([]InstalledPackage, error)
}

// InstalledPackage is one installed package.
type InstalledPackage struct {
	Name, Arch, Version string
	Held                bool
}

var packagesSchema = &resources.Schema{
	Name:        "packages",
	Description: "The installed packages, with their versions, by name.",
	Properties: []*resources.Property{
		{Name: "names", Type: cty.List(cty.String), Validate: validateNames,
			Description: "Only these packages (those of them that are installed); unset, every installed package."},
	},
}

var packageEntryType = cty.Object(map[string]cty.Type{
	"name": cty.String, "version": cty.String, "arch": cty.String, "held": cty.Bool,
})

func validateNames(v cty.Value) error {
	for _, n := range props.StringList(v) {
		if err := validPackageName(n); err != nil {
			return err
		}
	}
	return nil
}

func (d *packagesData) Schema() *resources.Schema { return packagesSchema }

func (d *packagesData) Describe(args map[string]cty.Value) string {
	if v, ok := args["names"]; ok {
		return "asks the package database about " + strings.Join(props.StringList(v), ", ")
	}
	return "lists the installed packages (the package database)"
}

func (d *packagesData) Read(ctx context.Context, req *resources.DataRequest) (cty.Value, error) {
	if err := props.CtxErr(ctx, "reading the installed packages"); err != nil {
		return cty.NilVal, err
	}
	p := d.provider
	if p == nil {
		var err error
		if p, err = hostPackageProvider(); err != nil {
			return cty.NilVal, err
		}
	}
	lister, ok := p.(InstalledLister)
	if !ok {
		return cty.NilVal, fmt.Errorf("the %s package provider cannot list the installed packages", p.Name())
	}
	var names []string
	if v := req.Get(packagesSchema, "names"); v != cty.NilVal {
		names = props.StringList(v)
		if len(names) == 0 {
			return cty.MapValEmpty(packageEntryType), nil
		}
	}
	pkgs, err := lister.InstalledPackages(ctx, names)
	if err != nil {
		return cty.NilVal, err
	}
	archs := map[string]int{}
	for _, pk := range pkgs {
		archs[pk.Name]++
	}
	out := make(map[string]cty.Value, len(pkgs))
	for _, pk := range pkgs {
		key := pk.Name
		if archs[pk.Name] > 1 {
			key += ":" + pk.Arch
		}
		out[strings.ToValidUTF8(key, "\uFFFD")] = cty.ObjectVal(map[string]cty.Value{
			"name":    resources.DataString(pk.Name),
			"version": resources.DataString(pk.Version),
			"arch":    resources.DataString(pk.Arch),
			"held":    cty.BoolVal(pk.Held),
		})
	}
	if len(out) == 0 {
		return cty.MapValEmpty(packageEntryType), nil
	}
	return cty.MapVal(out), nil
}

// InstalledPackages asks dpkg-query about every package (names nil) or
// the named ones, and keeps those installed.
func (p *aptProvider) InstalledPackages(ctx context.Context, names []string) ([]InstalledPackage, error) {
	// Exit 1: some name is not in the database (it is then simply absent).
	res, err := p.read(ctx, append([]string{"dpkg-query", "-W", "-f=" + dpkgQueryFormat, "--"}, names...), 0, 1)
	if err != nil {
		return nil, err
	}
	var out []InstalledPackage
	for _, line := range strings.Split(res.Stdout, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 || dpkgState(f[5]) != PkgInstalled {
			continue
		}
		out = append(out, InstalledPackage{Name: f[1], Arch: f[2], Version: f[3], Held: f[4] == "hold"})
	}
	return out, nil
}

// InstalledPackages asks rpm about every package (rpm -qa, names nil) or
// the named ones (rpm -q), in one process. rpm lists only installed
// packages; one installed in several versions of one architecture (an
// install-only package, a kernel) is there once, at its newest, as
// Installed reads it. rpm has no holds (dnf versionlock is not read):
// held is false.
func (p *dnfProvider) InstalledPackages(ctx context.Context, names []string) ([]InstalledPackage, error) {
	argv := []string{"rpm", "-qa", "--qf", rpmQueryFormat}
	if names != nil {
		argv = append([]string{"rpm", "-q", "--qf", rpmQueryFormat, "--"}, names...)
	}
	// rpm -q exits with the number of names it did not find.
	res, err := p.read(ctx, argv, anyExit...)
	if err != nil {
		return nil, err
	}
	if msg := rpmErrors(res.Stderr); msg != "" || res.ExitCode != 0 && names == nil {
		if msg == "" {
			msg = hostexec.Tail(res, 3)
		}
		return nil, fmt.Errorf("%s: %s", strings.Join(argv[:2], " "), msg)
	}
	// rpm -q NAME-VERSION reports package NAME: only the names asked
	// count. rpm -qa lists the imported keys as gpg-pubkey packages:
	// they are not packages.
	asked := map[string]bool{}
	for _, n := range names {
		asked[n] = true
	}
	newest := map[string]int{}
	var out []InstalledPackage
	for _, line := range strings.Split(res.Stdout, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 || names == nil && f[0] == "gpg-pubkey" || names != nil && !asked[f[0]] {
			continue
		}
		pk := InstalledPackage{Name: f[0], Version: evrString(f[1], f[2], f[3]), Arch: f[4]}
		key := pk.Name + "." + pk.Arch
		if i, ok := newest[key]; ok {
			if compareRPMVersions(pk.Version, out[i].Version) > 0 {
				out[i] = pk
			}
			continue
		}
		newest[key] = len(out)
		out = append(out, pk)
	}
	return out, nil
}
