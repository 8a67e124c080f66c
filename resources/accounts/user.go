package accounts

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// userType is the built-in "user" type: a local account in /etc/passwd
// and /etc/shadow, converged with useradd, usermod, userdel and chpasswd.
type userType struct {
	schema *resources.Schema
	tools  hostexec.Tools
}

// UserType returns the built-in "user" resource type.
func UserType() resources.Type { return newUserType("") }

// newUserType is the user type for the databases under root ("" is the
// host's; tests use a throwaway root).
func newUserType(root string) *userType {
	acct := func(p *resources.Property) *resources.Property { p.Group = "account"; return p }
	ageing := func(p *resources.Property) *resources.Property { p.Group = "ageing"; return p }
	return &userType{tools: hostexec.Tools{Root: root}, schema: &resources.Schema{
		Name:        "user",
		Description: "Manages a local user account: its ids, comment, home, shell, password and expiry.",
		Properties: []*resources.Property{
			{Name: "username", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Validate: ValidateAccountName("user"), Namespace: resources.NamespaceUser,
				Description: "The user's name; defaults to the block label."},
			acct(&resources.Property{Name: "uid", Type: cty.Number, LoadInput: true, Validate: validateID("uid"),
				Description: "Numeric user id; unset lets useradd choose one on create and leaves it as it is after. Another user having it is a plan error."}),
			acct(&resources.Property{Name: "gid", Type: cty.String, LoadInput: true, Normalize: TrimString, Validate: validateGroupRef,
				Description: "Primary group, by name or numeric id; it must exist, or be created by a group resource earlier in the plan."}),
			acct(&resources.Property{Name: "comment", Type: cty.String, Validate: validateField("comment"),
				Description: "The comment (GECOS) field: usually the person's name."}),
			acct(&resources.Property{Name: "home", Type: cty.String, Normalize: NormalizeAbsField("home"), HostCheck: checkHome,
				Description: "Home directory (absolute). What is at that path must be a directory, if anything."}),
			acct(&resources.Property{Name: "shell", Type: cty.String, Normalize: NormalizeAbsField("shell"), HostCheck: checkShell,
				Description: "Login shell (absolute); it must exist and be executable."}),
			{Name: "password", Type: cty.String, Sensitive: true, Validate: validateCryptHash,
				Description: "The password as a crypt hash (\"$y$…\", \"$6$…\"), never the password itself. Always sensitive. Setting it does not unlock a locked account."},
			acct(&resources.Property{Name: "expire_date", Type: cty.String, Normalize: normalizeExpireDate,
				Description: "The day the account expires, \"YYYY-MM-DD\", or \"never\"."}),
			acct(&resources.Property{Name: "inactive", Type: cty.Number, Validate: validateInactive,
				Description: "Days after the password expires until the account is disabled; -1 for never."}),
			ageing(&resources.Property{Name: "min_days", Type: cty.Number, Validate: validateDays("min_days"),
				Description: "Days after a password change before the password may be changed again (chage -m); -1 for none."}),
			ageing(&resources.Property{Name: "max_days", Type: cty.Number, Validate: validateDays("max_days"),
				Description: "Days a password stays valid (chage -M); -1 for no limit."}),
			ageing(&resources.Property{Name: "warn_days", Type: cty.Number, Validate: validateDays("warn_days"),
				Description: "Days before the password expires that the user is warned (chage -W); -1 for none."}),
			{Name: "system", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Create a system account (useradd --system: a uid below UID_MIN, no aging). Used only on create."},
			{Name: "manage_home", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Create the home directory on create, move it when home changes, and delete it (and the mail spool) on remove."},
			{Name: "non_unique", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Allow a uid another user has (useradd/usermod --non-unique), as Chef's; without it a taken uid is a plan error."},
			{Name: "force", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "With remove: remove the user even while logged in, its own group even while it is another user's primary group, and with manage_home its home even when another user owns it (userdel --force), as Chef's."},
		},
		Actions:       []string{"create", "remove", "modify", "manage", "lock", "unlock"},
		DefaultAction: "create",
	}}
}

func (t *userType) Schema() *resources.Schema { return t.schema }

// Load reads the user r names from the databases (LoadAll for one).
func (t *userType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	sts, err := t.LoadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// LoadAll reads /etc/passwd, /etc/group and /etc/shadow once, and every
// user of rs from them.
func (t *userType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	if err := props.CtxErr(ctx, "reading the user database"); err != nil {
		return nil, err
	}
	db, err := readAccounts(t.tools.Root, dbPasswd|dbGroup|dbShadow|dbLoginDefs)
	if err != nil {
		return nil, err
	}
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		out[i] = userState(db, r)
	}
	return out, nil
}

// userState is the state of the user r names in db. Values hold the
// passwd and shadow fields as properties: password without the lock
// ("!") in front, which Extra "locked" records. Extra also records what
// the host says of r's uid and gid (LoadInput): "uid_taken_by" another
// user, "primary_group" when no group is r's gid; for a user that does not
// exist, "same_name_group" when useradd would want to make a group of its
// name and one exists, and "elsewhere" when NSS knows it all the same;
// and "shadow", why the shadow file was not read.
func userState(db *accountsDB, r *resources.Resource) *resources.State {
	name := r.String("username")
	st := resources.Absent()
	st.Extra = map[string]string{}
	if db.shadowErr != "" {
		st.Extra["shadow"] = db.shadowErr
	}
	if r.IsSet("uid") {
		if other := db.otherUser(idValue(r.Get("uid")), name); other != "" {
			st.Extra["uid_taken_by"] = other
		}
	}
	wantGID := r.String("gid")
	if r.IsSet("gid") {
		if _, ok := db.groupByRef(wantGID); !ok {
			st.Extra["primary_group"] = "does not exist"
		}
	}
	e := db.users[name]
	if e == nil {
		if db.userGroups && db.groups[name] != nil {
			st.Extra["same_name_group"] = "true"
		}
		if db.hasUser(name) {
			st.Extra["elsewhere"] = "known to NSS, not in /etc/passwd"
		}
		return st
	}
	st.Exists = true
	gid := db.groupName(e.gid)
	if r.IsSet("gid") {
		// Spelled as the recipe spells it when it is that group.
		if id, ok := db.groupByRef(wantGID); ok && id == e.gid {
			gid = wantGID
		} else if _, err := parseID(wantGID); err == nil {
			gid = strconv.FormatUint(uint64(e.gid), 10)
		}
	}
	st.Values = map[string]cty.Value{
		"uid":     cty.NumberUIntVal(uint64(e.uid)),
		"gid":     cty.StringVal(gid),
		"comment": cty.StringVal(e.gecos),
		"home":    cty.StringVal(e.home),
		"shell":   cty.StringVal(e.shell),
	}
	if sh := db.shadow[name]; sh != nil {
		hash := strings.TrimLeft(sh.passwd, "!")
		st.Values["password"] = cty.StringVal(hash)
		st.Values["expire_date"] = cty.StringVal(expireDate(sh.expire))
		st.Values["inactive"] = cty.NumberIntVal(sh.inactive)
		st.Values["min_days"] = cty.NumberIntVal(sh.minDays)
		st.Values["max_days"] = cty.NumberIntVal(sh.maxDays)
		st.Values["warn_days"] = cty.NumberIntVal(sh.warnDays)
		st.Extra["locked"] = strconv.FormatBool(hash != sh.passwd)
	}
	return st
}

// shadowProps are the properties read from /etc/shadow.
var shadowProps = []string{"password", "expire_date", "inactive", "min_days", "max_days", "warn_days"}

// Plan decides what the user's action does. It never does I/O.
func (t *userType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	name := desired.String("username")
	var step *resources.Step
	var err error
	switch action {
	case "create", "modify", "manage":
		step, err = t.planConverge(desired, current, action)
	case "remove":
		step = &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}
		if current.Exists {
			step = &resources.Step{Kind: resources.Delete, Reason: "exists; remove deletes it"}
			if desired.Bool("manage_home") {
				step.Reason += fmt.Sprintf(", with its home directory %s and mail spool (manage_home)", props.StringOr(current.Values["home"]))
			}
			if desired.Bool("force") {
				step.Reason += ", even while it is logged in (force)"
			}
		}
	case "lock", "unlock":
		step, err = planLock(desired, current, action)
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if err != nil {
		return nil, err
	}
	if step.Kind.IsWork() && hostexec.EffectiveUID() != 0 {
		return nil, hostexec.NeedsRoot(fmt.Sprintf("changing the user database (%s user %s)", action, name))
	}
	return step, nil
}

// planConverge is create, modify and manage: the set properties that
// differ, or the whole user when it does not exist (create only).
func (t *userType) planConverge(desired *resources.Resource, current *resources.State, action string) (*resources.Step, error) {
	name := desired.String("username")
	if !current.Exists {
		switch action {
		case "modify":
			return nil, fmt.Errorf("user %s does not exist: modify changes an existing user (create creates it, manage leaves a missing one alone)", name)
		case "manage":
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist; manage changes an existing user only"}, nil
		}
	}
	if why := current.Extra["shadow"]; why != "" && slices.ContainsFunc(shadowProps, desired.IsSet) {
		return nil, hostexec.NeedsRoot(fmt.Sprintf("reading the password and expiry of user %s (%s)", name, why))
	}
	step := resources.ConvergeIfChanged(desired, current)
	if step.Kind == resources.NoOp {
		return step, nil
	}
	if step.Change("uid") != nil && !desired.Bool("non_unique") {
		if other := current.Extra["uid_taken_by"]; other != "" {
			return nil, &resources.PropertyError{Property: "uid", Err: fmt.Errorf("uid %s is taken by user %s; choose another uid, or set non_unique = true to share it", desired.Get("uid").AsBigFloat().Text('f', 0), other)}
		}
	}
	if step.Change("gid") != nil && current.Extra["primary_group"] != "" {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespaceGroup, Value: desired.String("gid"), What: "group"})
	}
	if step.Kind == resources.Create && current.Extra["elsewhere"] != "" {
		return nil, fmt.Errorf("user %s is %s (LDAP, sssd…): toque manages local accounts only, and useradd would refuse to make a second %s", name, current.Extra["elsewhere"], name)
	}
	if step.Kind == resources.Create && !desired.IsSet("gid") && current.Extra["same_name_group"] != "" {
		return nil, fmt.Errorf("a group named %s exists, and useradd makes a group named like each new user (USERGROUPS_ENAB in /etc/login.defs), so it would refuse: set gid = %q to make that group the user's primary group, or set another gid", name, name)
	}
	if step.Kind == resources.Create {
		step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespaceUser, Value: name, What: "user"})
		if !desired.IsSet("password") {
			step.Reason += "; without a password its password stays locked"
		}
	} else if step.Change("password") != nil && current.Extra["locked"] == "true" {
		step.Reason += "; the account stays locked (the unlock action unlocks it)"
	}
	return step, nil
}

