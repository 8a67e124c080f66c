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
	return n.Namespace == resources.NamespaceAptSource && n.Value == "apt" && (a == "update" || a == "periodic")
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

// update runs apt-get update and, only when it fetched every index,
// touches the stamp. apt-get update exits 0 when an index could not be
// fetched for a reason it deems transient (a refused connection, a
// timeout: "W: Failed to fetch …"), keeping the old lists;
// APT::Update::Error-Mode=any (apt 2.1.16 and later: Debian 11, Ubuntu
// 22.04) makes it exit 100 instead, and an older apt, which ignores the
// item, is caught by its output (failedFetches). Either way the resource
// fails and the stamp keeps its time, so a periodic apt_update runs again.
func (t *aptUpdateType) update(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	argv := []string{"apt-get", "-q", "-o", "DPkg::Lock::Timeout=" + strconv.Itoa(int(props.Seconds(desired.Get("lock_timeout"))/time.Second)),
		"-o", "APT::Update::Error-Mode=any", "update"}
	s := t.apt.spec(argv, props.Seconds(desired.Get("timeout")), env.Log())
	s.OutputLimit = 0
	env.Log().Info("running apt-get update")
	res, err := shellexec.Run(ctx, s)
	out := ""
	if res != nil {
		out = res.Stdout + "\n" + res.Stderr
	}
	failed, others := failedFetches(out)
	if len(failed) > 0 {
		status := "exit status 0"
		if res != nil && err != nil {
			status = "exit status " + strconv.Itoa(res.ExitCode)
		}
		return fmt.Errorf("apt-get update could not fetch every package index (%s):\n%s\nThe lists are not up to date, and the update stamp is not written: fix the repository (or remove it), then apply again", status, strings.Join(failed, "\n"))
	}
	if err != nil {
		return commandError(argv, res, err)
	}
	if len(others) > 0 {
		env.Log().Warn("apt-get update warned", "warnings", strings.Join(others, "\n"))
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

// failedFetches sorts apt-get update's W: and E: lines (in the C locale):
// failed are those that say an index was not fetched or not accepted —
// every E: line, and the W: lines of a failed fetch or a signature apt
// would not accept (it then keeps the old lists); others are the
// remaining warnings.
func failedFetches(out string) (failed, others []string) {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case strings.HasPrefix(l, "E: "):
			failed = append(failed, props.RedactURL(l))
		case !strings.HasPrefix(l, "W: "):
		case strings.Contains(l, "Failed to fetch"),
			strings.Contains(l, "failed to download"),
			strings.Contains(l, "is not updated"),
			strings.Contains(l, "GPG error"),
			strings.Contains(l, "signature verification"),
			strings.Contains(l, "is not signed"):
			failed = append(failed, props.RedactURL(l))
		default:
			others = append(others, props.RedactURL(l))
		}
	}
	return failed, others
}
