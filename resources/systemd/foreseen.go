package systemd

import (
	"context"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// Foresees is what a service's Load reads of the plan's predicted host
// (resources.Foreseer): its unit, or the template of an instance.
func (t *serviceType) Foresees(desired *resources.Resource) []resources.Need {
	name := desired.String("service_name")
	out := []resources.Need{{Namespace: resources.NamespaceUnit, Value: name}}
	if tpl := templateOf(name); tpl != "" {
		out = append(out, resources.Need{Namespace: resources.NamespaceUnit, Value: tpl})
	}
	return out
}

// foreseenUnit is what a service's Load hands its Plan (State.Local) when
// it read the unit from an earlier step's prediction: who installs it.
type foreseenUnit struct {
	by, scripts string
}

// foreseenStatus is u, a unit systemd does not find, as an earlier step
// of the plan predicts it (a unit file a package ships): loaded, with
// ExecReload= or not as its file says, static when it has no [Install]
// section. What only the package's maintainer scripts decide — whether
// it ends enabled, whether it runs — is left unknown: the plan says it is
// known at apply, and the reading right before the service converges
// says what they did. nil when nothing predicts the unit.
func foreseenStatus(ctx context.Context, name string, u unitStatus) (*resources.State, bool) {
	if u.exists() {
		return nil, false
	}
	fs := resources.ForesightOf(ctx)
	p := fs.Lookup(resources.NamespaceUnit, name)
	if p == nil {
		if tpl := templateOf(name); tpl != "" {
			p = fs.Lookup(resources.NamespaceUnit, tpl)
		}
	}
	if p == nil {
		return nil, false
	}
	u.Load, u.Active, u.Sub, u.File, u.LoadError, u.NeedReload, u.EtcFile = "loaded", "", "", "", "", false, false
	u.CanReload = p.Fact("can_reload")
	if p.Fact("install") == "no" {
		u.File = "static"
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	u.put(st.Extra)
	unknown := []string{extraActive, extraSub}
	if u.File == "" {
		unknown = append(unknown, extraFileState)
	}
	st.Extra[resources.ExtraUnknownAtPlan] = strings.Join(unknown, ",")
	st.Local = &foreseenUnit{by: p.By, scripts: p.Fact("scripts")}
	return st, true
}

// withForeseenUnit says, in the reason of a step planned from a
// prediction, where the unit comes from and what is known only at apply.
func withForeseenUnit(step *resources.Step, err error, current *resources.State) (*resources.Step, error) {
	f, ok := current.Local.(*foreseenUnit)
	if err != nil || step == nil || !ok {
		return step, err
	}
	what := "installed by " + f.by
	if f.scripts != "" {
		what += " (" + f.scripts + ")"
	}
	if step.Reason == "" {
		step.Reason = what
	} else {
		step.Reason = what + "; " + step.Reason
	}
	return step, nil
}
