package packages

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// defaultDebCacheDir is the download cache the package type keeps .debs
// in: remote_file's (TOQUE_CACHE_DIR/downloads, else
// STATE_DIR/cache/downloads).
func defaultDebCacheDir() string { return files.DefaultCacheDir() }

// debArchiver is a provider whose package files (.debs, .rpms) it can
// fetch and read before installing them (apt, dnf): the package type then
// plans what each install brings (docs/packages.md, "What a package
// brings").
type debArchiver interface {
	Archives(ctx context.Context, cache *debCache, changes []PackageChange) ([]*debRef, error)
	manifestOf(ctx context.Context, cache *debCache, d *debRef) error
	// installsStaged says whether the install takes the very files the
	// plan read, staged for it (PackageOp.Archives: apt), or fetches them
	// again from the repositories (dnf).
	installsStaged() bool
	// memberContent reads the content of the regular file at path in d,
	// which its manifest keeps only by size and digest, checked against
	// that digest.
	memberContent(ctx context.Context, cache *debCache, d *debRef, path string) ([]byte, error)
}

// pkgReading is what the package type's Load hands its Plan and steps
// (State.Local): the .debs the install would unpack, with their manifests.
// The plan records only their sha256 (Extra "deb:NAME").
type pkgReading struct {
	debs []*debRef
	// content reads a file of one of debs that its manifest keeps only by
	// size and digest (debArchiver.memberContent), for a later resource
	// of the plan that manages it (resources.Prediction.ReadContent).
	content func(d *debRef, path string) ([]byte, error)
}

// readingOf is the package reading of st, nil when it has none.
func readingOf(st *resources.State) *pkgReading {
	r, _ := st.Local.(*pkgReading)
	return r
}

// debsOf is the .debs of a reading, nil when it has none.
func debsOf(st *resources.State) []*debRef {
	if r, ok := st.Local.(*pkgReading); ok {
		return r.debs
	}
	return nil
}

// readArchives gets, for every resource whose install the package
// manager simulated, the .debs it would unpack (dependencies included)
// into the package cache, and records them in its reading: their sha256
// in Extra, their manifests in Local. One apt-get for where they all come
// from, one for those not cached yet. When that fails for several
// resources, each is left to its own Load (errs), which says which
// package, URL and reason is its own.
func (t *packageType) readArchives(ctx context.Context, arch debArchiver, rs []*resources.Resource, states []*resources.State, errs []error, pkgFiles []*PackageFile, changes [][]PackageChange) {
	var need []int
	for i := range rs {
		if states[i] != nil && errs[i] == nil && (len(changes[i]) > 0 || pkgFiles[i] != nil) {
			need = append(need, i)
		}
	}
	if len(need) == 0 {
		return
	}
	fail := func(err error) {
		for _, i := range need {
			errs[i] = err
		}
	}
	dir := ""
	if t.cacheDir != nil {
		dir = t.cacheDir()
	}
	if dir == "" {
		fail(errNoCache)
		return
	}
	cache, err := openDebCache(dir)
	if err != nil {
		fail(fmt.Errorf("toque's package cache: %w", err))
		return
	}
	var all []PackageChange
	seen := map[string]bool{}
	for _, i := range need {
		for _, c := range changes[i] {
			k := c.Name + "=" + c.To + ":" + c.Arch
			if c.To == "" || seen[k] || (pkgFiles[i] != nil && c.Name == pkgFiles[i].Name) {
				continue
			}
			seen[k] = true
			all = append(all, c)
		}
	}
	refs, err := arch.Archives(ctx, cache, all)
	if err != nil {
		fail(err)
		return
	}
	// One name and version may come for several architectures
	// (libc6:amd64 and libc6:i386): each change takes its own.
	byKey := map[string][]*debRef{}
	for _, d := range refs {
		byKey[d.Name+"="+d.Version] = append(byKey[d.Name+"="+d.Version], d)
	}
	refOf := func(c PackageChange) *debRef {
		ds := byKey[c.Name+"="+c.To]
		for _, d := range ds {
			if d.Arch == c.Arch {
				return d
			}
		}
		if len(ds) == 1 {
			return ds[0] // an Architecture: all package, or an arch apt did not say
		}
		return nil
	}
	for _, i := range need {
		var debs []*debRef
		if f := pkgFiles[i]; f != nil {
			d := &debRef{Name: f.Name, Version: f.Version, Arch: f.Arch, File: rs[i].String("source"), SHA256: f.SHA256}
			d.URL, d.Filename = d.File, archiveName(d)
			if err := arch.manifestOf(ctx, cache, d); err != nil {
				errs[i] = err
				continue
			}
			debs = append(debs, d)
		}
		for _, c := range changes[i] {
			if d := refOf(c); d != nil && !slices.Contains(debs, d) {
				debs = append(debs, d)
			}
		}
		st := states[i]
		for _, d := range debs {
			k := xDeb + d.Name
			if _, taken := st.Extra[k]; taken {
				k += ":" + d.Arch // another architecture of the same package
			}
			st.Extra[k] = d.fact()
		}
		st.Local = &pkgReading{debs: debs, content: func(d *debRef, path string) ([]byte, error) {
			return arch.memberContent(ctx, cache, d, path)
		}}
	}
}

