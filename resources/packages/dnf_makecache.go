package packages

import (
	"context"
	"fmt"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// dnfMakecacheType is the built-in "dnf_makecache" type: dnf's equivalent
// of apt_update. dnf makecache --refresh downloads every enabled
// repository's metadata again when it is older than frequency (periodic)
// or every time (update); a yum_repository that changes notifies it.
//
// Chef has no such resource: its yum_repository refreshes the cache
// itself (make_cache, action makecache). toque keeps it a type of its
// own, as apt_update is, because reading never refreshes dnf's metadata
// (the dnf provider reads with -C, so a plan is exact): a package only a
// repository added in the same plan offers is known once an earlier
// dnf_makecache runs, which several repositories may notify and which
// runs once, and a recipe serving both families pairs apt_update with
// dnf_makecache.
type dnfMakecacheType struct {
	schema *resources.Schema
	dnf    *dnfProvider
	refresh
}

// makecacheStamp is dnf's own record of its last timed makecache (dnf
// makecache --timer reads it); dnf_makecache touches it after each
// refresh that succeeded.
const makecacheStamp = "/var/cache/dnf/last_makecache"

// DnfMakecacheType returns the built-in "dnf_makecache" type.
func DnfMakecacheType() resources.Type { return newDnfMakecacheType(newDnfProvider(), "") }

func newDnfMakecacheType(dnf *dnfProvider, root string) *dnfMakecacheType {
	return &dnfMakecacheType{dnf: dnf,
		schema:  refreshSchema("dnf_makecache", "Refreshes dnf's metadata cache (dnf makecache --refresh), periodically or every time: apt_update's equivalent on RHEL and Fedora.", "the cache", "dnf's", "dnf makecache"),
		refresh: refresh{stamp: makecacheStamp, root: root, source: "dnf", what: "dnf metadata cache", words: cacheRefreshed}}
}

func (t *dnfMakecacheType) Schema() *resources.Schema { return t.schema }

// Load reads the stamp (refresh.load).
func (t *dnfMakecacheType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	return t.load(ctx, r)
}

// Plan: update always runs; periodic runs when the cache is due.
func (t *dnfMakecacheType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	return t.plan(t.schema, action, desired, current)
}

// Meets says that a dnf_makecache that runs meets a dnf package's need
// for a repository that offers it, at apply (resources.NeedMeeter).
func (t *dnfMakecacheType) Meets(desired *resources.Resource, n resources.Need) bool {
	return t.meets(desired, n)
}

func cacheRefreshed(updated string) string {
	if updated == "never" {
		return "dnf's metadata cache has no makecache stamp (" + makecacheStamp + "): never refreshed by dnf_makecache or dnf's timer, as far as toque knows"
	}
	return "dnf's metadata cache was last refreshed at " + updated
}

// Steps run dnf makecache --refresh, then touch the stamp.
func (t *dnfMakecacheType) Steps() resources.Steps { return resources.Steps{Run: t.makecache} }

// makecache runs dnf makecache with every repository's
// skip_if_unavailable off, so that a repository dnf cannot reach fails
// the resource (with it on, the default of some distributions, dnf would
// warn and exit 0, keeping the old metadata); the stamp is written only
// when every repository was refreshed.
func (t *dnfMakecacheType) makecache(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	argv := []string{"dnf", "-y", "--setopt=*.skip_if_unavailable=False", "--setopt=exit_on_lock=True", "makecache", "--refresh"}
	env.Log().Info("running dnf makecache")
	if err := t.dnf.runLocked(ctx, env.Log(), argv, props.Seconds(desired.Get("timeout")), props.Seconds(desired.Get("lock_timeout"))); err != nil {
		return fmt.Errorf("%w\nThe metadata cache is not up to date, and the stamp is not written: fix the repository (or disable it), then apply again", err)
	}
	return t.touch("dnf makecache")
}
