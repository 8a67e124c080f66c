package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// fileType is the built-in "file" type: a regular file's content, mode and
// ownership.
type fileType struct {
	schema *resources.Schema
	// contentWhenSet reads the content only when the recipe sets it (or
	// deletes the file): the "file" recipes declare (BuiltinFileType).
	// Types built on files derive their content and always read it.
	contentWhenSet bool
}

// BuiltinFileType returns the "file" resource type recipes declare: as
// FileType, but a file whose recipe sets only its owner, group or mode is
// read for its metadata, not its content (see Load).
func BuiltinFileType() resources.Type {
	t := FileType().(*fileType)
	t.contentWhenSet = true
	return t
}

// FileType returns the file type for the types built on files (template,
// cron_d, sysctl, systemd_unit), whose Load always reads the content they
// derive.
func FileType() resources.Type {
	return &fileType{schema: &resources.Schema{
		Name:        "file",
		Description: "Manages a regular file: its content, mode and ownership.",
		Properties: []*resources.Property{
			PathProperty("path", "Absolute path of the file; defaults to the block label."),
			{Name: "content", Type: cty.String, Content: true, LoadInput: true,
				Description: "Exact content of the file; unset leaves the content of an existing file as it is (a new file is empty)."},
			ModeProperty("0644", `Permission bits: an octal string ("0644") or a symbolic mode ("go-w"); unset leaves an existing file's mode as it is.`),
			OwnerProperty("Owning user, by name or numeric id; unset leaves it as it is."),
			GroupProperty("Owning group, by name or numeric id; unset leaves it as it is."),
			{Name: "backup", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(5),
				Validate:    props.NonNegativeInt("backup"),
				Description: "How many backups of replaced or deleted content to keep in the state directory; 0 keeps none."},
			{Name: "atomic_update", Type: cty.Bool, NonState: true, Default: cty.True,
				Description: "Write a temporary file and rename it over the path (true), or rewrite the file in place (false)."},
			ManageSymlinkSourceProperty("file"),
			VerifyProperty(),
		},
		Actions:       []string{"create", "create_if_missing", "delete", "touch"},
		DefaultAction: "create",
	}}
}

func (t *fileType) Schema() *resources.Schema { return t.schema }

// Load reads the file at path through held directories (see safefs.go).
// A symbolic link at path is reported as such (Extra kind "symlink",
// link_target) and not followed, unless manage_symlink_source is set: then
// the values are those of the file it points to, and Extra records
// resolved_path and target_kind. Anything other than a regular file is
// reported with its kind and no values; Plan refuses it.
//
// The content is read from the descriptor whose stat gives mode and
// owner, so the values are of one object, which Converge checks it
// changes. Private holds the content when not every user of the host may
// read it (privateContent), and Extra "refused" a regular file with other
// names in a directory other users can write (hardLinkRisk).
//
// The "file" of recipes (BuiltinFileType) reads the content only when the
// recipe sets it (content is LoadInput) or the action deletes the file (the
// plan shows what goes): a file whose recipe sets only its owner, group or
// mode is read for its metadata, so that a user other than root can plan
// one it may not read.
func (t *fileType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	return t.load(ctx, r, !t.contentWhenSet || r.IsSet("content") || r.Action == "delete")
}

// load is Load, reading the content when withContent is set.
func (t *fileType) load(ctx context.Context, r *resources.Resource, withContent bool) (*resources.State, error) {
	path := r.String("path")
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	f, err := lookupPathIn(dirCacheOf(ctx), path, r.Bool("manage_symlink_source"))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.close()
	if st, err := foreseen(ctx, path, f, withContent); st != nil || err != nil {
		return st, err
	}
	st := stateOf(f)
	if !f.exists || (f.link != "" && !f.followed) || f.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return st, nil
	}
	if !withContent {
		si := statInfoOf(&f.st)
		setOwnerValues(st.Values, si, true)
		fsw(st).obj = idOf(&f.st)
		if why := hardLinkRisk(f, si); why != "" {
			st.Extra["refused"] = why
		}
		return st, nil
	}
	data, fst, err := readRegular(f.dir, f.name, idOf(&f.st))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "read" {
			return nil, fmt.Errorf("reading %s: %w", f.path(), err)
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	si := statInfoOf(&fst)
	setOwnerValues(st.Values, si, true)
	fsw(st).obj = idOf(&fst)
	content := cty.StringVal(string(data))
	st.Values["content"] = content
	if !utf8.Valid(data) || content.AsString() != string(data) {
		// A cty string is NFC-normalised UTF-8, so the value above is not
		// byte for byte what the file holds. Recorded so that Plan does
		// not take the two for equal; no digest, which could leak a
		// sensitive file's content.
		st.Extra["content_bytes"] = "not normalised UTF-8"
	}
	if why := privateContent(f, si); why != "" {
		st.Private = map[string]string{"content": why}
	}
	if why := hardLinkRisk(f, si); why != "" {
		st.Extra["refused"] = why
	}
	return st, nil
}