// provides is what an install step brings, for the rest of the plan
// (resources.Step.Provides), read from its .debs: every path they ship
// (directories, files, links) and every systemd unit, each with its
// prediction — mode, owner, the content of configuration and unit files
// — named by the resource and the .deb ("package[nginx] (nginx-common
// 1.22.1-9+deb12u9)").
func provides(addr string, rd *pkgReading) []resources.Need {
	if rd == nil {
		return nil
	}
	var out []resources.Need
	for _, d := range rd.debs {
		m := d.Manifest
		if m == nil {
			continue
		}
		by := addr + " (" + m.label() + ")"
		for k := range m.Entries {
			e := &m.Entries[k]
			if e.Kind == "special" {
				continue
			}
			p := &resources.Prediction{By: by, Facts: m.entryFacts(e)}
			if slices.Contains(m.Diverts, e.Path) {
				p.Facts["diverts"] = "yes"
			}
			if e.HasContent {
				p.Content = e.ContentBytes
			} else if e.Kind == "file" && rd.content != nil {
				d, path := d, e.Path
				p.ReadContent = func() ([]byte, error) { return rd.content(d, path) }
			}
			what := e.Kind
			if e.Conffile {
				what = "configuration file"
			}
			out = append(out, resources.Need{Namespace: resources.NamespacePath, Value: e.Path, What: what, Prediction: p})
		}
		for _, u := range m.Units {
			f := map[string]string{"path": u.Path, "can_reload": yesNo(u.CanReload), "install": yesNo(u.Install), "package": m.Package}
			if len(u.Scripts) > 0 {
				f["scripts"] = unitScriptsWords(u.Scripts)
			}
			out = append(out, resources.Need{Namespace: resources.NamespaceUnit, Value: u.Name, What: "unit",
				Prediction: &resources.Prediction{By: by, Facts: f}})
		}
		for _, v := range m.Provides {
			out = append(out, resources.Need{Namespace: NamespacePackage, Value: v, What: "package"})
		}
		for _, a := range m.Accounts {
			ns, how := resources.NamespaceUser, "its "+a.By
			if a.Kind == "group" {
				ns = resources.NamespaceGroup
			}
			if a.By == "sysusers.d" {
				how = "a sysusers.d file it ships"
			}
			out = append(out, resources.Need{Namespace: ns, Value: a.Name, What: a.Kind,
				Prediction: &resources.Prediction{By: by + ", through " + how, Facts: map[string]string{"kind": a.Kind, "package": m.Package, "by": a.By}}})
		}
	}
	return out
}

// NamespacePackage is the namespace of package names an install provides
// (its .debs' own names and the virtual packages they Provide).
const NamespacePackage = "package"

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// unitScriptsWords words what debhelper's postinst does with a unit.
func unitScriptsWords(s []string) string {
	sort.Strings(s)
	switch strings.Join(s, " ") {
	case "enables starts":
		return "its postinst enables and starts it"
	case "enables":
		return "its postinst enables it"
	case "starts":
		return "its postinst starts it"
	}
	return ""
}

