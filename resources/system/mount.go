package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// mountType is the built-in "mount" type: a file system mounted at a
// directory (mount, umount, remount) and its entry in /etc/fstab (enable,
// disable), Chef's mount on Linux. Reading is two file reads for a whole
// plan, /proc/self/mountinfo and /etc/fstab (LoadAll), and a few stats:
// no process. A recipe's options are compared with those the kernel shows
// (mountopts.go), and a mount whose options differ is remounted; the
// fstab entry is written into the file through the file type, its other
// lines kept as they are.
type mountType struct {
	schema *resources.Schema
	file   resources.Type
	// fstab and mountinfo are the files read (/etc/fstab,
	// /proc/self/mountinfo); diskDir holds udev's links by UUID and label
	// (/dev/disk). Tests use others.
	fstab, mountinfo, diskDir string
	run                       toolRunner
}

// MountType returns the built-in "mount" resource type.
func MountType() resources.Type {
	return newMountType("/etc/fstab", "/proc/self/mountinfo", "/dev/disk")
}

// mountReadOnly marks the properties Load reads and a recipe does not set.
func mountReadOnly(name, what string) func(cty.Value) error {
	return func(v cty.Value) error {
		if v.IsNull() {
			return nil
		}
		return fmt.Errorf("%s is read by toque (%s); a recipe does not set it", name, what)
	}
}

func newMountType(fstab, mountinfo, diskDir string) *mountType {
	return &mountType{fstab: fstab, mountinfo: mountinfo, diskDir: diskDir, file: files.FileType(), run: runHostTool, schema: &resources.Schema{
		Name:        "mount",
		Description: "Manages a mounted file system and its entry in /etc/fstab.",
		Properties: []*resources.Property{
			{Name: "mount_point", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Normalize: normalizeMountPoint, Validate: validateFstabField("mount_point"), Namespace: "mount",
				Description: "The directory the file system is mounted on (absolute; \"/\" too); defaults to the block label."},
			{Name: "device", Type: cty.String, LoadInput: true, Validate: validateDevice,
				Description: "What is mounted: a device path, UUID=…, LABEL=…, PARTUUID=…, PARTLABEL=…, a network share (host:/export) or a name (tmpfs, proc). Required by mount and enable."},
			{Name: "fstype", Type: cty.String, Default: cty.StringVal("auto"), Validate: validateFstype,
				Description: "The file system type (ext4, tmpfs, nfs); \"auto\" lets mount find it."},
			{Name: "options", Type: cty.List(cty.String), Default: cty.ListVal([]cty.Value{cty.StringVal("defaults")}), Validate: validateMountOptions,
				Description: "The mount options, one per element ([\"nodev\", \"nosuid\"]), in order: a later one wins."},
			{Name: "dump", Type: cty.Number, Default: cty.NumberIntVal(0), Validate: validateFstabNumber("dump"),
				Description: "The fstab dump field."},
			{Name: "pass", Type: cty.Number, Default: cty.NumberIntVal(2), Validate: validateFstabNumber("pass"),
				Description: "The fstab pass field: the order fsck checks file systems in at boot (0: never)."},
			{Name: "enabled", Type: cty.Bool, NonState: true, Validate: mountReadOnly("enabled", "whether /etc/fstab has an entry for the mount point"),
				Description: "Whether /etc/fstab has an entry for the mount point: read by toque, set by enable and disable; a recipe does not set it."},
			{Name: "mounted", Type: cty.String, NonState: true, Validate: mountReadOnly("mounted", "what the kernel has mounted there"),
				Description: "What is mounted there, as mount prints it (\"tmpfs on /dev/shm type tmpfs (rw,nosuid,nodev)\"): read by toque; a recipe does not set it."},
			{Name: "fstab", Type: cty.String, NonState: true, Content: true, Validate: mountReadOnly("fstab", "the entry of /etc/fstab for the mount point"),
				Description: "The line of /etc/fstab for the mount point: read by toque, written from device, fstype, options, dump and pass by enable; a recipe does not set it."},
		},
		Actions:       []string{"mount", "umount", "unmount", "remount", "enable", "disable"},
		DefaultAction: "mount",
	}}
}

