package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// hostnameType is the built-in "hostname" type, Chef's on Linux: the
// static hostname (/etc/hostname), the kernel's (transient) hostname,
// and the line of /etc/hosts that names the host. Where systemd runs,
// hostnamectl sets the first two (systemd-hostnamed owns them); elsewhere
// toque writes /etc/hostname through the file type and calls
// sethostname(2). Reading is files and uname(2): no process.
type hostnameType struct {
	schema *resources.Schema
	file   resources.Type
	// root is where /etc is ("" for the host's; tests use others), and
	// mountinfo the mount table read to find /etc/hosts or /etc/hostname
	// mounted over (a container's), which cannot be renamed over.
	root, mountinfo string
	run             toolRunner
}

// HostnameType returns the built-in "hostname" resource type.
func HostnameType() resources.Type { return newHostnameType("", "/proc/self/mountinfo") }

func newHostnameType(root, mountinfo string) *hostnameType {
	readOnly := func(name, what string, content bool) *resources.Property {
		return &resources.Property{Name: name, Type: cty.String, NonState: true, Content: content, Validate: mountReadOnly(name, what),
			Description: strings.ToUpper(what[:1]) + what[1:] + ": read by toque; a recipe does not set it."}
	}
	return &hostnameType{root: root, mountinfo: mountinfo, file: files.FileType(), run: runHostTool, schema: &resources.Schema{
		Name:        "hostname",
		Description: "Manages the host's name: the static hostname, the kernel's, and its line of /etc/hosts.",
		Properties: []*resources.Property{
			{Name: "hostname", Type: cty.String, NameProperty: true, Identity: true, Required: true, Namespace: "hostname",
				Validate:    validateHostname("hostname", 64),
				Description: "The host's name (RFC 1123: letters, digits and \"-\" in dot-separated labels; at most 64 characters); defaults to the block label."},
			{Name: "fqdn", Type: cty.String, LoadInput: true, Validate: validateHostname("fqdn", 253),
				Description: "The fully qualified name, written before hostname in the /etc/hosts line."},
			{Name: "ipaddress", Type: cty.String, LoadInput: true, Normalize: normalizeIP, Validate: validateHostIP,
				Description: "The address of the /etc/hosts line that names the host (Debian's is 127.0.1.1); unset leaves /etc/hosts as it is."},
			{Name: "aliases", Type: cty.List(cty.String), Validate: validateAliases,
				Description: "More names for the /etc/hosts line, after hostname."},
			readOnly("static_hostname", "the name in /etc/hostname", false),
			readOnly("transient_hostname", "the kernel's name (uname -n)", false),
			readOnly("hosts_entry", "the lines of /etc/hosts with the address or naming the host", true),
		},
		Actions:       []string{"set"},
		DefaultAction: "set",
	}}
}

func (t *hostnameType) Schema() *resources.Schema { return t.schema }

// checkHostname is RFC 1123's host name: dot-separated labels of 1 to 63
// letters, digits and "-", not starting or ending with "-"; max the
// longest it may be.
func checkHostname(name, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("%s must not be empty", name)
	case len(s) > max:
		return fmt.Errorf("%s %q is %d characters long; it may be at most %d", name, s, len(s), max)
	}
	for _, label := range strings.Split(s, ".") {
		switch {
		case label == "":
			return fmt.Errorf("%s %q is not an RFC 1123 host name: it has an empty label (a leading, trailing or doubled \".\")", name, s)
		case len(label) > 63:
			return fmt.Errorf("%s %q is not an RFC 1123 host name: the label %q is longer than 63 characters", name, s, label)
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Errorf("%s %q is not an RFC 1123 host name: the label %q starts or ends with \"-\"", name, s, label)
		}
		if i := strings.IndexFunc(label, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
		}); i >= 0 {
			return fmt.Errorf("%s %q is not an RFC 1123 host name: %q is not a letter, a digit or \"-\"", name, s, label[i:i+1])
		}
	}
	return nil
}

func validateHostname(name string, max int) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkHostname(name, v.AsString(), max)
	}
}

func validateAliases(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for i, a := range props.StringList(v) {
		if err := checkHostname(fmt.Sprintf("aliases[%d]", i), a, 253); err != nil {
			return err
		}
	}
	return nil
}

// normalizeIP is an address's canonical form ("::0001" is "::1").
func normalizeIP(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	a, err := netip.ParseAddr(strings.TrimSpace(v.AsString()))
	if err != nil || a.Zone() != "" {
		return cty.NilVal, fmt.Errorf("ipaddress %q is not an IPv4 or IPv6 address", v.AsString())
	}
	return cty.StringVal(a.String()), nil
}

// validateHostIP refuses the loopback addresses of localhost's lines:
// toque rewrites the line of ipaddress, and would take localhost off it.
func validateHostIP(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); s == "127.0.0.1" || s == "::1" {
		return fmt.Errorf("ipaddress %s is localhost's: toque rewrites the /etc/hosts line of ipaddress, and would take localhost off it; use 127.0.1.1 (Debian's address for the host's own name) or the host's address", s)
	}
	return nil
}

