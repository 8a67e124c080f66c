package packages

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// packageType is the built-in "package" type: Chef's package resource. What
// an action means is decided here, from facts its provider reads
// (PackageProvider); the provider runs the package manager.
type packageType struct {
	schema *resources.Schema
	// provider returns the host's provider; it is called once.
	provider func() (PackageProvider, error)
	once     sync.Once
	prov     PackageProvider
	provErr  error
	// named returns the provider a resource's provider property names
	// (nil: newNamedProvider); each is made once (providerOf).
	named      func(name string) (PackageProvider, error)
	namedMu    sync.Mutex
	namedProvs map[string]PackageProvider
	// cacheDir returns the download cache the .debs a plan installs are
	// kept in (debCache).
	cacheDir func() string
}

// Default timeouts, in seconds.
const (
	defaultPackageTimeout = 900
	defaultLockTimeout    = 120
	// simulationParallelism bounds the apt-get -s run at once while
	// planning (each reads the whole package cache).
	simulationParallelism = 4
)

// PackageType returns the built-in "package" type, whose provider is
// chosen from the host's os-release when it is first needed (apt and dpkg
// on Debian, Ubuntu and their derivatives; dnf and rpm on RHEL, its
// rebuilds, Fedora and Amazon Linux), or named by a resource's provider
// property.
func PackageType() resources.Type { return newPackageType(hostPackageProvider) }