func (t *mountType) Schema() *resources.Schema { return t.schema }

// normalizeMountPoint is the canonical path ("/srv/" is "/srv"); "/"
// itself is a mount point.
func normalizeMountPoint(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	if strings.Trim(v.AsString(), "/") == "" && v.AsString() != "" {
		return cty.StringVal("/"), nil
	}
	return props.NormalizePath(v)
}

// checkFstabText refuses what would break the line of fstab a value is
// written into, or be read back as another value: a control character
// (a newline ends the entry) and "#" (an injection's way to comment out
// the rest of a line).
func checkFstabText(name, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s must not be empty", name)
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Errorf("%s %q holds a control character (a newline, a tab): it must be one field of one line of /etc/fstab", name, s)
	case strings.Contains(s, "#"):
		return fmt.Errorf("%s %q holds \"#\", which starts a comment in /etc/fstab", name, s)
	}
	return nil
}

func validateFstabField(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkFstabText(name, v.AsString())
	}
}

// deviceTags are the names of a device by a tag, as fstab, mount and
// udev's links (/dev/disk/by-*) call them.
var deviceTags = map[string]string{"UUID": "by-uuid", "LABEL": "by-label", "PARTUUID": "by-partuuid", "PARTLABEL": "by-partlabel"}

func validateDevice(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	if err := checkFstabText("device", s); err != nil {
		return err
	}
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("device %q starts with \"-\": no device is named so, and mount would read it as an option", s)
	}
	if tag, val, ok := strings.Cut(s, "="); ok && deviceTags[tag] != "" && strings.Trim(val, `"`) == "" {
		return fmt.Errorf("device %q names no %s", s, tag)
	}
	return nil
}

var fstypeRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)

func validateFstype(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); !fstypeRE.MatchString(s) {
		return fmt.Errorf("fstype %q is not a file system type: letters, digits, \"_\", \".\", \"+\" and \"-\" (ext4, fuse.sshfs)", s)
	}
	return nil
}

// validateMountOptions refuses an option that would not be read back as
// the one option it is: a comma (options are separated by commas, so one
// element would be two), a blank or a control character (the end of the
// field or of the line), "#", a backslash or a quote (written and read
// differently by fstab and mount), and remount (toque decides when to
// remount).
func validateMountOptions(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for i, o := range props.StringList(v) {
		what := fmt.Sprintf("options[%d]", i)
		switch {
		case o == "":
			return fmt.Errorf("%s is empty", what)
		case strings.Contains(o, ","):
			return fmt.Errorf("%s %q holds a comma: write each option as its own element ([%s])", what, o, quoteJoin(strings.Split(o, ",")))
		case strings.ContainsAny(o, " \\\"'"):
			return fmt.Errorf("%s %q holds a space, a backslash or a quote, which /etc/fstab and mount read otherwise", what, o)
		case o == "remount":
			return fmt.Errorf("%s is remount: toque remounts when the options in effect differ, or with action remount", what)
		}
		if err := checkFstabText(what, o); err != nil {
			return err
		}
	}
	return nil
}

func quoteJoin(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(strings.TrimSpace(x))
	}
	return strings.Join(q, ", ")
}

func validateFstabNumber(name string) func(cty.Value) error {
	nonNeg := props.NonNegativeInt(name)
	return func(v cty.Value) error {
		if err := nonNeg(v); err != nil {
			return err
		}
		if v.IsKnown() && !v.IsNull() && v.Type() == cty.Number {
			if n, _ := v.AsBigFloat().Int64(); n > 1<<31-1 {
				return fmt.Errorf("%s is too large", name)
			}
		}
		return nil
	}
}