// privateContent says why the current content of the regular file f (stat
// si) must not be shown, or "" when it may be: a plan, and the pull-request
// comment made from it, show current content only when every user of the
// host may read it already — the file is readable by others and every
// directory up to / lets others through. The recipe's author is not
// assumed to be anyone in particular, and naming an owner or a group in
// the recipe does not make a file readable.
func privateContent(f *found, si statInfo) string {
	if si.mode&0o004 == 0 {
		who := fmt.Sprintf("mode %04o, owner %s, group %s", si.mode, props.OwnerName(si.uid), props.GroupName(si.gid))
		return "current content not shown: not every user of this host may read it (" + who + "); a plan shows only what every user may read"
	}
	if ok, err := f.dir.searchable(); err != nil || !ok {
		return "current content not shown: a directory on the way to it is closed to other users; a plan shows only what every user may read"
	}
	return ""
}

// hardLinkRisk says why toque must not change the regular file f (stat si),
// or "": a file with other names (hard links), in a directory a user other
// than root (and toque's own) can write or owns, may be a name that user
// gave to a file they may not change themselves (/etc/shadow), hoping
// toque changes it for them.
func hardLinkRisk(f *found, si statInfo) string {
	if si.nlink < 2 {
		return ""
	}
	ds, err := f.dir.stat()
	if err != nil {
		return fmt.Sprintf("%s has %d names (hard links) and its directory could not be read: %v", f.path(), si.nlink, err)
	}
	why := replaceableBy(&ds, nil)
	if why == "" {
		return ""
	}
	return fmt.Sprintf("%s has %d names (hard links), and %s (%s): another user could have made it a name of a file they may not change, so toque will not change it; remove its other names, or manage it in a directory only root can write", f.path(), si.nlink, why, f.dir.path)
}

// Plan decides what the file's action does. It never does I/O.
func (t *fileType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	step, err := planWithMode(desired, current, 0o644, false, func(d *resources.Resource) (*resources.Step, error) { return t.plan(action, d, current) })
	step, err = withPathNeeds(step, err, current, desired.String("path"), false, false)
	return withForeseen(step, err, current)
}

func (t *fileType) plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("path")
	if current.Exists && current.Extra["kind"] == "symlink" && action == "delete" {
		return &resources.Step{Kind: resources.Delete, Reason: fmt.Sprintf("exists as a symbolic link to %s; delete removes the link, not what it points to", current.Extra["link_target"])}, nil
	}
	if current.Exists && !managesRegularFile(current) {
		return nil, notAFileError(path, current)
	}
	if why := current.Extra["refused"]; why != "" && current.Exists && action != "delete" {
		return nil, errors.New(why)
	}
	switch action {
	case "create":
		return fileConvergeStep(desired, current, false), nil
	case "create_if_missing":
		if current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "exists; create_if_missing leaves it as it is"}, nil
		}
		return fileConvergeStep(desired, current, false), nil
	case "touch":
		return fileConvergeStep(desired, current, true), nil
	case "delete":
		if !current.Exists {
			return &resources.Step{Kind: resources.NoOp, Reason: "does not exist"}, nil
		}
		return &resources.Step{Kind: resources.Delete, Reason: "exists; delete removes it"}, nil
	}
	return nil, resources.UnknownAction(t.schema, action)
}

