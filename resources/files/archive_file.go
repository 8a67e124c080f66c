package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// archiveFileType is the built-in "archive_file" type, Chef's: extracts
// a local archive (tar, compressed or not, or zip) into a directory. Its
// reading is the archive's sha256 and listing (archive_read.go) and what
// the destination holds at each of its names (archive_dest.go); the plan
// lists what extraction writes as a manifest diff, and the steps write
// exactly that, from a content-addressed copy of the archive, through
// held directories (archive_extract.go).
type archiveFileType struct {
	schema *resources.Schema
	// cacheDir is where the archive is copied to be extracted, and where
	// a plan looks for the bytes of a checksum when path does not exist
	// yet: the download cache remote_file fills, in the run ctx is of.
	cacheDir func(ctx context.Context) string
}

// ArchiveFileType returns the built-in "archive_file" type, which uses
// remote_file's download cache.
func ArchiveFileType() resources.Type {
	return newArchiveFileType(CacheDir)
}

// Defaults of archive_file.
const defaultArchiveMaxSize = 4 << 30

// Options archive_file knows (Chef's extraction flags, as strings).
var archiveOptions = []string{"time", "permissions", "owner"}

func newArchiveFileType(cacheDir func(context.Context) string) *archiveFileType {
	mode := ModeProperty("0755", `Permission bits of destination when archive_file makes it (Chef's); the entries get the archive's. Not compared.`)
	mode.NonState = true
	owner := OwnerProperty("Owning user of everything extracted (and of destination when made); unset: toque's user.")
	group := GroupProperty("Owning group of everything extracted (and of destination when made); unset: toque's group.")
	owner.NonState, group.NonState = true, true
	// The archive is read, not managed: a remote_file that writes it is
	// not a second manager of the path.
	archive := PathProperty("path", "Absolute path of the archive; defaults to the block label.")
	archive.Namespace = ""
	return &archiveFileType{cacheDir: cacheDir, schema: &resources.Schema{
		Name:        "archive_file",
		Description: "Extracts a tar (gzip, bzip2, xz, zstd) or zip archive into a directory.",
		Properties: []*resources.Property{
			archive,
			{Name: "destination", Type: cty.String, Identity: true, Required: true, Normalize: props.NormalizePath, Validate: props.ValidateAbsPath,
				Description: "Absolute path of the directory to extract into; made when missing (its parent must exist)."},
			{Name: "files", Type: cty.String, NonState: true, Content: true, Validate: readOnlyFiles,
				Description: "What the archive's names hold in destination, one line each: read by toque and shown as a diff of what extraction writes; a recipe does not set it."},
			{Name: "archive", Type: cty.String, NonState: true, Validate: readOnlyArchive,
				Description: "The sha256 of the archive at path: read by toque; a recipe does not set it (see checksum)."},
			{Name: "checksum", Type: cty.String, NonState: true, Normalize: props.NormalizeChecksum,
				Description: "The sha256 the archive must have (64 hex digits); with it a plan made before path exists lists the archive from the download cache."},
			{Name: "overwrite", Type: cty.DynamicPseudoType, NonState: true, Default: cty.StringVal("false"), Normalize: normalizeOverwrite,
				Description: `Existing entries that differ from the archive: false leaves them, true replaces them, "auto" replaces those whose modification time is not the archive's.`},
			{Name: "strip_components", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(0), Validate: props.NonNegativeInt("strip_components"),
				Description: "Leading name components to remove from each entry (tar --strip-components)."},
			mode, owner, group,
			{Name: "options", Type: cty.List(cty.String), NonState: true, Default: cty.ListVal([]cty.Value{cty.StringVal("time")}), Validate: validateArchiveOptions,
				Description: `Extraction flags: "time" (the archive's modification times), "permissions" (its exact permission bits, setuid and setgid included), "owner" (its owners; root only).`},
			{Name: "max_size", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(defaultArchiveMaxSize), Validate: props.PositiveInt("max_size"),
				Description: "The most bytes of files an archive may hold (4 GiB by default)."},
		},
		Actions:       []string{"extract"},
		DefaultAction: "extract",
	}}
}

func (t *archiveFileType) Schema() *resources.Schema { return t.schema }