// Load reads the mount table and fstab for r alone (LoadAll).
func (t *mountType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	sts, err := t.LoadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// LoadAll reads /proc/self/mountinfo and /etc/fstab once for every
// resource. Values: the fstab entry's fields (device, fstype, options,
// dump, pass), enabled, fstab (its line) and mounted (what the kernel
// shows there). Extra records the facts Plan decides on: the mount
// (mount_source, mount_fstype, mount_options, super_options), whether
// it is the recipe's device (device), the mount point's kind, the
// device's presence, more than one entry (fstab_entries), and an fstab
// that is no text.
func (t *mountType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	if err := props.CtxErr(ctx, "reading mounts"); err != nil {
		return nil, err
	}
	mounts, err := readMountinfo(t.mountinfo)
	if err != nil {
		return nil, err
	}
	tab, err := readFstab(t.fstab)
	if err != nil {
		return nil, err
	}
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		out[i] = t.state(r, mounts, tab)
	}
	return out, nil
}

func (t *mountType) state(r *resources.Resource, mounts []mountInfo, tab *fstab) *resources.State {
	mp := r.String("mount_point")
	st := resources.Absent()
	st.Extra = map[string]string{}
	st.Extra["mount_point"] = mountPointKind(mp)
	if m, n := topMount(mounts, mp); m != nil {
		st.Exists = true
		st.Values["mounted"] = cty.StringVal(describeMount(m.source, mp, m.fstype, m.options()))
		st.Extra["mount_source"] = m.source
		st.Extra["mount_fstype"] = m.fstype
		st.Extra["mount_options"] = strings.Join(m.mountOpts, ",")
		st.Extra["super_options"] = strings.Join(m.superOpts, ",")
		if n > 1 {
			st.Extra["mounts"] = strconv.Itoa(n)
		}
		if r.IsSet("device") {
			st.Extra["device"] = t.sameDevice(r.String("device"), m)
		}
	} else if r.IsSet("device") {
		if why := t.deviceMissing(r.String("device")); why != "" {
			st.Extra["device"] = why
		}
	}
	switch {
	case !tab.exists:
		st.Extra["fstab"] = "absent"
	case !tab.text:
		st.Extra["fstab"] = "not text"
	}
	idx := tab.find(func(e *fstabEntry) bool { return sameMountPoint(e.mountPoint, mp) })
	st.Values["enabled"] = cty.BoolVal(len(idx) > 0)
	if len(idx) == 0 {
		return st
	}
	st.Exists = true
	e := tab.lines[idx[0]].entry
	st.Values["fstab"] = cty.StringVal(tab.linesAt(idx))
	st.Values["device"] = cty.StringVal(e.device)
	if e.fstype != "" {
		st.Values["fstype"] = cty.StringVal(e.fstype)
	}
	if len(e.options) > 0 {
		st.Values["options"] = props.StringListVal(e.options)
	}
	st.Values["dump"] = cty.NumberIntVal(int64(e.dump))
	st.Values["pass"] = cty.NumberIntVal(int64(e.pass))
	if len(idx) > 1 {
		st.Extra["fstab_entries"] = strconv.Itoa(len(idx))
	}
	return st
}

// mountPointKind is what is at the mount point: "directory", "missing",
// "not a directory", or where it leads through a symbolic link (the
// kernel shows a mount by the path it resolves to).
func mountPointKind(mp string) string {
	real, err := filepath.EvalSymlinks(mp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "unreadable: " + err.Error()
	case real != mp:
		return "resolves to " + real
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "not a directory"
	}
	return "directory"
}