// managesRegularFile reports whether the reading is a regular file, or a
// followed link to one.
func managesRegularFile(st *resources.State) bool {
	switch st.Extra["kind"] {
	case "file":
		return true
	case "symlink":
		return st.Extra["target_kind"] == "file"
	}
	return false
}

func notAFileError(path string, st *resources.State) error {
	kind := st.Extra["kind"]
	if kind == "symlink" {
		switch st.Extra["target_kind"] {
		case "":
			return fmt.Errorf("%s is a symbolic link to %s; toque does not follow a link at a managed path unless the recipe sets manage_symlink_source = true (or manage the link itself with a link resource)", path, st.Extra["link_target"])
		case "missing":
			return fmt.Errorf("%s is a symbolic link to %s, which does not exist; the file resource will not create a file through a dangling link (manage the link with a link resource)", path, st.Extra["link_target"])
		}
		return fmt.Errorf("%s is a symbolic link to %s, which is %s; the file resource can only manage a regular file", path, st.Extra["link_target"], props.Article(st.Extra["target_kind"]))
	}
	return fmt.Errorf("the file resource cannot manage %s at %s; remove it or use the resource type for it", props.Article(kind), path)
}

// fileConvergeStep is ConvergeIfChanged for files, plus touch. Besides Diff,
// it treats content as differing when Load found bytes that are not
// NFC-normal UTF-8: the desired content, a cty string, always is, so the
// bytes differ even when the two cty values are equal.
func fileConvergeStep(desired *resources.Resource, current *resources.State, touch bool) *resources.Step {
	s := desired.Schema()
	if !current.Exists {
		ch := resources.CreateDiff(desired)
		return &resources.Step{Kind: resources.Create, Reason: "does not exist", Changes: ch, Groups: s.Groups(ch)}
	}
	ch := resources.Diff(desired, current)
	if desired.IsSet("content") && !hasChange(ch, "content") && current.Extra["content_bytes"] != "" {
		ch = append([]resources.Change{{Property: "content", Before: current.Values["content"], After: desired.Values["content"]}}, ch...)
	}
	names := resources.PropertyNames(ch)
	groups := s.Groups(ch)
	reason := ""
	if len(ch) > 0 {
		reason = resources.Differ(names)
	}
	if touch {
		groups = append(groups, "touch")
		if reason != "" {
			reason += "; "
		}
		return &resources.Step{Kind: resources.Update, Reason: reason + "touch updates the modification time", Changes: ch, Groups: groups}
	}
	if len(ch) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state"}
	}
	return &resources.Step{Kind: resources.Update, Reason: reason, Changes: ch, Groups: groups}
}

func hasChange(ch []resources.Change, name string) bool {
	for _, c := range ch {
		if c.Property == name {
			return true
		}
	}
	return false
}

// Steps carry out a step through held directories and descriptors
// (safefs.go): the parent directory is walked again without following
// links another user could have made, a new file is created with O_EXCL
// and renamed into place without replacing anything that appeared since
// Load, and an existing file is changed only after checking it is the
// inode Load read, by descriptor (fchmod, fchown, futimens). Content is
// written atomically (temporary file in the same directory, fsync, rename,
// fsync of the directory) unless atomic_update is false; replaced and
// deleted content is backed up first, from the descriptor.
func (t *fileType) Steps() resources.Steps {
	return resources.Steps{Create: t.create, Update: t.update, Delete: t.delete}
}

// parentError words an error reaching the directory path is in.
func parentError(path, hint string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("parent directory %s does not exist; %s: %w", props.ParentDir(path), hint, fs.ErrNotExist)
	}
	if errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("parent of %s, %s, is not a directory: %w", path, props.ParentDir(path), err)
	}
	return fmt.Errorf("reaching the parent directory of %s: %w", path, err)
}

func (t *fileType) create(ctx context.Context, env *resources.Env, desired *resources.Resource, _ *resources.State, _ *resources.Step) error {
	path := desired.String("path")
	nf, err := newFileOf(desired, path)
	if err != nil {
		return err
	}
	if err := verifyContent(ctx, env, desired, path, nf.content); err != nil {
		nf.dir.close()
		return err
	}
	defer nf.dir.close()
	if desired.Bool("atomic_update") {
		return writeNew(nf.dir, nf.name, nf.content, nf.mode, nf.own)
	}
	return writeNewInPlace(nf.dir, nf.name, nf.content, nf.mode, nf.own)
}

