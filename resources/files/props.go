package files

import (
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// This file holds the property helpers the built-in types share: mode,
// owner and group, and small readers of the host that Load methods use.

// MaxMode is the largest permission value a mode may have (setuid, setgid,
// sticky and rwx for user, group and others).
const MaxMode = 07777

// ModeProperty returns a "mode" property whose value is used when the thing
// is created and the recipe does not set one (def is canonical, "0644").
func ModeProperty(def, description string) *resources.Property {
	p := &resources.Property{
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
func OwnerProperty(description string) *resources.Property {
	return &resources.Property{
		Name:        "owner",
		Type:        cty.String,
		Group:       "owner",
		Validate:    props.ValidateNonEmpty("owner"),
		HostCheck:   props.CheckUser,
		Equal:       props.EqualOwner,
		Description: description,
	}
}

// GroupProperty returns a "group" property in converge group "owner".
func GroupProperty(description string) *resources.Property {
	return &resources.Property{
		Name:        "group",
		Type:        cty.String,
		Group:       "owner",
		Validate:    props.ValidateNonEmpty("group"),
		HostCheck:   props.CheckGroup,
		Equal:       props.EqualGroup,
		Description: description,
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
// string: "644", "0644", "0o644" and the number 420 all become "0644"; a
// symbolic mode ("go-w", "u=rwx,g=rx,o=", "a+X", chmod's) is checked and
// kept as it is written, trimmed, since what it means depends on the mode
// it is applied to (symmode.go: a type's Plan resolves it). A
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
			if looksSymbolic(s) {
				m, err := parseSymbolicMode(s)
				if err != nil {
					return cty.NilVal, err
				}
				return cty.StringVal(m.text), nil
			}
			return cty.NilVal, fmt.Errorf("mode %q is not an octal number such as \"0644\" nor a symbolic mode such as \"go-w\"", s)
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
	if isSymbolicMode(nv) {
		return 0, false, fmt.Errorf("mode %q is symbolic: it must be resolved against a mode first (modeAgainst)", nv.AsString())
	}
	n, err := strconv.ParseUint(nv.AsString(), 8, 32)
	if err != nil {
		return 0, false, err
	}
	return uint32(n), true, nil
}

// ownership is the uid and gid a converge sets; -1 leaves one as it is.
type ownership struct{ uid, gid int }

// newObjectAttrs are the mode (def when the recipe sets none; a symbolic
// mode applied to def) and owner a new file of desired gets; an error says
// what creating path failed on.
func newObjectAttrs(desired *resources.Resource, path string, def uint32) (uint32, ownership, error) {
	return newAttrs(desired, path, def, false)
}

// newDirAttrs is newObjectAttrs for a new directory (whose X in a symbolic
// mode is always an execute bit).
func newDirAttrs(desired *resources.Resource, path string, def uint32) (uint32, ownership, error) {
	return newAttrs(desired, path, def, true)
}

func newAttrs(desired *resources.Resource, path string, def uint32, isDir bool) (uint32, ownership, error) {
	mode, set, err := modeAgainst(desired.Get("mode"), def, isDir)
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
func convergeModeOwner(f *os.File, step *resources.Step, mode uint32, modeSet bool, own ownership) error {
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
func desiredOwnership(r *resources.Resource) (ownership, error) {
	o := ownership{uid: -1, gid: -1}
	var err error
	if r.IsSet("owner") {
		if o.uid, err = props.LookupUID(r.String("owner")); err != nil {
			return o, err
		}
	}
	if r.IsSet("group") {
		if o.gid, err = props.LookupGID(r.String("group")); err != nil {
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

// ownerValues are the live mode, owner and group of si.
func ownerValues(si statInfo, withMode bool) map[string]cty.Value {
	v := make(map[string]cty.Value, 4)
	setOwnerValues(v, si, withMode)
	return v
}

// setOwnerValues sets ownerValues' values in v.
func setOwnerValues(v map[string]cty.Value, si statInfo, withMode bool) {
	v["owner"] = cty.StringVal(props.OwnerName(si.uid))
	v["group"] = cty.StringVal(props.GroupName(si.gid))
	if withMode {
		v["mode"] = ModeValue(si.mode)
	}
}

// PathProperty returns the name property of a file-system type: an absolute
// path, normalised by CanonicalPath when it is decoded, so that "/s/./a",
// "/s//a" and "/s/a/" are one identity, "/s/a".
func PathProperty(name, description string) *resources.Property {
	return &resources.Property{
		Name:         name,
		Type:         cty.String,
		NameProperty: true,
		Identity:     true,
		Required:     true,
		Normalize:    props.NormalizePath,
		Validate:     props.ValidateAbsPath,
		Namespace:    resources.NamespacePath,
		Description:  description,
	}
}

// ManageSymlinkSourceProperty is the non-state property that lets a path
// type follow a symbolic link at its path (Chef's manage_symlink_source,
// Ansible's follow). Without it such a link is a plan error: toque never
// reads or changes what a link leads to unless the recipe asks.
func ManageSymlinkSourceProperty(what string) *resources.Property {
	return &resources.Property{Name: "manage_symlink_source", Type: cty.Bool, NonState: true, Default: cty.False,
		Description: "Follow a symbolic link at path and manage the " + what + " it points to; without it such a link is a plan error. A link another user could have made or replaced is never followed."}
}
