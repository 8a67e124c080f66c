package packages

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	refresh
}

// updateStamp is the file whose time says when apt's lists were last
// updated: Debian's update-notifier and Chef's apt_update use it too, and
// apt_update touches it after each update.
const updateStamp = "/var/lib/apt/periodic/update-success-stamp"

// AptUpdateType returns the built-in "apt_update" type.
func AptUpdateType() resources.Type { return newAptUpdateType(newAptProvider(), "") }

func newAptUpdateType(apt *aptProvider, root string) *aptUpdateType {
	return &aptUpdateType{apt: apt,
		schema:  refreshSchema("apt_update", "Updates apt's package lists (apt-get update), periodically or every time.", "the lists", "apt's", "apt-get update"),
		refresh: refresh{stamp: updateStamp, root: root, source: "apt", what: "apt package lists", words: listsUpdated}}
}

func (t *aptUpdateType) Schema() *resources.Schema { return t.schema }

// Load reads the stamp (refresh.load).
func (t *aptUpdateType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	return t.load(ctx, r)
}

// Plan: update always runs; periodic runs when the lists are due.
func (t *aptUpdateType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	return t.plan(t.schema, action, desired, current)
}

// Meets says that an apt_update that runs meets an apt package's need for
// a repository that offers it, at apply (resources.NeedMeeter).
func (t *aptUpdateType) Meets(desired *resources.Resource, n resources.Need) bool {
	return t.meets(desired, n)
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
	return t.touch("apt-get update")
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