// newFile is what creating a file needs: its held parent directory, its
// name there, and its content, mode and owner.
type newFile struct {
	dir     *heldDir
	name    string
	content []byte
	mode    uint32
	own     ownership
}

// newFileOf works out desired's new file at path and holds its parent.
func newFileOf(desired *resources.Resource, path string) (*newFile, error) {
	mode, own, err := newObjectAttrs(desired, path, 0o644)
	if err != nil {
		return nil, err
	}
	d, name, err := holdParent(path)
	if err != nil {
		return nil, parentError(path, "create it with a directory resource", err)
	}
	return &newFile{dir: d, name: name, content: []byte(desired.String("content")), mode: mode, own: own}, nil
}

// StagePath is the file's path (stage.go).
func (t *fileType) StagePath(desired *resources.Resource) string { return desired.String("path") }

// Stage stages the creation of a file written atomically: the new file
// under its temporary name, with its content, owner and mode, not synced
// (stage.go). Other steps are not staged.
func (t *fileType) Stage(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) (resources.Staged, error) {
	if step.Kind != resources.Create || !desired.Bool("atomic_update") {
		return nil, nil
	}
	path := desired.String("path")
	if err := props.CtxErr(ctx, "converging "+path); err != nil {
		return nil, err
	}
	nf, err := newFileOf(desired, path)
	if err != nil {
		return nil, err
	}
	if err := verifyContent(ctx, env, desired, path, nf.content); err != nil {
		nf.dir.close()
		return nil, err
	}
	s, err := stageNew(nf.dir, nf.name, nf.content, nf.mode, nf.own)
	if err != nil {
		nf.dir.close()
		return nil, err
	}
	return s, nil
}

func (t *fileType) update(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("path")
	f, err := lookupPath(path, desired.Bool("manage_symlink_source"))
	if err != nil {
		return fmt.Errorf("updating %s: %w", path, err)
	}
	defer f.close()
	switch {
	case !f.exists:
		return fmt.Errorf("updating %s: it is gone: %w", path, ErrChanged)
	case f.link != "" && !f.followed:
		return fmt.Errorf("updating %s: it is a symbolic link now: %w", path, ErrChanged)
	case f.followed && f.path() != current.Extra["resolved_path"]:
		return fmt.Errorf("updating %s: the link leads to %s now, not %s: %w", path, f.path(), current.Extra["resolved_path"], ErrChanged)
	}
	if step.HasGroup("content") {
		// Once the file is known to be the one planned on, before
		// anything is written.
		if err := verifyContent(ctx, env, desired, path, []byte(desired.String("content"))); err != nil {
			return err
		}
	}
	real := f.path()
	u, err := openToUpdate(f, desired, current, real)
	if err != nil {
		return err
	}
	defer u.file.Close()
	file, live, own, mode, modeSet := u.file, u.live, u.own, u.mode, u.modeSet
	// target is the inode at the path once the content is written: the
	// old one, or the new one an atomic write renamed there, which
	// already has its mode and owner.
	target, atomic := file, false
	if step.HasGroup("content") {
		backup, err := backupFrom(env, real, file, live.mode, desired.Int("backup"), time.Now())
		if err != nil {
			return err
		}
		content := []byte(desired.String("content"))
		if desired.Bool("atomic_update") {
			// The new inode keeps the old one's mode and owner unless the
			// recipe sets others.
			m, o := replacementAttrs(live, mode, modeSet, own)
			nf, err := replaceAtomic(f.dir, f.name, content, m, o)
			if err != nil {
				return err
			}
			defer nf.Close()
			target, atomic = nf, true
		} else if err := rewriteInPlace(f.dir, f.name, u.id, content, backup); err != nil {
			return err
		}
	}
	if !atomic {
		if err := convergeModeOwner(target, step, mode, modeSet, own); err != nil {
			return err
		}
	}
	if step.HasGroup("touch") {
		if err := touchFd(int(target.Fd())); err != nil {
			return fmt.Errorf("touching %s: %w", real, err)
		}
	}
	return nil
}