// Load reads /etc/hostname (its first name), uname's node name, and the
// lines of /etc/hosts the recipe's line would replace (which lines
// depends on ipaddress and fqdn: they are LoadInput); Extra records
// whether systemd runs (hostnamectl then sets the names) and whether
// /etc/hostname or /etc/hosts is mounted over (written in place then).
func (t *hostnameType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading the hostname"); err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	path := t.path("/etc/hostname")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Extra["hostname_file"] = "absent"
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	default:
		if name := staticName(string(data)); name != "" {
			st.Values["static_hostname"] = cty.StringVal(name)
		}
		if string(data) != r.String("hostname")+"\n" {
			st.Extra["hostname_file"] = "other"
		}
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, fmt.Errorf("reading the kernel's hostname: %w", err)
	}
	st.Values["transient_hostname"] = cty.StringVal(unix.ByteSliceToString(u.Nodename[:]))
	if r.IsSet("ipaddress") {
		hosts, err := os.ReadFile(t.path("/etc/hosts"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading %s: %w", t.path("/etc/hosts"), err)
		}
		if !isText(hosts) {
			st.Extra["hosts"] = "not text"
		}
		if before, _ := hostsEdit(string(hosts), r); before != "" {
			st.Values["hosts_entry"] = cty.StringVal(before)
		}
	}
	if t.root == "" && t.systemdRuns() {
		st.Extra["systemd"] = "running"
	}
	if ms, err := readMountinfo(t.mountinfo); err == nil {
		for _, f := range []string{"/etc/hostname", "/etc/hosts"} {
			if m, _ := topMount(ms, t.path(f)); m != nil {
				st.Extra["mounted "+f] = "true"
			}
		}
	}
	return st, nil
}

func (t *hostnameType) path(p string) string { return filepath.Join("/", t.root, p) }

// systemdRuns is sd_booted(3): systemd is the init system.
func (t *hostnameType) systemdRuns() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// staticName is the name /etc/hostname holds: its first line that is not
// a comment, trimmed (as systemd reads it).
func staticName(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

// hostsLine is the recipe's line of /etc/hosts, as Chef writes it: the
// address, fqdn, hostname, the aliases, and the short name when hostname
// has dots.
func hostsLine(r *resources.Resource) string {
	names := []string{}
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	add(r.String("fqdn"))
	add(r.String("hostname"))
	for _, a := range props.StringList(r.Get("aliases")) {
		add(a)
	}
	short, _, _ := strings.Cut(r.String("hostname"), ".")
	add(short)
	return r.String("ipaddress") + " " + strings.Join(names, " ")
}

// hostsEdit finds the lines of /etc/hosts the recipe's line concerns —
// those of its address, and those that name the host (hostname or fqdn)
// — and returns them ("" for none) and the whole new text: the first
// line of the address replaced by the recipe's line (kept when only its
// spacing differs), further lines of the address removed, the host's
// names taken off the other lines (a line left with no name removed), the
// recipe's line appended when the address had none.
func hostsEdit(text string, r *resources.Resource) (before, after string) {
	ip, line := r.String("ipaddress"), hostsLine(r)
	ours := []string{r.String("hostname")}
	if fqdn := r.String("fqdn"); fqdn != "" {
		ours = append(ours, fqdn)
	}
	var b strings.Builder
	var out []string
	placed := false
	for _, l := range splitLines(text) {
		f := strings.Fields(strings.SplitN(l, "#", 2)[0])
		if len(f) < 2 {
			out = append(out, l)
			continue
		}
		switch {
		case sameAddr(f[0], ip):
			b.WriteString(l + "\n")
			if !placed {
				if slices.Equal(f, strings.Fields(line)) {
					out = append(out, l)
				} else {
					out = append(out, line)
				}
				placed = true
			}
		case slices.ContainsFunc(f[1:], func(n string) bool { return slices.Contains(ours, n) }):
			b.WriteString(l + "\n")
			keep := slices.DeleteFunc(slices.Clone(f[1:]), func(n string) bool { return slices.Contains(ours, n) })
			if len(keep) > 0 {
				out = append(out, f[0]+" "+strings.Join(keep, " "))
			}
		default:
			out = append(out, l)
		}
	}
	if !placed {
		out = append(out, line)
	}
	return b.String(), strings.Join(out, "\n") + "\n"
}

// sameAddr compares an address of /etc/hosts with a canonical one.
func sameAddr(field, ip string) bool {
	a, err := netip.ParseAddr(field)
	return err == nil && a.String() == ip
}

// hostsAfter is what the lines of before, those hostsEdit concerns,
// become: what the plan shows the entry becomes.
func hostsAfter(before string, r *resources.Resource) string {
	if before == "" {
		return hostsLine(r) + "\n"
	}
	_, after := hostsEdit(before, r)
	return after
}

// isText reports whether data is UTF-8 in normal form, which toque can
// write back unchanged.
func isText(data []byte) bool {
	return utf8.Valid(data) && cty.StringVal(string(data)).AsString() == string(data)
}

// Plan: set writes the static hostname when /etc/hostname does not hold
// exactly it, sets the kernel's when it differs, and rewrites the lines
// of /etc/hosts that concern the host when ipaddress is set.
func (t *hostnameType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if action != "set" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	name := desired.String("hostname")
	var groups, why []string
	var changes []resources.Change
	systemd := current.Extra["systemd"] == "running"
	if current.Extra["hostname_file"] != "" {
		groups = append(groups, "static")
		changes = append(changes, resources.Change{Property: "static_hostname", Before: current.Values["static_hostname"], After: cty.StringVal(name)})
		if systemd {
			why = append(why, "the static hostname differs: hostnamectl sets it")
		} else {
			why = append(why, t.path("/etc/hostname")+" does not hold exactly "+name)
		}
	}
	if v := current.Values["transient_hostname"]; props.StringOr(v) != name {
		groups = append(groups, "transient")
		changes = append(changes, resources.Change{Property: "transient_hostname", Before: v, After: cty.StringVal(name)})
		if systemd {
			why = append(why, "the kernel's hostname differs: hostnamectl sets it")
		} else {
			why = append(why, "the kernel's hostname differs: sethostname(2) sets it")
		}
	}
	if desired.IsSet("ipaddress") {
		if current.Extra["hosts"] == "not text" {
			return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", t.path("/etc/hosts"))
		}
		before := ""
		if v, ok := current.Values["hosts_entry"]; ok {
			before = v.AsString()
		}
		if after := hostsAfter(before, desired); after != before {
			groups = append(groups, "hosts")
			changes = append(changes, resources.Change{Property: "hosts_entry", Before: current.Values["hosts_entry"], After: knownFrom(desired, cty.StringVal(after), "fqdn", "ipaddress", "aliases")})
			why = append(why, t.path("/etc/hosts")+" does not name the host as the recipe does")
		}
	}
	if len(groups) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "the host is " + name + " already"}, nil
	}
	return needsRoot(&resources.Step{Kind: resources.Update, Reason: strings.Join(why, "; "), Changes: changes, Groups: groups}, "setting the hostname")
}

