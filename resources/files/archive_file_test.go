package files

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
	size             int64 // when not len(body): a header that lies
}

var testTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func tarBytes(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, ModTime: testTime, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
			if e.size != 0 {
				h.Size = e.size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil && !strings.Contains(err.Error(), "missed writing") {
		t.Fatal(err)
	}
	return b.Bytes()
}

func compress(t *testing.T, kind string, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch kind {
	case "gz":
		w := gzip.NewWriter(&b)
		w.Write(raw)
		w.Close()
	case "xz":
		w, err := xz.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
		w.Close()
	case "zst":
		w, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
		w.Close()
	default:
		return raw
	}
	return b.Bytes()
}

type zipEntry struct {
	name, body string
	mode       os.FileMode
}

func zipBytes(t *testing.T, entries []zipEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: testTime}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var goodTar = []tarEntry{
	{name: "app-1.0/", typ: tar.TypeDir, mode: 0o755},
	{name: "app-1.0/bin/app", body: "#!/bin/sh\necho app\n", mode: 0o755},
	{name: "app-1.0/etc/app.conf", body: "port = 80\n"},
	{name: "app-1.0/lib/libx.so.1", body: "ELF"},
	{name: "app-1.0/lib/libx.so", typ: tar.TypeSymlink, link: "libx.so.1"},
	{name: "app-1.0/bin/app2", typ: tar.TypeLink, link: "app-1.0/bin/app"},
}

// archiveTest is an archive_file type with a scratch download cache,
// and a directory for archives and destinations.
func archiveTest(t *testing.T) (*archiveFileType, string, string) {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	return newArchiveFileType(func(context.Context) string { return cache }), t.TempDir(), cache
}

func archiveRes(t *testing.T, typ *archiveFileType, vals map[string]any) *resources.Resource {
	t.Helper()
	return resourcetest.NewRes(t, typ, "extract", vals)
}

// Every format extracts the same tree: files with their modes, the
// link, the hard link; the plan lists them; a second plan is a no-op.
func TestArchiveFileFormats(t *testing.T) {
	for _, kind := range []string{"tar", "gz", "xz", "zst", "zip"} {
		t.Run(kind, func(t *testing.T) {
			typ, dir, _ := archiveTest(t)
			var data []byte
			if kind == "zip" {
				data = zipBytes(t, []zipEntry{
					{name: "app-1.0/bin/app", body: "#!/bin/sh\necho app\n", mode: 0o755},
					{name: "app-1.0/etc/app.conf", body: "port = 80\n", mode: 0o644},
					{name: "app-1.0/lib/libx.so.1", body: "ELF", mode: 0o644},
					{name: "app-1.0/lib/libx.so", body: "libx.so.1", mode: os.ModeSymlink | 0o777},
				})
			} else {
				data = compress(t, kind, tarBytes(t, goodTar))
			}
			archive := filepath.Join(dir, "app.archive")
			resourcetest.WriteFile(t, archive, string(data), 0o644)
			dest := filepath.Join(dir, "dest")
			r := archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "strip_components": 1})
			step := resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Create)
			files := step.Change("files")
			if files == nil || !strings.Contains(files.After.AsString(), "bin/app (file, 0755, 19 bytes, sha256:") || !strings.Contains(files.After.AsString(), "lib/libx.so -> libx.so.1 (symbolic link)") {
				t.Fatalf("files change %+v", files)
			}
			if !strings.Contains(step.Reason, "makes "+dest+" (mode 0755), then extracts") || !strings.Contains(step.Reason, "bin/") {
				t.Errorf("reason %q", step.Reason)
			}
			if got := resourcetest.ReadFile(t, filepath.Join(dest, "bin/app")); got != "#!/bin/sh\necho app\n" || resourcetest.PermOf(t, filepath.Join(dest, "bin/app")) != 0o755 {
				t.Errorf("bin/app: %q %o", got, resourcetest.PermOf(t, filepath.Join(dest, "bin/app")))
			}
			if l, _ := os.Readlink(filepath.Join(dest, "lib/libx.so")); l != "libx.so.1" {
				t.Errorf("link %q", l)
			}
			if fi, _ := os.Stat(filepath.Join(dest, "etc/app.conf")); !fi.ModTime().Equal(testTime) {
				t.Errorf("mtime %v", fi.ModTime())
			}
			if kind != "zip" && resourcetest.InodeOf(t, filepath.Join(dest, "bin/app2")) != resourcetest.InodeOf(t, filepath.Join(dest, "bin/app")) {
				t.Error("bin/app2 is not a hard link of bin/app")
			}
			if resourcetest.PermOf(t, dest) != 0o755 {
				t.Errorf("destination mode %o", resourcetest.PermOf(t, dest))
			}
			resourcetest.NoTempFiles(t, filepath.Join(dest, "bin"))
		})
	}
}