func newPackageType(provider func() (PackageProvider, error)) *packageType {
	return &packageType{provider: provider, cacheDir: defaultDebCacheDir, schema: &resources.Schema{
		Name:        "package",
		Description: "Installs, upgrades, removes or purges packages with the host's package manager.",
		Properties: []*resources.Property{
			{Name: "package_name", Type: cty.DynamicPseudoType, NameProperty: true, Namespace: "package",
				Normalize:   normalizePackageNames,
				Description: "The package, or a list of packages handled in one call of the package manager; defaults to the block label."},
			{Name: "version", Type: cty.DynamicPseudoType, LoadInput: true,
				Normalize:   normalizePackageVersions,
				Description: "The exact version to install (a list, with package_name a list: one per package, null for any). Unset: the candidate when the package is not installed (install), or whenever it is newer (upgrade)."},
			{Name: "source", Type: cty.String, NonState: true, Validate: props.ValidateAbsPath,
				Description: "Absolute path of a local package file (.deb, or .rpm with dnf) to install instead of a repository's package; its dependencies still come from the repositories."},
			{Name: "options", Type: cty.DynamicPseudoType, NonState: true, Normalize: normalizeOptions,
				Description: "Extra arguments for the package manager (apt-get, dnf), a string split at spaces or a list; used for the plan's simulation too. Options that set apt's configuration (-o, -c) are refused but for APT::Install-Recommends, APT::Install-Suggests and Acquire::Retries; dnf takes only the options that change what it resolves (--enablerepo, --nobest, --setopt=install_weak_deps=…; docs/packages.md lists them)."},
			{Name: "overwrite_config_files", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Replace configuration files the administrator changed with the package's (dpkg --force-confnew); by default they are kept (--force-confdef --force-confold)."},
			{Name: "lock_timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultLockTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds to wait for the package database's lock when another process (an unattended upgrade) holds it."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultPackageTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds the package manager may take."},
			{Name: "provider", Type: cty.String, NonState: true, Validate: validateProviderName, HostCheck: checkProviderOnHost,
				Description: `The package manager: "apt" or "dnf". Unset: the host's, from os-release (apt on Debian and Ubuntu, dnf on RHEL, CentOS, Rocky, AlmaLinux, Fedora and Amazon Linux).`},
		},
		Actions:       []string{"install", "upgrade", "remove", "purge"},
		DefaultAction: "install",
	}}
}

func (t *packageType) Schema() *resources.Schema { return t.schema }

func (t *packageType) providerFor() (PackageProvider, error) {
	t.once.Do(func() { t.prov, t.provErr = t.provider() })
	return t.prov, t.provErr
}

// normalizePackageNames accepts a name or a non-empty list of distinct
// names, each checked with validPackageName.
func normalizePackageNames(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	if v.Type() == cty.String {
		return v, validPackageName(v.AsString())
	}
	if !v.Type().IsListType() && !v.Type().IsTupleType() {
		return cty.NilVal, fmt.Errorf("package_name must be a string or a list of strings, not %s", v.Type().FriendlyName())
	}
	names, err := props.ToStrings(v, "package_name")
	if err != nil {
		return cty.NilVal, err
	}
	if len(names) == 0 {
		return cty.NilVal, errors.New("package_name must not be an empty list")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if err := validPackageName(n); err != nil {
			return cty.NilVal, err
		}
		if seen[n] {
			return cty.NilVal, fmt.Errorf("package_name lists %q twice", n)
		}
		seen[n] = true
	}
	return props.StringListVal(names), nil
}

// normalizePackageVersions accepts a version or a list of versions (null
// elements: any version), each checked as apt would.
func normalizePackageVersions(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	if v.Type() == cty.String {
		return v, validPackageVersion(v.AsString())
	}
	if !v.Type().IsListType() && !v.Type().IsTupleType() {
		return cty.NilVal, fmt.Errorf("version must be a string or a list of strings, not %s", v.Type().FriendlyName())
	}
	var out []cty.Value
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			out = append(out, cty.NullVal(cty.String))
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil {
			return cty.NilVal, fmt.Errorf("version must be a list of strings (or nulls), and %s is not a string", e.GoString())
		}
		if err := validPackageVersion(s.AsString()); err != nil {
			return cty.NilVal, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return cty.NilVal, errors.New("version must not be an empty list")
	}
	return cty.ListVal(out), nil
}

// validPackageVersion checks a version's syntax with no I/O, before the
// provider is known: Debian's rules or rpm's (parseRPMVersion), never
// "..". The provider, once known, checks its own syntax (ValidVersion,
// in checkForProvider).
func validPackageVersion(s string) error {
	_, err := parseDebVersion(s)
	if err != nil {
		if _, rerr := parseRPMVersion(s); rerr == nil {
			err = nil
		}
	}
	if err == nil && strings.Contains(s, "..") {
		err = fmt.Errorf("version %q: \"..\" is not allowed in a version", s)
	}
	return err
}

// normalizeOptions turns a string into its words, and checks them as apt
// would read them (checkAptOptions): a bare word would be read as one
// more package, and an option that sets apt's configuration can make the
// plan's simulation install or apply do nothing.
func normalizeOptions(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return v, nil
	}
	var xs []string
	switch {
	case v.Type() == cty.String:
		xs = strings.Fields(v.AsString())
	case v.Type().IsListType() || v.Type().IsTupleType():
		var err error
		if xs, err = props.ToStrings(v, "options"); err != nil {
			return cty.NilVal, err
		}
	default:
		return cty.NilVal, fmt.Errorf("options must be a string or a list of strings, not %s", v.Type().FriendlyName())
	}
	// Valid for apt or for dnf: the provider, known at plan, checks its
	// own (checkForProvider).
	if err := checkAptOptions(xs); err != nil && checkDnfOptions(xs) != nil {
		return cty.NilVal, err
	}
	return props.StringListVal(xs), nil
}

// pkgRequest is one package of a resource, as the recipe asks for it.
type pkgRequest struct {
	name    string
	version string // "" for any
}

// requests lists r's packages with their desired versions, checking that
// the two properties line up.
func requests(r *resources.Resource) ([]pkgRequest, bool, error) {
	nv := r.Get("package_name")
	multi := nv.Type().IsListType()
	var names []string
	if multi {
		names = props.StringList(nv)
	} else if nv.Type() == cty.String {
		names = []string{nv.AsString()}
	}
	if len(names) == 0 {
		return nil, false, errors.New("package_name is not set")
	}
	out := make([]pkgRequest, len(names))
	for i, n := range names {
		out[i].name = n
	}
	if !r.IsSet("version") {
		return out, multi, nil
	}
	v := r.Values["version"]
	switch {
	case v.Type() == cty.String && !multi:
		out[0].version = v.AsString()
	case v.Type() == cty.String:
		return nil, multi, fmt.Errorf("version is one string but package_name lists %d packages: give a list of versions, one per package (null for any)", len(names))
	case !multi:
		return nil, multi, errors.New("version is a list but package_name names one package: give one version")
	case v.LengthInt() != len(names):
		return nil, multi, fmt.Errorf("version lists %d versions for %d packages: give one per package (null for any)", v.LengthInt(), len(names))
	default:
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			if !e.IsNull() {
				out[i].version = e.AsString()
			}
		}
	}
	return out, multi, nil
}

// The facts a package's State holds beside its version, in Extra, keyed
// by "FACT:NAME". They are what Plan decides on, so they make a plan
// stale when they change; facts an action does not depend on are left
// out, so that they do not.
const (
	xState     = "state:"     // installed, config-files, broken (the version in the database)
	xHeld      = "held:"      // "yes" when held
	xCandidate = "candidate:" // the candidate, "(none)"
	xOffered   = "offered:"   // for a pinned version: the versions on offer, or "yes"
	xFile      = "file"       // source: "NAME VERSION sha256:HEX"
	xApt       = "apt"        // what the package manager would do (its simulation)
	xRefused   = "refused"    // why it refuses to
	xSearched  = "searched"   // the repositories searched for a package nobody offers
	xDeb       = "deb:"       // a .deb the install unpacks: "VERSION ARCH sha256:HEX", by package
)

// Load reads one resource's packages; LoadAll is the same for many.
func (t *packageType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	states, errs, err := t.loadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	if errs[0] != nil {
		return nil, errs[0]
	}
	return states[0], nil
}

// LoadAll reads every package of rs with one call of the provider's Read
// (dpkg-query and apt-cache policy once each), then, for each resource
// whose action would change something, asks the package manager what it
// would do (apt-get -s): the dependencies it pulls in or the packages it
// removes with it. A resource whose own reading fails (an unreadable
// source file) is left nil, for Load to report.
func (t *packageType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	states, errs, err := t.loadAll(ctx, rs)
	if err != nil {
		return nil, err
	}
	for i := range states {
		if errs[i] != nil {
			states[i] = nil
		}
	}
	return states, nil
}

