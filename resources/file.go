package resources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/words"
)

// fileType is the built-in "file" type: a regular file's content, mode and
// ownership.
type fileType struct{ schema *Schema }

// FileType returns the built-in "file" resource type.
func FileType() Type {
	return &fileType{schema: &Schema{
		Name:        "file",
		Description: "Manages a regular file: its content, mode and ownership.",
		Properties: []*Property{
			PathProperty("path", "Absolute path of the file; defaults to the block label."),
			{Name: "content", Type: cty.String, Content: true,
				Description: "Exact content of the file; unset leaves the content of an existing file as it is (a new file is empty)."},
			ModeProperty("0644", `Permission bits as an octal string ("0644"); unset leaves an existing file's mode as it is.`),
			OwnerProperty("Owning user, by name or numeric id; unset leaves it as it is."),
			GroupProperty("Owning group, by name or numeric id; unset leaves it as it is."),
			{Name: "backup", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(5),
				Validate:    nonNegativeInt("backup"),
				Description: "How many backups of replaced or deleted content to keep in the state directory; 0 keeps none."},
			{Name: "atomic_update", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "Write a temporary file and rename it over the path (true), or rewrite the file in place (false)."},
		},
		Actions:       []string{"create", "create_if_missing", "delete", "touch"},
		DefaultAction: "create",
	}}
}

func (t *fileType) Schema() *Schema { return t.schema }

// Load reads the file at path. A symbolic link is followed (Chef's
// manage_symlink_source): the values are those of the file it points to and
// Extra records kind "symlink", link_target and resolved_path. Anything other
// than a regular file is reported with its kind and no values; Plan refuses
// it.
func (t *fileType) Load(ctx context.Context, r *Resource) (*State, error) {
	st, real, si, found, err := loadPath(ctx, r.String("path"))
	if err != nil || !found {
		return st, err
	}
	if !si.fi.Mode().IsRegular() {
		return st, nil
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", real, err)
	}
	for k, v := range ownerValues(si, true) {
		st.Values[k] = v
	}
	content := cty.StringVal(string(data))
	st.Values["content"] = content
	if !utf8.Valid(data) || content.AsString() != string(data) {
		// A cty string is NFC-normalised UTF-8, so the value above is not
		// byte for byte what the file holds. Recorded so that Plan does
		// not take the two for equal; no digest, which could leak a
		// sensitive file's content.
		st.Extra["content_bytes"] = "not normalised UTF-8"
	}
	return st, nil
}

// loadPath is the start of Load for a path-named type: nothing there
// (Absent), or a State with Extra "kind", following a symbolic link (Extra
// records where it leads). found is true when something exists at the end
// of the path, whose real path and stat are returned; the caller reads its
// values into st.
func loadPath(ctx context.Context, path string) (st *State, real string, si statInfo, found bool, err error) {
	if err := ctxErr(ctx, "reading "+path); err != nil {
		return nil, "", si, false, err
	}
	si, absent, err := lstat(path)
	if err != nil {
		return nil, "", si, false, err
	}
	if absent {
		return Absent(), "", si, false, nil
	}
	kind := fileKind(si.fi.Mode())
	st = &State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{"kind": kind}}
	real = path
	if kind == "symlink" {
		var ok bool
		if real, si, ok, err = followLink(path, st); err != nil || !ok {
			return st, "", si, false, err
		}
	}
	return st, real, si, true, nil
}

// followLink records what the symbolic link at path points to in st.Extra
// and returns the resolved path and its stat. ok is false when the link
// does not lead to anything (target_kind "missing").
func followLink(path string, st *State) (string, statInfo, bool, error) {
	target, err := os.Readlink(path)
	if err != nil {
		return "", statInfo{}, false, fmt.Errorf("reading link %s: %w", path, err)
	}
	st.Extra["link_target"] = target
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		st.Extra["target_kind"] = "missing"
		return "", statInfo{}, false, nil
	}
	if err != nil {
		return "", statInfo{}, false, fmt.Errorf("following link %s: %w", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", statInfo{}, false, fmt.Errorf("reading %s (the target of link %s): %w", real, path, err)
	}
	si := newStatInfo(fi)
	st.Extra["resolved_path"] = real
	st.Extra["target_kind"] = fileKind(fi.Mode())
	return real, si, true, nil
}

