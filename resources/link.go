package resources

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/zclconf/go-cty/cty"
)

// linkType is the built-in "link" type: a symbolic or hard link.
//
// How Load tells a hard link from a plain file. A symbolic link carries its
// target, so Load reads `to` from it (Readlink). A hard link carries nothing:
// it is a second name of an inode, indistinguishable from any other regular
// file unless it is compared with the file it should be a link to. Chef's
// link provider reads new_resource.to in load_current_resource for this, and
// the seed passes load_current_value the desired resource "in case it is
// needed". toque's LoadView hides desired-state properties from Load, so
// `to` is marked LoadInput: Load receives the desired `to` and reports it as
// the live value only when target_file and `to` are the same inode
// (os.SameFile). Otherwise the live `to` is left unset (unknowable), so a
// set `to` differs and Plan re-links. `to` stays a desired-state property:
// it is compared, shown in the diff and converged like any other.
//
// Safety rules, decided in Plan from what Load recorded in Extra (kind,
// nlink): a link never replaces a directory; a symbolic link never replaces a
// regular file; a hard link replaces a regular file only when that file has
// other names (nlink > 1), so no content is lost; delete removes only a
// link (a symbolic link, or for link_type "hard" a file with other names or
// the same inode as `to`).
type linkType struct{ schema *Schema }

