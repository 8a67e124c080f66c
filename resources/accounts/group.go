package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// groupType is the built-in "group" type: a local group in /etc/group
// (and /etc/gshadow), converged with groupadd, groupmod, groupdel and
// gpasswd.
type groupType struct {
	schema *resources.Schema
	tools  hostexec.Tools
}

// GroupType returns the built-in "group" resource type.
func GroupType() resources.Type { return newGroupType("") }

// newGroupType is the group type for the databases under root ("" is the
// host's; tests use a throwaway root).
func newGroupType(root string) *groupType {
	return &groupType{tools: hostexec.Tools{Root: root}, schema: &resources.Schema{
		Name:        "group",
		Description: "Manages a local group: its gid and members.",
		Properties: []*resources.Property{
			{Name: "group_name", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Validate: ValidateAccountName("group"), Namespace: resources.NamespaceGroup,
				Description: "The group's name; defaults to the block label."},
			{Name: "gid", Type: cty.Number, LoadInput: true, Validate: validateID("gid"),
				Description: "Numeric group id; unset lets groupadd choose one on create and leaves it as it is after. Another group having it is a plan error."},
			{Name: "members", Type: cty.List(cty.String), LoadInput: true, Normalize: normalizeNameList, Validate: validateMembers,
				Description: "Users in the group (besides those whose primary group it is): exactly these, or with append = true at least these. Each must exist, or be created by a user resource earlier in the plan."},
			{Name: "append", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Add members to the group and keep the others (true), or make the members exactly the list (false)."},
			{Name: "excluded_members", Type: cty.List(cty.String), NonState: true, LoadInput: true, Normalize: normalizeNameList, Validate: validateMembers,
				Description: "With append = true, users to take out of the group when they are in it (Chef's excluded_members); the plan shows them leaving members."},
			{Name: "system", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Create a system group (groupadd --system: a gid below GID_MIN). Used only on create."},
		},
		Actions:       []string{"create", "remove", "modify", "manage"},
		DefaultAction: "create",
	}}
}

func (t *groupType) Schema() *resources.Schema { return t.schema }

// Load reads the group r names (LoadAll for one).
func (t *groupType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	sts, err := t.LoadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// LoadAll reads /etc/group and /etc/passwd once, and every group of rs
// from them.
func (t *groupType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	if err := props.CtxErr(ctx, "reading the group database"); err != nil {
		return nil, err
	}
	db, err := readAccounts(t.tools.Root, dbPasswd|dbGroup)
	if err != nil {
		return nil, err
	}
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		out[i] = groupState(db, r)
	}
	return out, nil
}

// groupState is the state of the group r names in db. members are the
// group's members, sorted; with append = true, only those of r's members
// the group has (the others are not r's to manage, so they are neither
// shown as live values nor make a plan stale when they change). Extra
// records what the host says of r's gid and members (LoadInput):
// "gid_taken_by" another group, "missing_members" that are no user.
func groupState(db *accountsDB, r *resources.Resource) *resources.State {
	name := r.String("group_name")
	st := resources.Absent()
	st.Extra = map[string]string{}
	if r.IsSet("gid") {
		if other := db.otherGroup(idValue(r.Get("gid")), name); other != "" {
			st.Extra["gid_taken_by"] = other
		}
	}
	want := stringsOf(r.Get("members"))
	if missing := db.missingUsers(want); len(missing) > 0 {
		st.Extra["missing_members"] = strings.Join(missing, ",")
	}
	g := db.groups[name]
	if g == nil {
		return st
	}
	st.Exists = true
	members := g.members
	if r.Bool("append") && (r.IsSet("members") || r.IsSet("excluded_members")) {
		// Only the members the recipe names, to add or to take out.
		members = nil
		for _, m := range append(want, stringsOf(r.Get("excluded_members"))...) {
			if slices.Contains(g.members, m) && !slices.Contains(members, m) {
				members = append(members, m)
			}
		}
		slices.Sort(members)
	}
	st.Values = map[string]cty.Value{
		"gid":     cty.NumberUIntVal(uint64(g.gid)),
		"members": nameList(slices.Clone(members)),
	}
	return st
}

// Plan decides what the group's action does. It never does I/O.
func (t *groupType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	name := desired.String("group_name")
	var step *resources.Step
	switch action {
	case "create", "modify", "manage":
		if !current.Exists && action == "modify" {
			return nil, fmt.Errorf("group %s does not exist: modify changes an existing group (create creates it, manage leaves a missing one alone)", name)
		}
		if !current.Exists && action == "manage" {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist; manage changes an existing group only"}, nil
		}
		if err := checkExcluded(desired); err != nil {
			return nil, err
		}
		step = resources.ConvergeIfChanged(desired, current)
		if out := removed(desired, current); len(out) > 0 && step.Change("members") == nil {
			// members unset: excluded_members alone takes them out.
			step.Changes = append(step.Changes, resources.Change{Property: "members", Before: current.Values["members"], After: nameList(without(stringsOf(current.Values["members"]), out))})
			if step.Kind == resources.NoOp {
				step.Kind, step.Reason = resources.Update, "differs"
			}
		}
		if step.Kind == resources.NoOp {
			return step, nil
		}
		if step.Change("gid") != nil {
			if other := current.Extra["gid_taken_by"]; other != "" {
				return nil, &resources.PropertyError{Property: "gid", Err: fmt.Errorf("gid %s is taken by group %s; choose another gid", desired.Get("gid").AsBigFloat().Text('f', 0), other)}
			}
		}
		if c := step.Change("members"); c != nil && current.Extra["missing_members"] != "" {
			// gpasswd refuses a member that is no user; with append, only
			// the members it adds are given to it.
			adding := added(desired, current)
			for _, m := range strings.Split(current.Extra["missing_members"], ",") {
				if !desired.Bool("append") || !current.Exists || slices.Contains(adding, m) {
					step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespaceUser, Value: m, What: "user"})
				}
			}
		}
		if step.Change("members") != nil && desired.Bool("append") && current.Exists {
			var what []string
			if in := added(desired, current); len(in) > 0 {
				what = append(what, "adds "+strings.Join(in, ", "))
			}
			if out := removed(desired, current); len(out) > 0 {
				what = append(what, "takes out "+strings.Join(out, ", ")+" (excluded_members)")
			}
			step.Reason += fmt.Sprintf(" (append = true %s and keeps the other members)", strings.Join(what, ", "))
		}
		if step.Kind == resources.Create {
			step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespaceGroup, Value: name, What: "group"})
			if desired.IsSet("gid") && desired.Get("gid").IsKnown() { // a lazy gid is known at apply
				step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespaceGroup, Value: desired.Get("gid").AsBigFloat().Text('f', 0), What: "group"})
			}
		}
	case "remove":
		step = &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}
		if current.Exists {
			step = &resources.Step{Kind: resources.Delete, Reason: "exists; remove deletes it"}
		}
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if step.Kind.IsWork() && hostexec.EffectiveUID() != 0 {
		return nil, hostexec.NeedsRoot(fmt.Sprintf("changing the group database (%s group %s)", action, name))
	}
	return step, nil
}

