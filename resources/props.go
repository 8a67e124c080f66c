package resources

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/zclconf/go-cty/cty"
)

// This file holds the property helpers the built-in types share: mode,
// owner and group, and small readers of the host that Load methods use.

// MaxMode is the largest permission value a mode may have (setuid, setgid,
// sticky and rwx for user, group and others).
const MaxMode = 07777

// ModeProperty returns a "mode" property whose value is used when the thing
// is created and the recipe does not set one (def is canonical, "0644").
func ModeProperty(def, description string) *Property {
	p := &Property{
		Name:        "mode",
		Type:        cty.DynamicPseudoType,
		Normalize:   NormalizeMode,
		Warn:        WarnDecimalMode,
		Description: description,
	}
	if def != "" {
		p.Default = cty.StringVal(def)
	}
	return p
}

// OwnerProperty returns an "owner" property in converge group "owner".
func OwnerProperty(description string) *Property {
	return &Property{
		Name:        "owner",
		Type:        cty.String,
		Group:       "owner",
		Validate:    validateNonEmpty("owner"),
		HostCheck:   CheckUser,
		Equal:       EqualOwner,
		Description: description,
	}
}

// GroupProperty returns a "group" property in converge group "owner".
func GroupProperty(description string) *Property {
	return &Property{
		Name:        "group",
		Type:        cty.String,
		Group:       "owner",
		Validate:    validateNonEmpty("group"),
		HostCheck:   CheckGroup,
		Equal:       EqualGroup,
		Description: description,
	}
}

func validateNonEmpty(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		if strings.TrimSpace(v.AsString()) == "" {
			return fmt.Errorf("%s must not be empty", name)
		}
		return nil
	}
}

// WarnDecimalMode warns about a mode written as a decimal number whose
// digits read like an octal mode (644, 755, 2775): HCL has no octal
// literals, so it is the numeric mode — 644 is 01204, sticky, and the owner
// cannot read. When the number is also a sensible mode (420 is 0644), the
// warning says both readings; either way a string says it unambiguously.
func WarnDecimalMode(v cty.Value) string {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
		return ""
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || n < 100 || n > 7777 {
		return ""
	}
	digits := strconv.FormatInt(n, 10)
	if strings.Trim(digits, "01234567") != "" {
		return ""
	}
	if n > 0o777 || n&0o400 == 0 {
		return fmt.Sprintf("mode = %s is the decimal number %s, which is the mode 0%o, not 0%s: HCL has no octal numbers. Write the mode as a string: mode = \"0%s\".", digits, digits, n, strings.TrimLeft(digits, "0"), strings.TrimLeft(digits, "0"))
	}
	return fmt.Sprintf("mode = %s is the decimal number %s, which is the mode 0%o. If you meant 0%s, write mode = \"0%s\"; write modes as strings either way (mode = \"0%o\").", digits, digits, n, digits, digits, n)
}

// NormalizeMode turns a mode into its canonical form, a four-digit octal
// string: "644", "0644", "0o644" and the number 420 all become "0644". A
// number is taken as the numeric mode value (HCL has no octal literals, so
// `mode = 644` means 0o1204: write modes as strings). Values above 07777,
// negative or fractional numbers, and strings that are not octal digits are
// errors. Null and unknown values are returned as they are.
func NormalizeMode(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return v, nil
	}
	switch v.Type() {
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		digits := s
		if len(digits) > 2 && (digits[:2] == "0o" || digits[:2] == "0O") {
			digits = digits[2:]
		}
		if digits == "" || strings.Trim(digits, "01234567") != "" {
			return cty.NilVal, fmt.Errorf("mode %q is not an octal number such as \"0644\"", s)
		}
		digits = strings.TrimLeft(digits, "0")
		if len(digits) > 4 {
			return cty.NilVal, fmt.Errorf("mode %q is larger than 07777", s)
		}
		var n uint64
		if digits != "" {
			var err error
			if n, err = strconv.ParseUint(digits, 8, 32); err != nil {
				return cty.NilVal, fmt.Errorf("mode %q is not an octal number such as \"0644\"", s)
			}
		}
		if n > MaxMode {
			return cty.NilVal, fmt.Errorf("mode %q is larger than 07777", s)
		}
		return ModeValue(uint32(n)), nil
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return cty.NilVal, fmt.Errorf("mode %s is not a whole number", bf.Text('g', -1))
		}
		if bf.Sign() < 0 || bf.Cmp(big.NewFloat(MaxMode)) > 0 {
			return cty.NilVal, fmt.Errorf("mode %s is out of range: it must be between 0 and 4095 (07777); write modes as octal strings such as \"0644\"", bf.Text('f', 0))
		}
		n, _ := bf.Uint64()
		return ModeValue(uint32(n)), nil
	default:
		return cty.NilVal, fmt.Errorf("mode must be an octal string such as \"0644\" or a number, not %s", v.Type().FriendlyName())
	}
}

