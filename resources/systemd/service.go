package systemd

import (
	"context"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// serviceType is the built-in "service" type: a unit's enablement and
// whether it runs, through the host's init system (systemd).
type serviceType struct {
	schema *resources.Schema
	init   initSystem
}

// serviceActions are the actions on a unit, shared by service and
// systemd_unit, in the order they are documented.
var serviceActions = []string{"enable", "disable", "start", "stop", "restart", "reload", "mask", "unmask"}

// ServiceType returns the built-in "service" resource type, on the host's
// systemd.
func ServiceType() resources.Type { return newServiceType(hostSystemd()) }

func newServiceType(init initSystem) *serviceType {
	return &serviceType{init: init, schema: &resources.Schema{
		Name:        "service",
		Description: "Manages a service: whether it starts at boot, and whether it runs.",
		Properties: []*resources.Property{
			{Name: "service_name", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Normalize: normalizeServiceName, Validate: validateServiceName,
				Description: `The unit: "nginx" or "nginx.service" (a name without a unit type is a service), "getty@tty1.service", "docker.socket"; defaults to the block label.`},
		},
		Actions:       serviceActions,
		DefaultAction: "nothing",
	}}
}

func (t *serviceType) Schema() *resources.Schema { return t.schema }

// normalizeServiceName gives a name without a unit type the .service
// suffix, as systemctl does: "nginx" and "nginx.service" are one unit.
func normalizeServiceName(v cty.Value) (cty.Value, error) {
	if !v.IsKnown() || v.IsNull() {
		return v, nil
	}
	name := v.AsString()
	if name != "" && !strings.ContainsRune(name, '/') && unitSuffix(name) == "" {
		name += ".service"
	}
	return cty.StringVal(name), nil
}

// validateServiceName checks the unit name; a template cannot be enabled
// or started (its instances can).
func validateServiceName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	name := v.AsString()
	if err := checkUnitName(name); err != nil {
		return err
	}
	if isTemplate(name) {
		return fmt.Errorf("%q is a template: a service acts on an instance of it, such as %q", name, strings.Replace(name, "@.", "@NAME.", 1))
	}
	return nil
}

