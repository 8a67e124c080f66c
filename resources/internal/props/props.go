package props

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

func ValidateNonEmpty(name string) func(cty.Value) error {
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
			return 0, &resources.MissingError{Need: resources.Need{Namespace: resources.NamespaceUser, Value: s, What: "user"}}
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
			return 0, &resources.MissingError{Need: resources.Need{Namespace: resources.NamespaceGroup, Value: s, What: "group"}}
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

// OwnerName is how Load reports a uid: the user name when the host knows
// it, else the id.
func OwnerName(uid uint32) string {
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

// GroupName is how Load reports a gid: the group name when the host knows
// it, else the id.
func GroupName(gid uint32) string {
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

// Article returns "a" or "an" for kind.
func Article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// ParentDir is the directory path is in.
func ParentDir(path string) string { return filepath.Dir(filepath.Clean(path)) }

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

// NormalizePath is the Normalize of a path property: CanonicalPath.
func NormalizePath(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	c, err := CanonicalPath(v.AsString())
	if err != nil {
		return cty.NilVal, err
	}
	return cty.StringVal(c), nil
}

// ValidateAbsPath checks a path property that Normalize has made
// canonical; it refuses the same values, so that a value that bypassed
// Normalize is caught too.
func ValidateAbsPath(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	_, err := CanonicalPath(v.AsString())
	return err
}

// NonNegativeInt validates a whole number >= 0.
func NonNegativeInt(name string) func(cty.Value) error {
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

// OneOf validates a string against a fixed set.
func OneOf(name string, allowed ...string) func(cty.Value) error {
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

// CtxErr is a cancelled context's error, wrapped to name what stopped.
func CtxErr(ctx context.Context, what string) error {
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