// devicePath is the path a device names: itself, or udev's link for a
// tag (UUID=… is /dev/disk/by-uuid/…); "" for a name that is no path (a
// network share, tmpfs).
func (t *mountType) devicePath(device string) string {
	if tag, val, ok := strings.Cut(device, "="); ok && deviceTags[tag] != "" {
		val = strings.Trim(val, `"`)
		// udev escapes a "/" and a space in a label (blkid_encode_string).
		val = strings.NewReplacer("/", `\x2f`, " ", `\x20`).Replace(val)
		return filepath.Join(t.diskDir, deviceTags[tag], val)
	}
	if strings.HasPrefix(device, "/") {
		return device
	}
	return ""
}

// deviceMissing says why device cannot be mounted (a path that does not
// exist), or "" when it can or when toque cannot tell (a tag, on a host
// without udev's links; a network share).
func (t *mountType) deviceMissing(device string) string {
	p := t.devicePath(device)
	if p == "" {
		return ""
	}
	if p != device {
		if _, err := os.Stat(filepath.Dir(p)); err != nil {
			return "" // no udev links here: mount finds the tag itself
		}
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "missing: " + p + " does not exist"
	}
	return ""
}

// sameDevice says whether m is device mounted: "same", "other", or
// "unknown: why". A device given by path or tag is compared by what it
// is (the device number of a block device, the backing file of a loop
// device, the file system a bind mount's directory is on); a name by its
// spelling, a network share without a trailing "/".
func (t *mountType) sameDevice(device string, m *mountInfo) string {
	if device == m.source || strings.TrimSuffix(device, "/") == strings.TrimSuffix(m.source, "/") && strings.Contains(device, ":") {
		return "same"
	}
	p := t.devicePath(device)
	if p == "" {
		return "other"
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		if p != device {
			if _, derr := os.Stat(filepath.Dir(p)); derr != nil {
				return fmt.Sprintf("unknown: toque cannot tell which device %s is (%s does not exist: udev does not run here)", device, filepath.Dir(p))
			}
		}
		return "other"
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		if fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)) == m.dev {
			return "same"
		}
	case unix.S_IFREG:
		// A file mounted through a loop device.
		if loop, ok := strings.CutPrefix(m.source, "/dev/loop"); ok {
			backing, err := os.ReadFile("/sys/block/loop" + loop + "/loop/backing_file")
			if err == nil {
				real, _ := filepath.EvalSymlinks(p)
				if b := strings.TrimSpace(string(backing)); b == p || b == real {
					return "same"
				}
			}
		}
	case unix.S_IFDIR:
		// A bind mount shows the device of the file system the directory
		// is on.
		if fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)) == m.dev {
			return "same"
		}
	}
	return "other"
}

// mountOf is the mount Load read, from its facts.
func mountOf(st *resources.State, mp string) *mountInfo {
	if st.Extra["mount_source"] == "" && st.Extra["mount_fstype"] == "" {
		return nil
	}
	return &mountInfo{
		mountPoint: mp,
		source:     st.Extra["mount_source"],
		fstype:     st.Extra["mount_fstype"],
		mountOpts:  strings.Split(st.Extra["mount_options"], ","),
		superOpts:  strings.Split(st.Extra["super_options"], ","),
	}
}

