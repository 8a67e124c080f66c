package packages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// aptUpdateType is the built-in "apt_update" type: Chef's apt_update,
// apt-get update when apt's package lists are older than frequency
// (periodic), or every time (update). An apt_repository that changes
// notifies it.
type aptUpdateType struct {
	schema *resources.Schema
	apt    *aptProvider
	// root prefixes the stamp's path ("" in production).
	root string
	// now is the clock Load reads; nil means time.Now.
	now func() time.Time
}

// updateStamp is the file whose time says when apt's lists were last
// updated: Debian's update-notifier and Chef's apt_update use it too, and
// apt_update touches it after each update.
const updateStamp = "/var/lib/apt/periodic/update-success-stamp"

// AptUpdateType returns the built-in "apt_update" type.
func AptUpdateType() resources.Type { return newAptUpdateType(newAptProvider(), "") }

func newAptUpdateType(apt *aptProvider, root string) *aptUpdateType {
	return &aptUpdateType{apt: apt, root: root, schema: &resources.Schema{
		Name:        "apt_update",
		Description: "Updates apt's package lists (apt-get update), periodically or every time.",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true,
				Description: "A name for the resource; defaults to the block label."},
			{Name: "frequency", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(86400), Validate: props.PositiveInt("frequency"),
				Description: "Seconds: periodic updates the lists only when they are older than this (a day by default)."},
			{Name: "lock_timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultLockTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds to wait for apt's lock when another process holds it."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultPackageTimeout), Validate: props.ValidateTimeout,
				Description: "Seconds apt-get update may take."},
		},
		Actions:       []string{"periodic", "update"},
		DefaultAction: "periodic",
	}}
}

func (t *aptUpdateType) Schema() *resources.Schema { return t.schema }

// Load reads when the lists were last updated (the stamp's time) and,
// for periodic, whether that is longer ago than frequency. Both are in
// the reading: a plan that said "not due" goes stale once it is due.
func (t *aptUpdateType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading "+updateStamp); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	fi, err := os.Stat(t.root + updateStamp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st.Extra["updated"] = "never"
		if r.EffectiveAction() == "periodic" {
			st.Extra["due"] = "yes"
		}
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", updateStamp, err)
	default:
		st.Extra["updated"] = fi.ModTime().UTC().Format(time.RFC3339)
		if r.EffectiveAction() != "periodic" {
			break
		}
		now := time.Now
		if t.now != nil {
			now = t.now
		}
		freq := time.Duration(r.Int("frequency")) * time.Second
		st.Extra["due"] = "no"
		if now().Sub(fi.ModTime()) >= freq {
			st.Extra["due"] = "yes"
		}
	}
	return st, nil
}

// Plan: update always runs; periodic runs when the lists are due.
func (t *aptUpdateType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	provides := []resources.Need{{Namespace: resources.NamespaceAptSource, Value: "apt", What: "apt package lists"}}
	switch action {
	case "update":
		return &resources.Step{Kind: resources.Run, Reason: "update runs every time; " + listsUpdated(current.Extra["updated"]), Provides: provides}, nil
	case "periodic":
		freq := strconv.Itoa(desired.Int("frequency"))
		if current.Extra["due"] != "yes" {
			return &resources.Step{Kind: resources.NoOp, Reason: listsUpdated(current.Extra["updated"]) + ", less than frequency (" + freq + " s) ago"}, nil
		}
		if current.Extra["updated"] == "never" {
			return &resources.Step{Kind: resources.Run, Reason: listsUpdated("never"), Provides: provides}, nil
		}
		return &resources.Step{Kind: resources.Run, Reason: listsUpdated(current.Extra["updated"]) + ", frequency (" + freq + " s) ago or more", Provides: provides}, nil
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
}

// Meets says that an apt_update that runs (update, or periodic when
// due) meets a package's need for a repository that offers it, at apply:
// the package's version is known once the lists it reads are
// (resources.NeedMeeter).
func (t *aptUpdateType) Meets(desired *resources.Resource, n resources.Need) bool {
	a := desired.EffectiveAction()
	return n.Namespace == resources.NamespaceAptSource && (a == "update" || a == "periodic")
}

// listsUpdated words when the lists were last updated.
func listsUpdated(updated string) string {
	if updated == "never" {
		return "apt's lists have no update stamp (" + updateStamp + "): never updated, as far as toque knows"
	}
	return "apt's lists were last updated at " + updated
}

// Steps run apt-get update, then touch the stamp.
func (t *aptUpdateType) Steps() resources.Steps { return resources.Steps{Run: t.update} }

func (t *aptUpdateType) update(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	argv := []string{"apt-get", "-q", "-o", "DPkg::Lock::Timeout=" + strconv.Itoa(int(props.Seconds(desired.Get("lock_timeout"))/time.Second)), "update"}
	s := t.apt.spec(argv, props.Seconds(desired.Get("timeout")), env.Log())
	s.OutputLimit = 0
	env.Log().Info("running apt-get update")
	res, err := shellexec.Run(ctx, s)
	if err != nil {
		return commandError(argv, res, err)
	}
	// apt-get update exits 0 when some list could not be fetched; it
	// says so with W: lines, which a failed repository deserves.
	if w := warnings(res.Stdout + "\n" + res.Stderr); w != "" {
		env.Log().Warn("apt-get update warned", "warnings", w)
	}
	stamp := t.root + updateStamp
	if err := os.MkdirAll(filepath.Dir(stamp), 0o755); err != nil {
		return fmt.Errorf("apt-get update succeeded, but the stamp cannot be written: %w", err)
	}
	f, err := os.OpenFile(stamp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("apt-get update succeeded, but the stamp cannot be written: %w", err)
	}
	f.Close()
	now := time.Now()
	return os.Chtimes(stamp, now, now)
}

// warnings collects apt's W: and E: lines.
func warnings(out string) string {
	var ws []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "W: ") || strings.HasPrefix(l, "E: ") {
			ws = append(ws, l)
		}
	}
	return strings.Join(ws, "\n")
}