// loadAll reads rs in one batch per provider (resources that name
// another provider than the host's with the provider property are read
// with it, in a batch of their own).
func (t *packageType) loadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, []error, error) {
	groups := map[PackageProvider][]int{}
	var order []PackageProvider
	for i, r := range rs {
		prov, err := t.providerOf(r)
		if err != nil {
			return nil, nil, err
		}
		if groups[prov] == nil {
			order = append(order, prov)
		}
		groups[prov] = append(groups[prov], i)
	}
	states := make([]*resources.State, len(rs))
	errs := make([]error, len(rs))
	for _, prov := range order {
		idx := groups[prov]
		sub := make([]*resources.Resource, len(idx))
		for j, i := range idx {
			sub[j] = rs[i]
		}
		st, es, err := t.loadWith(ctx, prov, sub)
		if err != nil {
			return nil, nil, err
		}
		for j, i := range idx {
			states[i], errs[i] = st[j], es[j]
		}
	}
	return states, errs, nil
}

// loadWith reads rs, all of one provider: its Installed and Offered once
// each, then a simulation per resource with work.
func (t *packageType) loadWith(ctx context.Context, prov PackageProvider, rs []*resources.Resource) ([]*resources.State, []error, error) {
	states := make([]*resources.State, len(rs))
	errs := make([]error, len(rs))
	reqs := make([][]pkgRequest, len(rs))
	files := make([]*PackageFile, len(rs))
	var names []string
	for i, r := range rs {
		if err := props.CtxErr(ctx, "reading packages"); err != nil {
			return nil, nil, err
		}
		rq, _, err := requests(r)
		if err == nil {
			err = checkForProvider(prov, r, rq)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		reqs[i] = rq
		for _, q := range rq {
			names = append(names, q.name)
		}
		if src := r.String("source"); src != "" {
			if files[i], err = prov.Inspect(ctx, src); err != nil {
				errs[i] = fmt.Errorf("source %s: %w", src, err)
			}
		}
	}
	infos, err := prov.Installed(ctx, uniqueNames(names))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the package database: %w", err)
	}
	// What the repositories offer, only for the packages whose action
	// depends on it; for a resource that installs only packages that are
	// not installed, with no version, its simulation says (probe).
	probed := t.probe(ctx, prov, rs, reqs, infos, files, errs)
	var ask []*PackageInfo
	asked := map[string]bool{}
	for i, r := range rs {
		if errs[i] != nil || probed[i] != nil {
			continue
		}
		for _, q := range reqs[i] {
			if info := infos[q.name]; info != nil && !asked[q.name] && needsOffer(r, q, info, files[i] != nil) {
				asked[q.name] = true
				ask = append(ask, info)
			}
		}
	}
	if err := prov.Offered(ctx, ask); err != nil {
		return nil, nil, fmt.Errorf("reading what the repositories offer: %w", err)
	}
	var searched string
	for i, r := range rs {
		if errs[i] != nil {
			continue
		}
		st := packageState(r, reqs[i], infos, files[i], prov)
		states[i] = st
		if _, missing := t.decide(r, st, prov); len(missing) > 0 && searched == "" {
			srcs, err := prov.Sources(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("listing the repositories: %w", err)
			}
			searched = strings.Join(srcs, "; ")
			if searched == "" {
				searched = "(none: no repository is configured)"
			}
		}
	}
	changes := t.simulate(ctx, prov, rs, states, searched, probed)
	if arch, ok := prov.(debArchiver); ok {
		t.readArchives(ctx, arch, rs, states, errs, files, changes)
	}
	return states, errs, nil
}

// simulate asks the package manager, for every resource with work, what
// it would do, a few at a time; it records the answer in the State and
// returns it, per resource (nil: no simulation).
func (t *packageType) simulate(ctx context.Context, prov PackageProvider, rs []*resources.Resource, states []*resources.State, searched string, probed []*PackageOutcome) [][]PackageChange {
	changes := make([][]PackageChange, len(rs))
	sem := make(chan struct{}, simulationParallelism)
	var wg sync.WaitGroup
	for i, st := range states {
		if st == nil {
			continue
		}
		d, missing := t.decide(rs[i], st, prov)
		if len(missing) > 0 {
			st.Extra[xSearched] = searched
		}
		if d.err != nil || d.op == nil || len(missing) > 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out, err := probed[i], error(nil)
			if out == nil {
				out, err = prov.Simulate(ctx, d.op)
			}
			if err != nil {
				st.Extra[xRefused] = err.Error()
				return
			}
			if d.op.Verb == "install" {
				changes[i] = out.Changes
			}
			var ws []string
			for _, c := range out.Changes {
				ws = append(ws, c.Words())
			}
			st.Extra[xApt] = strings.Join(ws, "; ")
		}()
	}
	wg.Wait()
	return changes
}