// Plan: mount mounts the device when nothing is mounted there, and
// remounts it when an option the kernel shows is not in effect; umount
// unmounts it; remount remounts it every time (a run, for notifications);
// enable writes its entry in fstab when the entry differs from what the
// recipe sets (the properties it does not set keep the entry's values, or
// take their defaults in a new entry), and disable removes it.
func (t *mountType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	var step *resources.Step
	var err error
	switch action {
	case "mount":
		step, err = t.planMount(desired, current)
	case "umount", "unmount":
		step, err = t.planUmount(desired, current)
	case "remount":
		step, err = t.planRemount(desired, current)
	case "enable":
		step, err = t.planEnable(desired, current)
	case "disable":
		step, err = t.planDisable(current)
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if err != nil {
		return nil, err
	}
	return needsRoot(step, "mounting file systems and writing "+t.fstab)
}

// checkMounted refuses to act on a mount that is not the recipe's
// device, or whose type is not its fstype.
func checkMounted(desired *resources.Resource, current *resources.State, m *mountInfo) error {
	mp := desired.String("mount_point")
	switch d := current.Extra["device"]; {
	case d == "other":
		return &resources.PropertyError{Property: "device", Err: fmt.Errorf("%s has %s mounted, not %s: unmount it first (action umount), or set device to it", mp, m.source, desired.String("device"))}
	case strings.HasPrefix(d, "unknown: "):
		return &resources.PropertyError{Property: "device", Err: errors.New(strings.TrimPrefix(d, "unknown: "))}
	}
	if desired.IsSet("fstype") && desired.String("fstype") != "auto" && desired.String("fstype") != m.fstype {
		return &resources.PropertyError{Property: "fstype", Err: fmt.Errorf("%s is a %s file system, not %s: a remount cannot change it; unmount it first (action umount)", mp, m.fstype, desired.String("fstype"))}
	}
	return nil
}

// wantOptions is the options a mount action asks for: the recipe's, else
// the default.
func wantOptions(desired *resources.Resource) []string {
	return props.StringList(desired.Get("options"))
}

func (t *mountType) planMount(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	mp := desired.String("mount_point")
	if !desired.IsSet("device") {
		return nil, &resources.PropertyError{Property: "device", Err: errors.New("mount needs a device: set device to what is mounted there")}
	}
	if m := mountOf(current, mp); m != nil {
		if err := checkMounted(desired, current, m); err != nil {
			return nil, err
		}
		return remountStep(desired, current, m, false), nil
	}
	device, fstype := desired.String("device"), desired.String("fstype")
	if why, ok := strings.CutPrefix(current.Extra["device"], "missing: "); ok {
		return nil, &resources.PropertyError{Property: "device", Err: fmt.Errorf("device %s cannot be mounted: %s", device, why)}
	}
	step := &resources.Step{Kind: resources.Update, Groups: []string{"mount"},
		Reason:  fmt.Sprintf("not mounted: mount mounts %s on %s", device, mp),
		Changes: []resources.Change{{Property: "mounted", After: knownFrom(desired, cty.StringVal(describeMount(device, mp, fstype, wantOptions(desired))), "device", "fstype", "options")}},
	}
	if !current.Exists {
		step.Kind = resources.Create
	}
	switch k := current.Extra["mount_point"]; {
	case k == "missing":
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: mp, What: "directory",
			Missing: fmt.Sprintf("the mount point %s does not exist; create it with a directory resource before this mount", mp)})
	case strings.HasPrefix(k, "resolves to "):
		return nil, fmt.Errorf("the mount point %s %s through a symbolic link, and the kernel would show the mount there: set mount_point to %s", mp, k, strings.TrimPrefix(k, "resolves to "))
	case k != "directory":
		return nil, fmt.Errorf("the mount point %s is %s: a file system is mounted on a directory", mp, k)
	}
	return step, nil
}

// remountStep is the step that remounts m with the recipe's options:
// an update when an option is not in effect (a no-op otherwise), or a
// run every time (action remount).
func remountStep(desired *resources.Resource, current *resources.State, m *mountInfo, always bool) *resources.Step {
	mp := desired.String("mount_point")
	opts := wantOptions(desired)
	missing := notInEffect(opts, m)
	_, mountOpts, superOpts := remountOf(opts, m)
	after := describeMount(m.source, mp, m.fstype, (&mountInfo{mountOpts: mountOpts, superOpts: superOpts}).options())
	stacked := ""
	if n := current.Extra["mounts"]; n != "" {
		stacked = fmt.Sprintf(" (the last of %s mounts there)", n)
	}
	if always {
		why := "remount runs on every apply"
		if len(missing) > 0 {
			why += "; " + strings.Join(missing, ", ") + " not in effect"
		}
		return &resources.Step{Kind: resources.Run, Reason: why + stacked, Groups: []string{"remount"}}
	}
	if v, ok := desired.Values["options"]; ok && !v.IsWhollyKnown() {
		return &resources.Step{Kind: resources.Update, Groups: []string{"remount"},
			Reason:  "mounted" + stacked + "; its options are known only at apply, and it is remounted then if one is not in effect",
			Changes: []resources.Change{{Property: "mounted", Before: current.Values["mounted"], After: cty.UnknownVal(cty.String)}}}
	}
	if len(missing) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "mounted" + stacked + ", with every option the kernel shows in effect"}
	}
	return &resources.Step{Kind: resources.Update, Groups: []string{"remount"},
		Reason: "mounted" + stacked + ", but " + strings.Join(missing, ", ") + " not in effect: remount (the device stays mounted)",
		Changes: []resources.Change{{Property: "mounted", Before: current.Values["mounted"], After: knownFrom(desired, cty.StringVal(after), "options"),
			Note: "remount: " + strings.Join(missing, ", ")}},
	}
}