// debsWords lists the .debs of an install for its reason: "unpacks
// nginx-common 1.22.1-9+deb12u9 (sha256 3b4c…), nginx 1.22.1-9+deb12u9
// (sha256 …)".
func debsWords(debs []*debRef) string {
	var ws []string
	for _, d := range debs {
		ws = append(ws, fmt.Sprintf("%s (sha256 %s…)", d.label(), d.SHA256[:min(12, len(d.SHA256))]))
	}
	return strings.Join(ws, ", ")
}

// stageDebs puts the .debs of an install into a directory of the package
// cache for apt-get install (debCache.stage), checked against the plan's
// sha256s: a local source file too, whose dependencies come from there.
// An install with none stages nothing.
func (t *packageType) stageDebs(debs []*debRef) (string, func(), error) {
	if len(debs) == 0 {
		return "", func() {}, nil
	}
	dir := ""
	if t.cacheDir != nil {
		dir = t.cacheDir()
	}
	if dir == "" {
		return "", nil, errNoCache
	}
	cache, err := openDebCache(dir)
	if err != nil {
		return "", nil, fmt.Errorf("toque's package cache: %w", err)
	}
	return cache.stage(debs)
}

// PlanFact says which facts of a package's reading are about what its
// repositories offer and what apt would do, not about the installed
// packages (resources.PlanFacter): the end-state check compares the
// version, the dpkg state and the hold, never the candidate.
func (t *packageType) PlanFact(fact string) bool {
	return strings.HasPrefix(fact, xCandidate) || strings.HasPrefix(fact, xOffered) || strings.HasPrefix(fact, xDeb) ||
		fact == xFile || fact == xApt || fact == xRefused || fact == xSearched
}

// probe asks the package manager, for each resource whose action installs
// only packages that are not installed, with no version and no later
// action, what it would do: its simulation of "install NAME" names the
// candidate of each (the version it would install), with what it pulls
// in, which is what the simulation of "install NAME=CANDIDATE" says. So
// such a resource needs no apt-cache policy, which reads every list apt
// has: one process less on a fresh host. The outcome, per resource (nil
// where it does not apply or apt refused: that resource is read the
// usual way, whose errors say why), sets each package's candidate and
// stands for the resource's simulation.
func (t *packageType) probe(ctx context.Context, prov PackageProvider, rs []*resources.Resource, reqs [][]pkgRequest, infos map[string]*PackageInfo, pkgFiles []*PackageFile, errs []error) []*PackageOutcome {
	out := make([]*PackageOutcome, len(rs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, simulationParallelism)
	for i, r := range rs {
		if errs[i] != nil || pkgFiles[i] != nil || r.EffectiveAction() != "install" || len(r.Later()) > 0 || len(reqs[i]) == 0 {
			continue
		}
		op := &PackageOp{
			Verb:            "install",
			Options:         props.StringList(r.Get("options")),
			OverwriteConfig: r.Bool("overwrite_config_files"),
			LockTimeout:     props.Seconds(r.Get("lock_timeout")),
			Timeout:         props.Seconds(r.Get("timeout")),
		}
		ok := true
		for _, q := range reqs[i] {
			info := infos[q.name]
			if info == nil || info.State != PkgAbsent || info.Held || q.version != "" {
				ok = false
				break
			}
			op.Targets = append(op.Targets, PackageTarget{Name: q.name})
		}
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := prov.Simulate(ctx, op)
			if err != nil {
				return
			}
			cands := map[string]string{}
			for _, c := range res.Changes {
				if c.From == "" && c.To != "" {
					cands[c.Name] = c.To
					if c.Arch != "" {
						cands[c.Name+":"+c.Arch] = c.To
					}
				}
			}
			for _, q := range reqs[i] {
				if cands[q.name] == "" {
					return
				}
			}
			out[i] = res
		}()
	}
	wg.Wait()
	for i, res := range out {
		if res == nil {
			continue
		}
		for _, c := range res.Changes {
			for _, q := range reqs[i] {
				if (q.name == c.Name || q.name == c.Name+":"+c.Arch) && c.To != "" {
					infos[q.name].Candidate = c.To
				}
			}
		}
	}
	return out
}