func (t *fileType) delete(_ context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, _ *resources.Step) error {
	path := desired.String("path")
	f, err := toDelete(path)
	if f == nil {
		return err
	}
	defer f.close()
	switch f.st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		// Remove the link only; what it points to is not backed up or touched.
	case unix.S_IFREG:
		want := fileID{}
		if current.Extra["kind"] == "file" {
			want = fsr(current).obj
		}
		file, fst, err := openAt(f.dir, f.name, unix.O_RDONLY, unix.S_IFREG, want)
		if err != nil {
			return fmt.Errorf("deleting %s: %w", path, err)
		}
		defer file.Close()
		if _, err := backupFrom(env, path, file, statInfoOf(&fst).mode, desired.Int("backup"), time.Now()); err != nil {
			return err
		}
	default:
		return fmt.Errorf("deleting %s: it is %s now, not a regular file; refusing to delete it", path, props.Article(kindOf(uint32(f.st.Mode))))
	}
	if err := unix.Unlinkat(f.dir.fd, f.name, 0); err != nil {
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return f.dir.sync()
}

// fillFile writes content to the new file f, sets its owner and then its
// mode (chown clears setuid and setgid), and fsyncs it.
func fillFile(f *os.File, content []byte, mode uint32, own ownership) error {
	if err := fillNew(f, content, mode, own); err != nil {
		return err
	}
	return f.Sync()
}

// fillNew is fillFile without the fsync (a staged file: stage.go).
func fillNew(f *os.File, content []byte, mode uint32, own ownership) error {
	if _, err := f.Write(content); err != nil {
		return err
	}
	if err := chownFile(f, own); err != nil {
		return err
	}
	return chmodFile(f, mode)
}

// writeNew creates name in d atomically: a temporary file, filled and
// synced, renamed to name only if nothing is there (so nothing that
// appeared since Load, a link included, is replaced or written through).
func writeNew(d *heldDir, name string, content []byte, mode uint32, own ownership) (err error) {
	path := d.join(name)
	tmp, tmpName, err := createTemp(d, name)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		tmp.Close()
		if err != nil {
			unix.Unlinkat(d.fd, tmpName, 0)
		}
	}()
	if err = fillFile(tmp, content, mode, own); err != nil {
		return fmt.Errorf("creating %s (nothing was changed): %w", path, err)
	}
	if err = renameAt(d, tmpName, name, true); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: something appeared there: %w", path, ErrChanged)
		}
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return d.sync()
}

// writeNewInPlace creates name in d directly (atomic_update = false), with
// O_EXCL and O_NOFOLLOW. A file it could not fill is removed again.
func writeNewInPlace(d *heldDir, name string, content []byte, mode uint32, own ownership) error {
	path := d.join(name)
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("creating %s: something appeared there: %w", path, ErrChanged)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := fillFile(f, content, mode, own); err != nil {
		var st, now unix.Stat_t
		if unix.Fstat(fd, &st) == nil && unix.Fstatat(d.fd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && idOf(&st) == idOf(&now) {
			unix.Unlinkat(d.fd, name, 0)
		}
		return fmt.Errorf("creating %s (removed again): %w", path, err)
	}
	return d.sync()
}

// replaceAtomic writes content to a temporary file in d with mode and
// owner, and renames it over name. It returns the new file, open.
func replaceAtomic(d *heldDir, name string, content []byte, mode uint32, own ownership) (_ *os.File, err error) {
	path := d.join(name)
	tmp, tmpName, err := createTemp(d, name)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			unix.Unlinkat(d.fd, tmpName, 0)
		}
	}()
	if err = fillFile(tmp, content, mode, own); err != nil {
		return nil, fmt.Errorf("writing %s (the file is unchanged): %w", path, err)
	}
	if err = renameAt(d, tmpName, name, false); err != nil {
		return nil, fmt.Errorf("replacing %s: %w", path, err)
	}
	if err = d.sync(); err != nil {
		return nil, err
	}
	return tmp, nil
}