func (t *mountType) planRemount(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	m := mountOf(current, desired.String("mount_point"))
	if m == nil {
		return &resources.Step{Kind: resources.NoOp, Reason: "not mounted: nothing to remount"}, nil
	}
	if err := checkMounted(desired, current, m); err != nil {
		return nil, err
	}
	return remountStep(desired, current, m, true), nil
}

func (t *mountType) planUmount(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	mp := desired.String("mount_point")
	m := mountOf(current, mp)
	if m == nil {
		return &resources.Step{Kind: resources.NoOp, Reason: "not mounted"}, nil
	}
	if err := checkMounted(desired, current, m); err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("umount unmounts %s from %s", m.source, mp)
	if n := current.Extra["mounts"]; n != "" {
		reason += fmt.Sprintf(" (the last of %s mounts there: the one below shows again)", n)
	}
	return &resources.Step{Kind: resources.Update, Reason: reason, Groups: []string{"umount"},
		Changes: []resources.Change{{Property: "mounted", Before: current.Values["mounted"], After: cty.NullVal(cty.String)}}}, nil
}

// entryOf is the fstab entry the recipe sets: its set properties, else the
// live entry's values, else (a new entry) the defaults.
func entryOf(desired *resources.Resource, current *resources.State) *fstabEntry {
	get := func(name string) cty.Value {
		if desired.IsSet(name) {
			return desired.Values[name]
		}
		if v, ok := current.Values[name]; ok && isEnabled(current) {
			return v
		}
		return desired.Get(name)
	}
	e := &fstabEntry{mountPoint: desired.String("mount_point"), options: props.StringList(get("options"))}
	if v := get("device"); !v.IsNull() {
		e.device = v.AsString()
	}
	if v := get("fstype"); !v.IsNull() {
		e.fstype = v.AsString()
	}
	for name, p := range map[string]*int{"dump": &e.dump, "pass": &e.pass} {
		if v := get(name); !v.IsNull() {
			n, _ := v.AsBigFloat().Int64()
			*p = int(n)
		}
	}
	return e
}

// isEnabled reports whether fstab had an entry for the mount point.
func isEnabled(st *resources.State) bool {
	v, ok := st.Values["enabled"]
	return ok && v != cty.NilVal && v.IsKnown() && !v.IsNull() && v.Type() == cty.Bool && v.True()
}

// fstabWritable refuses to write an fstab toque could not write back
// unchanged.
func (t *mountType) fstabWritable(current *resources.State) error {
	if current.Extra["fstab"] == "not text" {
		return fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", t.fstab)
	}
	return nil
}