// overwrite: false leaves what differs, true replaces it, auto replaces
// it only when its time is not the archive's; the plan says which.
func TestArchiveFileOverwrite(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	env := resourcetest.TestEnv(t)
	archive := filepath.Join(dir, "app.tar.gz")
	resourcetest.WriteFile(t, archive, string(compress(t, "gz", tarBytes(t, goodTar))), 0o644)
	dest := filepath.Join(dir, "dest")
	res := func(overwrite any) *resources.Resource {
		return archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "strip_components": 1, "overwrite": overwrite})
	}
	resourcetest.Apply(t, typ, env, res(false), resources.Create)
	conf := filepath.Join(dest, "etc/app.conf")
	resourcetest.WriteFile(t, conf, "port = 8080\n", 0o644)
	os.Remove(filepath.Join(dest, "lib/libx.so.1"))

	step := resourcetest.Apply(t, typ, env, res(false), resources.Update)
	if resourcetest.ReadFile(t, conf) != "port = 8080\n" || !strings.Contains(step.Reason, "extracts 1 file") || !strings.Contains(step.Reason, "leaves") || !strings.Contains(step.Reason, "etc/app.conf") {
		t.Errorf("overwrite=false: %q, %q", resourcetest.ReadFile(t, conf), step.Reason)
	}
	// auto: the edit has a new time: replaced.
	step = resourcetest.Apply(t, typ, env, res("auto"), resources.Update)
	if resourcetest.ReadFile(t, conf) != "port = 80\n" {
		t.Errorf("auto: %q (%s)", resourcetest.ReadFile(t, conf), step.Reason)
	}
	// auto: an edit that keeps the archive's time is left.
	resourcetest.WriteFile(t, conf, "port = 9999\n", 0o644)
	os.Chtimes(conf, testTime, testTime)
	_, step = resourcetest.Plan(t, typ, res("auto"))
	if step.Kind != resources.NoOp || !strings.Contains(step.Reason, "modification time") {
		t.Errorf("auto, same time: %s %q", step.Kind, step.Reason)
	}
	step = resourcetest.Apply(t, typ, env, res(true), resources.Update)
	c := step.Change("files")
	if resourcetest.ReadFile(t, conf) != "port = 80\n" || !strings.Contains(c.Before.AsString(), "etc/app.conf (file, 0644, 12 bytes") || !strings.Contains(c.After.AsString(), "etc/app.conf (file, 0644, 10 bytes") {
		t.Errorf("true: %q %+v", resourcetest.ReadFile(t, conf), c)
	}
}