// Plan decides what the file's action does. It never does I/O.
func (t *fileType) Plan(desired *Resource, current *State) (*Step, error) {
	action := effectiveAction(desired)
	if action == "nothing" {
		return nothingStep(), nil
	}
	if !t.schema.HasAction(action) {
		return nil, unknownAction(t.schema, action)
	}
	path := desired.String("path")
	if current.Exists && !managesRegularFile(current) {
		if action == "delete" && current.Extra["kind"] == "symlink" {
			return &Step{Kind: Delete, Reason: fmt.Sprintf("exists as a symbolic link to %s; delete removes the link, not what it points to", current.Extra["link_target"])}, nil
		}
		return nil, notAFileError(path, current)
	}
	switch action {
	case "create":
		return fileConvergeStep(desired, current, false), nil
	case "create_if_missing":
		if current.Exists {
			return &Step{Kind: NoOp, Reason: "exists; create_if_missing leaves it as it is"}, nil
		}
		return fileConvergeStep(desired, current, false), nil
	case "touch":
		return fileConvergeStep(desired, current, true), nil
	case "delete":
		if !current.Exists {
			return &Step{Kind: NoOp, Reason: "does not exist"}, nil
		}
		if current.Extra["kind"] == "symlink" {
			return &Step{Kind: Delete, Reason: fmt.Sprintf("exists as a symbolic link to %s; delete removes the link, not what it points to", current.Extra["link_target"])}, nil
		}
		return &Step{Kind: Delete, Reason: "exists; delete removes it"}, nil
	}
	return nil, unknownAction(t.schema, action)
}

// managesRegularFile reports whether the reading is a regular file, or a
// link to one.
func managesRegularFile(st *State) bool {
	switch st.Extra["kind"] {
	case "file":
		return true
	case "symlink":
		return st.Extra["target_kind"] == "file"
	}
	return false
}

func notAFileError(path string, st *State) error {
	kind := st.Extra["kind"]
	if kind == "symlink" {
		if st.Extra["target_kind"] == "missing" {
			return fmt.Errorf("%s is a symbolic link to %s, which does not exist; the file resource will not create a file through a dangling link (manage the link with a link resource)", path, st.Extra["link_target"])
		}
		return fmt.Errorf("%s is a symbolic link to %s, which is %s; the file resource can only manage a regular file", path, st.Extra["link_target"], article(st.Extra["target_kind"]))
	}
	return fmt.Errorf("the file resource cannot manage %s at %s; remove it or use the resource type for it", article(kind), path)
}

// fileConvergeStep is ConvergeIfChanged for files, plus touch. Besides Diff,
// it treats content as differing when Load found bytes that are not
// NFC-normal UTF-8: the desired content, a cty string, always is, so the
// bytes differ even when the two cty values are equal.
func fileConvergeStep(desired *Resource, current *State, touch bool) *Step {
	s := desired.Schema()
	if !current.Exists {
		ch := CreateDiff(desired)
		return &Step{Kind: Create, Reason: "does not exist", Changes: ch, Groups: s.Groups(ch)}
	}
	ch := Diff(desired, current)
	if desired.IsSet("content") && !hasChange(ch, "content") && current.Extra["content_bytes"] != "" {
		ch = append([]Change{{Property: "content", Before: current.Values["content"], After: desired.Values["content"]}}, ch...)
	}
	names := make([]string, len(ch))
	for i, c := range ch {
		names[i] = c.Property
	}
	groups := s.Groups(ch)
	reason := ""
	if len(ch) > 0 {
		reason = words.Join(names, "") + " differ" + pluralS(len(names))
	}
	if touch {
		groups = append(groups, "touch")
		if reason != "" {
			reason += "; "
		}
		return &Step{Kind: Update, Reason: reason + "touch updates the modification time", Changes: ch, Groups: groups}
	}
	if len(ch) == 0 {
		return &Step{Kind: NoOp, Reason: "already in the desired state"}
	}
	return &Step{Kind: Update, Reason: reason, Changes: ch, Groups: groups}
}

func hasChange(ch []Change, name string) bool {
	for _, c := range ch {
		if c.Property == name {
			return true
		}
	}
	return false
}

// Converge carries out step. Content is written atomically (temporary file
// in the same directory, fsync, rename, fsync of the directory) unless
// atomic_update is false; replaced and deleted content is backed up first.
func (t *fileType) Converge(ctx context.Context, env *Env, desired *Resource, current *State, step *Step) error {
	path := desired.String("path")
	if err := ctxErr(ctx, "converging "+path); err != nil {
		return err
	}
	switch step.Kind {
	case NoOp, Skip:
		return nil
	case Create:
		return t.create(env, desired, path)
	case Update:
		return t.update(env, desired, current, path, step)
	case Delete:
		return t.delete(env, desired, current, path)
	}
	return fmt.Errorf("file %s: cannot carry out a %s step", path, step.Kind)
}