// LinkType returns the built-in "link" resource type.
func LinkType() Type {
	return &linkType{schema: &Schema{
		Name:        "link",
		Description: "Manages a symbolic or hard link.",
		Properties: []*Property{
			PathProperty("target_file", "Absolute path of the link itself; defaults to the block label."),
			{Name: "to", Type: cty.String, Group: "link", LoadInput: true,
				Validate:    validateNonEmpty("to"),
				Description: "What the link points to; required for create. A relative hard-link source is taken relative to the link's directory."},
			{Name: "link_type", Type: cty.String, Group: "link", Default: cty.StringVal("symbolic"),
				Validate:    oneOf("link_type", "symbolic", "hard"),
				Description: `"symbolic" or "hard".`},
			OwnerProperty("Owning user of the link (lchown), by name or numeric id; for a hard link, of the shared inode."),
			GroupProperty("Owning group of the link (lchown), by name or numeric id; for a hard link, of the shared inode."),
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *linkType) Schema() *Schema { return t.schema }

// hardLinkSource is the path a hard link to `to` is made from: `to` itself
// when absolute, else `to` in target's directory.
func hardLinkSource(target, to string) string {
	if filepath.IsAbs(to) {
		return to
	}
	return filepath.Join(parentDir(target), to)
}

// Load reads target_file without following it. See linkType for how a hard
// link is recognised.
func (t *linkType) Load(ctx context.Context, r *Resource) (*State, error) {
	path := r.String("target_file")
	if err := ctxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	si, absent, err := lstat(path)
	if err != nil {
		return nil, err
	}
	if absent {
		return Absent(), nil
	}
	kind := fileKind(si.fi.Mode())
	st := &State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{"kind": kind}}
	switch kind {
	case "symlink":
		to, err := os.Readlink(path)
		if err != nil {
			return nil, fmt.Errorf("reading link %s: %w", path, err)
		}
		st.Values = ownerValues(si, false)
		st.Values["to"] = cty.StringVal(to)
		st.Values["link_type"] = cty.StringVal("symbolic")
	case "file":
		st.Values = ownerValues(si, false)
		st.Values["link_type"] = cty.StringVal("hard")
		st.Extra["nlink"] = strconv.FormatUint(si.nlink, 10)
		if r.IsSet("to") {
			src := hardLinkSource(path, r.String("to"))
			fi, err := os.Stat(src)
			switch {
			case errors.Is(err, os.ErrNotExist):
				st.Extra["to_kind"] = "missing"
			case err != nil:
				return nil, fmt.Errorf("reading %s (the link source of %s): %w", src, path, err)
			case os.SameFile(fi, si.fi):
				st.Values["to"] = cty.StringVal(r.String("to"))
			}
		}
	}
	return st, nil
}

// Plan decides what the link's action does. It never does I/O.
func (t *linkType) Plan(desired *Resource, current *State) (*Step, error) {
	action := effectiveAction(desired)
	if action == "nothing" {
		return nothingStep(), nil
	}
	if !t.schema.HasAction(action) {
		return nil, unknownAction(t.schema, action)
	}
	path := desired.String("target_file")
	linkType := desired.String("link_type")
	kind := current.Extra["kind"]
	if current.Exists && kind != "symlink" && kind != "file" {
		return nil, fmt.Errorf("%s is %s; the link resource will not replace or delete it", path, article(kind))
	}
	switch action {
	case "create":
		if !desired.IsSet("to") {
			return nil, fmt.Errorf("link %s: to is required for action create", path)
		}
		if !current.Exists {
			return ConvergeIfChanged(desired, current), nil
		}
		if kind == "file" {
			if linkType != "hard" {
				return nil, fmt.Errorf("%s is a regular file, not a symbolic link; refusing to replace it with a link (delete it with a file resource first if it should become one)", path)
			}
			if _, same := current.Values["to"]; !same && current.Extra["nlink"] == "1" {
				return nil, fmt.Errorf("%s is a regular file with no other names, not a hard link to %s; refusing to replace it and lose its content (delete it with a file resource first if it should become a link)", path, desired.String("to"))
			}
		}
		return ConvergeIfChanged(desired, current), nil
	case "delete":
		if !current.Exists {
			return &Step{Kind: NoOp, Reason: "does not exist"}, nil
		}
		if linkType != "hard" {
			if kind != "symlink" {
				return nil, fmt.Errorf("%s is a regular file, not a symbolic link; refusing to delete it", path)
			}
			return &Step{Kind: Delete, Reason: "exists; delete removes the link, not what it points to"}, nil
		}
		if kind != "file" {
			return nil, fmt.Errorf("%s is a symbolic link, not a hard link; refusing to delete it with link_type \"hard\"", path)
		}
		if desired.IsSet("to") {
			if _, same := current.Values["to"]; !same {
				return nil, fmt.Errorf("%s is not a hard link to %s; refusing to delete it", path, desired.String("to"))
			}
		} else if current.Extra["nlink"] == "1" {
			return nil, fmt.Errorf("%s is a regular file with no other names, not a hard link; refusing to delete it", path)
		}
		return &Step{Kind: Delete, Reason: "exists; delete removes this name of the file, not its other names"}, nil
	}
	return nil, unknownAction(t.schema, action)
}

// Converge carries out step. A link is made at a temporary name in the same
// directory and renamed over target_file, so it is replaced atomically.
func (t *linkType) Converge(ctx context.Context, env *Env, desired *Resource, current *State, step *Step) error {
	path := desired.String("target_file")
	if err := ctxErr(ctx, "converging "+path); err != nil {
		return err
	}
	switch step.Kind {
	case NoOp, Skip:
		return nil
	case Create, Update:
	case Delete:
		return t.delete(desired, path)
	default:
		return fmt.Errorf("link %s: cannot carry out a %s step", path, step.Kind)
	}
	own, err := desiredOwnership(desired)
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if step.Kind == Create || step.HasGroup("link") {
		return makeLink(path, desired.String("to"), desired.String("link_type"), own)
	}
	if step.HasGroup("owner") {
		return chownPath(path, own, true)
	}
	return nil
}

// makeLink creates a link to `to` at a temporary name next to path, sets
// its owner, and renames it over path. When own leaves an id unset and a
// symbolic link is replaced, the old link's owner is kept.
func makeLink(path, to, linkType string, own ownership) error {
	if to == "" {
		return fmt.Errorf("link %s: to is required to create it", path)
	}
	if err := checkParent(path, "create it with a directory resource"); err != nil {
		return err
	}
	if linkType == "symbolic" {
		if old, absent, err := lstat(path); err == nil && !absent && old.fi.Mode()&os.ModeSymlink != 0 {
			if own.uid < 0 {
				own.uid = int(old.uid)
			}
			if own.gid < 0 {
				own.gid = int(old.gid)
			}
		}
	}
	dir := parentDir(path)
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".toque-"+rand.Text()[:12])
	var err error
	if linkType == "hard" {
		src := hardLinkSource(path, to)
		if err = os.Link(src, tmp); err != nil {
			return fmt.Errorf("creating hard link %s to %s: %w", path, src, err)
		}
	} else if err = os.Symlink(to, tmp); err != nil {
		return fmt.Errorf("creating symbolic link %s to %s: %w", path, to, err)
	}
	if err = chownPath(tmp, own, true); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("link %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replacing %s with a link: %w", path, err)
	}
	// rename(2) does nothing when both names are one inode (a hard link
	// made again): drop the temporary name in that case.
	if _, err := os.Lstat(tmp); err == nil {
		os.Remove(tmp)
	}
	return syncDir(dir)
}

func (t *linkType) delete(desired *Resource, path string) error {
	si, absent, err := lstat(path)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	if absent {
		return nil
	}
	m := si.fi.Mode()
	if desired.String("link_type") == "hard" {
		if !m.IsRegular() {
			return fmt.Errorf("deleting %s: it is %s now, not a hard link; refusing to delete it", path, article(fileKind(m)))
		}
	} else if m&os.ModeSymlink == 0 {
		return fmt.Errorf("deleting %s: it is %s now, not a symbolic link; refusing to delete it", path, article(fileKind(m)))
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return syncDir(parentDir(path))
}