// Malicious archives are refused at plan, naming the entry, and nothing
// is written.
func TestArchiveFileRefusesMaliciousArchives(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{"dot-dot", []tarEntry{{name: "../evil", body: "x"}}, `".." component`},
		{"dot-dot inside", []tarEntry{{name: "a/../../evil", body: "x"}}, `".." component`},
		{"absolute", []tarEntry{{name: "/etc/evil", body: "x"}}, "absolute name"},
		{"link out absolute", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "/etc"}}, "absolute path"},
		{"link out relative", []tarEntry{{name: "a/l", typ: tar.TypeSymlink, link: "../../etc"}}, "outside destination"},
		{"link out, then a file through it", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "../../../../etc"}, {name: "l/cron.d/evil", body: "* * * * * root sh\n"}}, "outside destination"},
		{"file through a link", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "sub"}, {name: "l/passwd", body: "x"}}, "through a link"},
		{"link through a link", []tarEntry{{name: "d", typ: tar.TypeSymlink, link: "."}, {name: "e", typ: tar.TypeSymlink, link: "d/../x"}}, "through the link"},
		{"hard link out", []tarEntry{{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}}, "absolute name"},
		{"hard link up", []tarEntry{{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}}, `".." component`},
		{"hard link to nothing listed", []tarEntry{{name: "h", typ: tar.TypeLink, link: "etc/passwd"}}, "not a file the archive holds"},
		{"char device", []tarEntry{{name: "null", typ: tar.TypeChar}}, "device node"},
		{"block device", []tarEntry{{name: "sda", typ: tar.TypeBlock}}, "device node"},
		{"fifo", []tarEntry{{name: "p", typ: tar.TypeFifo}}, "fifo"},
		{"twice", []tarEntry{{name: "a", body: "1"}, {name: "a", body: "2"}}, "twice"},
		{"newline", []tarEntry{{name: "a\nb (file, 0644)", body: "1"}}, "control character"},
		{"not UTF-8", []tarEntry{{name: "caf\xe9", body: "1"}}, "not UTF-8"},
		{"huge header", []tarEntry{{name: "big", body: "tiny", size: 1 << 40}}, "max_size"},
		{"lying header", []tarEntry{{name: "big", body: "tiny", size: 1 << 20}}, "truncated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			typ, dir, _ := archiveTest(t)
			archive := filepath.Join(dir, "evil.tar")
			resourcetest.WriteFile(t, archive, string(tarBytes(t, c.entries)), 0o644)
			dest := filepath.Join(dir, "dest")
			resourcetest.PlanErr(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": dest}), c.want)
			if _, err := os.Lstat(dest); !os.IsNotExist(err) {
				t.Errorf("a refused plan made %s", dest)
			}
		})
	}
	typ, dir, _ := archiveTest(t)
	for name, data := range map[string][]byte{
		"zip dot-dot":    zipBytes(t, []zipEntry{{name: "../evil", body: "x"}}),
		"zip backslash":  zipBytes(t, []zipEntry{{name: `..\..\evil`, body: "x"}}),
		"zip absolute":   zipBytes(t, []zipEntry{{name: "/evil", body: "x"}}),
		"zip link out":   zipBytes(t, []zipEntry{{name: "l", body: "/etc/shadow", mode: os.ModeSymlink | 0o777}}),
		"not an archive": []byte("just text, not an archive at all"),
	} {
		archive := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		resourcetest.WriteFile(t, archive, string(data), 0o644)
		st := resourcetest.Load(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": filepath.Join(dir, "dest")}))
		if _, err := resources.PlanStep(typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": filepath.Join(dir, "dest")}), st); err == nil {
			t.Errorf("%s: planned", name)
		}
	}
}

// max_size bounds what an archive may hold, compressed or not (a bomb).
func TestArchiveFileMaxSize(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	archive := filepath.Join(dir, "bomb.tar.zst")
	resourcetest.WriteFile(t, archive, string(compress(t, "zst", tarBytes(t, []tarEntry{{name: "zeros", body: strings.Repeat("\x00", 1<<20)}}))), 0o644)
	if fi, _ := os.Stat(archive); fi.Size() > 1<<12 {
		t.Fatalf("the bomb is %d bytes", fi.Size())
	}
	resourcetest.PlanErr(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": filepath.Join(dir, "d"), "max_size": 1 << 19}), "more than max_size")
}

// setuid, setgid and group/other write come only with the permissions
// option.
func TestArchiveFilePermissions(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	env := resourcetest.TestEnv(t)
	archive := filepath.Join(dir, "suid.tar")
	resourcetest.WriteFile(t, archive, string(tarBytes(t, []tarEntry{{name: "su", body: "x", mode: 0o4777}, {name: "open", body: "y", mode: 0o666}})), 0o644)
	plain := filepath.Join(dir, "plain")
	resourcetest.Apply(t, typ, env, archiveRes(t, typ, map[string]any{"path": archive, "destination": plain}), resources.Create)
	if m := resourcetest.PermOf(t, filepath.Join(plain, "su")); m != 0o755 {
		t.Errorf("su without permissions: %o", m)
	}
	if m := resourcetest.PermOf(t, filepath.Join(plain, "open")); m != 0o644 {
		t.Errorf("open without permissions: %o", m)
	}
	kept := filepath.Join(dir, "kept")
	resourcetest.Apply(t, typ, env, archiveRes(t, typ, map[string]any{"path": archive, "destination": kept, "options": []string{"permissions"}}), resources.Create)
	if fi, _ := os.Stat(filepath.Join(kept, "su")); fi.Mode()&os.ModeSetuid == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("su with permissions: %v", fi.Mode())
	}
}