func (t *fileType) create(env *Env, desired *Resource, path string) error {
	if err := checkParent(path, "create it with a directory resource"); err != nil {
		return err
	}
	mode, set, err := modeBits(desired.Get("mode"))
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if !set {
		mode = 0o644
	}
	own, err := desiredOwnership(desired)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	content := []byte(desired.String("content"))
	if desired.Bool("atomic_update") {
		return writeAtomic(path, content, mode, own)
	}
	return writeInPlace(path, content, mode, own, true)
}

func (t *fileType) update(env *Env, desired *Resource, current *State, path string, step *Step) error {
	real := path
	if current.Extra["kind"] == "symlink" {
		real = current.Extra["resolved_path"]
		if real == "" {
			return fmt.Errorf("updating %s: the link's target was not resolved when it was read", path)
		}
	}
	if step.HasGroup("content") {
		fi, err := os.Stat(real)
		if err != nil {
			return fmt.Errorf("updating %s: %w", real, err)
		}
		live := newStatInfo(fi)
		mode, set, err := modeBits(desired.Values["mode"])
		if err != nil {
			return fmt.Errorf("updating %s: %w", real, err)
		}
		if !set {
			mode = live.mode
		}
		own, err := desiredOwnership(desired)
		if err != nil {
			return fmt.Errorf("updating %s: %w", real, err)
		}
		if _, err := backupFile(env, real, desired.Int("backup"), time.Now()); err != nil {
			return err
		}
		content := []byte(desired.String("content"))
		if desired.Bool("atomic_update") {
			// The new inode must keep the owner of the old one unless
			// the recipe sets another.
			if own.uid < 0 {
				own.uid = int(live.uid)
			}
			if own.gid < 0 {
				own.gid = int(live.gid)
			}
			if err := writeAtomic(real, content, mode, own); err != nil {
				return err
			}
		} else if err := writeInPlace(real, content, mode, ownership{-1, -1}, false); err != nil {
			return err
		}
	}
	if step.HasGroup("mode") {
		mode, set, err := modeBits(desired.Values["mode"])
		if err != nil {
			return fmt.Errorf("updating %s: %w", real, err)
		}
		if set {
			if err := chmodPath(real, mode); err != nil {
				return err
			}
		}
	}
	if step.HasGroup("owner") {
		own, err := desiredOwnership(desired)
		if err != nil {
			return fmt.Errorf("updating %s: %w", real, err)
		}
		if err := chownPath(real, own, false); err != nil {
			return err
		}
		if mode, set, _ := modeBits(desired.Values["mode"]); set && mode&0o6000 != 0 {
			// chown clears setuid and setgid; put them back.
			if err := chmodPath(real, mode); err != nil {
				return err
			}
		}
	}
	if step.HasGroup("touch") {
		now := time.Now()
		if err := os.Chtimes(real, now, now); err != nil {
			return fmt.Errorf("touching %s: %w", real, err)
		}
	}
	return nil
}

func (t *fileType) delete(env *Env, desired *Resource, current *State, path string) error {
	si, absent, err := lstat(path)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	if absent {
		return nil
	}
	switch {
	case si.fi.Mode()&os.ModeSymlink != 0:
		// Remove the link only; what it points to is not backed up or touched.
	case si.fi.Mode().IsRegular():
		if _, err := backupFile(env, path, desired.Int("backup"), time.Now()); err != nil {
			return err
		}
	default:
		return fmt.Errorf("deleting %s: it is %s now, not a regular file; refusing to delete it", path, article(fileKind(si.fi.Mode())))
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return syncDir(parentDir(path))
}

// writeAtomic writes content to a temporary file next to path, sets its
// owner and mode, fsyncs it, renames it over path and fsyncs the directory.
func writeAtomic(path string, content []byte, mode uint32, own ownership) (err error) {
	if err := checkParent(path, "create it with a directory resource"); err != nil {
		return err
	}
	dir := parentDir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".toque-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(content); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if !own.none() {
		if err = tmp.Chown(own.uid, own.gid); err != nil {
			return fmt.Errorf("setting the owner of %s: %w", path, err)
		}
	}
	// After chown, which clears setuid and setgid.
	if err = syscall.Fchmod(int(tmp.Fd()), mode); err != nil {
		return fmt.Errorf("setting the mode of %s to %04o: %w", path, mode, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return syncDir(dir)
}

// writeInPlace rewrites path (creating it when create is true) without
// changing its inode.
func writeInPlace(path string, content []byte, mode uint32, own ownership, create bool) error {
	flags := os.O_WRONLY | os.O_TRUNC
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(content)
	if err == nil && create {
		if !own.none() {
			err = f.Chown(own.uid, own.gid)
		}
		if err == nil {
			err = syscall.Fchmod(int(f.Fd()), mode)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if create {
		return syncDir(parentDir(path))
	}
	return nil
}