// checkExcluded refuses excluded_members without append (members is then
// the exact list), and a user both in members and in excluded_members.
func checkExcluded(desired *resources.Resource) error {
	if !desired.IsSet("excluded_members") {
		return nil
	}
	if !desired.Bool("append") {
		return &resources.PropertyError{Property: "excluded_members", Err: errors.New("excluded_members takes users out of the group only with append = true; without append, members is the exact list of members: leave the users out of it")}
	}
	for _, m := range stringsOf(desired.Get("excluded_members")) {
		if slices.Contains(stringsOf(desired.Get("members")), m) {
			return &resources.PropertyError{Property: "excluded_members", Err: fmt.Errorf("%s is in members and in excluded_members: keep it in one", m)}
		}
	}
	return nil
}

// removed are desired's excluded_members that current has (append only).
func removed(desired *resources.Resource, current *resources.State) []string {
	if !desired.Bool("append") || !current.Exists {
		return nil
	}
	have := stringsOf(current.Values["members"])
	var out []string
	for _, m := range stringsOf(desired.Get("excluded_members")) {
		if slices.Contains(have, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// without is list less the names in out.
func without(list, out []string) []string {
	var keep []string
	for _, m := range list {
		if !slices.Contains(out, m) {
			keep = append(keep, m)
		}
	}
	return keep
}

// added are desired's members that current lacks.
func added(desired *resources.Resource, current *resources.State) []string {
	have := stringsOf(current.Values["members"])
	var out []string
	for _, m := range stringsOf(desired.Get("members")) {
		if !slices.Contains(have, m) {
			out = append(out, m)
		}
	}
	return out
}

// Steps carry out a step. Members are set with gpasswd, which keeps
// /etc/gshadow in step (groupadd and groupmod --users change only
// /etc/group): exactly (--members), or one added user at a time (--add)
// with append = true, so that members someone else adds meanwhile stay
// (and one excluded user at a time taken out, --delete).
// A create whose members cannot be set is undone (groupdel).
func (t *groupType) Steps() resources.Steps {
	return resources.Steps{Create: t.create, Update: t.update, Delete: t.delete}
}

func (t *groupType) delete(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	return t.tools.Run(ctx, env, "groupdel", []string{desired.String("group_name")}, nil, "")
}

func (t *groupType) create(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, step *resources.Step) error {
	name := desired.String("group_name")
	args := []string{}
	if desired.Bool("system") {
		args = append(args, "--system")
	}
	if step.Change("gid") != nil {
		args = append(args, "--gid", desired.Get("gid").AsBigFloat().Text('f', 0))
	}
	if err := t.tools.Run(ctx, env, "groupadd", append(args, name), nil, ""); err != nil {
		return err
	}
	members := stringsOf(desired.Get("members"))
	if step.Change("members") == nil || len(members) == 0 {
		return nil
	}
	if err := t.tools.Run(ctx, env, "gpasswd", []string{"--members", strings.Join(members, ","), name}, nil, ""); err != nil {
		if uerr := t.tools.Run(context.WithoutCancel(ctx), env, "groupdel", []string{name}, nil, ""); uerr != nil {
			return fmt.Errorf("%w; and removing the half-made group %s failed too: %v", err, name, uerr)
		}
		return fmt.Errorf("%w; the group %s was removed again, so nothing was changed", err, name)
	}
	return nil
}

func (t *groupType) update(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	name := desired.String("group_name")
	if step.Change("gid") != nil {
		if err := t.tools.Run(ctx, env, "groupmod", []string{"--gid", desired.Get("gid").AsBigFloat().Text('f', 0), name}, nil, ""); err != nil {
			return err
		}
	}
	if step.Change("members") == nil {
		return nil
	}
	if desired.Bool("append") {
		for _, m := range added(desired, current) {
			if err := t.tools.Run(ctx, env, "gpasswd", []string{"--add", m, name}, nil, ""); err != nil {
				return err
			}
		}
		for _, m := range removed(desired, current) {
			if err := t.tools.Run(ctx, env, "gpasswd", []string{"--delete", m, name}, nil, ""); err != nil {
				return err
			}
		}
		return nil
	}
	return t.tools.Run(ctx, env, "gpasswd", []string{"--members", strings.Join(stringsOf(desired.Get("members")), ","), name}, nil, "")
}
