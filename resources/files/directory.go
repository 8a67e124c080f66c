package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// directoryType is the built-in "directory" type: a directory's existence,
// mode and ownership.
type directoryType struct{ schema *resources.Schema }

// DirectoryType returns the built-in "directory" resource type.
func DirectoryType() resources.Type {
	return &directoryType{schema: &resources.Schema{
		Name:        "directory",
		Description: "Manages a directory: its existence, mode and ownership.",
		Properties: []*resources.Property{
			PathProperty("path", "Absolute path of the directory; defaults to the block label."),
			ModeProperty("0755", `Permission bits: an octal string ("0755") or a symbolic mode ("go-w"); unset leaves an existing directory's mode as it is.`),
			OwnerProperty("Owning user, by name or numeric id; unset leaves it as it is."),
			GroupProperty("Owning group, by name or numeric id; unset leaves it as it is."),
			{Name: "recursive", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "On create, also create missing parent directories; on delete, delete everything inside."},
			ManageSymlinkSourceProperty("directory"),
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *directoryType) Schema() *resources.Schema { return t.schema }

// Load reads the directory at path through held directories. A symbolic
// link at path is reported as such (Extra kind "symlink") and not
// followed, unless manage_symlink_source is set: then the values are those
// of the directory it points to (Extra resolved_path). Anything else that
// is not a directory is reported with its kind and no values, and Plan
// refuses it.
func (t *directoryType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := r.String("path")
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	f, err := lookupPath(path, r.Bool("manage_symlink_source"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.close()
	if st, err := foreseen(ctx, path, f, false); st != nil || err != nil {
		return st, err
	}
	st := stateOf(f)
	if !f.exists || (f.link != "" && !f.followed) || f.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return st, nil
	}
	st.Values = ownerValues(statInfoOf(&f.st), true)
	fsw(st).obj = idOf(&f.st)
	return st, nil
}

func isDirectory(st *resources.State) bool {
	switch st.Extra["kind"] {
	case "directory":
		return true
	case "symlink":
		return st.Extra["target_kind"] == "directory"
	}
	return false
}

// Plan decides what the directory's action does. It never does I/O.
func (t *directoryType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	step, err := planWithMode(desired, current, 0o755, true, func(d *resources.Resource) (*resources.Step, error) { return t.plan(action, d, current) })
	step, err = withPathNeeds(step, err, current, desired.String("path"), true, desired.Bool("recursive"))
	return withForeseen(step, err, current)
}

func (t *directoryType) plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("path")
	if current.Exists && current.Extra["kind"] == "symlink" && action == "delete" {
		return nil, fmt.Errorf("%s is a symbolic link to %s; the directory resource will not delete through a link (delete the link with a link resource)", path, current.Extra["link_target"])
	}
	if current.Exists && !isDirectory(current) {
		if current.Extra["kind"] == "symlink" {
			if current.Extra["target_kind"] == "" {
				return nil, fmt.Errorf("%s is a symbolic link to %s; toque does not follow a link at a managed path unless the recipe sets manage_symlink_source = true (or manage the link itself with a link resource)", path, current.Extra["link_target"])
			}
			return nil, fmt.Errorf("%s is a symbolic link to %s, which is %s; the directory resource can only manage a directory", path, current.Extra["link_target"], props.Article(orMissing(current.Extra["target_kind"])))
		}
		return nil, fmt.Errorf("the directory resource cannot manage %s at %s; remove it or use the resource type for it", props.Article(current.Extra["kind"]), path)
	}
	switch action {
	case "create":
		return resources.ConvergeIfChanged(desired, current), nil
	case "delete":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
		}
		reason := "exists; delete removes it"
		if desired.Bool("recursive") {
			reason = "exists; delete removes it and everything in it (recursive)"
		}
		return &resources.Step{Kind: resources.Delete, Reason: reason}, nil
	}
	return nil, resources.UnknownAction(t.schema, action)
}

func orMissing(kind string) string {
	if kind == "missing" || kind == "" {
		return "missing target"
	}
	return kind
}

// Steps carry out a step through held directories (safefs.go): mkdir
// in the held parent, then chown and chmod through a descriptor of the
// directory opened without following a link and checked to be the one
// made (or, for an update, the one Load read). Directories are never
// backed up.
func (t *directoryType) Steps() resources.Steps {
	return resources.Steps{Create: t.create, Update: t.update, Delete: t.delete}
}

func (t *directoryType) create(_ context.Context, _ *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	path := desired.String("path")
	mode, own, err := newDirAttrs(desired, path, 0o755)
	if err != nil {
		return err
	}
	var d *heldDir
	name := filepath.Base(path)
	if desired.Bool("recursive") {
		// Parents get 0755 (less the umask), like mkdir -p; mode and owner
		// apply to path itself only, as in Chef.
		if d, err = holdDir(props.ParentDir(path), true); err != nil {
			return fmt.Errorf("creating parents of %s: %w", path, err)
		}
	} else if d, name, err = holdParent(path); err != nil {
		return parentError(path, "create it first or set recursive = true", err)
	}
	defer d.close()
	if err := unix.Mkdirat(d.fd, name, 0o700); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("creating %s: something appeared there: %w", path, ErrChanged)
		}
		return fmt.Errorf("creating %s: %w", path, err)
	}
	dir, st, err := openAt(d, name, unix.O_RDONLY, unix.S_IFDIR, fileID{})
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer dir.Close()
	if int64(st.Uid) != int64(os.Geteuid()) {
		// Swapped for another user's directory since the mkdir.
		return fmt.Errorf("creating %s: the directory there belongs to %s, not to toque's user: %w", path, props.OwnerName(st.Uid), ErrChanged)
	}
	if err := chownFile(dir, own); err != nil {
		return err
	}
	// Explicitly, so the umask does not change the result.
	if err := chmodFile(dir, mode); err != nil {
		return err
	}
	return d.sync()
}