// Predict is the state set leaves.
func (t *hostnameType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	for _, c := range step.Changes {
		st.Values[c.Property] = c.After
	}
	if step.HasGroup("static") {
		delete(st.Extra, "hostname_file")
	}
	return st, nil
}

// Steps: hostnamectl where systemd runs; otherwise /etc/hostname through
// the file type and sethostname(2); then /etc/hosts, edited through the
// file type. Each name is read back.
func (t *hostnameType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *hostnameType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	name := desired.String("hostname")
	if current.Extra["systemd"] == "running" && (step.HasGroup("static") || step.HasGroup("transient")) {
		args := []string{"set-hostname"}
		if step.HasGroup("static") {
			args = append(args, "--static")
		}
		if step.HasGroup("transient") {
			args = append(args, "--transient")
		}
		if err := t.run(ctx, env, "hostnamectl", append(args, name)...); err != nil {
			return err
		}
	} else {
		if step.HasGroup("static") {
			path := t.path("/etc/hostname")
			if err := editFile(ctx, env, t.file, path, t.inPlace(current, "/etc/hostname"), func(string, bool) (string, bool, error) {
				return name + "\n", false, nil
			}); err != nil {
				return err
			}
		}
		if step.HasGroup("transient") {
			if err := unix.Sethostname([]byte(name)); err != nil {
				return fmt.Errorf("setting the kernel's hostname to %s: %w", name, err)
			}
		}
	}
	if err := t.readBack(step, name); err != nil {
		return err
	}
	if step.HasGroup("hosts") {
		return editFile(ctx, env, t.file, t.path("/etc/hosts"), t.inPlace(current, "/etc/hosts"), func(old string, _ bool) (string, bool, error) {
			_, after := hostsEdit(old, desired)
			return after, false, nil
		})
	}
	return nil
}

// inPlace is the file properties of a file mounted over (a container's
// /etc/hosts), which a rename cannot replace: it is rewritten in place.
func (t *hostnameType) inPlace(current *resources.State, f string) map[string]cty.Value {
	vals := map[string]cty.Value{}
	if current.Extra["mounted "+f] != "" {
		vals["atomic_update"] = cty.False
	}
	return vals
}

// readBack reads the names set again.
func (t *hostnameType) readBack(step *resources.Step, name string) error {
	if step.HasGroup("static") {
		data, err := os.ReadFile(t.path("/etc/hostname"))
		if err != nil {
			return fmt.Errorf("reading back %s: %w", t.path("/etc/hostname"), err)
		}
		if got := staticName(string(data)); got != name {
			return fmt.Errorf("after setting the static hostname, %s holds %q, not %s", t.path("/etc/hostname"), got, name)
		}
	}
	if step.HasGroup("transient") {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return err
		}
		if got := unix.ByteSliceToString(u.Nodename[:]); got != name {
			return fmt.Errorf("after setting the kernel's hostname, it is %q, not %s", got, name)
		}
	}
	return nil
}