// pwriteAll writes content at the start of f, in chunks of inPlaceChunk,
// and returns how many bytes the kernel says it wrote: os.File.WriteAt
// drops the count of a short write that an error follows, and the error
// must say how far the file was written.
func pwriteAll(f *os.File, content []byte) (int, error) {
	n := 0
	for n < len(content) {
		m, err := unix.Pwrite(int(f.Fd()), content[n:min(n+inPlaceChunk, len(content))], int64(n))
		if m > 0 {
			n += m
		}
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return n, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
		case m == 0:
			return n, &fs.PathError{Op: "write", Path: f.Name(), Err: io.ErrShortWrite}
		}
	}
	return n, nil
}

// inPlaceChunk is how much rewriteInPlace writes per write(2).
const inPlaceChunk = 1 << 20

// reserveSpace is reserve (safefs_*.go); a variable so that tests can play
// a file system without fallocate.
var reserveSpace = reserve

// rewriteInPlace rewrites the regular file name in d, which must be the
// inode want, keeping its inode (atomic_update = false). It first reserves
// the blocks the new content needs (fallocate, where the file system has
// it), so that a full disk fails before the file is touched; a failure
// after the first byte is written says the file is left partially written
// and where its backup is (backup; "" when none was kept).
func rewriteInPlace(d *heldDir, name string, want fileID, content []byte, backup string) error {
	path := d.join(name)
	// Not O_TRUNC: the inode is checked first.
	f, _, err := openAt(d, name, unix.O_WRONLY, unix.S_IFREG, want)
	if err != nil {
		return fmt.Errorf("writing %s in place (atomic_update = false): %w; the file is unchanged", path, err)
	}
	if len(content) > 0 {
		err := reserveSpace(int(f.Fd()), int64(len(content)))
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG) {
			f.Close()
			return fmt.Errorf("writing %s in place (atomic_update = false): cannot reserve %d bytes: %w; the file is unchanged", path, len(content), err)
		}
		// Any other error (EOPNOTSUPP...): this file system reserves
		// nothing ahead; write anyway.
	}
	// Over the old bytes, then cut the rest: the file is never empty in
	// between. In chunks, so that a failure says how far it got even on
	// file systems that fail a whole write they cannot finish.
	n, err := pwriteAll(f, content)
	if err == nil {
		err = f.Truncate(int64(len(content)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return nil
	}
	if n == 0 {
		return fmt.Errorf("writing %s in place (atomic_update = false): %w; the file is unchanged", path, err)
	}
	where := "no backup was kept (backup = 0, or no state directory)"
	if backup != "" {
		where = "its previous content is in the backup " + backup
	}
	return fmt.Errorf("writing %s in place (atomic_update = false) failed after %d of %d bytes: %w; %s is left partially written: %s", path, n, len(content), err, path, where)
}

// toDelete looks path up for a step that deletes what is there: nil and
// no error when nothing is.
func toDelete(path string) (*found, error) {
	f, err := lookupPath(path, false)
	if err != nil {
		return nil, fmt.Errorf("deleting %s: %w", path, err)
	}
	if !f.exists {
		f.close()
		return nil, nil
	}
	return f, nil
}

// updating is the regular file a step updates, opened as the inode Load
// read, with what the recipe wants of its owner and mode (the mode
// resolved against the live one: a symbolic mode).
type updating struct {
	file    *os.File
	id      fileID
	live    statInfo
	own     ownership
	mode    uint32
	modeSet bool
}

// openToUpdate opens the regular file f holds for a step that updates it,
// as the inode Load read (current). shown is the path errors name.
func openToUpdate(f *found, desired *resources.Resource, current *resources.State, shown string) (*updating, error) {
	file, fst, err := openAt(f.dir, f.name, unix.O_RDONLY, unix.S_IFREG, fsr(current).obj)
	if err != nil {
		return nil, fmt.Errorf("updating %s: %w", shown, err)
	}
	u := &updating{file: file, id: idOf(&fst), live: statInfoOf(&fst)}
	if u.own, err = desiredOwnership(desired); err == nil {
		u.mode, u.modeSet, err = modeAgainst(desired.Values["mode"], u.live.mode, false)
	}
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("updating %s: %w", shown, err)
	}
	return u, nil
}
