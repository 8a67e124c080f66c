package system

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// timezoneType is the built-in "timezone" type, Chef's: the host's time
// zone, /etc/localtime a symbolic link to the zone's file of the tz
// database, and /etc/timezone (Debian's) naming it. Both are what glibc,
// systemd-timedated (timedatectl) and Debian's tzdata read, so toque
// writes them through the link and file types and runs nothing. The zone
// is checked against the tz database when the plan is made.
type timezoneType struct {
	schema     *resources.Schema
	file, link resources.Type
	// root is where /etc is ("" for the host's), zoneinfo the tz
	// database (/usr/share/zoneinfo): tests use others.
	root, zoneinfo string
}

// TimezoneType returns the built-in "timezone" resource type.
func TimezoneType() resources.Type { return newTimezoneType("", "/usr/share/zoneinfo") }

// zoneNameRE is the shape of a zone's name: components of letters,
// digits, "_", "+" and "-" (America/Port-au-Prince, Etc/GMT+5).
var zoneNameRE = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)

func newTimezoneType(root, zoneinfo string) *timezoneType {
	t := &timezoneType{root: root, zoneinfo: zoneinfo, file: files.FileType(), link: files.LinkType()}
	t.schema = &resources.Schema{
		Name:        "timezone",
		Description: "Manages the host's time zone: /etc/localtime and /etc/timezone.",
		Properties: []*resources.Property{
			{Name: "timezone", Type: cty.String, NameProperty: true, Identity: true, Required: true, Namespace: "timezone",
				Validate: validateZoneName, HostCheck: t.checkZone,
				Description: "The zone, as the tz database names it (\"Europe/Paris\", \"UTC\"); defaults to the block label."},
			{Name: "localtime", Type: cty.String, NonState: true, Validate: mountReadOnly("localtime", "what /etc/localtime is"),
				Description: "What /etc/localtime links to (or that it is a copy): read by toque; a recipe does not set it."},
			{Name: "timezone_file", Type: cty.String, NonState: true, Validate: mountReadOnly("timezone_file", "the zone /etc/timezone names"),
				Description: "The zone /etc/timezone names (Debian's): read by toque; a recipe does not set it."},
		},
		Actions:       []string{"set"},
		DefaultAction: "set",
	}
	return t
}

func (t *timezoneType) Schema() *resources.Schema { return t.schema }

func validateZoneName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); !zoneNameRE.MatchString(s) || len(s) > 255 {
		return fmt.Errorf("timezone %q is not the name of a zone of the tz database (Area/Location: letters, digits, \"_\", \"+\" and \"-\")", s)
	}
	return nil
}

// checkZone is the plan's check that the zone is in this host's tz
// database: a zone or a link of tzdata.zi, the database's own list (which
// leaves out posix/…, right/…, localtime), and a TZif file.
func (t *timezoneType) checkZone(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	name := v.AsString()
	if listed, ok := t.zoneListed(name); ok && !listed {
		return fmt.Errorf("%q is not a zone of the tz database (%s lists no zone or link of that name); its names are as in `timedatectl list-timezones`", name, filepath.Join(t.zoneinfo, "tzdata.zi"))
	}
	f, err := os.Open(filepath.Join(t.zoneinfo, name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%q is not a zone of the tz database: %s does not exist (is tzdata installed?)", name, filepath.Join(t.zoneinfo, name))
	}
	if err != nil {
		return fmt.Errorf("reading zone %s: %w", name, err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := f.Read(magic); err != nil || string(magic) != "TZif" {
		return fmt.Errorf("%q is not a zone of the tz database: %s is not a zone file", name, filepath.Join(t.zoneinfo, name))
	}
	return nil
}

// zoneListed reports whether tzdata.zi lists name as a zone or a link;
// ok is false when there is no such list to ask.
func (t *timezoneType) zoneListed(name string) (listed, ok bool) {
	f, err := os.Open(filepath.Join(t.zoneinfo, "tzdata.zi"))
	if err != nil {
		return false, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 2 && fs[0] == "Z" && fs[1] == name:
			return true, true
		case len(fs) >= 3 && fs[0] == "L" && fs[2] == name:
			return true, true
		}
	}
	return false, true
}

func (t *timezoneType) path(p string) string { return filepath.Join("/", t.root, p) }

// zonePath is the file of zone in the tz database, which /etc/localtime
// links to.
func (t *timezoneType) zonePath(zone string) string { return filepath.Join(t.zoneinfo, zone) }

// Load reads /etc/localtime (a link: where it leads; a regular file:
// whether it holds the recipe's zone) and /etc/timezone. Extra records
// their kinds, and whether the host is Debian's kind (/etc/debian_version),
// whose /etc/timezone toque writes even when it is missing.
func (t *timezoneType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	zone := r.String("timezone")
	if err := props.CtxErr(ctx, "reading the time zone"); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	lt := t.path("/etc/localtime")
	fi, err := os.Lstat(lt)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Extra["localtime"] = "absent"
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", lt, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		to, err := os.Readlink(lt)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", lt, err)
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(lt), to)
		}
		st.Extra["localtime"] = "link"
		st.Values["localtime"] = cty.StringVal(filepath.Clean(to))
	case fi.Mode().IsRegular():
		st.Extra["localtime"] = "file"
		data, err := os.ReadFile(lt)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", lt, err)
		}
		what := "a copy of another zone's file"
		if want, err := os.ReadFile(t.zonePath(zone)); err == nil && bytes.Equal(data, want) {
			what = "a copy of " + zone + "'s file"
		}
		st.Values["localtime"] = cty.StringVal("(" + what + ")")
	default:
		st.Extra["localtime"] = "other"
	}
	tz := t.path("/etc/timezone")
	data, err := os.ReadFile(tz)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Extra["timezone_file"] = "absent"
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", tz, err)
	default:
		st.Values["timezone_file"] = cty.StringVal(strings.TrimSpace(string(bytes.ToValidUTF8(data, []byte("?")))))
		if string(data) != zone+"\n" {
			st.Extra["timezone_file"] = "other"
		}
	}
	if _, err := os.Stat(t.path("/etc/debian_version")); err == nil {
		st.Extra["debian"] = "true"
	}
	return st, nil
}