func (t *mountType) planEnable(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if err := t.fstabWritable(current); err != nil {
		return nil, err
	}
	enabled := isEnabled(current)
	if !enabled && !desired.IsSet("device") {
		return nil, &resources.PropertyError{Property: "device", Err: fmt.Errorf("enable needs a device: %s has no entry for %s yet", t.fstab, desired.String("mount_point"))}
	}
	e := entryOf(desired, current)
	line := e.format()
	change := resources.Change{Property: "fstab", After: knownFrom(desired, cty.StringVal(line+"\n"), "device", "fstype", "options", "dump", "pass")}
	if !enabled {
		kind := resources.Update
		if !current.Exists {
			kind = resources.Create
		}
		return &resources.Step{Kind: kind, Reason: fmt.Sprintf("%s has no entry for %s: enable adds it", t.fstab, e.mountPoint), Changes: []resources.Change{change}, Groups: []string{"fstab"}}, nil
	}
	change.Before = current.Values["fstab"]
	if n := current.Extra["fstab_entries"]; n != "" {
		return &resources.Step{Kind: resources.Update, Reason: fmt.Sprintf("%s has %s entries for %s: enable keeps one, as the recipe sets it", t.fstab, n, e.mountPoint), Changes: []resources.Change{change}, Groups: []string{"fstab"}}, nil
	}
	live := parseFstabEntry(strings.TrimSuffix(props.StringOr(current.Values["fstab"]), "\n"))
	if live != nil && live.device == e.device && live.fstype == e.fstype && slices.Equal(live.options, e.options) && live.dump == e.dump && live.pass == e.pass {
		return &resources.Step{Kind: resources.NoOp, Reason: "the entry in " + t.fstab + " is the recipe's"}, nil
	}
	return &resources.Step{Kind: resources.Update, Reason: "the entry in " + t.fstab + " differs: enable rewrites that line, and no other", Changes: []resources.Change{change}, Groups: []string{"fstab"}}, nil
}

func (t *mountType) planDisable(current *resources.State) (*resources.Step, error) {
	if !isEnabled(current) {
		return &resources.Step{Kind: resources.NoOp, Reason: t.fstab + " has no entry for it"}, nil
	}
	if err := t.fstabWritable(current); err != nil {
		return nil, err
	}
	return &resources.Step{Kind: resources.Update, Reason: "disable removes its entry from " + t.fstab + " (what is mounted stays mounted)", Groups: []string{"fstab"},
		Changes: []resources.Change{{Property: "fstab", Before: current.Values["fstab"], After: cty.StringVal("")}}}, nil
}

// Predict is the state a step leaves: mounted (with the options it
// asked, as the kernel is expected to show them) or not, and the fstab
// entry written or removed.
func (t *mountType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	mp := desired.String("mount_point")
	switch {
	case step.HasGroup("mount"):
		opts := wantOptions(desired)
		st.Extra["mount_source"], st.Extra["mount_fstype"] = desired.String("device"), desired.String("fstype")
		w := wantedOf(opts)
		// The kernel's defaults, with the recipe's flags and options.
		_, mountOpts, superOpts := remountOf(opts, &mountInfo{mountOpts: []string{"rw", "relatime"}, superOpts: []string{"rw"}})
		if len(w.literal) == 0 && len(superOpts) > 1 {
			superOpts = superOpts[:1]
		}
		st.Extra["mount_options"], st.Extra["super_options"] = strings.Join(mountOpts, ","), strings.Join(superOpts, ",")
		st.Extra["device"] = "same"
		st.Values["mounted"] = step.Changes[0].After
	case step.HasGroup("remount"):
		m := mountOf(current, mp)
		_, mountOpts, superOpts := remountOf(wantOptions(desired), m)
		st.Extra["mount_options"], st.Extra["super_options"] = strings.Join(mountOpts, ","), strings.Join(superOpts, ",")
		st.Values["mounted"] = cty.StringVal(describeMount(m.source, mp, m.fstype, (&mountInfo{mountOpts: mountOpts, superOpts: superOpts}).options()))
	case step.HasGroup("umount"):
		for _, k := range []string{"mount_source", "mount_fstype", "mount_options", "super_options", "device", "mounts"} {
			delete(st.Extra, k)
		}
		delete(st.Values, "mounted")
	case step.HasGroup("fstab"):
		delete(st.Extra, "fstab_entries")
		delete(st.Extra, "fstab")
		for _, k := range []string{"device", "fstype", "options", "dump", "pass", "fstab"} {
			delete(st.Values, k)
		}
		if v := step.Changes[0].After; !v.IsKnown() {
			// Known only at apply: so is the entry.
			st.Values["enabled"], st.Values["fstab"] = cty.True, v
			break
		}
		after := step.Changes[0].After.AsString()
		st.Values["enabled"] = cty.BoolVal(after != "")
		if after != "" {
			e := parseFstabEntry(strings.TrimSuffix(after, "\n"))
			st.Values["fstab"] = cty.StringVal(after)
			st.Values["device"], st.Values["fstype"] = cty.StringVal(e.device), cty.StringVal(e.fstype)
			st.Values["options"] = props.StringListVal(e.options)
			st.Values["dump"], st.Values["pass"] = cty.NumberIntVal(int64(e.dump)), cty.NumberIntVal(int64(e.pass))
		}
	}
	_, mounted := st.Values["mounted"]
	st.Exists = mounted || isEnabled(st)
	return st, nil
}