// ModeValue is the canonical mode value of the permission bits m.
func ModeValue(m uint32) cty.Value { return modeValues()[m&MaxMode] }

// modeValues are the 4096 mode values, made once: every Load and every
// comparison of a mode made one.
var modeValues = sync.OnceValue(func() []cty.Value {
	out := make([]cty.Value, MaxMode+1)
	for m := range out {
		out[m] = cty.StringVal(fmt.Sprintf("%04o", m))
	}
	return out
})

// modeBits returns the permission bits of a normalised mode value, and
// whether it was set.
func modeBits(v cty.Value) (uint32, bool, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return 0, false, nil
	}
	nv, err := NormalizeMode(v)
	if err != nil {
		return 0, false, err
	}
	n, err := strconv.ParseUint(nv.AsString(), 8, 32)
	if err != nil {
		return 0, false, err
	}
	return uint32(n), true, nil
}

// EqualOwner compares two owner values by user id: "root" equals "0".
func EqualOwner(a, b cty.Value) bool { return equalIDs(a, b, LookupUID) }

// EqualGroup compares two group values by group id: "root" equals "0".
func EqualGroup(a, b cty.Value) bool { return equalIDs(a, b, LookupGID) }

func equalIDs(a, b cty.Value, lookup func(string) (int, error)) bool {
	if !a.IsKnown() || !b.IsKnown() || a.IsNull() || b.IsNull() ||
		a.Type() != cty.String || b.Type() != cty.String {
		return a.RawEquals(b)
	}
	as, bs := strings.TrimSpace(a.AsString()), strings.TrimSpace(b.AsString())
	if as == bs {
		return true
	}
	ai, aerr := lookup(as)
	bi, berr := lookup(bs)
	if aerr != nil || berr != nil {
		return false
	}
	return ai == bi
}

// LookupUID resolves a user name or numeric id to a uid. An unknown name is
// a *MissingError that names it; a numeric id is accepted as it is.
func LookupUID(s string) (int, error) {
	s = strings.TrimSpace(s)
	if id, err := strconv.Atoi(s); err == nil && id >= 0 {
		return id, nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return 0, &MissingError{Need: Need{Namespace: NamespaceUser, Value: s, What: "user"}}
		}
		return 0, fmt.Errorf("looking up user %q: %w", s, err)
	}
	id, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, fmt.Errorf("user %q has a non-numeric uid %q", s, u.Uid)
	}
	return id, nil
}

// LookupGID resolves a group name or numeric id to a gid. An unknown name is
// a *MissingError that names it; a numeric id is accepted as it is.
func LookupGID(s string) (int, error) {
	s = strings.TrimSpace(s)
	if id, err := strconv.Atoi(s); err == nil && id >= 0 {
		return id, nil
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return 0, &MissingError{Need: Need{Namespace: NamespaceGroup, Value: s, What: "group"}}
		}
		return 0, fmt.Errorf("looking up group %q: %w", s, err)
	}
	id, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %q has a non-numeric gid %q", s, g.Gid)
	}
	return id, nil
}

// Load reports owners by name, and a plan of many files owned by a handful
// of users would otherwise ask the user database (a cgo call through NSS)
// once per file. The caches live for the process: one plan or apply.
var (
	ownerNames sync.Map // uint32 → string
	groupNames sync.Map // uint32 → string
)

// ownerName is how Load reports a uid: the user name when the host knows
// it, else the id.
func ownerName(uid uint32) string {
	if v, ok := ownerNames.Load(uid); ok {
		return v.(string)
	}
	id := strconv.FormatUint(uint64(uid), 10)
	name := id
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		name = u.Username
	}
	ownerNames.Store(uid, name)
	return name
}

