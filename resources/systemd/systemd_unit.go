package systemd

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// systemdUnitType is the built-in "systemd_unit" type: a unit file in
// /etc/systemd/system, and the service actions on its unit.
type systemdUnitType struct {
	schema *resources.Schema
	init   initSystem
	// file writes, reads and deletes the unit file: the file type's
	// Load, Plan and Converge on the unit's path, with its held
	// directories, atomic writes and backups.
	file resources.Type
}

// NamespaceUnitFile is the namespace of the unit files systemd_unit
// writes: two systemd_unit resources of one unit would fight over its file.
const NamespaceUnitFile = "systemd unit file"

// SystemdUnitType returns the built-in "systemd_unit" resource type, on
// the host's systemd.
func SystemdUnitType() resources.Type { return newSystemdUnitType(hostSystemd()) }

func newSystemdUnitType(init initSystem) *systemdUnitType {
	return &systemdUnitType{init: init, file: files.FileType(), schema: &resources.Schema{
		Name:        "systemd_unit",
		Description: "Manages a systemd unit file in /etc/systemd/system, and acts on its unit as service does.",
		Properties: []*resources.Property{
			{Name: "unit_name", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Validate: func(v cty.Value) error {
					if !v.IsKnown() || v.IsNull() {
						return nil
					}
					return checkUnitName(v.AsString())
				},
				Namespace:   NamespaceUnitFile,
				Description: `The unit's name with its type, "web.service", "backup.timer"; the file is /etc/systemd/system/NAME. Defaults to the block label.`},
			{Name: "content", Type: cty.DynamicPseudoType, Content: true, LoadInput: true, Normalize: normalizeUnitContent,
				Description: "The unit file: a string, or an object of sections rendered to one ({ Unit = { Description = \"web\" }, Service = { ExecStart = \"/usr/bin/web\" } }). Shown as a unified diff. Needed by create."},
			{Name: "verify", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "Check the content with systemd-analyze verify when the plan is made: a unit systemd rejects is a plan error with its message."},
			{Name: "triggers_reload", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "After the file changes, have systemd read it again (systemctl daemon-reload, once for a batch of unit files, before anything else runs)."},
		},
		Actions:       append([]string{"create", "delete"}, serviceActions...),
		DefaultAction: "create",
	}}
}

func (t *systemdUnitType) Schema() *resources.Schema { return t.schema }

// path is the unit file's path.
func (t *systemdUnitType) path(r *resources.Resource) string {
	return filepath.Join(t.init.UnitDir(), r.String("unit_name"))
}

// fileResource is the file resource of the unit file: its path and, from
// desired, its content; created with mode 0644 and toque's owner (root).
func (t *systemdUnitType) fileResource(r *resources.Resource, action string) *resources.Resource {
	vals := map[string]cty.Value{"path": cty.StringVal(t.path(r))}
	if r.IsSet("content") && action == "create" {
		vals["content"] = r.Values["content"]
	}
	return resources.NewResource(t.file.Schema(), t.path(r), action, vals)
}

// Load reads the unit file and the unit's status.
func (t *systemdUnitType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	sts, err := t.LoadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// LoadAll reads each unit file, the status of every unit with one call
// to the init system, and verifies, with one systemd-analyze verify, the
// content of each unit whose file would change (unless verify = false):
// a unit systemd would reject is recorded (Extra "verify") for Plan to
// refuse. Only content and the file's kind are kept of the file.
func (t *systemdUnitType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	if err := props.CtxErr(ctx, "reading unit files"); err != nil {
		return nil, err
	}
	out := make([]*resources.State, len(rs))
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.String("unit_name")
		st, err := t.file.Load(ctx, t.fileResource(r, "create").LoadView())
		if err != nil {
			return nil, err
		}
		for k := range st.Values {
			if k != "content" {
				delete(st.Values, k)
			}
		}
		if st.Extra == nil {
			st.Extra = map[string]string{}
		}
		out[i] = st
	}
	status, err := t.init.Status(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", unitsWord(names), err)
	}
	for i, u := range status {
		u.put(out[i].Extra)
	}
	return out, t.verify(ctx, rs, out)
}

// verify records in each State whose unit file would get new content
// what systemd-analyze verify says of that content, when it fails. Units
// are verified together (they may refer to each other), a unit named
// twice with different content on its own.
func (t *systemdUnitType) verify(ctx context.Context, rs []*resources.Resource, sts []*resources.State) error {
	var batches []map[string]string
	var where []map[string][]int
	for i, r := range rs {
		if !r.IsSet("content") || !r.Bool("verify") {
			continue
		}
		want := r.Values["content"]
		if !want.IsKnown() || want.Type() != cty.String {
			continue
		}
		if have, ok := sts[i].Values["content"]; ok && have.Equals(want).True() && sts[i].Extra["content_bytes"] == "" {
			continue
		}
		name, content := r.String("unit_name"), want.AsString()
		b := 0
		for ; b < len(batches); b++ {
			if c, ok := batches[b][name]; !ok || c == content {
				break
			}
		}
		if b == len(batches) {
			batches, where = append(batches, map[string]string{}), append(where, map[string][]int{})
		}
		batches[b][name] = content
		where[b][name] = append(where[b][name], i)
	}
	for b, units := range batches {
		failed, err := t.init.Verify(ctx, units)
		if err != nil {
			return err
		}
		for name, msg := range failed {
			for _, i := range where[b][name] {
				sts[i].Extra["verify"] = msg
			}
		}
	}
	return nil
}