// Load reads the unit's status.
func (t *serviceType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	sts, err := t.LoadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// LoadAll reads every unit with one call to the init system (one
// systemctl show).
func (t *serviceType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	if err := props.CtxErr(ctx, "reading services"); err != nil {
		return nil, err
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.String("service_name")
	}
	sts, err := t.init.Status(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", unitsWord(names), err)
	}
	out := make([]*resources.State, len(rs))
	for i, u := range sts {
		if st, ok := foreseenStatus(ctx, names[i], u); ok {
			out[i] = st
			continue
		}
		out[i] = unitState(u)
	}
	return out, nil
}

// unitsWord names the units read, for an error: "nginx.service", "3 units".
func unitsWord(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return fmt.Sprintf("%d units", len(names))
}

// unitState is a service's State: it exists unless the unit is not
// found; its status is in Extra.
func unitState(u unitStatus) *resources.State {
	st := &resources.State{Exists: u.exists(), Values: map[string]cty.Value{}, Extra: map[string]string{}}
	u.put(st.Extra)
	return st
}

// Plan decides what the action does to the unit. It never does I/O.
func (t *serviceType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	step, err := planUnitAction(action, desired.String("service_name"), current)
	return withForeseenUnit(step, err, current)
}

// Predict is the state the action leaves the unit in.
func (t *serviceType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	return predictUnit(desired.EffectiveAction(), current, step), nil
}

// Steps carry out the action with systemctl.
func (t *serviceType) Steps() resources.Steps {
	return resources.Same(func(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
		return convergeUnitAction(ctx, env, t.init, desired.Action, desired.String("service_name"), current, step)
	})
}

// planUnitAction is the step of a service action (serviceActions) on the
// unit name, whose status is in current. A unit the host lacks is
// needed from an earlier resource (NamespaceUnit) for any action that
// acts on it; stop and disable have nothing to do then. Starting,
// stopping, restarting and reloading need systemd running.
func planUnitAction(action, name string, current *resources.State) (*resources.Step, error) {
	step, err := planUnitStep(action, name, current)
	if err == nil && step.Kind.IsWork() {
		if who := statusOf(current).NotRoot; who != "" {
			return nil, fmt.Errorf("%s: changing a system unit needs root, and toque runs as %s: run it as root", strings.TrimSuffix(step.Reason, "."), who)
		}
	}
	return step, err
}

func planUnitStep(action, name string, current *resources.State) (*resources.Step, error) {
	u := statusOf(current)
	if isTemplate(name) {
		return nil, fmt.Errorf("%s is a template: it cannot be %s; act on an instance of it (%s) with a service resource", name, pastTense(action), strings.Replace(name, "@.", "@NAME.", 1))
	}
	live := action == "start" || action == "stop" || action == "restart" || action == "reload"
	if live && u.Offline != "" {
		return nil, fmt.Errorf("cannot %s %s: %s. toque can enable, disable, mask and unmask units here (they are files), but nothing can start, stop, restart or reload one until systemd runs", action, name, u.Offline)
	}
	need := func(s *resources.Step) *resources.Step {
		if !u.exists() {
			s.Needs = append(s.Needs, resources.Need{Namespace: resources.NamespaceUnit, Value: name, What: "unit", Missing: missingUnit(name)})
			s.Reason = "not on the host yet (an earlier resource of this plan creates it): " + action + " runs then"
		}
		return s
	}
	if u.Load == "masked" || u.File == "masked" || u.File == "masked-runtime" {
		switch action {
		case "enable", "start", "restart", "reload":
			return nil, fmt.Errorf("%s is masked (%s), so %s it would fail: add unmask before %s in its actions", name, u.maskedWhere(), gerund(action), action)
		}
	}
	if (u.Load == "error" || u.Load == "bad-setting") && live && action != "stop" {
		return nil, fmt.Errorf("systemd cannot load %s (%s: %s): fix its unit file first", name, u.Load, u.LoadError)
	}
	reloadFirst := ""
	if u.NeedReload {
		reloadFirst = "; its unit file changed on disk since systemd read it, so toque runs systemctl daemon-reload first"
	}
	work := func(kind resources.Kind, reason string) *resources.Step {
		return need(&resources.Step{Kind: kind, Reason: reason})
	}
	switch action {
	case "enable":
		switch {
		case !u.exists():
			return work(resources.Update, "enable enables it"), nil
		case u.File == "":
			return work(resources.Update, "whether it is enabled is known only at apply; enable enables it unless it is"), nil
		case enabledFile(u.File):
			return &resources.Step{Kind: resources.NoOp, Reason: enabledReason(u.File)}, nil
		}
		return work(resources.Update, u.File+": enable enables it"), nil
	case "disable":
		switch {
		case !u.exists():
			return &resources.Step{Kind: resources.NoOp, Reason: "not found: nothing to disable"}, nil
		case u.File == "":
			return work(resources.Update, "whether it is enabled is known only at apply; disable disables it unless it is not"), nil
		case u.File == "enabled" || u.File == "enabled-runtime" || u.File == "linked" || u.File == "linked-runtime":
			return work(resources.Update, u.File+": disable disables it"), nil
		}
		return &resources.Step{Kind: resources.NoOp, Reason: disabledReason(u.File)}, nil
	case "mask":
		if u.File == "masked" {
			return &resources.Step{Kind: resources.NoOp, Reason: "already masked"}, nil
		}
		if u.EtcFile {
			return nil, fmt.Errorf("%s has its unit file in /etc/systemd/system, where mask would put its link to /dev/null, so systemctl refuses to mask it: delete that file first (a systemd_unit with the delete action), then mask", name)
		}
		return &resources.Step{Kind: resources.Update, Reason: orWord(u.File, "not masked") + ": mask links it to /dev/null, so nothing can start it"}, nil
	case "unmask":
		if u.File == "masked" || u.File == "masked-runtime" {
			return &resources.Step{Kind: resources.Update, Reason: u.File + ": unmask removes the link to /dev/null"}, nil
		}
		return &resources.Step{Kind: resources.NoOp, Reason: "not masked"}, nil
	case "start":
		if u.exists() && u.running() {
			return &resources.Step{Kind: resources.NoOp, Reason: "already " + u.activity()}, nil
		}
		return work(resources.Update, u.activity()+": start starts it"+reloadFirst), nil
	case "stop":
		if !u.exists() {
			return &resources.Step{Kind: resources.NoOp, Reason: "not found: nothing to stop"}, nil
		}
		if !u.running() {
			return &resources.Step{Kind: resources.NoOp, Reason: "already " + u.activity()}, nil
		}
		return &resources.Step{Kind: resources.Update, Reason: u.activity() + ": stop stops it"}, nil
	case "restart":
		if u.exists() && !u.running() {
			return work(resources.Run, u.activity()+": restart starts it"+reloadFirst), nil
		}
		return work(resources.Run, "restart runs on every apply"+reloadFirst), nil
	case "reload":
		switch {
		case !u.exists():
			// Needed from an earlier resource; what systemd says of a
			// unit it does not find (CanReload=no) says nothing of it.
			return work(resources.Run, ""), nil
		case u.CanReload == "no":
			return nil, fmt.Errorf("%s cannot reload its configuration (it has no ExecReload=): use restart", name)
		case u.Active == "":
			return work(resources.Run, "whether it runs is known only at apply: reload reloads it if it runs then"), nil
		case !u.running():
			// Chef's action_reload: nothing for a service that is not
			// running, and so no notification. After a start of the same
			// resource it is planned from the state the start leaves (a
			// run); a reload planned as a run is read again right before
			// it runs, and is this no-op if something stopped the unit.
			return &resources.Step{Kind: resources.NoOp, Reason: "not running: nothing to reload; it is " + u.activity()}, nil
		}
		return work(resources.Run, "reload runs on every apply"+reloadFirst), nil
	}
	return nil, fmt.Errorf("no action %q on units", action)
}

// missingUnit is the plan's error for a unit nothing provides.
func missingUnit(name string) string {
	return fmt.Sprintf("The unit %s is not on this host (systemd does not find it), and no systemd_unit resource earlier in the plan creates it: apply would fail there, after earlier resources changed the host. Declare a systemd_unit resource for %s before this one, or check the name. A unit that a package of this plan installs is on the host only once the package is: apply the package first (toque cannot tell before which units a package brings).", name, name)
}

// maskedWhere words where a masked unit is masked.
func (u unitStatus) maskedWhere() string {
	if u.File == "masked-runtime" {
		return "until the next boot, under /run"
	}
	return "linked to /dev/null"
}

// enabledFile reports unit file states enable has nothing to do for.
func enabledFile(state string) bool {
	switch state {
	case "enabled", "static", "indirect", "generated", "transient", "alias":
		return true
	}
	return false
}

func enabledReason(state string) string {
	switch state {
	case "enabled":
		return "already enabled"
	case "static":
		return "static: its unit file has no [Install] section, so there is nothing to enable (something else pulls it in)"
	case "indirect":
		return "indirect: its [Install] section only names other units (Also=), so there is nothing to enable here"
	}
	return state + ": there is nothing to enable"
}

func disabledReason(state string) string {
	switch state {
	case "disabled":
		return "already disabled"
	case "static", "indirect", "generated", "transient", "alias":
		return state + ": there is nothing to disable"
	case "masked":
		return "masked: it cannot start at all"
	}
	return orWord(state, "not enabled") + ": nothing to disable"
}

func orWord(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// gerund words an action being done: "enabling", "starting".
func gerund(action string) string {
	switch action {
	case "stop":
		return "stopping"
	case "enable", "disable", "mask", "unmask":
		return strings.TrimSuffix(action, "e") + "ing"
	}
	return action + "ing"
}

// pastTense words an action done: "enabled", "started".
func pastTense(action string) string {
	switch action {
	case "stop":
		return "stopped"
	case "enable", "disable", "restart", "reload", "mask", "unmask":
		return action + "d"
	}
	return action + "ed"
}

// predictUnit is the state a service action that takes step leaves the
// unit in: what systemctl reports after it (the daemon-reload toque runs
// before a start included). An unmask leaves the unit file state unknown:
// it is what was under the mask.
func predictUnit(action string, current *resources.State, step *resources.Step) *resources.State {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	if !step.Kind.IsWork() {
		return st
	}
	u := statusOf(st)
	if !u.exists() && len(step.Needs) > 0 {
		// An earlier resource of the plan creates the unit (the step
		// needs it): by the time the step runs it exists, inactive, and
		// what systemd will say of it, once loaded, is unknown. The
		// actions after this one need it no more.
		u.Load, u.CanReload, u.Active, u.Sub = "", "", "inactive", "dead"
	}
	switch action {
	case "enable":
		u.File = "enabled"
	case "disable":
		u.File = "disabled"
	case "mask":
		u.File, u.EtcFile = "masked", false
		if u.exists() {
			u.Load = "masked"
		}
	case "unmask":
		u.File = ""
		if u.Load == "masked" {
			u.Load = ""
		}
	case "start", "restart":
		u.Active, u.Sub, u.NeedReload = "active", "", false
	case "stop":
		u.Active, u.Sub = "inactive", "dead"
	case "reload":
		u.NeedReload = false
	}
	u.put(st.Extra)
	return st
}

// convergeUnitAction carries out a service action on unit. A start,
// restart or reload of a unit whose file changed since systemd read it
// reloads systemd first. (A reload of a unit that is not running is a
// no-op step, never converged: should the unit stop between the reading
// and the reload, systemctl says so, and the step fails rather than
// counting as done.)
func convergeUnitAction(ctx context.Context, env *resources.Env, init initSystem, action, unit string, current *resources.State, step *resources.Step) error {
	u := statusOf(current)
	if u.NeedReload && !enablement(action) && action != "stop" {
		if err := init.Reload(ctx, env); err != nil {
			return err
		}
	}
	return init.Act(ctx, env, action, unit)
}