// needsOffer reports whether the reading of r records what the
// repositories offer its package q (info: what dpkg says of it): only
// when an action of r may install it. An install of a package installed
// at the version asked (any, when none is) needs no candidate: reading
// candidates re-parses every list apt has (apt-cache policy), the bulk of
// a no-op plan. A later action of the same resource (action = ["install",
// "upgrade"]) is planned from this reading, so one that may install
// counts too. Never for remove and purge, nor for a local file.
func needsOffer(r *resources.Resource, q pkgRequest, info *PackageInfo, fromFile bool) bool {
	if fromFile {
		return false
	}
	for _, a := range append([]string{r.EffectiveAction()}, r.Later()...) {
		switch a {
		case "upgrade":
			return true
		case "install":
			if info.State != PkgInstalled || (q.version != "" && q.version != info.Installed) {
				return true
			}
		}
	}
	return false
}

// packageState is the State of one resource's packages: the installed
// version(s) as the version property, and the facts its action depends on
// in Extra.
func packageState(r *resources.Resource, reqs []pkgRequest, infos map[string]*PackageInfo, file *PackageFile, prov PackageProvider) *resources.State {
	st := &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{}}
	action := r.EffectiveAction()
	versions := make([]cty.Value, len(reqs))
	anyInstalled := false
	for i, q := range reqs {
		info := infos[q.name]
		if info == nil {
			info = &PackageInfo{Name: q.name}
		}
		versions[i] = cty.NullVal(cty.String)
		switch info.State {
		case PkgInstalled:
			versions[i] = cty.StringVal(info.Installed)
			anyInstalled = true
			st.Extra[xState+q.name] = string(PkgInstalled)
		case PkgConfigFiles, PkgBroken:
			st.Extra[xState+q.name] = string(info.State) + " " + info.Installed
		}
		if info.Held {
			st.Extra[xHeld+q.name] = "yes"
		}
		if action != "install" && action != "upgrade" || !needsOffer(r, q, info, file != nil) {
			continue
		}
		if q.version != "" {
			offered := "no: " + offerList(info.Versions)
			for _, v := range info.Versions {
				if v == q.version {
					offered = "yes"
					break
				}
				// A pin that leaves part of the version out (dnf's
				// "2.0") is the newest version it matches: the one
				// apply installs.
				if pinMatches(prov, q.version, v) {
					offered = "yes " + v
					break
				}
			}
			st.Extra[xOffered+q.name] = offered
		} else {
			c := info.Candidate
			if c == "" {
				c = "(none)"
			}
			st.Extra[xCandidate+q.name] = c
		}
	}
	if file != nil {
		st.Extra[xFile] = file.Name + " " + file.Version + " sha256:" + file.SHA256
	}
	if anyInstalled {
		st.Exists = true
		if len(reqs) == 1 {
			st.Values["version"] = versions[0]
		} else {
			st.Values["version"] = cty.ListVal(versions)
		}
	}
	return st
}

func offerList(vs []string) string {
	if len(vs) == 0 {
		return "none offered"
	}
	return strings.Join(vs, ", ")
}

// pkgDecision is what a resource's action does to its packages.
type pkgDecision struct {
	op *PackageOp
	// before and after are each package's version, before and after
	// (null: not installed).
	before, after []cty.Value
	// why says, per package, what the action does or why it does nothing.
	why []string
	err error
}

// decide works out what r's action does from st: Chef's package
// semantics (docs/packages.md). It is pure: Load calls it to know what to
// simulate, Plan to plan, Converge to act. missing lists the packages no
// repository offers (a need the plan reports).
func (t *packageType) decide(r *resources.Resource, st *resources.State, prov PackageProvider) (d pkgDecision, missing []string) {
	action := r.EffectiveAction()
	reqs, _, err := requests(r)
	if err != nil {
		d.err = err
		return d, nil
	}
	src := r.String("source")
	if src != "" && len(reqs) > 1 {
		d.err = errors.New("source installs one package file: package_name must name one package (Chef refuses a list with source too)")
		return d, nil
	}
	file := parseFileFact(st.Extra[xFile])
	op := &PackageOp{
		Verb:            action,
		Options:         props.StringList(r.Get("options")),
		OverwriteConfig: r.Bool("overwrite_config_files"),
		LockTimeout:     props.Seconds(r.Get("lock_timeout")),
		Timeout:         props.Seconds(r.Get("timeout")),
	}
	installed := installedVersions(st, len(reqs))
	d.before = make([]cty.Value, len(reqs))
	d.after = make([]cty.Value, len(reqs))
	var errs []string
	for i, q := range reqs {
		inst := installed[i]
		d.before[i], d.after[i] = strOrNull(inst), strOrNull(inst)
		state, stateVer, _ := strings.Cut(st.Extra[xState+q.name], " ")
		held := st.Extra[xHeld+q.name] == "yes"
		target, why, err := decideOne(action, q, inst, PackageState(state), stateVer, st.Extra, file, src, prov)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if target == nil && why == "" {
			missing = append(missing, q.name)
			continue
		}
		d.why = append(d.why, why)
		if target == nil {
			continue
		}
		if held && (action != "upgrade" || q.version != "" || inst == "") {
			errs = append(errs, fmt.Sprintf("%s is held at %s (apt-mark hold): apt refuses to change a held package; remove the hold (apt-mark unhold %s) if the recipe should change it", q.name, orNone(inst, stateVer), q.name))
			continue
		}
		if held {
			d.why[len(d.why)-1] = fmt.Sprintf("%s is held at %s (held): upgrade leaves it, as apt upgrade does", q.name, inst)
			continue
		}
		op.Targets = append(op.Targets, *target)
		if action == "install" || action == "upgrade" {
			d.after[i] = cty.StringVal(target.Version)
		} else {
			d.after[i] = cty.NullVal(cty.String)
		}
	}
	if len(errs) > 0 {
		d.err = errors.New(strings.Join(errs, "; "))
		return d, missing
	}
	if len(op.Targets) > 0 {
		d.op = op
	}
	return d, missing
}