// Steps: the mount groups run mount(8) or umount(8) and read the mount
// table back; the fstab group rewrites the one entry.
func (t *mountType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *mountType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	mp := desired.String("mount_point")
	switch {
	case step.HasGroup("mount"):
		args := []string{}
		if fstype := desired.String("fstype"); fstype != "auto" {
			args = append(args, "-t", fstype)
		}
		if opts := wantOptions(desired); len(opts) > 0 {
			args = append(args, "-o", strings.Join(opts, ","))
		}
		// Both the source and the target: mount then reads no fstab.
		args = append(args, "--source", desired.String("device"), "--target", mp)
		if err := t.run(ctx, env, "mount", args...); err != nil {
			return err
		}
		return t.readBack(desired, "mount")
	case step.HasGroup("remount"):
		m := mountOf(current, mp)
		args, _, _ := remountOf(wantOptions(desired), m)
		if err := t.run(ctx, env, "mount", "-o", "remount,"+strings.Join(args, ","), "--source", m.source, "--target", mp); err != nil {
			return err
		}
		return t.readBack(desired, "remount")
	case step.HasGroup("umount"):
		return t.run(ctx, env, "umount", mp)
	case step.HasGroup("fstab"):
		line := strings.TrimSuffix(step.Changes[0].After.AsString(), "\n")
		return editFile(ctx, env, t.file, t.fstab, nil, func(old string, _ bool) (string, bool, error) {
			return parseFstab(old).withEntry(func(e *fstabEntry) bool { return sameMountPoint(e.mountPoint, mp) }, line), false, nil
		})
	}
	return fmt.Errorf("%s: nothing to do for a step of groups %v", desired.Address(), step.Groups)
}

// readBack reads the mount table again after mount or remount: the
// device must be mounted there with every option the kernel shows in
// effect, or apply fails saying what the kernel shows (an option it
// prints otherwise than the recipe writes it: size=1m is size=1024k).
func (t *mountType) readBack(desired *resources.Resource, what string) error {
	mp := desired.String("mount_point")
	mounts, err := readMountinfo(t.mountinfo)
	if err != nil {
		return fmt.Errorf("reading back the mount of %s: %w", mp, err)
	}
	m, _ := topMount(mounts, mp)
	if m == nil {
		return fmt.Errorf("%s exited 0, yet nothing is mounted on %s", what, mp)
	}
	if missing := notInEffect(wantOptions(desired), m); len(missing) > 0 {
		return fmt.Errorf("after %s, the kernel shows %s mounted with %s: %s not in effect. Write the options as /proc/self/mountinfo shows them, or check that this file system accepts them", what, mp, strings.Join(m.options(), ","), strings.Join(missing, ", "))
	}
	return nil
}