// Below destination no link is followed: a link planted where the
// archive has a directory is a plan error, and a link or file that
// appears between plan and apply fails the apply with nothing written
// through it.
func TestArchiveFileNeverWritesThroughALink(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	env := resourcetest.TestEnv(t)
	archive := filepath.Join(dir, "app.tar")
	resourcetest.WriteFile(t, archive, string(tarBytes(t, goodTar)), 0o644)
	outside := filepath.Join(dir, "outside")
	os.Mkdir(outside, 0o755)
	dest := filepath.Join(dir, "dest")
	os.Mkdir(dest, 0o755)
	if err := os.Symlink(outside, filepath.Join(dest, "app-1.0")); err != nil {
		t.Fatal(err)
	}
	r := archiveRes(t, typ, map[string]any{"path": archive, "destination": dest})
	resourcetest.PlanErr(t, typ, r, "is a symbolic link, and the archive has a directory there")

	os.Remove(filepath.Join(dest, "app-1.0"))
	st, step := resourcetest.Plan(t, typ, r)
	os.Mkdir(filepath.Join(dest, "app-1.0"), 0o755)
	if err := os.Symlink(outside, filepath.Join(dest, "app-1.0", "bin")); err != nil {
		t.Fatal(err)
	}
	err := resources.ConvergeStep(context.Background(), typ, env, r, st, step)
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("converge through a planted link: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote through the link: %v", entries)
	}

	// A file that appears where the plan saw nothing is not replaced.
	dest2 := filepath.Join(dir, "dest2")
	r = archiveRes(t, typ, map[string]any{"path": archive, "destination": dest2, "strip_components": 1})
	resourcetest.Apply(t, typ, env, r, resources.Create)
	os.Remove(filepath.Join(dest2, "etc/app.conf"))
	st, step = resourcetest.Plan(t, typ, r)
	resourcetest.WriteFile(t, filepath.Join(dest2, "etc/app.conf"), "theirs\n", 0o644)
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); !errors.Is(err, ErrChanged) {
		t.Fatalf("converge over a new file: %v", err)
	}
	if resourcetest.ReadFile(t, filepath.Join(dest2, "etc/app.conf")) != "theirs\n" {
		t.Error("replaced a file that appeared after the plan")
	}

	// A hard link another user could have made, in a directory they may
	// write, to a file they may not read: its content is not read (no
	// digest of it in the plan), and overwrite replaces the name, never
	// the file.
	secret := filepath.Join(dir, "secret")
	resourcetest.WriteFile(t, secret, "port = 80\n", 0o600) // the archive's size, so it would be hashed
	os.Chmod(filepath.Join(dest2, "etc"), 0o777)
	os.Remove(filepath.Join(dest2, "etc/app.conf"))
	if err := os.Link(secret, filepath.Join(dest2, "etc/app.conf")); err != nil {
		t.Fatal(err)
	}
	r = archiveRes(t, typ, map[string]any{"path": archive, "destination": dest2, "strip_components": 1, "overwrite": true})
	st, step = resourcetest.Plan(t, typ, r)
	if before := step.Change("files").Before.AsString(); !strings.Contains(before, "etc/app.conf (file, 0600, 10 bytes, sha256 not read)") {
		t.Errorf("before %q", before)
	}
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err != nil {
		t.Fatal(err)
	}
	if resourcetest.PermOf(t, secret) != 0o600 || resourcetest.InodeOf(t, secret) == resourcetest.InodeOf(t, filepath.Join(dest2, "etc/app.conf")) {
		t.Error("the hard-linked file was changed, or the name still points at it")
	}
}

