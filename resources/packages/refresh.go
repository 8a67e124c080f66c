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

// refresh is what apt_update and dnf_makecache share: a refresh of a
// package manager's indexes, every time (update) or when a stamp file's
// time is older than frequency (periodic), that provides the package
// manager's sources to the packages after it (resources.NeedMeeter).
type refresh struct {
	// stamp is the file whose time says when the indexes were last
	// refreshed; root prefixes it ("" in production).
	stamp, root string
	// now is the clock Load reads; nil means time.Now.
	now func() time.Time
	// source is the value of the NamespaceAptSource need the refresh
	// provides ("apt", "dnf"), and what names it ("apt package lists").
	source, what string
	// words says when the indexes were last refreshed ("never" or a
	// time).
	words func(updated string) string
}

// refreshSchema is the schema of a refresh type; what names what it
// refreshes ("the lists", "the cache"), tool the command it runs.
func refreshSchema(name, description, what, lockOf, tool string) *resources.Schema {
	return &resources.Schema{
		Name:        name,
		Description: description,
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true,
				Description: "A name for the resource; defaults to the block label."},
			{Name: "frequency", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(86400), Validate: props.PositiveInt("frequency"),
				Description: "Seconds: periodic refreshes " + what + " only when they are older than this (a day by default)."},
			{Name: "lock_timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultLockTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds to wait for " + lockOf + " lock when another process holds it."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultPackageTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds " + tool + " may take."},
		},
		Actions:       []string{"periodic", "update"},
		DefaultAction: "periodic",
	}
}

// load reads when the indexes were last refreshed (the stamp's time)
// and, for periodic, whether that is longer ago than frequency. Both are
// in the reading: a plan that said "not due" goes stale once it is due.
func (f *refresh) load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading "+f.stamp); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	fi, err := os.Stat(f.root + f.stamp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st.Extra["updated"] = "never"
		if r.EffectiveAction() == "periodic" {
			st.Extra["due"] = "yes"
		}
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", f.stamp, err)
	default:
		st.Extra["updated"] = fi.ModTime().UTC().Format(time.RFC3339)
		if r.EffectiveAction() != "periodic" {
			break
		}
		now := time.Now
		if f.now != nil {
			now = f.now
		}
		st.Extra["due"] = "no"
		if now().Sub(fi.ModTime()) >= time.Duration(r.Int("frequency"))*time.Second {
			st.Extra["due"] = "yes"
		}
	}
	return st, nil
}

// plan: update always runs; periodic runs when the indexes are due.
func (f *refresh) plan(schema *resources.Schema, action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	provides := []resources.Need{{Namespace: resources.NamespaceAptSource, Value: f.source, What: f.what}}
	updated := f.words(current.Extra["updated"])
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
	return nil, resources.UnknownAction(schema, action)
}

// meets says that a refresh that runs (update, or periodic when due)
// meets a package's need for a repository that offers it, at apply: its
// version is known once the indexes it reads are.
func (f *refresh) meets(desired *resources.Resource, n resources.Need) bool {
	a := desired.EffectiveAction()
	return n.Namespace == resources.NamespaceAptSource && n.Value == f.source && (a == "update" || a == "periodic")
}

// touch writes the stamp's time, once the refresh succeeded; what names
// the refresh in the error.
func (f *refresh) touch(what string) error {
	stamp := f.root + f.stamp
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err != nil {
		return fmt.Errorf("%s succeeded, but the stamp cannot be written: %w", what, err)
	}
	file, err := os.OpenFile(stamp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%s succeeded, but the stamp cannot be written: %w", what, err)
	}
	file.Close()
	now := time.Now()
	return os.Chtimes(stamp, now, now)
}