// planLock is lock and unlock: the "!" in front of the shadow password.
func planLock(desired *resources.Resource, current *resources.State, action string) (*resources.Step, error) {
	name := desired.String("username")
	if !current.Exists {
		return nil, fmt.Errorf("user %s does not exist: %s needs an existing user (put create before it: action = [\"create\", %q])", name, action, action)
	}
	if why := current.Extra["shadow"]; why != "" {
		return nil, hostexec.NeedsRoot(fmt.Sprintf("reading whether user %s is locked (%s)", name, why))
	}
	locked := current.Extra["locked"] == "true"
	// A password field that starts with "*" (Debian's system accounts)
	// is no crypt hash: no password matches it, and passwd -S calls it
	// locked, as it does "!".
	star := strings.HasPrefix(props.StringOr(current.Values["password"]), "*")
	if action == "lock" {
		switch {
		case locked:
			return &resources.Step{Kind: resources.NoOp, Reason: "the password is already locked"}, nil
		case star:
			return &resources.Step{Kind: resources.NoOp, Reason: "the password field is \"*\", which no password matches: the account is locked already (passwd -S says L)"}, nil
		}
		return &resources.Step{Kind: resources.Update, Reason: "the password is not locked; lock puts \"!\" in front of its hash", Groups: []string{"lock"}}, nil
	}
	if star {
		return nil, fmt.Errorf("user %s's password field is \"*\", which no password matches: unlock removes a \"!\" and cannot change that; set password (a crypt hash) to give it one", name)
	}
	if !locked {
		return &resources.Step{Kind: resources.NoOp, Reason: "the password is not locked"}, nil
	}
	if props.StringOr(current.Values["password"]) == "" {
		return nil, fmt.Errorf("user %s has no password: unlocking would leave an account anyone could log in to without one, which usermod refuses; set password (a crypt hash) first", name)
	}
	return &resources.Step{Kind: resources.Update, Reason: "the password is locked; unlock removes the \"!\" in front of its hash", Groups: []string{"unlock"}}, nil
}