// The archive is part of the reading: a changed archive changes the
// reading (a stale plan), a checksum it does not have is an error on
// checksum, and apply extracts the planned bytes or nothing.
func TestArchiveFileDigestIsRead(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	env := resourcetest.TestEnv(t)
	archive := filepath.Join(dir, "app.tar")
	data := tarBytes(t, goodTar)
	resourcetest.WriteFile(t, archive, string(data), 0o644)
	dest := filepath.Join(dir, "dest")
	r := archiveRes(t, typ, map[string]any{"path": archive, "destination": dest})
	st, step := resourcetest.Plan(t, typ, r)
	if st.Values["archive"].AsString() != resourcetest.SHA256(string(data)) {
		t.Errorf("archive %v", st.Values["archive"])
	}
	other := tarBytes(t, []tarEntry{{name: "other", body: "x"}})
	resourcetest.WriteFile(t, archive, string(other), 0o644)
	if again := resourcetest.Load(t, typ, r); again.Values["archive"].RawEquals(st.Values["archive"]) {
		t.Error("a changed archive reads the same")
	}
	if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); !errors.Is(err, ErrChanged) {
		t.Fatalf("converge of a changed archive: %v", err)
	}
	if _, err := os.Lstat(dest); !os.IsNotExist(err) {
		t.Error("extracted from a changed archive")
	}
	r = archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "checksum": resourcetest.SHA256(string(data))})
	st = resourcetest.Load(t, typ, r)
	_, err := resources.PlanStep(typ, r, st)
	var pe *resources.PropertyError
	if !errors.As(err, &pe) || pe.Property != "checksum" {
		t.Errorf("checksum mismatch: %v", err)
	}
}

// An archive an earlier resource downloads at apply: with checksum and
// its bytes in the download cache, the plan lists what it writes and
// awaits only the archive; without, what it writes is known at apply.
// Either way the step needs the archive, met by a remote_file of that
// path.
func TestArchiveFileNotYetDownloaded(t *testing.T) {
	typ, dir, cache := archiveTest(t)
	env := resourcetest.TestEnv(t)
	data := compress(t, "gz", tarBytes(t, goodTar))
	sum := resourcetest.SHA256(string(data))
	archive := filepath.Join(dir, "later.tar.gz")
	dest := filepath.Join(dir, "dest")

	r := archiveRes(t, typ, map[string]any{"path": archive, "destination": dest})
	_, step := resourcetest.Plan(t, typ, r)
	if len(step.AwaitedNeeds()) != 2 || step.Change("files") == nil || step.Change("files").After.IsKnown() {
		t.Fatalf("unlisted: needs %+v changes %+v", step.Needs, step.Changes)
	}

	c, err := openCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.store(bytes.NewReader(data), 1<<20); err != nil || got != sum {
		t.Fatal(got, err)
	}
	r = archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "checksum": sum})
	_, step = resourcetest.Plan(t, typ, r)
	needs := step.AwaitedNeeds()
	if len(needs) != 1 || needs[0].Property != "archive" || needs[0].Namespace != resources.NamespacePath || needs[0].Value != archive {
		t.Fatalf("listed from the cache: needs %+v", step.Needs)
	}
	files := step.Change("files")
	if files == nil || !files.After.IsKnown() || !strings.Contains(files.After.AsString(), "app-1.0/bin/app (file") {
		t.Fatalf("files %+v", files)
	}
	rf := RemoteFileType()
	meets := func(path, action string) bool {
		return resources.MeetsNeed(rf, resourcetest.NewRes(t, rf, action, map[string]any{"path": path, "source": "https://example.com/a.tgz"}), needs[0])
	}
	if !meets(archive, "create") || meets(archive, "delete") || meets(archive+".other", "create") {
		t.Error("remote_file meets the wrong needs")
	}

	// At apply the archive is there: planned again, the files are the
	// ones the plan listed.
	resourcetest.WriteFile(t, archive, string(data), 0o644)
	again := resourcetest.Apply(t, typ, env, r, resources.Create)
	if !again.Change("files").After.RawEquals(files.After) || len(again.AwaitedNeeds()) != 0 {
		t.Errorf("apply's plan differs: %+v", again.Changes)
	}
}

