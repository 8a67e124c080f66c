package packages

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/toquehq/toque/internal/shellexec"
)

// debManifest is what a .deb brings, read from the archive itself with
// dpkg-deb (its control and data members): the plan's knowledge of a
// package before it is installed. It is kept in the package cache beside
// the archive, keyed by the archive's sha256, so a warm cache reads no
// archive at all.
type debManifest struct {
	// Format is debManifestFormat; a manifest of another format is read
	// again from the archive.
	Format  int    `json:"format"`
	SHA256  string `json:"sha256"`
	Package string `json:"package"`
	Version string `json:"version"`
	Arch    string `json:"architecture"`
	// Provides and Replaces are the control fields' package names
	// (versions and alternatives dropped).
	Provides []string `json:"provides,omitempty"`
	Replaces []string `json:"replaces,omitempty"`
	// Conffiles are the paths dpkg treats as configuration files.
	Conffiles []string `json:"conffiles,omitempty"`
	// Entries are the data member's entries, in archive order.
	Entries []debEntry `json:"entries"`
	// Units are the systemd units the package ships.
	Units []debUnit `json:"units,omitempty"`
	// Scripts are the maintainer scripts it has (preinst, postinst…).
	Scripts []string `json:"scripts,omitempty"`
	// Accounts are the users and groups the package creates: declared in
	// a sysusers.d file it ships, or made by adduser, useradd, addgroup
	// or groupadd in a maintainer script.
	Accounts []debAccount `json:"accounts,omitempty"`
	// Diverts are the paths its preinst diverts with dpkg-divert: another
	// package's file there is moved aside (postgresql-common's
	// /usr/bin/pg_config, libpq-dev's going to pg_config.libpq-dev).
	Diverts []string `json:"diverts,omitempty"`
}

// debAccount is a user or group a package creates.
type debAccount struct {
	// Kind is "user" or "group"; By says how: "sysusers.d", or the
	// maintainer script's name.
	Kind, Name, By string
}

// debManifestFormat is the manifest format this build writes.
const debManifestFormat = 4