// groupName is how Load reports a gid: the group name when the host knows
// it, else the id.
func groupName(gid uint32) string {
	if v, ok := groupNames.Load(gid); ok {
		return v.(string)
	}
	id := strconv.FormatUint(uint64(gid), 10)
	name := id
	if g, err := user.LookupGroupId(id); err == nil && g.Name != "" {
		name = g.Name
	}
	groupNames.Store(gid, name)
	return name
}

// ownership is the uid and gid a converge sets; -1 leaves one as it is.
type ownership struct{ uid, gid int }

// newObjectAttrs are the mode (def when the recipe sets none) and owner a
// new file or directory of desired gets; an error says what creating
// path failed on.
func newObjectAttrs(desired *Resource, path string, def uint32) (uint32, ownership, error) {
	mode, set, err := modeBits(desired.Get("mode"))
	if err != nil {
		return 0, ownership{}, fmt.Errorf("creating %s: %w", path, err)
	}
	if !set {
		mode = def
	}
	own, err := desiredOwnership(desired)
	if err != nil {
		return 0, ownership{}, fmt.Errorf("creating %s: %w", path, err)
	}
	return mode, own, nil
}

// replacementAttrs are the mode and owner of a new inode that replaces
// one whose are live: the live ones, unless the recipe sets others.
func replacementAttrs(live statInfo, mode uint32, modeSet bool, own ownership) (uint32, ownership) {
	m, o := live.mode, ownership{uid: int(live.uid), gid: int(live.gid)}
	if modeSet {
		m = mode
	}
	if own.uid >= 0 {
		o.uid = own.uid
	}
	if own.gid >= 0 {
		o.gid = own.gid
	}
	return m, o
}

// convergeModeOwner sets, on the open file f, the mode and the owner that
// step changes; chown clears setuid and setgid, so a mode holding them is
// set again after it.
func convergeModeOwner(f *os.File, step *Step, mode uint32, modeSet bool, own ownership) error {
	if step.HasGroup("mode") && modeSet {
		if err := chmodFile(f, mode); err != nil {
			return err
		}
	}
	if step.HasGroup("owner") {
		if err := chownFile(f, own); err != nil {
			return err
		}
		if modeSet && mode&0o6000 != 0 {
			return chmodFile(f, mode)
		}
	}
	return nil
}

// desiredOwnership resolves the set owner and group of r to ids. Unset ones
// are -1.
func desiredOwnership(r *Resource) (ownership, error) {
	o := ownership{uid: -1, gid: -1}
	var err error
	if r.IsSet("owner") {
		if o.uid, err = LookupUID(r.String("owner")); err != nil {
			return o, err
		}
	}
	if r.IsSet("group") {
		if o.gid, err = LookupGID(r.String("group")); err != nil {
			return o, err
		}
	}
	return o, nil
}

func (o ownership) none() bool { return o.uid < 0 && o.gid < 0 }

// fileID is the identity of an inode: what Load read, so that Converge can
// check it changes that object and no other. The zero value is unknown.
type fileID struct{ dev, ino uint64 }

func (id fileID) known() bool { return id != fileID{} }

// statInfo is what the built-in types read about one path.
type statInfo struct {
	mode  uint32 // permission bits incl. setuid, setgid, sticky
	uid   uint32
	gid   uint32
	dev   uint64
	ino   uint64
	nlink uint64
}

// newStatInfo is the statInfo of an os.FileInfo.
func newStatInfo(fi os.FileInfo) statInfo {
	si := statInfo{mode: uint32(fi.Mode().Perm())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		si.mode = uint32(st.Mode) & MaxMode
		si.uid, si.gid = st.Uid, st.Gid
		si.dev, si.ino, si.nlink = uint64(st.Dev), uint64(st.Ino), uint64(st.Nlink)
	}
	return si
}

// article returns "a" or "an" for kind.
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// ownerValues are the live mode, owner and group of si.
func ownerValues(si statInfo, withMode bool) map[string]cty.Value {
	v := make(map[string]cty.Value, 4)
	setOwnerValues(v, si, withMode)
	return v
}

