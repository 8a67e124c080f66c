package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
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
type linkType struct{ schema *resources.Schema }

// LinkType returns the built-in "link" resource type.
func LinkType() resources.Type {
	return &linkType{schema: &resources.Schema{
		Name:        "link",
		Description: "Manages a symbolic or hard link.",
		Properties: []*resources.Property{
			PathProperty("target_file", "Absolute path of the link itself; defaults to the block label."),
			{Name: "to", Type: cty.String, Group: "link", LoadInput: true,
				Validate:    props.ValidateNonEmpty("to"),
				Description: "What the link points to; required for create. A relative hard-link source is taken relative to the link's directory."},
			{Name: "link_type", Type: cty.String, Group: "link", Default: cty.StringVal("symbolic"),
				Validate:    props.OneOf("link_type", "symbolic", "hard"),
				Description: `"symbolic" or "hard".`},
			OwnerProperty("Owning user of the link (lchown), by name or numeric id; for a hard link, of the shared inode."),
			GroupProperty("Owning group of the link (lchown), by name or numeric id; for a hard link, of the shared inode."),
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *linkType) Schema() *resources.Schema { return t.schema }

// Load reads target_file without following it, from its held parent
// directory (safefs.go). See linkType for how a hard link is recognised;
// its source is found from the same held directory (a relative `to` is
// relative to it), without following a final link, as link(2) does.
func (t *linkType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := r.String("target_file")
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	d, name, err := holdParent(path)
	if errors.Is(err, fs.ErrNotExist) {
		st := resources.Absent()
		fsw(st).parentMissing = true
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer d.close()
	unwritable := ""
	if hostexec.EffectiveUID() != 0 && !dirWritable(d) {
		unwritable = d.path
	}
	ls, exists, err := statAt(d, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		st := resources.Absent()
		if r.IsSet("to") {
			// For Converge to check that the hard link it makes is to
			// what was read; a source that cannot be read now is not an
			// error (it may be made by an earlier resource).
			if sst, ok, _ := linkSource(d, r.String("to")); ok {
				fsw(st).src = idOf(&sst)
			}
		}
		fsw(st).dirUnwritable = unwritable
		return st, nil
	}
	kind := kindOf(uint32(ls.Mode))
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{"kind": kind}}
	fsw(st).dirUnwritable, fsw(st).ownerUID, fsw(st).ownerKnown = unwritable, int(ls.Uid), true
	si := statInfoOf(&ls)
	switch kind {
	case "symlink":
		to, err := readlinkAt(d, name)
		if err != nil {
			return nil, err
		}
		fsw(st).obj = idOf(&ls)
		st.Values = ownerValues(si, false)
		st.Values["to"] = cty.StringVal(to)
		st.Values["link_type"] = cty.StringVal("symbolic")
	case "file":
		fsw(st).obj = idOf(&ls)
		st.Values = ownerValues(si, false)
		st.Values["link_type"] = cty.StringVal("hard")
		st.Extra["nlink"] = strconv.FormatUint(si.nlink, 10)
		if r.IsSet("to") {
			sst, ok, err := linkSource(d, r.String("to"))
			switch {
			case err != nil:
				return nil, fmt.Errorf("reading %s (the link source of %s): %w", r.String("to"), path, err)
			case !ok:
				st.Extra["to_kind"] = "missing"
			default:
				fsw(st).src = idOf(&sst)
				if idOf(&sst) == fsr(st).obj {
					st.Values["to"] = cty.StringVal(r.String("to"))
				}
			}
		}
	}
	return st, nil
}

// linkSource lstat-s what `to` names, relative to the link's held
// directory d. ok is false when nothing is there.
func linkSource(d *heldDir, to string) (unix.Stat_t, bool, error) {
	var st unix.Stat_t
	dup, err := d.dup()
	if err != nil {
		return st, false, err
	}
	sd, sname, err := holdFrom(dup, to)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	defer sd.close()
	return statAt(sd, sname)
}

// Plan decides what the link's action does. It never does I/O.
func (t *linkType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	step, err := t.plan(action, desired, current)
	return withPathNeeds(step, err, current, desired.String("target_file"), false, false)
}

func (t *linkType) plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("target_file")
	linkType := desired.String("link_type")
	kind := current.Extra["kind"]
	if current.Exists && kind != "symlink" && kind != "file" {
		return nil, fmt.Errorf("%s is %s; the link resource will not replace or delete it", path, props.Article(kind))
	}
	switch action {
	case "create":
		if !desired.IsSet("to") {
			return nil, fmt.Errorf("link %s: to is required for action create", path)
		}
		if !current.Exists {
			return resources.ConvergeIfChanged(desired, current), nil
		}
		if kind == "file" {
			if linkType != "hard" {
				return nil, fmt.Errorf("%s is a regular file, not a symbolic link; refusing to replace it with a link (delete it with a file resource first if it should become one)", path)
			}
			if _, same := current.Values["to"]; !same && current.Extra["nlink"] == "1" {
				return nil, fmt.Errorf("%s is a regular file with no other names, not a hard link to %s; refusing to replace it and lose its content (delete it with a file resource first if it should become a link)", path, desired.String("to"))
			}
		}
		return resources.ConvergeIfChanged(desired, current), nil
	case "delete":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
		}
		if linkType != "hard" {
			if kind != "symlink" {
				return nil, fmt.Errorf("%s is a regular file, not a symbolic link; refusing to delete it", path)
			}
			return &resources.Step{Kind: resources.Delete, Reason: "exists; delete removes the link, not what it points to"}, nil
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
		return &resources.Step{Kind: resources.Delete, Reason: "exists; delete removes this name of the file, not its other names"}, nil
	}
	return nil, resources.UnknownAction(t.schema, action)
}

// Steps carry out a step in the held parent directory of target_file
// (safefs.go). A link is made at a temporary name there, checked, given
// its owner through a descriptor of the link itself, and renamed over
// target_file (never over something that appeared since Load, for a
// create), so it is replaced atomically.
func (t *linkType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *linkType) converge(_ context.Context, _ *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("target_file")
	d, name, err := holdParent(path)
	if err != nil {
		return parentError(path, "create it with a directory resource", err)
	}
	defer d.close()
	if step.Kind == resources.Delete {
		return t.delete(d, name, desired, current, path)
	}
	own, err := desiredOwnership(desired)
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if step.Kind == resources.Create || step.HasGroup("link") {
		return makeLink(d, name, desired, current, own, step.Kind == resources.Create)
	}
	if step.HasGroup("owner") {
		return chownEntry(d, name, own, fsr(current).obj)
	}
	return nil
}

// makeLink creates a link to `to` at a temporary name next to name in d,
// sets its owner, and renames it over name (only when nothing is there,
// for a create). When own leaves an id unset and a symbolic link is
// replaced, the old link's owner is kept.
func makeLink(d *heldDir, name string, desired *resources.Resource, current *resources.State, own ownership, create bool) (err error) {
	path := d.join(name)
	to, linkType := desired.String("to"), desired.String("link_type")
	if to == "" {
		return fmt.Errorf("link %s: to is required to create it", path)
	}
	old, oldExists, err := statAt(d, name)
	if err != nil {
		return err
	}
	if !create && fsr(current).obj.known() && (!oldExists || idOf(&old) != fsr(current).obj) {
		return fmt.Errorf("link %s: %w", path, ErrChanged)
	}
	if linkType == "symbolic" && oldExists && old.Mode&unix.S_IFMT == unix.S_IFLNK {
		if own.uid < 0 {
			own.uid = int(old.Uid)
		}
		if own.gid < 0 {
			own.gid = int(old.Gid)
		}
	}
	tmp := tempName(name, "link")
	if err := removeLeftover(d, tmp); err != nil {
		return err
	}
	want := fileID{}
	if linkType == "hard" {
		dup, err := d.dup()
		if err != nil {
			return err
		}
		sd, sname, err := holdFrom(dup, to)
		if err != nil {
			return fmt.Errorf("creating hard link %s to %s: %w", path, to, err)
		}
		err = unix.Linkat(sd.fd, sname, d.fd, tmp, 0)
		sd.close()
		if err != nil {
			return fmt.Errorf("creating hard link %s to %s: %w", path, to, err)
		}
		want = fsr(current).src
	} else if err := unix.Symlinkat(to, d.fd, tmp); err != nil {
		return fmt.Errorf("creating symbolic link %s to %s: %w", path, to, err)
	}
	defer func() {
		if err != nil {
			unix.Unlinkat(d.fd, tmp, 0)
		}
	}()
	made, err := checkMade(d, tmp, linkType, want)
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if err = chownEntry(d, tmp, own, made); err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if err = renameAt(d, tmp, name, create); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: something appeared there: %w", path, ErrChanged)
		}
		return fmt.Errorf("replacing %s with a link: %w", path, err)
	}
	// rename(2) does nothing when both names are one inode (a hard link
	// made again): drop the temporary name in that case.
	if st, ok, _ := statAt(d, tmp); ok && idOf(&st) == made {
		unix.Unlinkat(d.fd, tmp, 0)
	}
	return d.sync()
}