// debEntry is one path of the archive's data member.
type debEntry struct {
	Path string `json:"path"`
	// Kind is directory, file, symlink or hardlink.
	Kind         string `json:"kind"`
	Mode         uint32 `json:"mode"`
	Owner        string `json:"owner,omitempty"`
	Group        string `json:"group,omitempty"`
	UID          int    `json:"uid"`
	GID          int    `json:"gid"`
	Target       string `json:"target,omitempty"`
	Size         int64  `json:"size,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
	Conffile     bool   `json:"conffile,omitempty"`
	HasContent   bool   `json:"has_content,omitempty"`
	ContentBytes []byte `json:"content,omitempty"`
}

// debUnit is a systemd unit a package ships.
type debUnit struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// CanReload is set when the unit has ExecReload=; Install when it has
	// an [Install] section (it can be enabled).
	CanReload bool `json:"can_reload"`
	Install   bool `json:"install"`
	// Scripts says what the package's maintainer scripts do with it, as
	// debhelper writes them: "enables" (deb-systemd-helper enable),
	// "starts" (deb-systemd-invoke start).
	Scripts []string `json:"scripts,omitempty"`
}

// Limits of what a manifest keeps.
const (
	// maxKeptContent bounds a configuration file or unit file whose
	// content the plan keeps (and shows as a diff); a larger conffile is
	// an error naming it.
	maxKeptContent = 1 << 20
	// maxControlMember bounds a member of the control archive.
	maxControlMember = 4 << 20
)

// keptContent reports whether the content of the regular file at p is
// kept in the manifest: a configuration file, a systemd unit file, or a
// sysusers.d file (the accounts the package creates are read from it).
func keptContent(p string, conffile bool) bool {
	return conffile || unitPath(p) != "" || sysusersPath(p)
}

// unitDirs are where packages ship systemd units.
var unitDirs = []string{"/lib/systemd/system/", "/usr/lib/systemd/system/", "/etc/systemd/system/"}

// unitPath is the unit name of a unit file at p, "" when p is none.
func unitPath(p string) string {
	for _, d := range unitDirs {
		if rest, ok := strings.CutPrefix(p, d); ok && rest != "" && !strings.Contains(rest, "/") {
			for _, s := range []string{".service", ".socket", ".timer", ".path", ".mount", ".target"} {
				if strings.HasSuffix(rest, s) {
					return rest
				}
			}
		}
	}
	return ""
}

// readManifest reads the .deb at file, whose sha256 is digest, with
// dpkg-deb: its control member (--ctrl-tarfile: control fields,
// conffiles, maintainer scripts) and its data member (--fsys-tarfile:
// every path, with the content of configuration and unit files). An
// archive dpkg-deb cannot read, or a configuration file beyond
// maxKeptContent, is an error naming it.
func (p *aptProvider) readManifest(ctx context.Context, file, digest string) (*debManifest, error) {
	m := &debManifest{Format: debManifestFormat, SHA256: digest}
	scripts := map[string]string{}
	if err := p.eachMemberEntry(ctx, file, "--ctrl-tarfile", func(h *tar.Header, r io.Reader) error {
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Typeflag != tar.TypeReg || strings.Contains(name, "/") {
			return nil
		}
		if h.Size > maxControlMember {
			return fmt.Errorf("its control member %s is %d bytes, more than toque reads (%d)", name, h.Size, maxControlMember)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		switch name {
		case "control":
			parseControl(string(b), m)
		case "conffiles":
			for _, l := range strings.Split(string(b), "\n") {
				// dpkg 1.20.1 and later may flag a line: "remove-on-upgrade /etc/x".
				f := strings.Fields(l)
				if len(f) > 0 && strings.HasPrefix(f[len(f)-1], "/") && (len(f) == 1 || f[0] != "remove-on-upgrade") {
					m.Conffiles = append(m.Conffiles, path.Clean(f[len(f)-1]))
				}
			}
		case "preinst", "postinst", "prerm", "postrm", "config":
			m.Scripts = append(m.Scripts, name)
			scripts[name] = string(b)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading the control member of %s: %w", file, err)
	}
	if m.Package == "" || m.Version == "" {
		return nil, fmt.Errorf("%s is not a Debian package: its control member has no Package and Version", file)
	}
	sort.Strings(m.Scripts)
	conf := map[string]bool{}
	for _, c := range m.Conffiles {
		conf[c] = true
	}
	if err := p.eachMemberEntry(ctx, file, "--fsys-tarfile", func(h *tar.Header, r io.Reader) error {
		e, err := debEntryOf(h, r, conf)
		if err != nil || e == nil {
			return err
		}
		m.Entries = append(m.Entries, *e)
		if u := unitPath(e.Path); u != "" && e.HasContent {
			m.Units = append(m.Units, unitOf(u, e.Path, e.ContentBytes, scripts["postinst"]))
		}
		if e.HasContent && sysusersPath(e.Path) {
			m.Accounts = append(m.Accounts, sysusers(e.ContentBytes)...)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading the files of %s (%s %s): %w", file, m.Package, m.Version, err)
	}
	for _, name := range []string{"preinst", "postinst"} {
		m.Accounts = append(m.Accounts, scriptAccounts(name, scripts[name])...)
	}
	m.Diverts = scriptDiversions(scripts["preinst"])
	return m, nil
}

// scriptDiversions are the paths a preinst diverts: on a line that runs
// dpkg-divert to add a diversion (not --remove, --list…), the absolute
// path that is not the --divert target. A path given through a shell
// variable is not seen.
func scriptDiversions(script string) []string {
	var out []string
	for _, l := range strings.Split(script, "\n") {
		f := strings.Fields(l)
		i := slices.Index(f, "dpkg-divert")
		if i < 0 || slices.ContainsFunc(f[i:], func(w string) bool {
			return w == "--remove" || w == "--list" || w == "--listpackage" || w == "--truename"
		}) {
			continue
		}
		for j := i + 1; j < len(f); j++ {
			w := strings.Trim(f[j], `"'`)
			switch {
			case w == "--divert" || w == "--package" || w == "--admindir" || w == "--instdir" || w == "--root":
				j++ // its argument
			case strings.HasPrefix(w, "/") && !strings.ContainsAny(w, "$`*?"):
				out = append(out, path.Clean(w))
			}
		}
	}
	return out
}

// sysusersPath reports a systemd-sysusers file: what it declares is
// created at install (systemd-sysusers runs from the package's trigger or
// postinst).
func sysusersPath(p string) bool {
	return (strings.HasPrefix(p, "/usr/lib/sysusers.d/") || strings.HasPrefix(p, "/lib/sysusers.d/")) && strings.HasSuffix(p, ".conf")
}