// setOwnerValues sets ownerValues' values in v.
func setOwnerValues(v map[string]cty.Value, si statInfo, withMode bool) {
	v["owner"] = cty.StringVal(ownerName(si.uid))
	v["group"] = cty.StringVal(groupName(si.gid))
	if withMode {
		v["mode"] = ModeValue(si.mode)
	}
}

// parentDir is the directory path is in.
func parentDir(path string) string { return filepath.Dir(filepath.Clean(path)) }

// PathProperty returns the name property of a file-system type: an absolute
// path, normalised by CanonicalPath when it is decoded, so that "/s/./a",
// "/s//a" and "/s/a/" are one identity, "/s/a".
func PathProperty(name, description string) *Property {
	return &Property{
		Name:         name,
		Type:         cty.String,
		NameProperty: true,
		Identity:     true,
		Required:     true,
		Normalize:    normalizePath,
		Validate:     validateAbsPath,
		Namespace:    NamespacePath,
		Description:  description,
	}
}

// CanonicalPath is the one form of a path property that toque compares,
// stores and acts on: absolute, without "." components, repeated slashes
// or a trailing slash ("/s/./a", "/s//a" and "/s/a/" all become "/s/a").
// It refuses, without any I/O, what it cannot normalise safely: an empty
// or relative path, a NUL byte, and a ".." component, whose meaning
// depends on the symbolic links along the path (it is refused rather than
// resolved lexically), and the root directory itself.
func CanonicalPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("the path must not be empty")
	case strings.ContainsRune(p, 0):
		return "", errors.New("the path must not contain a NUL byte")
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%q is not an absolute path; toque does not resolve paths against its working directory", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("%q has a \"..\" component; write the path without it (what \"..\" names depends on the symbolic links before it, so toque does not resolve it)", p)
		}
	}
	clean := filepath.Clean(p)
	if clean == "/" {
		return "", errors.New("the path must not be the root directory")
	}
	return clean, nil
}

// normalizePath is the Normalize of a path property: CanonicalPath.
func normalizePath(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	c, err := CanonicalPath(v.AsString())
	if err != nil {
		return cty.NilVal, err
	}
	return cty.StringVal(c), nil
}

// validateAbsPath checks a path property that Normalize has made
// canonical; it refuses the same values, so that a value that bypassed
// Normalize is caught too.
func validateAbsPath(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	_, err := CanonicalPath(v.AsString())
	return err
}

// ManageSymlinkSourceProperty is the non-state property that lets a path
// type follow a symbolic link at its path (Chef's manage_symlink_source,
// Ansible's follow). Without it such a link is a plan error: toque never
// reads or changes what a link leads to unless the recipe asks.
func ManageSymlinkSourceProperty(what string) *Property {
	return &Property{Name: "manage_symlink_source", Type: cty.Bool, NonState: true, Default: cty.False,
		Description: "Follow a symbolic link at path and manage the " + what + " it points to; without it such a link is a plan error. A link another user could have made or replaced is never followed."}
}

// nonNegativeInt validates a whole number >= 0.
func nonNegativeInt(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
			return nil
		}
		bf := v.AsBigFloat()
		if !bf.IsInt() || bf.Sign() < 0 {
			return fmt.Errorf("%s must be a whole number of 0 or more, not %s", name, bf.Text('g', -1))
		}
		return nil
	}
}

// oneOf validates a string against a fixed set.
func oneOf(name string, allowed ...string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		for _, a := range allowed {
			if v.AsString() == a {
				return nil
			}
		}
		return fmt.Errorf("%s must be one of %s, not %q", name, strings.Join(quoteAll(allowed), ", "), v.AsString())
	}
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

// ctxErr is a cancelled context's error, wrapped to name what stopped.
func ctxErr(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// CheckUser is a HostCheck: the user, by name or id, must exist here, or
// be created by an earlier resource of the plan (a *MissingError, which
// the planner makes a need of the step). A numeric id is accepted as it is
// (files may belong to ids with no name).
func CheckUser(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	_, err := LookupUID(v.AsString())
	return err
}

// CheckGroup is a HostCheck: the group, by name or id, must exist here, or
// be created by an earlier resource of the plan (a *MissingError).
func CheckGroup(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	_, err := LookupGID(v.AsString())
	return err
}