// decideOne decides for one package: the target to hand the package
// manager (nil: nothing to do) and why. A nil target with no reason means
// no repository offers the package.
func decideOne(action string, q pkgRequest, inst string, state PackageState, stateVer string, extra map[string]string, file *fileFact, src string, prov PackageProvider) (*PackageTarget, string, error) {
	n := q.name
	switch action {
	case "install", "upgrade":
		if file != nil {
			if file.name != n {
				return nil, "", fmt.Errorf("source %s is package %s, not %s", src, file.name, n)
			}
			if q.version != "" && q.version != file.version {
				return nil, "", fmt.Errorf("version %q conflicts with source %s, which is version %s of %s: set the version the file holds, or leave version out", q.version, src, file.version, n)
			}
			if inst == file.version {
				return nil, fmt.Sprintf("%s %s is installed, the version of %s", n, inst, filepath.Base(src)), nil
			}
			return &PackageTarget{Name: n, Version: file.version, File: src}, fmt.Sprintf("%s %s from %s", n, file.version, filepath.Base(src)), nil
		}
		if q.version != "" {
			if inst != "" && pinMatches(prov, q.version, inst) {
				return nil, fmt.Sprintf("%s %s is installed", n, inst), nil
			}
			off := extra[xOffered+n]
			if off != "yes" && !strings.HasPrefix(off, "yes ") {
				return nil, "", fmt.Errorf("version %s of %s is not available from the configured repositories (they offer: %s)", q.version, n, strings.TrimPrefix(off, "no: "))
			}
			want := q.version
			if v, ok := strings.CutPrefix(off, "yes "); ok {
				want = v
			}
			return &PackageTarget{Name: n, Version: want}, pinWords(n, inst, want, prov), nil
		}
		cand := extra[xCandidate+n]
		if inst != "" && action == "install" {
			return nil, fmt.Sprintf("%s %s is installed", n, inst), nil
		}
		if cand == "(none)" || cand == "" {
			if inst != "" {
				return nil, fmt.Sprintf("%s %s is installed (not available from the repositories: nothing to upgrade to)", n, inst), nil
			}
			return nil, "", nil
		}
		if inst != "" && prov.CompareVersions(cand, inst) <= 0 {
			return nil, fmt.Sprintf("%s %s is installed, and the candidate is %s", n, inst, cand), nil
		}
		return &PackageTarget{Name: n, Version: cand}, candWords(n, inst, state, stateVer, cand), nil
	case "remove", "purge":
		gone := state == PkgAbsent || (action == "remove" && state == PkgConfigFiles)
		if gone {
			if state == PkgConfigFiles {
				return nil, fmt.Sprintf("%s is removed; its configuration files remain (purge removes them)", n), nil
			}
			return nil, fmt.Sprintf("%s is not installed", n), nil
		}
		v := orNone(inst, stateVer)
		if q.version != "" && !pinMatches(prov, q.version, v) {
			return nil, fmt.Sprintf("%s %s is installed, not %s: %s removes only the version it names", n, v, q.version, action), nil
		}
		why := fmt.Sprintf("%s %s is installed", n, v)
		switch state {
		case PkgConfigFiles:
			why = fmt.Sprintf("%s is removed, its configuration files remain", n)
		case PkgBroken:
			why = fmt.Sprintf("%s %s is half-installed", n, v)
		}
		return &PackageTarget{Name: n}, why, nil
	}
	return nil, "", fmt.Errorf("package has no action %q", action)
}

func pinWords(n, inst, want string, prov PackageProvider) string {
	switch {
	case inst == "":
		return fmt.Sprintf("%s is not installed; version %s is pinned", n, want)
	case prov.CompareVersions(want, inst) < 0:
		return fmt.Sprintf("%s %s is installed; version %s is pinned (a downgrade)", n, inst, want)
	}
	return fmt.Sprintf("%s %s is installed; version %s is pinned", n, inst, want)
}