// sysusers reads the users ("u NAME …") and groups ("g NAME …", and the
// group of the same name a user line makes) of a sysusers.d file.
func sysusers(content []byte) []debAccount {
	var out []debAccount
	for _, l := range strings.Split(string(content), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.ContainsAny(f[1], "%$") {
			continue
		}
		switch f[0] {
		case "u", "u!":
			out = append(out, debAccount{Kind: "user", Name: f[1], By: "sysusers.d"})
			if len(f) < 3 || f[2] == "-" || !strings.Contains(f[2], ":") {
				out = append(out, debAccount{Kind: "group", Name: f[1], By: "sysusers.d"})
			}
		case "g":
			out = append(out, debAccount{Kind: "group", Name: f[1], By: "sysusers.d"})
		}
	}
	return out
}

// accountTool finds a command that creates an account in a maintainer
// script, with its arguments (continuation lines joined).
var accountTool = regexp.MustCompile(`(?m)(?:^|[;&|(\s])(adduser|useradd|addgroup|groupadd)\s+([^;&|\n]*)`)

// scriptAccounts reads the accounts a maintainer script creates: the last
// argument of each adduser, useradd, addgroup or groupadd that is a plain
// name (adduser --group NAME… makes the group too). What such a script
// does is decided when it runs, so what it creates is known only then;
// a name computed by the script is not read.
func scriptAccounts(script, text string) []debAccount {
	text = strings.ReplaceAll(text, "\\\n", " ")
	var out []debAccount
	for _, m := range accountTool.FindAllStringSubmatch(text, -1) {
		args := strings.Fields(m[2])
		if len(args) == 0 {
			continue
		}
		name := strings.Trim(args[len(args)-1], `"'`)
		if strings.HasPrefix(name, "-") || strings.ContainsAny(name, "$`{}()<>") || validPackageName(name) != nil && !strings.ContainsAny(name, "_") {
			continue
		}
		kind := "user"
		if m[1] == "addgroup" || m[1] == "groupadd" || (m[1] == "adduser" && strings.Contains(m[2], "--group") && !strings.Contains(m[2], "--system")) {
			kind = "group"
		}
		out = append(out, debAccount{Kind: kind, Name: name, By: script})
		if m[1] == "adduser" && strings.Contains(m[2], "--system") && strings.Contains(m[2], "--group") {
			out = append(out, debAccount{Kind: "group", Name: name, By: script})
		}
	}
	return out
}

// eachMemberEntry runs dpkg-deb to print one member of file as a tar
// stream (flag: --ctrl-tarfile, --fsys-tarfile) and calls f for each of
// its entries as it comes, so that a large archive is never held whole.
// An archive dpkg-deb cannot read is an error naming it.
func (p *aptProvider) eachMemberEntry(ctx context.Context, file, flag string, f func(h *tar.Header, r io.Reader) error) error {
	argv := []string{"dpkg-deb", flag, file}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	s := p.spec(argv, p.readTimeout, nil)
	s.Stdout = pw
	type ran struct {
		res *shellexec.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := shellexec.Run(ctx, s)
		pw.Close()
		done <- ran{res, err}
	}()
	var own error // f's, not the stream's
	terr := eachTarEntry(pr, func(h *tar.Header, r io.Reader) error {
		own = f(h, r)
		return own
	})
	if terr != nil {
		cancel()
	}
	io.Copy(io.Discard, pr)
	r := <-done
	switch {
	case own != nil:
		return own
	case r.err != nil:
		return fmt.Errorf("%s is not a valid package archive: %w", file, commandError(argv, r.res, r.err))
	case terr != nil:
		return fmt.Errorf("%s is not a valid package archive: %w", file, terr)
	}
	return nil
}

// eachTarEntry calls f for each entry of the tar stream in.
func eachTarEntry(in io.Reader, f func(h *tar.Header, r io.Reader) error) error {
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(h, tr); err != nil {
			return err
		}
	}
}