// Predict is the user's: the framework's, and the lock a step leaves. A
// user created without a password is locked (useradd's "!"); with one, it
// is not; lock and unlock set it.
func (t *userType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := resources.PredictFromChanges(current, step)
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	switch {
	case step.Kind == resources.Create:
		st.Extra["locked"] = strconv.FormatBool(!desired.IsSet("password"))
		if !desired.IsSet("password") {
			st.Values["password"] = cty.StringVal("")
		}
		delete(st.Extra, "primary_group")
	case step.HasGroup("lock"):
		st.Extra["locked"] = "true"
	case step.HasGroup("unlock"):
		st.Extra["locked"] = "false"
	}
	return st, nil
}

// chpasswdProgram is the program that sets passwords; tests make it fail.
var chpasswdProgram = "chpasswd"

// Steps carry out a step with the shadow tools. A password goes to
// chpasswd on its standard input, never on a command line (which every
// user may read in /proc); a create whose password cannot be set is
// undone (userdel), so it leaves no half-made user.
func (t *userType) Steps() resources.Steps {
	return resources.Steps{Create: t.create, Update: t.update, Delete: t.delete}
}

func (t *userType) delete(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	args := []string{}
	if desired.Bool("manage_home") {
		args = append(args, "--remove")
	}
	if desired.Bool("force") {
		args = append(args, "--force")
	}
	return t.tools.Run(ctx, env, "userdel", append(args, desired.String("username")), nil, "")
}