// openLoaded opens the directory Load read at path, without following a
// link unless the recipe asks (and the rules allow), checking it is the
// same directory.
func openLoaded(desired *resources.Resource, current *resources.State, path string) (*found, *os.File, error) {
	f, err := lookupPath(path, desired.Bool("manage_symlink_source"))
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !f.exists:
		err = fmt.Errorf("it is gone: %w", ErrChanged)
	case f.link != "" && !f.followed:
		err = fmt.Errorf("it is a symbolic link now: %w", ErrChanged)
	case f.followed && f.path() != current.Extra["resolved_path"]:
		err = fmt.Errorf("the link leads to %s now: %w", f.path(), ErrChanged)
	}
	if err != nil {
		f.close()
		return nil, nil, err
	}
	dir, _, err := openAt(f.dir, f.name, unix.O_RDONLY, unix.S_IFDIR, fsr(current).obj)
	if err != nil {
		f.close()
		return nil, nil, err
	}
	return f, dir, nil
}

func (t *directoryType) update(_ context.Context, _ *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("path")
	f, dir, err := openLoaded(desired, current, path)
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	defer f.close()
	defer dir.Close()
	// The mode a symbolic mode is applied to, before a chown can clear
	// setuid or setgid.
	var live unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &live); err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	if step.HasGroup("owner") {
		own, err := desiredOwnership(desired)
		if err != nil {
			return fmt.Errorf("updating %s: %w", path, err)
		}
		if err := chownFile(dir, own); err != nil {
			return err
		}
	}
	mode, set, err := modeAgainst(desired.Values["mode"], uint32(live.Mode)&MaxMode, true)
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	// chown clears setgid on some systems: set the mode after it when the
	// recipe sets one and either group runs.
	if set && (step.HasGroup("mode") || (step.HasGroup("owner") && mode&0o6000 != 0)) {
		if err := chmodFile(dir, mode); err != nil {
			return err
		}
	}
	return nil
}

func (t *directoryType) delete(_ context.Context, _ *resources.Env, desired *resources.Resource, current *resources.State, _ *resources.Step) error {
	path := desired.String("path")
	f, err := toDelete(path)
	if f == nil {
		return err
	}
	defer f.close()
	if f.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("deleting %s: it is %s now, not a directory; refusing to delete it", path, props.Article(kindOf(uint32(f.st.Mode))))
	}
	if desired.Bool("recursive") {
		dir, _, err := openAt(f.dir, f.name, unix.O_RDONLY, unix.S_IFDIR, fsr(current).obj)
		if err != nil {
			return fmt.Errorf("deleting %s: %w", path, err)
		}
		err = removeContents(int(dir.Fd()), path)
		dir.Close()
		if err != nil {
			return fmt.Errorf("deleting %s and everything in it: %w", path, err)
		}
	}
	if err := unix.Unlinkat(f.dir.fd, f.name, unix.AT_REMOVEDIR); err != nil {
		if (errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST)) && desired.Bool("recursive") {
			return fmt.Errorf("deleting %s: something keeps being created in it while it is deleted", path)
		}
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("directory %s is not empty; set recursive = true to delete it and everything in it", path)
		}
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return f.dir.sync()
}

// removeContents removes everything in the directory open as dirfd (at
// path, for messages), never following a symbolic link: each entry is
// unlinked relative to its directory's descriptor, and a subdirectory is
// entered with O_NOFOLLOW.
func removeContents(dirfd int, path string) error {
	for pass := 0; ; pass++ {
		rd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		lister := os.NewFile(uintptr(rd), path)
		names, err := lister.Readdirnames(-1)
		lister.Close()
		if err != nil {
			return err
		}
		if len(names) == 0 || pass == 3 {
			return nil // what still appears is reported by the rmdir that follows
		}
		for _, name := range names {
			err := unix.Unlinkat(dirfd, name, 0)
			if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
				err = removeDirAt(dirfd, name, path+"/"+name)
			}
			if err != nil && !errors.Is(err, unix.ENOENT) {
				return &fs.PathError{Op: "remove", Path: path + "/" + name, Err: err}
			}
		}
	}
}

// removeDirAt removes the directory name in dirfd and everything in it.
func removeDirAt(dirfd int, name, path string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = removeContents(fd, path)
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}