// checkMade checks that the temporary name tmp in d is the link just made
// (a symbolic link; or a regular file that is the inode want, when
// known), not something swapped in, and returns its identity.
func checkMade(d *heldDir, tmp, linkType string, want fileID) (fileID, error) {
	st, ok, err := statAt(d, tmp)
	if err != nil {
		return fileID{}, err
	}
	kind := uint32(unix.S_IFLNK)
	if linkType == "hard" {
		kind = unix.S_IFREG
	}
	if !ok || uint32(st.Mode)&unix.S_IFMT != kind || (want.known() && idOf(&st) != want) {
		return fileID{}, fmt.Errorf("the link made at %s was replaced, or its source is not the file read: %w", d.join(tmp), ErrChanged)
	}
	return idOf(&st), nil
}

// chownEntry sets the owner of the entry name in d, a symbolic link itself
// included, through a descriptor of it checked to be the inode want (when
// known). Unset ids (-1) are kept.
func chownEntry(d *heldDir, name string, own ownership, want fileID) error {
	if own.none() {
		return nil
	}
	fd, err := openNoFollow(d.fd, name)
	if errors.Is(err, unix.ENOSYS) {
		// No O_PATH here: by name, not following a link.
		if err := unix.Fchownat(d.fd, name, own.uid, own.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("setting the owner of %s: %w", d.join(name), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the owner of %s: %w", d.join(name), err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("setting the owner of %s: %w", d.join(name), err)
	}
	if want.known() && idOf(&st) != want {
		return fmt.Errorf("setting the owner of %s: %w", d.join(name), ErrChanged)
	}
	if err := chownFd(fd, own.uid, own.gid); err != nil {
		return fmt.Errorf("setting the owner of %s: %w", d.join(name), err)
	}
	return nil
}

func (t *linkType) delete(d *heldDir, name string, desired *resources.Resource, current *resources.State, path string) error {
	st, exists, err := statAt(d, name)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	if !exists {
		return nil
	}
	kind := uint32(st.Mode) & unix.S_IFMT
	if desired.String("link_type") == "hard" {
		if kind != unix.S_IFREG {
			return fmt.Errorf("deleting %s: it is %s now, not a hard link; refusing to delete it", path, props.Article(kindOf(kind)))
		}
	} else if kind != unix.S_IFLNK {
		return fmt.Errorf("deleting %s: it is %s now, not a symbolic link; refusing to delete it", path, props.Article(kindOf(kind)))
	}
	if fsr(current).obj.known() && idOf(&st) != fsr(current).obj {
		return fmt.Errorf("deleting %s: %w", path, ErrChanged)
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return d.sync()
}