func candWords(n, inst string, state PackageState, stateVer, cand string) string {
	switch {
	case inst != "":
		return fmt.Sprintf("%s %s is installed; the candidate is %s", n, inst, cand)
	case state == PkgBroken:
		return fmt.Sprintf("%s %s is half-installed (a failed install or removal); apt installs %s", n, stateVer, cand)
	case state == PkgConfigFiles:
		return fmt.Sprintf("%s is removed, its configuration files remain; apt installs %s", n, cand)
	}
	return fmt.Sprintf("%s is not installed; the candidate is %s", n, cand)
}

func orNone(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func strOrNull(s string) cty.Value {
	if s == "" {
		return cty.NullVal(cty.String)
	}
	return cty.StringVal(s)
}

// installedVersions reads the version value of st for n packages.
func installedVersions(st *resources.State, n int) []string {
	out := make([]string, n)
	v, ok := st.Values["version"]
	if !ok || v == cty.NilVal || v.IsNull() {
		return out
	}
	if v.Type() == cty.String {
		out[0] = v.AsString()
		return out
	}
	i := 0
	for it := v.ElementIterator(); it.Next() && i < n; i++ {
		_, e := it.Element()
		if !e.IsNull() {
			out[i] = e.AsString()
		}
	}
	return out
}

// fileFact is the xFile fact: the source file's package, version and digest.
type fileFact struct{ name, version, digest string }

func parseFileFact(s string) *fileFact {
	f := strings.Fields(s)
	if len(f) != 3 {
		return nil
	}
	return &fileFact{f[0], f[1], f[2]}
}

// Plan decides what the action does, from the reading alone.
func (t *packageType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	prov, err := t.providerOf(desired)
	if err != nil {
		return nil, err
	}
	d, missing := t.decide(desired, current, prov)
	if d.err != nil {
		return nil, d.err
	}
	if len(missing) > 0 {
		return missingStep(desired, current, d, missing, current.Extra[xSearched], prov), nil
	}
	if d.op == nil {
		return &resources.Step{Kind: resources.NoOp, Reason: strings.Join(d.why, "; ")}, nil
	}
	if why := current.Extra[xRefused]; why != "" {
		return nil, fmt.Errorf("%s: %s", strings.Join(d.why, "; "), why)
	}
	reqs, multi, _ := requests(desired)
	apt := current.Extra[xApt]
	reason := strings.Join(d.why, "; ")
	switch action {
	case "remove", "purge":
		if others := otherChanges(apt, reqs); others != "" {
			reason += "; " + prov.Name() + " also " + others
		}
		if w := wordsFor(prov); action == "purge" && w.purge != "" {
			reason += "; " + w.purge
		}
		return &resources.Step{Kind: resources.Delete, Reason: reason}, nil
	}
	ch := resources.Change{Property: "version", Before: cty.NilVal}
	if multi {
		if current.Exists {
			ch.Before = cty.ListVal(d.before)
		}
		ch.After = cty.ListVal(d.after)
	} else {
		if !d.before[0].IsNull() {
			ch.Before = d.before[0]
		}
		ch.After = d.after[0]
	}
	if others := otherChanges(apt, reqs); others != "" {
		ch.Note = prov.Name() + " also " + others
	}
	kind := resources.Create
	if current.Exists {
		kind = resources.Update
	}
	return &resources.Step{Kind: kind, Reason: reason, Changes: []resources.Change{ch}, Groups: []string{"version"},
		Provides: provides(desired.Address(), readingOf(current))}, nil
}

// otherChanges words what the simulation does besides the resource's own
// packages: "installs toque-dep 1.0, removes toque-app 1.0".
func otherChanges(apt string, reqs []pkgRequest) string {
	if apt == "" {
		return ""
	}
	own := map[string]bool{}
	for _, q := range reqs {
		own[q.name] = true
		own[strings.SplitN(q.name, ":", 2)[0]] = true
	}
	var out []string
	for _, w := range strings.Split(apt, "; ") {
		f := strings.Fields(w)
		if len(f) >= 2 && !own[f[1]] && !own[strings.SplitN(f[1], ":", 2)[0]] {
			out = append(out, w)
		}
	}
	return strings.Join(out, ", ")
}

// missingStep is the step of an install some of whose packages no
// configured repository offers now. What apt will install is then known
// only once an earlier resource of the plan updates apt's lists with a
// repository that offers them (apt_update): a need met at apply
// (Need.AtApply), whose step changes the version to a value known only
// at apply. The planner accepts it when an earlier step meets the need,
// and otherwise refuses it with Missing, naming the repositories
// searched. A resource that pins versions (a list with a version for
// some packages) is not deferred: its need is plainly Missing.
func missingStep(desired *resources.Resource, current *resources.State, d pkgDecision, missing []string, searched string, prov PackageProvider) *resources.Step {
	w := wordsFor(prov)
	what := "package " + missing[0]
	if len(missing) > 1 {
		what = "packages " + words.Join(missing, "")
	}
	addr := desired.Address()
	msg := fmt.Sprintf("%s: %s is not available from any configured repository (searched: %s). Check the name; or add the repository that has it (%s) and update %s before %s in the plan, with an %s that runs (notified immediately by the %s, or action update): the version is then known at apply, in one apply.",
		addr, what, searched, w.repoType, w.lists, addr, w.updateType, w.repoType)
	need := resources.Need{Namespace: resources.NamespaceAptSource, Value: prov.Name(), What: "a repository that offers " + what, Missing: msg}
	if desired.IsSet("version") {
		need.Missing = fmt.Sprintf("%s: %s is not available from any configured repository (searched: %s). Check the name; or add the repository that has it (%s) and update %s (%s) in an earlier apply: with version set, toque does not defer what %s installs to apply.",
			addr, what, searched, w.repoType, w.lists, w.updateType, prov.Name())
		return &resources.Step{Kind: resources.Create, Reason: what + " (not available)", Needs: []resources.Need{need}}
	}
	need.AtApply, need.Property = true, "version"
	need.StillMissing = fmt.Sprintf("%s is still not available from any configured repository now that the earlier resources of this apply have updated %s (searched: %s): check the name, and that the repository offers it for this host's architecture",
		what, w.lists, searched)
	_, multi, _ := requests(desired)
	ch := resources.Change{Property: "version", Before: cty.NilVal, After: cty.UnknownVal(cty.String)}
	if multi {
		ch.After = cty.UnknownVal(cty.List(cty.String))
		if current.Exists {
			ch.Before = cty.ListVal(d.before)
		}
	} else if len(d.before) > 0 && !d.before[0].IsNull() {
		ch.Before = d.before[0]
	}
	kind := resources.Create
	if current.Exists {
		kind = resources.Update
	}
	reason := what + " (not available now: no configured repository offers it, so what " + prov.Name() + " installs is known at apply)"
	if len(d.why) > 0 {
		reason = strings.Join(d.why, "; ") + "; " + reason
	}
	return &resources.Step{Kind: kind, Reason: reason, Changes: []resources.Change{ch}, Groups: []string{"version"}, Needs: []resources.Need{need}}
}

// KnownFrom says which facts of a package's reading its version, when
// deferred to apply, is known from (resources.Awaiter): what the
// repositories offer — the candidates, the repositories searched — and
// what apt, asked with them, would do.
func (t *packageType) KnownFrom(property, fact string) bool {
	return property == "version" && (strings.HasPrefix(fact, xCandidate) || fact == xSearched || fact == xApt || fact == xRefused || strings.HasPrefix(fact, xDeb))
}

// Steps run the package manager for the step's packages, as decided from
// current (a reading taken right before). When it fails, the error holds
// its output and what it changed before failing.
func (t *packageType) Steps() resources.Steps { return resources.Same(t.change) }

func (t *packageType) change(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, _ *resources.Step) error {
	prov, err := t.providerOf(desired)
	if err != nil {
		return err
	}
	d, missing := t.decide(desired, current, prov)
	switch {
	case d.err != nil:
		return d.err
	case len(missing) > 0:
		return fmt.Errorf("%s: no repository offers %s", desired.Address(), strings.Join(missing, ", "))
	case d.op == nil:
		return nil
	}
	if arch, ok := prov.(debArchiver); ok && arch.installsStaged() && d.op.Verb == "install" {
		dir, cleanup, err := t.stageDebs(debsOf(current))
		if err != nil {
			return err
		}
		defer cleanup()
		d.op.Archives = dir
	}
	err = prov.Change(ctx, env, d.op)
	if err == nil {
		return readBack(ctx, prov, d.op)
	}
	var le *LockError
	if errors.As(err, &le) {
		return err
	}
	// What did it do before it failed? Read the packages again.
	reqs, _, _ := requests(desired)
	names := packagesTouched(reqs, current.Extra[xApt])
	after, rerr := prov.Installed(context.WithoutCancel(ctx), names)
	if rerr != nil {
		return fmt.Errorf("%w\n(the packages could not be read again to say what changed: %v)", err, rerr)
	}
	before := beforeInfos(reqs, current)
	var changed []string
	for _, n := range names {
		now, was := describeInfo(after[n]), describeInfo(before[n])
		if now != was {
			changed = append(changed, fmt.Sprintf("%s: %s, now %s", n, was, now))
		}
	}
	sort.Strings(changed)
	if len(changed) == 0 {
		return fmt.Errorf("%w\nNo package changed.", err)
	}
	return fmt.Errorf("%w\nChanged before it failed: %s.", err, strings.Join(changed, "; "))
}

// readBack reads the op's packages again after the package manager said
// it succeeded: each must be where the plan put it (installed at its
// target version, removed, purged). A package manager can succeed without
// doing it (an option that made it simulate, download only, or skip an
// upgrade); the resource then fails, saying what it left.
func readBack(ctx context.Context, prov PackageProvider, op *PackageOp) error {
	names := make([]string, len(op.Targets))
	for i, tg := range op.Targets {
		names[i] = tg.Name
	}
	after, err := prov.Installed(context.WithoutCancel(ctx), names)
	if err != nil {
		return fmt.Errorf("%s returned success, but the packages could not be read again to check it: %w", prov.Name(), err)
	}
	var wrong []string
	for _, tg := range op.Targets {
		info := after[tg.Name]
		if info == nil {
			info = &PackageInfo{Name: tg.Name}
		}
		var planned string
		ok := false
		switch op.Verb {
		case "install", "upgrade":
			planned = strings.TrimSpace("installed " + tg.Version)
			ok = info.State == PkgInstalled && (tg.Version == "" || prov.CompareVersions(info.Installed, tg.Version) == 0)
		case "remove":
			planned = "removed"
			ok = info.State == PkgAbsent || info.State == PkgConfigFiles
		case "purge":
			planned = "purged"
			ok = info.State == PkgAbsent
		}
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s %s (the plan: %s)", tg.Name, describeInfo(info), planned))
		}
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("%s returned success, but it left %s; it did not do what the plan says (check the resource's options)", providerCommand(prov), strings.Join(wrong, "; "))
}

// providerCommand names the command a provider's Change runs, for errors.
func providerCommand(prov PackageProvider) string {
	if prov.Name() == "apt" {
		return "apt-get"
	}
	return prov.Name()
}

// beforeInfos is what current says of the resource's packages, and of
// those its simulation said apt would change with them.
func beforeInfos(reqs []pkgRequest, current *resources.State) map[string]*PackageInfo {
	out := map[string]*PackageInfo{}
	inst := installedVersions(current, len(reqs))
	for i, q := range reqs {
		info := &PackageInfo{Name: q.name}
		state, ver, _ := strings.Cut(current.Extra[xState+q.name], " ")
		info.State, info.Installed = PackageState(state), ver
		if info.State == PkgInstalled {
			info.Installed = inst[i]
		}
		out[q.name] = info
	}
	for _, w := range strings.Split(current.Extra[xApt], "; ") {
		f := strings.Fields(w)
		if len(f) < 2 || out[f[1]] != nil {
			continue
		}
		info := &PackageInfo{Name: f[1]}
		if f[0] != "installs" && len(f) >= 3 {
			info.State, info.Installed = PkgInstalled, f[2]
		}
		out[f[1]] = info
	}
	return out
}

// packagesTouched lists the resource's packages and those its simulation
// said the package manager would change with them.
func packagesTouched(reqs []pkgRequest, apt string) []string {
	var names []string
	for _, q := range reqs {
		names = append(names, q.name)
	}
	for _, w := range strings.Split(apt, "; ") {
		if f := strings.Fields(w); len(f) >= 2 {
			names = append(names, f[1])
		}
	}
	return uniqueNames(names)
}

// describeInfo words a package's state as packageState records it.
func describeInfo(info *PackageInfo) string {
	if info == nil {
		return "not installed"
	}
	switch info.State {
	case PkgInstalled:
		return "installed " + info.Installed
	case PkgConfigFiles:
		return "removed, configuration files left (" + info.Installed + ")"
	case PkgBroken:
		return "half-installed " + info.Installed
	}
	return "not installed"
}

// Predict is the state the step leaves, for the next action of the same
// resource (action = ["install", "upgrade"]): each package the step
// installs is installed at its target version; one it removes keeps its
// configuration files (dpkg's rc state, which only purge clears); one it
// purges is gone. What the package manager said it would do is the
// step's, not the next one's, so it is not carried over.
func (t *packageType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	delete(st.Extra, xApt)
	delete(st.Extra, xRefused)
	for k := range st.Extra {
		if strings.HasPrefix(k, xDeb) {
			delete(st.Extra, k) // what the step unpacks, not what it leaves
		}
	}
	if !step.Kind.IsWork() {
		return st, nil
	}
	prov, err := t.providerOf(desired)
	if err != nil {
		return nil, err
	}
	d, missing := t.decide(desired, current, prov)
	if d.err != nil || len(missing) > 0 || d.op == nil {
		return st, nil
	}
	targeted := map[string]bool{}
	for _, tg := range d.op.Targets {
		targeted[tg.Name] = true
	}
	reqs, multi, _ := requests(desired)
	installed := installedVersions(current, len(reqs))
	versions := make([]cty.Value, len(reqs))
	any := false
	for i, q := range reqs {
		v := installed[i]
		if targeted[q.name] {
			_, was, _ := strings.Cut(st.Extra[xState+q.name], " ")
			switch d.op.Verb {
			case "install", "upgrade":
				v = d.after[i].AsString()
				st.Extra[xState+q.name] = string(PkgInstalled)
			case "remove":
				if removeLeavesConfig(prov) {
					st.Extra[xState+q.name] = string(PkgConfigFiles) + " " + orNone(v, was)
				} else {
					delete(st.Extra, xState+q.name)
				}
				v = ""
			case "purge":
				delete(st.Extra, xState+q.name)
				v = ""
			}
		}
		versions[i] = strOrNull(v)
		any = any || v != ""
	}
	st.Exists = any
	delete(st.Values, "version")
	if any {
		if multi {
			st.Values["version"] = cty.ListVal(versions)
		} else {
			st.Values["version"] = versions[0]
		}
	}
	return st, nil
}