// Plan: set links /etc/localtime to the zone's file unless it leads
// there already (a copy of the file is replaced by the link), and writes
// /etc/timezone (where it exists, or on Debian's kind) unless it holds
// exactly the zone.
func (t *timezoneType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if action != "set" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	zone := desired.String("timezone")
	lt, target := t.path("/etc/localtime"), t.zonePath(zone)
	var groups, why []string
	var changes []resources.Change
	switch k := current.Extra["localtime"]; {
	case k == "other":
		return nil, fmt.Errorf("%s is neither a link nor a file: toque does not replace it", lt)
	case k == "link" && props.StringOr(current.Values["localtime"]) == target:
		// A relative link leading there is the same link: timedatectl
		// names the zone by the path it leads to.
	default:
		groups = append(groups, "localtime")
		changes = append(changes, resources.Change{Property: "localtime", Before: current.Values["localtime"], After: cty.StringVal(target)})
		switch k {
		case "file":
			why = append(why, lt+" is a copy of a zone's file: replaced by a link to "+target+" (the copy backed up)")
		case "absent":
			why = append(why, lt+" does not exist: a link to "+target)
		default:
			why = append(why, lt+" leads elsewhere: a link to "+target)
		}
	}
	if tz := current.Extra["timezone_file"]; tz == "other" || (tz == "absent" && current.Extra["debian"] != "") {
		groups = append(groups, "timezone_file")
		changes = append(changes, resources.Change{Property: "timezone_file", Before: current.Values["timezone_file"], After: cty.StringVal(zone)})
		why = append(why, t.path("/etc/timezone")+" does not name "+zone)
	}
	if len(groups) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "the host's zone is " + zone + " already"}, nil
	}
	return needsRoot(&resources.Step{Kind: resources.Update, Reason: strings.Join(why, "; "), Changes: changes, Groups: groups}, "setting the time zone")
}

// Predict is the state set leaves.
func (t *timezoneType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	for _, c := range step.Changes {
		st.Values[c.Property] = c.After
	}
	if step.HasGroup("localtime") {
		st.Extra["localtime"] = "link"
	}
	if step.HasGroup("timezone_file") {
		delete(st.Extra, "timezone_file")
	}
	return st, nil
}

// Steps: the link through the link type (a copy of a zone's file
// deleted first, through the file type, which backs it up), /etc/timezone
// through the file type; both read back.
func (t *timezoneType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *timezoneType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	zone := desired.String("timezone")
	lt, target := t.path("/etc/localtime"), t.zonePath(zone)
	if step.HasGroup("localtime") {
		if current.Extra["localtime"] == "file" {
			if err := writeRootFile(ctx, env, t.file, lt, ""); err != nil {
				return err
			}
		}
		lr := resources.NewResource(t.link.Schema(), lt, "create", map[string]cty.Value{"target_file": cty.StringVal(lt), "to": cty.StringVal(target)})
		st, err := t.link.Load(ctx, lr.LoadView())
		if err != nil {
			return err
		}
		lstep, err := resources.PlanStep(t.link, lr, st)
		if err != nil {
			return err
		}
		if err := resources.ConvergeStep(ctx, t.link, env, lr, st, lstep); err != nil {
			return err
		}
		if got, err := os.Readlink(lt); err != nil || got != target {
			return fmt.Errorf("after linking %s to %s, it leads to %q (%v)", lt, target, got, err)
		}
	}
	if step.HasGroup("timezone_file") {
		return writeRootFile(ctx, env, t.file, t.path("/etc/timezone"), zone+"\n")
	}
	return nil
}
