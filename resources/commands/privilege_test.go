package commands

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources/internal/hostexec"
)

func TestCheckRunAs(t *testing.T) {
	old := hostexec.EffectiveUID
	defer func() { hostexec.EffectiveUID = old }()
	hostexec.EffectiveUID = func() int { return 65534 }
	if err := CheckRunAsUser(cty.StringVal("root")); err == nil || !strings.Contains(err.Error(), "running a command as user root needs root") {
		t.Errorf("as nobody, run as root: %v", err)
	}
	if err := CheckRunAsUser(cty.StringVal("nobody")); err != nil {
		t.Errorf("as nobody, run as nobody: %v", err)
	}
	hostexec.EffectiveUID = func() int { return 0 }
	if err := CheckRunAsUser(cty.StringVal("nobody")); err != nil {
		t.Errorf("as root: %v", err)
	}
	if err := CheckRunAsUser(cty.StringVal("no-such-user-xyz")); err == nil {
		t.Error("an unknown user passes")
	}
}
