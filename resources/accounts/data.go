package accounts

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// The data sources of the account databases, read as the user and group
// types read them (shadowdb.go: the files, not NSS):
//
//	data "users" "all" {}    # data.users.all.result["alice"].uid
//	data "groups" "all" {}   # data.groups.all.result["adm"].members
//
// users answers a map of every user of /etc/passwd, by name: uid, gid
// (and group, its name), comment, home, shell; regular, whether its uid
// is in login.defs' UID_MIN … UID_MAX (1000 … 60000 when unset), the
// range useradd gives people; and from /etc/shadow, when toque may read
// it (else null): locked, and the ageing chage sets — last_change (a
// date), min_days, max_days, warn_days, inactive (-1 for none) and
// expire_date ("never", or a date). The password hash is never part of
// the answer. groups answers every group of /etc/group, by name: gid,
// members (sorted) and regular (GID_MIN … GID_MAX).

// UsersData is data "users".
func UsersData() resources.DataSource { return &usersData{} }

// GroupsData is data "groups".
func GroupsData() resources.DataSource { return &groupsData{} }

type usersData struct{ root string }

type groupsData struct{ root string }

var usersSchema = &resources.Schema{
	Name:        "users",
	Description: "The local users (/etc/passwd and, when readable, /etc/shadow), by name.",
}

var groupsSchema = &resources.Schema{
	Name:        "groups",
	Description: "The local groups (/etc/group), by name.",
}

func (d *usersData) Schema() *resources.Schema  { return usersSchema }
func (d *groupsData) Schema() *resources.Schema { return groupsSchema }

func (d *usersData) Describe(map[string]cty.Value) string {
	return "reads /etc/passwd, /etc/group, /etc/shadow and /etc/login.defs"
}

func (d *groupsData) Describe(map[string]cty.Value) string {
	return "reads /etc/group and /etc/login.defs"
}

// userEntryType is the type of one user of the answer.
var userEntryType = cty.Object(map[string]cty.Type{
	"name": cty.String, "uid": cty.Number, "gid": cty.Number, "group": cty.String,
	"comment": cty.String, "home": cty.String, "shell": cty.String, "regular": cty.Bool,
	"locked": cty.Bool, "last_change": cty.String, "min_days": cty.Number, "max_days": cty.Number,
	"warn_days": cty.Number, "inactive": cty.Number, "expire_date": cty.String,
})

var groupEntryType = cty.Object(map[string]cty.Type{
	"name": cty.String, "gid": cty.Number, "members": cty.List(cty.String), "regular": cty.Bool,
})

func (d *usersData) Read(ctx context.Context, _ *resources.DataRequest) (cty.Value, error) {
	if err := props.CtxErr(ctx, "reading the users"); err != nil {
		return cty.NilVal, err
	}
	db, err := readAccounts(d.root, dbPasswd|dbGroup|dbShadow)
	if err != nil {
		return cty.NilVal, err
	}
	lo, hi, err := idRange(d.root, "UID_MIN", "UID_MAX")
	if err != nil {
		return cty.NilVal, err
	}
	if len(db.users) == 0 {
		return cty.MapValEmpty(userEntryType), nil
	}
	out := make(map[string]cty.Value, len(db.users))
	for name, e := range db.users {
		u := map[string]cty.Value{
			"name":    resources.DataString(name),
			"uid":     cty.NumberUIntVal(uint64(e.uid)),
			"gid":     cty.NumberUIntVal(uint64(e.gid)),
			"group":   resources.DataString(db.groupName(e.gid)),
			"comment": resources.DataString(e.gecos),
			"home":    resources.DataString(e.home),
			"shell":   resources.DataString(e.shell),
			"regular": cty.BoolVal(e.uid >= lo && e.uid <= hi),
		}
		sh := db.shadow[name]
		if sh == nil {
			for _, k := range []string{"locked", "last_change", "min_days", "max_days", "warn_days", "inactive", "expire_date"} {
				u[k] = cty.NullVal(userEntryType.AttributeType(k))
			}
		} else {
			u["locked"] = cty.BoolVal(strings.HasPrefix(sh.passwd, "!"))
			u["last_change"] = dateOrNull(sh.lastChange)
			u["min_days"] = cty.NumberIntVal(sh.minDays)
			u["max_days"] = cty.NumberIntVal(sh.maxDays)
			u["warn_days"] = cty.NumberIntVal(sh.warnDays)
			u["inactive"] = cty.NumberIntVal(sh.inactive)
			u["expire_date"] = cty.StringVal(expireDate(sh.expire))
		}
		out[strings.ToValidUTF8(name, "\uFFFD")] = cty.ObjectVal(u)
	}
	return cty.MapVal(out), nil
}

// dateOrNull is a shadow day count as a date, null when it is not set.
func dateOrNull(days int64) cty.Value {
	if days < 0 {
		return cty.NullVal(cty.String)
	}
	return cty.StringVal(expireDate(days))
}

func (d *groupsData) Read(ctx context.Context, _ *resources.DataRequest) (cty.Value, error) {
	if err := props.CtxErr(ctx, "reading the groups"); err != nil {
		return cty.NilVal, err
	}
	db, err := readAccounts(d.root, dbGroup)
	if err != nil {
		return cty.NilVal, err
	}
	lo, hi, err := idRange(d.root, "GID_MIN", "GID_MAX")
	if err != nil {
		return cty.NilVal, err
	}
	if len(db.groups) == 0 {
		return cty.MapValEmpty(groupEntryType), nil
	}
	out := make(map[string]cty.Value, len(db.groups))
	for name, g := range db.groups {
		out[strings.ToValidUTF8(name, "\uFFFD")] = cty.ObjectVal(map[string]cty.Value{
			"name":    resources.DataString(name),
			"gid":     cty.NumberUIntVal(uint64(g.gid)),
			"members": dataNames(g.members),
			"regular": cty.BoolVal(g.gid >= lo && g.gid <= hi),
		})
	}
	return cty.MapVal(out), nil
}

// idRange is login.defs' range of ids for people (UID_MIN … UID_MAX,
// GID_MIN … GID_MAX), with useradd's defaults for what it does not set.
func idRange(root, minKey, maxKey string) (uint32, uint32, error) {
	lo, hi := uint32(1000), uint32(60000)
	for key, dst := range map[string]*uint32{minKey: &lo, maxKey: &hi} {
		v, err := loginDefs(root, key)
		if err != nil {
			return 0, 0, err
		}
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			*dst = uint32(n)
		}
	}
	return lo, hi, nil
}

// dataNames is a sorted list of names of an answer.
func dataNames(names []string) cty.Value {
	if len(names) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	sorted := slices.Sorted(slices.Values(names))
	vs := make([]cty.Value, len(sorted))
	for i, n := range sorted {
		vs[i] = resources.DataString(n)
	}
	return cty.ListVal(vs)
}