// Plan decides what the action does: create and delete to the unit file
// (the file type's plan of it), the others to the unit (as service's). It
// never does I/O.
func (t *systemdUnitType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	name := desired.String("unit_name")
	switch action {
	case "create", "delete":
		if current.Extra["kind"] == "symlink" {
			if current.Extra["link_target"] == "/dev/null" {
				return nil, fmt.Errorf("%s is masked (%s is a link to /dev/null): add unmask before %s in its actions", name, t.path(desired), action)
			}
			return nil, fmt.Errorf("%s is a symbolic link to %s (systemctl link, or an alias): systemd_unit manages a regular unit file there; remove the link first", t.path(desired), current.Extra["link_target"])
		}
		if action == "create" {
			if !desired.IsSet("content") {
				return nil, fmt.Errorf("create needs content: the unit file, as a string or an object of sections")
			}
			if why := current.Extra["verify"]; why != "" {
				return nil, fmt.Errorf("systemd-analyze verify rejects the content of %s: %s. Fix the unit, or set verify = false to write it anyway (for a unit whose program a package installs earlier in this apply)", name, why)
			}
		}
		fstep, err := t.file.Plan(action, t.fileResource(desired, action), current)
		if err != nil {
			return nil, err
		}
		step := &resources.Step{Kind: fstep.Kind, Reason: fstep.Reason, Needs: fstep.Needs}
		if c := fstep.Change("content"); c != nil {
			step.Changes, step.Groups = []resources.Change{*c}, []string{"content"}
		}
		if step.Kind.IsWork() && desired.Bool("triggers_reload") && statusOf(current).Offline == "" {
			const reload = "then systemd reads its unit files again (one daemon-reload after this batch of unit files)"
			step.Reason += "; " + reload
			if len(step.Changes) == 1 {
				// Said under the content's diff too: the text plan shows
				// an update's changes, not its reason.
				step.Changes[0].Note = reload
			}
		}
		if action == "delete" && step.Kind.IsWork() && statusOf(current).running() {
			step.Reason += "; the unit keeps running until it is stopped (put stop before delete)"
		}
		if action == "create" {
			step.Provides = []resources.Need{{Namespace: resources.NamespaceUnit, Value: name, What: "unit"}}
		}
		return step, nil
	}
	return planUnitAction(action, name, current)
}

// Predict is the state the action leaves: after create, the file holds
// the content and, once systemd has read it (the deferred daemon-reload
// runs before the next action), the unit is loaded — a new one inactive,
// enabled only by an enable, static without an [Install] section; after
// delete, the file is gone and what systemd then loads is not known (a
// vendor unit may be under it). The service actions as service's.
func (t *systemdUnitType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	action := desired.EffectiveAction()
	if action != "create" && action != "delete" {
		return predictUnit(action, current, step), nil
	}
	st, err := resources.Predict(t.file, t.fileResource(desired, action), current, step)
	if err != nil {
		return nil, err
	}
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	if !step.Kind.IsWork() {
		return st, nil
	}
	delete(st.Extra, "verify")
	u := statusOf(current)
	u.NeedReload, u.EtcFile = false, action == "create"
	if action == "delete" {
		u.Load, u.File, u.CanReload = "", "", ""
		delete(st.Extra, "kind")
		u.put(st.Extra)
		return st, nil
	}
	content := desired.String("content")
	if !u.exists() {
		u.Load, u.Active, u.Sub, u.File = "loaded", "inactive", "dead", "static"
		if hasInstallSection(content) {
			u.File = "disabled"
		}
	}
	u.CanReload = "no"
	if unitSuffix(desired.String("unit_name")) == ".service" && execReload.MatchString(content) {
		u.CanReload = "yes"
	}
	u.put(st.Extra)
	return st, nil
}

var (
	installSection = regexp.MustCompile(`(?m)^\s*\[Install\]\s*$`)
	execReload     = regexp.MustCompile(`(?m)^\s*ExecReload\s*=\s*\S`)
)

// hasInstallSection reports whether a unit file has an [Install] section
// that enable can act on.
func hasInstallSection(content string) bool {
	loc := installSection.FindStringIndex(content)
	if loc == nil {
		return false
	}
	rest := content[loc[1]:]
	if next := strings.Index(rest, "\n["); next >= 0 {
		rest = rest[:next]
	}
	for _, l := range strings.Split(rest, "\n") {
		k, _, ok := strings.Cut(strings.TrimSpace(l), "=")
		if ok && slices.Contains([]string{"WantedBy", "RequiredBy", "UpheldBy", "Alias", "Also"}, strings.TrimSpace(k)) {
			return true
		}
	}
	return false
}

// Steps write or delete the unit file (as the file type does, with a
// backup of the old content) and defer one daemon-reload for the batch,
// or carry out a service action with systemctl.
func (t *systemdUnitType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *systemdUnitType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	action := desired.Action
	if action != "create" && action != "delete" {
		return convergeUnitAction(ctx, env, t.init, action, desired.String("unit_name"), current, step)
	}
	fr := t.fileResource(desired, action)
	fstep, err := t.file.Plan(action, fr, current)
	if err != nil {
		return err
	}
	if err := resources.ConvergeStep(ctx, t.file, env, fr, current, fstep); err != nil {
		return err
	}
	if desired.Bool("triggers_reload") && statusOf(current).Offline == "" {
		return env.Later.Defer(ctx, t.init.ReloadJob(env))
	}
	return nil
}
