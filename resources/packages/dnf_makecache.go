package packages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zclconf/go-cty/cty"

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
	// root prefixes the stamp's path ("" in production).
	root string
	now  func() time.Time
}

// makecacheStamp is dnf's own record of its last timed makecache (dnf
// makecache --timer reads it); dnf_makecache touches it after each
// refresh that succeeded.
const makecacheStamp = "/var/cache/dnf/last_makecache"

// DnfMakecacheType returns the built-in "dnf_makecache" type.
func DnfMakecacheType() resources.Type { return newDnfMakecacheType(newDnfProvider(), "") }

func newDnfMakecacheType(dnf *dnfProvider, root string) *dnfMakecacheType {
	return &dnfMakecacheType{dnf: dnf, root: root, schema: &resources.Schema{
		Name:        "dnf_makecache",
		Description: "Refreshes dnf's metadata cache (dnf makecache --refresh), periodically or every time: apt_update's equivalent on RHEL and Fedora.",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true,
				Description: "A name for the resource; defaults to the block label."},
			{Name: "frequency", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(86400), Validate: props.PositiveInt("frequency"),
				Description: "Seconds: periodic refreshes the cache only when it is older than this (a day by default)."},
			{Name: "lock_timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultLockTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds to wait for dnf's lock when another process holds it."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultPackageTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds dnf makecache may take."},
		},
		Actions:       []string{"periodic", "update"},
		DefaultAction: "periodic",
	}}
}

func (t *dnfMakecacheType) Schema() *resources.Schema { return t.schema }

// Load reads when the cache was last refreshed (the stamp's time) and,
// for periodic, whether that is longer ago than frequency.
func (t *dnfMakecacheType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading "+makecacheStamp); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	fi, err := os.Stat(t.root + makecacheStamp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st.Extra["updated"] = "never"
		if r.EffectiveAction() == "periodic" {
			st.Extra["due"] = "yes"
		}
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", makecacheStamp, err)
	default:
		st.Extra["updated"] = fi.ModTime().UTC().Format(time.RFC3339)
		if r.EffectiveAction() != "periodic" {
			break
		}
		now := time.Now
		if t.now != nil {
			now = t.now
		}
		st.Extra["due"] = "no"
		if now().Sub(fi.ModTime()) >= time.Duration(r.Int("frequency"))*time.Second {
			st.Extra["due"] = "yes"
		}
	}
	return st, nil
}

// Plan: update always runs; periodic runs when the cache is due.
func (t *dnfMakecacheType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	provides := []resources.Need{{Namespace: resources.NamespaceAptSource, Value: "dnf", What: "dnf metadata cache"}}
	updated := cacheRefreshed(current.Extra["updated"])
	switch action {
	case "update":
		return &resources.Step{Kind: resources.Run, Reason: "update runs every time; " + updated, Provides: provides}, nil
	case "periodic":
		freq := strconv.Itoa(desired.Int("frequency"))
		switch {
		case current.Extra["due"] != "yes":
			return &resources.Step{Kind: resources.NoOp, Reason: updated + ", less than frequency (" + freq + " s) ago"}, nil
		case current.Extra["updated"] == "never":
			return &resources.Step{Kind: resources.Run, Reason: updated, Provides: provides}, nil
		}
		return &resources.Step{Kind: resources.Run, Reason: updated + ", frequency (" + freq + " s) ago or more", Provides: provides}, nil
	}
	return nil, resources.UnknownAction(t.schema, action)
}

// Meets says that a dnf_makecache that runs meets a dnf package's need
// for a repository that offers it, at apply (resources.NeedMeeter).
func (t *dnfMakecacheType) Meets(desired *resources.Resource, n resources.Need) bool {
	a := desired.EffectiveAction()
	return n.Namespace == resources.NamespaceAptSource && n.Value == "dnf" && (a == "update" || a == "periodic")
}

func cacheRefreshed(updated string) string {
	if updated == "never" {
		return "dnf's metadata cache has no makecache stamp (" + makecacheStamp + "): never refreshed by dnf_makecache or dnf's timer, as far as toque knows"
	}
	return "dnf's metadata cache was last refreshed at " + updated
}

// Steps run dnf makecache --refresh, then touch the stamp.
func (t *dnfMakecacheType) Steps() resources.Steps { return resources.Steps{Run: t.refresh} }

// refresh runs dnf makecache with every repository's
// skip_if_unavailable off, so that a repository dnf cannot reach fails
// the resource (with it on, the default of some distributions, dnf would
// warn and exit 0, keeping the old metadata); the stamp is written only
// when every repository was refreshed.
func (t *dnfMakecacheType) refresh(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	argv := []string{"dnf", "-y", "--setopt=*.skip_if_unavailable=False", "--setopt=exit_on_lock=True", "makecache", "--refresh"}
	env.Log().Info("running dnf makecache")
	if err := t.dnf.runLocked(ctx, env.Log(), argv, props.Seconds(desired.Get("timeout")), props.Seconds(desired.Get("lock_timeout"))); err != nil {
		return fmt.Errorf("%w\nThe metadata cache is not up to date, and the stamp is not written: fix the repository (or disable it), then apply again", err)
	}
	stamp := t.root + makecacheStamp
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err != nil {
		return fmt.Errorf("dnf makecache succeeded, but the stamp cannot be written: %w", err)
	}
	f, err := os.OpenFile(stamp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("dnf makecache succeeded, but the stamp cannot be written: %w", err)
	}
	f.Close()
	now := time.Now()
	return os.Chtimes(stamp, now, now)
}
