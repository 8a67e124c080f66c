package plan

import (
	"testing"

	"github.com/toquehq/toque/resources"
)

// A notified run runs because it is notified: a type's reason that says a
// run step runs whenever it is planned, true of a resource's own action,
// is left out of a notified run's reason (what else it says is kept), so
// that the plan does not read as if every plan reloads.
func TestNotifiedReasonLeavesOutRunsEveryTime(t *testing.T) {
	by := []string{"template[/etc/nginx.conf]"}
	for _, c := range []struct {
		kind       resources.Kind
		typeReason string
		want       string
	}{
		{resources.Run, "reload runs on every apply", "notified by template[/etc/nginx.conf] (delayed)"},
		{resources.Run, "restart runs on every apply; its unit file changed on disk since systemd read it, so toque runs systemctl daemon-reload first",
			"notified by template[/etc/nginx.conf] (delayed); its unit file changed on disk since systemd read it, so toque runs systemctl daemon-reload first"},
		{resources.Run, resources.NoGuardReason, "notified by template[/etc/nginx.conf] (delayed)"},
		{resources.Run, "update runs every time; lists updated 3 hours ago", "notified by template[/etc/nginx.conf] (delayed); lists updated 3 hours ago"},
		{resources.Run, "converge_by always runs: reload the site", "notified by template[/etc/nginx.conf] (delayed); converge_by always runs: reload the site"},
		{resources.Update, "inactive (dead): start starts it", "notified by template[/etc/nginx.conf] (delayed); inactive (dead): start starts it"},
	} {
		if got := NotifiedReason(by, TimingDelayed, c.kind, c.typeReason); got != c.want {
			t.Errorf("%s %q:\n got %q\nwant %q", c.kind, c.typeReason, got, c.want)
		}
	}
}