func TestArchiveFileBadInput(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"overwrite", cty.True, ""},
		{"overwrite", cty.StringVal("auto"), ""},
		{"overwrite", cty.StringVal("always"), `true, false or "auto"`},
		{"options", cty.ListVal([]cty.Value{cty.StringVal("time"), cty.StringVal("permissions")}), ""},
		{"options", cty.ListVal([]cty.Value{cty.StringVal("xattr")}), "not an extraction flag"},
		{"strip_components", cty.NumberIntVal(-1), "0 or more"},
		{"checksum", cty.StringVal("abc"), ""},
		{"files", cty.StringVal("x"), "read by toque"},
		{"archive", cty.StringVal("x"), "read by toque"},
		{"path", cty.StringVal("relative.tar"), "not an absolute path"},
		{"destination", cty.StringVal("/srv/../etc"), `".." component`},
	} {
		p := typ.Schema().Property(c.prop)
		v, err := c.v, error(nil)
		if p.Normalize != nil {
			v, err = p.Normalize(v)
		}
		if err == nil && p.Validate != nil {
			err = p.Validate(v)
		}
		if c.want == "" && c.prop == "checksum" {
			continue // NormalizeChecksum's own test
		}
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
	// A destination that is a file is a plan error.
	archive := filepath.Join(dir, "a.tar")
	resourcetest.WriteFile(t, archive, string(tarBytes(t, goodTar)), 0o644)
	resourcetest.PlanErr(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": archive}), "not a directory")
	// A fifo where the archive has a directory is not replaced, nor
	// opened (a read would block).
	dest := filepath.Join(dir, "dev")
	os.MkdirAll(filepath.Join(dest, "app-1.0"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dest, "app-1.0", "bin"), 0o644); err != nil {
		t.Fatal(err)
	}
	resourcetest.PlanErr(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "overwrite": true}), "fifo")
	os.Remove(filepath.Join(dest, "app-1.0", "bin"))
	os.MkdirAll(filepath.Join(dest, "app-1.0", "etc"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dest, "app-1.0", "etc", "app.conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	resourcetest.PlanErr(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "overwrite": true}), "is a fifo: toque replaces only files and links")
}

// An archive of more directories than are held open at once extracts,
// and plans as a no-op after.
func TestArchiveFileManyDirectories(t *testing.T) {
	typ, dir, _ := archiveTest(t)
	var entries []tarEntry
	for i := range 2 * maxHeldBelow {
		entries = append(entries, tarEntry{name: fmt.Sprintf("d%d/sub/f", i), body: fmt.Sprint(i)})
	}
	archive := filepath.Join(dir, "many.tar")
	resourcetest.WriteFile(t, archive, string(tarBytes(t, entries)), 0o644)
	dest := filepath.Join(dir, "dest")
	r := archiveRes(t, typ, map[string]any{"path": archive, "destination": dest, "overwrite": true})
	step := resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Create)
	if !strings.Contains(step.Reason, fmt.Sprintf("extracts %d files and %d directories", 2*maxHeldBelow, 4*maxHeldBelow)) {
		t.Errorf("reason %q", step.Reason)
	}
	if got := resourcetest.ReadFile(t, filepath.Join(dest, "d300/sub/f")); got != "300" || resourcetest.PermOf(t, filepath.Join(dest, "d300/sub")) != 0o755 {
		t.Errorf("d300/sub/f %q, mode %o", got, resourcetest.PermOf(t, filepath.Join(dest, "d300/sub")))
	}
}

// Not root, toque cannot write in a destination it may not write: the
// plan says so, rather than an apply failing half-way.
func TestArchiveFileUnwritableDestination(t *testing.T) {
	testenv.MustHave(t, testenv.NonRoot)
	typ, dir, _ := archiveTest(t)
	archive := filepath.Join(dir, "app.tar")
	resourcetest.WriteFile(t, archive, string(tarBytes(t, goodTar)), 0o644)
	dest := filepath.Join(dir, "ro")
	os.Mkdir(dest, 0o555)
	t.Cleanup(func() { os.Chmod(dest, 0o755) })
	resourcetest.PlanErr(t, typ, archiveRes(t, typ, map[string]any{"path": archive, "destination": dest}), "may not write in it")
}