func readOnlyFiles(v cty.Value) error {
	if v.IsNull() {
		return nil
	}
	return errors.New("files is what the archive's names hold in destination, read by toque; a recipe does not set it")
}

func readOnlyArchive(v cty.Value) error {
	if v.IsNull() {
		return nil
	}
	return errors.New("archive is the sha256 of the archive, read by toque; to require one, set checksum")
}

// normalizeOverwrite makes overwrite one of "false", "true" and "auto".
func normalizeOverwrite(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	switch {
	case v.Type() == cty.Bool:
		return cty.StringVal(fmt.Sprint(v.True())), nil
	case v.Type() == cty.String:
		switch s := v.AsString(); s {
		case "true", "false", "auto":
			return v, nil
		}
	}
	return cty.NilVal, fmt.Errorf(`overwrite must be true, false or "auto", not %s`, shownValue(v))
}

func shownValue(v cty.Value) string {
	if v.Type() == cty.String {
		return fmt.Sprintf("%q", v.AsString())
	}
	return v.Type().FriendlyName()
}

func validateArchiveOptions(v cty.Value) error {
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || !slices.Contains(archiveOptions, e.AsString()) {
			return fmt.Errorf(`options: %s is not an extraction flag toque knows; it knows "time", "permissions" and "owner"`, shownValue(e))
		}
	}
	return nil
}

// archiveOpts are a resource's extraction settings.
type archiveOpts struct {
	read      archiveReadOptions
	overwrite string
	time      bool
	// archiveOwner gives entries the archive's owners (option owner),
	// unless owner or group set them.
	archiveOwner bool
}

func optsOf(r *resources.Resource) archiveOpts {
	o := archiveOpts{overwrite: r.String("overwrite")}
	if o.overwrite == "" {
		o.overwrite = "false"
	}
	flags := props.StringList(r.Get("options"))
	o.read = archiveReadOptions{strip: r.Int("strip_components"), permissions: slices.Contains(flags, "permissions"), maxSize: int64(r.Int("max_size"))}
	if o.read.maxSize <= 0 {
		o.read.maxSize = defaultArchiveMaxSize
	}
	o.time = slices.Contains(flags, "time")
	o.archiveOwner = slices.Contains(flags, "owner")
	return o
}

// archiveReading is what Load hands Plan and the steps (State.Local):
// the listing (nil when the archive cannot be read yet) and what
// destination holds at its names.
type archiveReading struct {
	listing *archiveListing
	live    map[string]*liveEntry
	// owner and group are the names the manifest shows entries owned by
	// ("" when it does not show them); uid and gid what extraction sets
	// (-1: toque's own, or the archive's with the owner option).
	owner, group string
	uid, gid     int
	opts         archiveOpts
	// parentMissing is set when destination's parent does not exist;
	// unwritable when toque (not root) may not write in destination.
	parentMissing, unwritable bool
}

// Extra keys of an archive_file reading.
const (
	xArchive       = "archive"        // "missing" when path does not exist
	xArchiveFormat = "archive_format" // "tar.gz"…
	xArchiveSize   = "archive_size"
	xRefused       = "refused"          // why the archive is refused
	xChecksum      = "checksum_refused" // the archive has another sha256 than checksum
	xDestKind      = "destination_kind" // what destination is, when not a directory
	xFromCache     = "listed_from"      // the cache blob the listing came from
)

// Load reads the archive (its sha256 and listing) and what destination
// holds at each of its names.
func (t *archiveFileType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path, dest := r.String("path"), r.String("destination")
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	st := &resources.State{Values: map[string]cty.Value{}, Extra: map[string]string{}}
	rd := &archiveReading{opts: optsOf(r), uid: -1, gid: -1}
	st.Local = rd
	if err := rd.owners(r); err != nil {
		return nil, err
	}
	df, err := lookupPath(dest, true)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dest, err)
	}
	switch {
	case !df.exists:
		rd.parentMissing = df.dir == nil
	case df.st.Mode&unix.S_IFMT != unix.S_IFDIR:
		st.Exists = true
		st.Extra[xDestKind] = kindOf(uint32(df.st.Mode))
	default:
		st.Exists = true
		if hostexec.EffectiveUID() != 0 && unix.Faccessat(df.dir.fd, df.name, unix.W_OK|unix.X_OK, unix.AT_EACCESS) != nil {
			rd.unwritable = true
		}
	}
	df.close()
	if r.EffectiveAction() == "nothing" {
		return st, nil
	}
	if err := t.readArchiveOf(ctx, r, rd, st); err != nil {
		return nil, err
	}
	if rd.listing == nil || !st.Exists || st.Extra[xDestKind] != "" {
		return st, nil
	}
	rd.live, err = readLive(dest, rd.listing, rd.opts.overwrite != "false")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, e := range rd.listing.entries {
		if le := rd.live[e.name]; le.exists() {
			lines = append(lines, le.line(e, rd))
		}
	}
	st.Values["files"] = cty.StringVal(joinLines(lines))
	return st, nil
}