// debEntryOf is the manifest entry of one data member entry (nil for the
// archive's root), with the content of a kept file.
func debEntryOf(h *tar.Header, r io.Reader, conf map[string]bool) (*debEntry, error) {
	p := path.Clean("/" + h.Name)
	if p == "/" {
		return nil, nil
	}
	e := &debEntry{Path: p, Mode: uint32(h.Mode) & 0o7777, Owner: h.Uname, Group: h.Gname, UID: h.Uid, GID: h.Gid, Conffile: conf[p]}
	switch h.Typeflag {
	case tar.TypeDir:
		e.Kind = "directory"
	case tar.TypeSymlink:
		e.Kind, e.Target = "symlink", h.Linkname
	case tar.TypeLink:
		e.Kind, e.Target = "hardlink", path.Clean("/"+h.Linkname)
	case tar.TypeReg, tar.TypeRegA:
		e.Kind, e.Size = "file", h.Size
		keep := keptContent(p, e.Conffile)
		if keep && h.Size > maxKeptContent {
			return nil, fmt.Errorf("the configuration file %s is %d bytes, more than a plan keeps (%d): toque shows and compares a package's configuration files in full", p, h.Size, maxKeptContent)
		}
		hs := sha256.New()
		var buf bytes.Buffer
		w := io.Writer(hs)
		if keep {
			w = io.MultiWriter(hs, &buf)
		}
		if _, err := io.Copy(w, r); err != nil {
			return nil, err
		}
		e.SHA256 = hex.EncodeToString(hs.Sum(nil))
		if keep {
			e.HasContent, e.ContentBytes = true, buf.Bytes()
		}
	default:
		e.Kind = "special"
	}
	return e, nil
}

// parseControl reads the fields of a control file into m.
func parseControl(text string, m *debManifest) {
	fields := map[string]string{}
	var last string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), maxControlMember)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			if last != "" {
				fields[last] += "\n" + strings.TrimSpace(l)
			}
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		last = strings.ToLower(strings.TrimSpace(k))
		fields[last] = strings.TrimSpace(v)
	}
	m.Package, m.Version, m.Arch = fields["package"], fields["version"], fields["architecture"]
	m.Provides = relationNames(fields["provides"])
	m.Replaces = relationNames(fields["replaces"])
}

// relationNames are the package names of a relation field ("a (>= 1),
// b:any | c"), alternatives included, without versions or architectures.
func relationNames(field string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(field, func(r rune) bool { return r == ',' || r == '|' }) {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		name, _, _ := strings.Cut(f[0], ":")
		name, _, _ = strings.Cut(name, "(")
		if name != "" {
			out = append(out, name)
		}
	}
	return uniqueNames(out)
}

var (
	// debhelper's postinst lines for a unit (dh_installsystemd).
	dhEnable = regexp.MustCompile(`deb-systemd-helper enable '([^']+)'`)
	dhStart  = regexp.MustCompile(`deb-systemd-invoke (?:\$_dh_action |start |restart )[^\n]*'([^']+)'`)
)

// unitOf reads what a unit file says of the unit (ExecReload=, an
// [Install] section), and what the package's postinst does with it.
func unitOf(name, p string, content []byte, postinst string) debUnit {
	u := debUnit{Name: name, Path: p}
	section := ""
	for _, l := range strings.Split(string(content), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l
		case section == "[Service]" && strings.HasPrefix(l, "ExecReload="):
			u.CanReload = true
		case section == "[Install]" && (strings.HasPrefix(l, "WantedBy=") || strings.HasPrefix(l, "RequiredBy=") || strings.HasPrefix(l, "Alias=") || strings.HasPrefix(l, "Also=") || strings.HasPrefix(l, "UpheldBy=")):
			u.Install = true
		}
	}
	for _, m := range dhEnable.FindAllStringSubmatch(postinst, -1) {
		if strings.Contains(" "+m[1]+" ", " "+name+" ") {
			u.Scripts = append(u.Scripts, "enables")
			break
		}
	}
	for _, m := range dhStart.FindAllStringSubmatch(postinst, -1) {
		if strings.Contains(" "+m[1]+" ", " "+name+" ") {
			u.Scripts = append(u.Scripts, "starts")
			break
		}
	}
	return u
}

// modeString is an entry's mode as the file types write it.
func modeString(m uint32) string { return fmt.Sprintf("%04o", m) }

// label is how the plan names a .deb: "nginx-common 1.22.1-9+deb12u9".
func (m *debManifest) label() string { return m.Package + " " + m.Version }

// entryFacts are the prediction facts of one entry (resources.Prediction,
// the path namespace's vocabulary).
func (m *debManifest) entryFacts(e *debEntry) map[string]string {
	f := map[string]string{
		"kind": e.Kind, "mode": modeString(e.Mode), "owner": e.Owner, "group": e.Group,
		"uid": strconv.Itoa(e.UID), "gid": strconv.Itoa(e.GID), "package": m.Package,
	}
	if e.Target != "" {
		f["target"] = e.Target
	}
	if e.Conffile {
		f["conffile"] = "yes"
	}
	if e.Kind == "file" {
		f["size"] = strconv.FormatInt(e.Size, 10)
		f["sha256"] = e.SHA256
	}
	if len(m.Replaces) > 0 {
		f["replaces"] = strings.Join(m.Replaces, " ")
	}
	return f
}
