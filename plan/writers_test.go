package plan_test

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/lazy"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/builtin"
)

// An editor changes its file and nothing else: a value that reads another
// path does not wait for it; one that reads its file does.
func TestWritersBoundsEditors(t *testing.T) {
	reg := builtin.Registry()
	edit := &plan.Resource{Address: "ini_setting[port]", Type: "ini_setting", Kind: resources.Update,
		Desired: map[string]plan.Value{"path": {Value: cty.StringVal("/etc/app.conf")}, "key": {Value: cty.StringVal("port")}}}
	if ws := plan.Writers(reg, []*plan.Resource{edit}, lazy.Reads{Host: true, Complete: true, Paths: []string{"/boot"}}); len(ws) != 0 {
		t.Errorf("a read of /boot waits for %v", ws)
	}
	ws := plan.Writers(reg, []*plan.Resource{edit}, lazy.Reads{Host: true, Complete: true, Paths: []string{"/etc/app.conf"}})
	if len(ws) != 1 || ws[0].String() != "ini_setting[port] (manages /etc/app.conf)" {
		t.Errorf("a read of its file: %v", ws)
	}
}