// owners decides who extracted entries belong to and how the manifest
// shows it. An owner or group that does not exist yet (an earlier
// resource makes it: a need, from HostCheck) is shown by the name the
// recipe gives, and resolved at apply.
func (rd *archiveReading) owners(r *resources.Resource) error {
	if u := r.String("owner"); u != "" {
		rd.owner = u
		if uid, err := props.LookupUID(u); err == nil {
			rd.uid, rd.owner = uid, props.OwnerName(uint32(uid))
		}
	}
	if g := r.String("group"); g != "" {
		rd.group = g
		if gid, err := props.LookupGID(g); err == nil {
			rd.gid, rd.group = gid, props.GroupName(uint32(gid))
		}
	}
	return nil
}

// readArchiveOf reads the archive at path into rd and st: its sha256
// (Values archive, and the fingerprint), format and listing. When path
// does not exist, the listing comes from the download cache's copy of
// checksum, if there is one.
func (t *archiveFileType) readArchiveOf(ctx context.Context, r *resources.Resource, rd *archiveReading, st *resources.State) error {
	path, want := r.String("path"), r.String("checksum")
	af, err := lookupPath(path, true)
	if err != nil {
		return fmt.Errorf("reading the archive %s: %w", path, err)
	}
	defer af.close()
	if !af.exists {
		st.Extra[xArchive] = "missing"
		if want == "" {
			return nil
		}
		c, err := openCache(t.cacheDir(ctx))
		if err != nil {
			return err
		}
		size, ok := c.cached(want)
		if !ok {
			return nil
		}
		blob, err := os.Open(c.blob(want))
		if err != nil {
			return nil // removed meanwhile: listed at apply
		}
		defer blob.Close()
		st.Extra[xFromCache] = "download cache"
		return rd.list(blob, size, want, st)
	}
	if af.st.Mode&unix.S_IFMT != unix.S_IFREG {
		st.Extra[xRefused] = fmt.Sprintf("the archive %s is %s, not a file", path, props.Article(kindOf(uint32(af.st.Mode))))
		return nil
	}
	f, fst, err := openAt(af.dir, af.name, unix.O_RDONLY, unix.S_IFREG, idOf(&af.st))
	if err != nil {
		return fmt.Errorf("reading the archive %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fst.Size)); err != nil {
		return fmt.Errorf("reading the archive %s: %w", path, err)
	}
	sha := hex.EncodeToString(h.Sum(nil))
	if want != "" && sha != want {
		st.Extra[xChecksum] = fmt.Sprintf("the archive %s has sha256 %s, not checksum %s", path, sha, want)
		return nil
	}
	return rd.list(f, fst.Size, sha, st)
}

// list reads the listing of the archive in f, whose sha256 is sha.
func (rd *archiveReading) list(f io.ReaderAt, size int64, sha string, st *resources.State) error {
	st.Values["archive"] = cty.StringVal(sha)
	st.Extra[xArchiveSize] = fmt.Sprint(size)
	l, err := readArchive(f, size, rd.opts.read, nil)
	if errors.Is(err, ErrArchive) {
		st.Extra[xRefused] = err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	st.Extra[xArchiveFormat] = l.format
	rd.listing = l
	return nil
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// readingOf is the archiveReading of a State Load returned.
func readingOf(st *resources.State) *archiveReading {
	if rd, ok := st.Local.(*archiveReading); ok {
		return rd
	}
	return nil
}
