package resources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/zclconf/go-cty/cty"
)

// directoryType is the built-in "directory" type: a directory's existence,
// mode and ownership.
type directoryType struct{ schema *Schema }

// DirectoryType returns the built-in "directory" resource type.
func DirectoryType() Type {
	return &directoryType{schema: &Schema{
		Name:        "directory",
		Description: "Manages a directory: its existence, mode and ownership.",
		Properties: []*Property{
			PathProperty("path", "Absolute path of the directory; defaults to the block label."),
			ModeProperty("0755", `Permission bits as an octal string ("0755"); unset leaves an existing directory's mode as it is.`),
			OwnerProperty("Owning user, by name or numeric id; unset leaves it as it is."),
			GroupProperty("Owning group, by name or numeric id; unset leaves it as it is."),
			{Name: "recursive", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "On create, also create missing parent directories; on delete, delete everything inside."},
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *directoryType) Schema() *Schema { return t.schema }

// Load reads the directory at path. A symbolic link to a directory is
// followed (Extra kind "symlink"); anything else that is not a directory is
// reported with its kind and no values, and Plan refuses it.
func (t *directoryType) Load(ctx context.Context, r *Resource) (*State, error) {
	st, _, si, found, err := loadPath(ctx, r.String("path"))
	if err != nil || !found {
		return st, err
	}
	if !si.fi.IsDir() {
		return st, nil
	}
	st.Values = ownerValues(si, true)
	return st, nil
}

func isDirectory(st *State) bool {
	switch st.Extra["kind"] {
	case "directory":
		return true
	case "symlink":
		return st.Extra["target_kind"] == "directory"
	}
	return false
}

// Plan decides what the directory's action does. It never does I/O.
func (t *directoryType) Plan(desired *Resource, current *State) (*Step, error) {
	action := effectiveAction(desired)
	if action == "nothing" {
		return nothingStep(), nil
	}
	if !t.schema.HasAction(action) {
		return nil, unknownAction(t.schema, action)
	}
	path := desired.String("path")
	if current.Exists && !isDirectory(current) {
		if current.Extra["kind"] == "symlink" {
			return nil, fmt.Errorf("%s is a symbolic link to %s, which is %s; the directory resource can only manage a directory", path, current.Extra["link_target"], article(orMissing(current.Extra["target_kind"])))
		}
		return nil, fmt.Errorf("the directory resource cannot manage %s at %s; remove it or use the resource type for it", article(current.Extra["kind"]), path)
	}
	switch action {
	case "create":
		return ConvergeIfChanged(desired, current), nil
	case "delete":
		if !current.Exists {
			return &Step{Kind: NoOp, Reason: "does not exist"}, nil
		}
		if current.Extra["kind"] == "symlink" {
			return nil, fmt.Errorf("%s is a symbolic link to the directory %s; the directory resource will not delete through a link (delete the link with a link resource)", path, current.Extra["link_target"])
		}
		reason := "exists; delete removes it"
		if desired.Bool("recursive") {
			reason = "exists; delete removes it and everything in it (recursive)"
		}
		return &Step{Kind: Delete, Reason: reason}, nil
	}
	return nil, unknownAction(t.schema, action)
}

func orMissing(kind string) string {
	if kind == "missing" || kind == "" {
		return "missing target"
	}
	return kind
}

// Converge carries out step. Directories are never backed up.
func (t *directoryType) Converge(ctx context.Context, env *Env, desired *Resource, current *State, step *Step) error {
	path := desired.String("path")
	if err := ctxErr(ctx, "converging "+path); err != nil {
		return err
	}
	switch step.Kind {
	case NoOp, Skip:
		return nil
	case Create:
		return t.create(desired, path)
	case Update:
		return t.update(desired, path, step)
	case Delete:
		return t.delete(desired, path)
	}
	return fmt.Errorf("directory %s: cannot carry out a %s step", path, step.Kind)
}

func (t *directoryType) create(desired *Resource, path string) error {
	mode, set, err := modeBits(desired.Get("mode"))
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if !set {
		mode = 0o755
	}
	own, err := desiredOwnership(desired)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if desired.Bool("recursive") {
		// Parents get 0755 (less the umask), like mkdir -p; mode and owner
		// apply to path itself only, as in Chef.
		if err := os.MkdirAll(parentDir(path), 0o755); err != nil {
			return fmt.Errorf("creating parents of %s: %w", path, err)
		}
	} else if err := checkParent(path, "create it first or set recursive = true"); err != nil {
		return err
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if err := chownPath(path, own, false); err != nil {
		return err
	}
	// Explicitly, so the umask does not change the result.
	if err := chmodPath(path, mode); err != nil {
		return err
	}
	return syncDir(parentDir(path))
}

func (t *directoryType) update(desired *Resource, path string, step *Step) error {
	if step.HasGroup("owner") {
		own, err := desiredOwnership(desired)
		if err != nil {
			return fmt.Errorf("updating %s: %w", path, err)
		}
		if err := chownPath(path, own, false); err != nil {
			return err
		}
	}
	mode, set, err := modeBits(desired.Values["mode"])
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	// chown clears setgid on some systems: set the mode after it when the
	// recipe sets one and either group runs.
	if set && (step.HasGroup("mode") || (step.HasGroup("owner") && mode&0o6000 != 0)) {
		if err := chmodPath(path, mode); err != nil {
			return err
		}
	}
	return nil
}

func (t *directoryType) delete(desired *Resource, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("deleting %s: it is %s now, not a directory; refusing to delete it", path, article(fileKind(fi.Mode())))
	}
	if desired.Bool("recursive") {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("deleting %s and everything in it: %w", path, err)
		}
	} else if err := os.Remove(path); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("directory %s is not empty; set recursive = true to delete it and everything in it", path)
		}
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return syncDir(parentDir(path))
}