// accountArgs are the useradd/usermod options for the account-group
// changes of step (password aside).
func accountArgs(desired *resources.Resource, step *resources.Step, create bool) []string {
	var args []string
	for _, c := range step.Changes {
		v := desired.Get(c.Property)
		switch c.Property {
		case "uid":
			args = append(args, "--uid", v.AsBigFloat().Text('f', 0))
			if desired.Bool("non_unique") {
				args = append(args, "--non-unique")
			}
		case "gid":
			args = append(args, "--gid", v.AsString())
		case "comment":
			args = append(args, "--comment", v.AsString())
		case "home":
			args = append(args, "--home-dir", v.AsString())
			if !create && desired.Bool("manage_home") {
				args = append(args, "--move-home")
			}
		case "shell":
			args = append(args, "--shell", v.AsString())
		case "expire_date":
			if d := v.AsString(); d != never {
				args = append(args, "--expiredate", d)
			} else if !create {
				args = append(args, "--expiredate", "")
			}
		case "inactive":
			args = append(args, "--inactive", v.AsBigFloat().Text('f', 0))
		}
	}
	return args
}

func (t *userType) create(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, step *resources.Step) error {
	name := desired.String("username")
	args := []string{}
	if desired.Bool("system") {
		args = append(args, "--system")
	}
	if desired.Bool("manage_home") {
		args = append(args, "--create-home")
	} else {
		args = append(args, "--no-create-home")
	}
	args = append(append(args, accountArgs(desired, step, true)...), name)
	if err := t.tools.Run(ctx, env, "useradd", args, nil, ""); err != nil {
		return err
	}
	err := t.setAgeing(ctx, env, desired, step)
	if err == nil && step.HasGroup("password") {
		err = t.setPassword(ctx, env, name, desired.String("password"), false)
	}
	if err != nil {
		undo := []string{name}
		if desired.Bool("manage_home") {
			undo = []string{"--remove", name}
		}
		if uerr := t.tools.Run(context.WithoutCancel(ctx), env, "userdel", undo, nil, ""); uerr != nil {
			return fmt.Errorf("%w; and removing the half-made user %s failed too: %v", err, name, uerr)
		}
		return fmt.Errorf("%w; the user %s was removed again, so nothing was changed", err, name)
	}
	return nil
}

func (t *userType) update(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	name := desired.String("username")
	switch {
	case step.HasGroup("lock"):
		return t.tools.Run(ctx, env, "usermod", []string{"--lock", name}, nil, "")
	case step.HasGroup("unlock"):
		return t.tools.Run(ctx, env, "usermod", []string{"--unlock", name}, nil, "")
	}
	if step.HasGroup("account") {
		if args := accountArgs(desired, step, false); len(args) > 0 {
			if err := t.tools.Run(ctx, env, "usermod", append(args, name), nil, ""); err != nil {
				return err
			}
		}
	}
	if err := t.setAgeing(ctx, env, desired, step); err != nil {
		if step.HasGroup("account") {
			return fmt.Errorf("%w (the other properties of user %s were changed)", err, name)
		}
		return err
	}
	if step.HasGroup("password") {
		if err := t.setPassword(ctx, env, name, desired.String("password"), current.Extra["locked"] == "true"); err != nil {
			if step.HasGroup("account") || step.HasGroup("ageing") {
				return fmt.Errorf("%w (the other properties of user %s were changed)", err, name)
			}
			return err
		}
	}
	return nil
}

// setAgeing sets the password ageing step changes with chage (usermod
// has no options for it).
func (t *userType) setAgeing(ctx context.Context, env *resources.Env, desired *resources.Resource, step *resources.Step) error {
	if !step.HasGroup("ageing") {
		return nil
	}
	var args []string
	for _, c := range step.Changes {
		flag := map[string]string{"min_days": "--mindays", "max_days": "--maxdays", "warn_days": "--warndays"}[c.Property]
		if flag != "" {
			args = append(args, flag, desired.Get(c.Property).AsBigFloat().Text('f', 0))
		}
	}
	if len(args) == 0 {
		return nil
	}
	return t.tools.Run(ctx, env, "chage", append(args, desired.String("username")), nil, "")
}

// setPassword writes hash as name's password with chpasswd --encrypted,
// through its standard input; a locked account stays locked.
func (t *userType) setPassword(ctx context.Context, env *resources.Env, name, hash string, locked bool) error {
	if locked {
		hash = "!" + hash
	}
	line := []byte(name + ":" + hash + "\n")
	return t.tools.Run(ctx, env, chpasswdProgram, []string{"--encrypted"}, line, hash)
}
