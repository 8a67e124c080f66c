package files

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// archiveNeedWhat starts the What of archive_file's need of its archive:
// "the file /tmp/app.tar.gz" — the words, namespace and meeting rule of
// the need of a file an earlier resource writes that the file editors use
// (edit_needs.go on main, meetsFile), so that one rule serves both.
const archiveNeedWhat = "the file "

// extraction is what extracting an archive into destination does, decided
// from a reading with no I/O: the same for the plan and for the step.
type extraction struct {
	writes []*archiveEntry // in the archive's order
	// left are existing entries extraction leaves although they differ
	// (or, with overwrite = false, may differ).
	left          []string
	before, after []string
	// dirs are the directories that exist once it is done.
	dirs []string
	// made counts what it makes, by kind.
	made map[string]int
}

// decide is the extraction of rd's listing into what rd.live holds.
func decide(rd *archiveReading, dest string) (*extraction, error) {
	x := &extraction{made: map[string]int{}}
	written := map[string]bool{}
	for _, e := range rd.listing.entries {
		le := rd.live[e.name]
		if le != nil && le.blocked != "" {
			return nil, fmt.Errorf("%s, on the way to %s of the archive: toque extracts nothing through a link or over a file; remove it, or choose another destination", le.blocked, e.name)
		}
		want := e.line(rd)
		if e.kind == entryDir {
			x.dirs = append(x.dirs, dest+"/"+e.name)
		}
		if !le.exists() {
			x.writes, written[e.name] = append(x.writes, e), true
			x.made[e.kind]++
			x.after = append(x.after, want)
			continue
		}
		have := le.line(e, rd)
		x.before = append(x.before, have)
		switch {
		case e.kind == entryDir && le.kind != entryDir:
			return nil, fmt.Errorf("%s/%s is %s, and the archive has a directory there: toque does not replace it; remove it first", dest, e.name, props.Article(le.kind))
		case e.kind != entryDir && le.kind == entryDir:
			return nil, fmt.Errorf("%s/%s is a directory, and the archive has %s there: toque does not replace a directory", dest, e.name, props.Article(e.kind))
		case le.kind != entryDir && le.kind != entryFile && le.kind != entrySymlink:
			return nil, fmt.Errorf("%s/%s is %s: toque replaces only files and links", dest, e.name, props.Article(le.kind))
		}
		differs := have != want || (e.kind == entryHardlink && written[e.link])
		if e.kind == entryDir || !differs {
			x.after = append(x.after, have)
			continue
		}
		replace := false
		switch rd.opts.overwrite {
		case "true":
			replace = true
		case "auto":
			replace = le.mtime.Unix() != e.mtime.Unix()
		}
		if !replace {
			x.after = append(x.after, have)
			x.left = append(x.left, e.name)
			continue
		}
		x.writes, written[e.name] = append(x.writes, e), true
		x.made[e.kind]++
		x.after = append(x.after, want)
	}
	return x, nil
}

// Plan lists what extract writes: a manifest diff (files), the counts
// and first names (Reason). An archive that does not exist yet is a need
// met at apply by an earlier remote_file; what it holds is then listed
// from the download cache when checksum names bytes it has, else known
// at apply.
func (t *archiveFileType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if action != "extract" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	path, dest := desired.String("path"), desired.String("destination")
	rd := readingOf(current)
	switch {
	case current.Extra[xDestKind] != "":
		return nil, fmt.Errorf("destination %s is %s, not a directory", dest, props.Article(current.Extra[xDestKind]))
	case current.Extra[xChecksum] != "":
		return nil, &resources.PropertyError{Property: "checksum", Err: errors.New(current.Extra[xChecksum])}
	case current.Extra[xRefused] != "":
		return nil, fmt.Errorf("%s: %s", path, current.Extra[xRefused])
	case rd == nil:
		return nil, errors.New("the archive was not read (a bug in archive_file)")
	}
	if (rd.uid >= 0 && rd.uid != processEUID()) || rd.opts.archiveOwner {
		if hostexec.EffectiveUID() != 0 {
			return nil, hostexec.NeedsRoot("giving extracted files another owner")
		}
	}
	step := &resources.Step{Kind: resources.Update}
	if !current.Exists {
		step.Kind = resources.Create
		if rd.parentMissing {
			step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: props.ParentDir(dest), What: "directory"})
		}
		step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: dest, What: "directory"})
	}
	awaited := current.Extra[xArchive] == "missing"
	if awaited {
		step.Needs = append(step.Needs, archiveNeed(desired, path, "archive"))
		step.Changes = append(step.Changes, resources.Change{Property: "archive", Before: cty.NilVal, After: cty.UnknownVal(cty.String)})
	}
	if rd.listing == nil {
		// Not listed: what it holds is known at apply.
		step.Needs = append(step.Needs, archiveNeed(desired, path, "files"))
		step.Changes = append(step.Changes, resources.Change{Property: "files", Before: current.Values["files"], After: cty.UnknownVal(cty.String)})
		step.Reason = fmt.Sprintf("%s does not exist yet: an earlier resource writes it at apply, and what it holds is known then (with checksum set, a plan lists it once those bytes are in the download cache)", path)
		return step, nil
	}
	x, err := decide(rd, dest)
	if err != nil {
		return nil, err
	}
	if len(x.writes) > 0 && rd.unwritable {
		return nil, fmt.Errorf("%s: toque runs as uid %d and may not write in it; run it as root, or give it write access", dest, hostexec.EffectiveUID())
	}
	if len(x.writes) == 0 && current.Exists {
		why := "every entry of the archive is in " + dest + " as the archive has it"
		if len(x.left) > 0 {
			why = fmt.Sprintf("every entry of the archive exists in %s; %s", dest, leftWords(x.left, rd.opts.overwrite))
		}
		return &resources.Step{Kind: resources.NoOp, Reason: "nothing to extract: " + why}, nil
	}
	files := resources.Change{Property: "files", Before: current.Values["files"], After: cty.StringVal(joinLines(x.after))}
	if files.Before == cty.NilVal && current.Exists {
		files.Before = cty.StringVal("")
	}
	files.Note = fmt.Sprintf("%s archive, %s, sha256 %s", current.Extra[xArchiveFormat], humanBytes(atoi64(current.Extra[xArchiveSize])), shortSHA(current.Values["archive"]))
	if current.Extra[xFromCache] != "" {
		files.Note += ", listed from the download cache's copy of checksum"
	}
	files.Note += ": writes " + countWords(x)
	if len(x.left) > 0 {
		files.Note += "; " + leftWords(x.left, rd.opts.overwrite)
	}
	step.Changes = append(step.Changes, files)
	step.Reason = extractReason(x, path, dest, current.Exists, desired)
	for _, d := range x.dirs {
		step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: d, What: "directory"})
	}
	if awaited {
		step.Reason = fmt.Sprintf("%s does not exist yet (an earlier resource writes it at apply, with sha256 %s); ", path, desired.String("checksum")) + step.Reason
	}
	return step, nil
}

// archiveNeed is the need of an archive that does not exist yet, for
// property (archive or files), met by an earlier remote_file at path.
func archiveNeed(desired *resources.Resource, path, property string) resources.Need {
	return resources.Need{
		Namespace: resources.NamespacePath, Value: path, What: archiveNeedWhat + path,
		AtApply: true, Property: property,
		Missing: fmt.Sprintf("%s: the archive %s does not exist, and no earlier resource of the plan writes it. Declare the remote_file that downloads it before %s, or give the path of an archive that exists.",
			desired.Address(), path, desired.Address()),
		StillMissing: fmt.Sprintf("the archive %s still does not exist now that the earlier resources of this apply have run", path),
	}
}

// extractReason words x for a reviewer: counts, the first names, and
// what is left as it is.
func extractReason(x *extraction, path, dest string, exists bool, desired *resources.Resource) string {
	var names []string
	for _, e := range x.writes {
		if len(names) == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(x.writes)-5))
			break
		}
		n := e.name
		if e.kind == entryDir {
			n += "/"
		}
		names = append(names, n)
	}
	r := fmt.Sprintf("extracts %s from %s into %s: %s", countWords(x), path, dest, strings.Join(names, ", "))
	if !exists {
		mode := desired.Get("mode")
		r = fmt.Sprintf("makes %s (mode %s), then %s", dest, props.StringOr(mode), r)
	}
	if len(x.left) > 0 {
		r += "; " + leftWords(x.left, props.StringOr(desired.Get("overwrite")))
	}
	return r
}

// countWords counts what x makes: "3 files, 1 directory and 1 symbolic
// link".
func countWords(x *extraction) string {
	var counts []string
	for _, k := range []string{entryFile, entryDir, entrySymlink, entryHardlink} {
		if n := x.made[k]; n > 0 {
			counts = append(counts, plural(n, k))
		}
	}
	return words.Join(counts, "nothing")
}

func leftWords(left []string, overwrite string) string {
	shown := left
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("%d more", len(left)-5))
	}
	switch overwrite {
	case "auto":
		return fmt.Sprintf("leaves %s that differ%s but have the archive's modification time as they are (overwrite = \"auto\"): %s", plural(len(left), "entry"), "", strings.Join(shown, ", "))
	}
	return fmt.Sprintf("leaves %s that exist as they are (overwrite = false): %s", plural(len(left), "entry"), strings.Join(shown, ", "))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	switch what {
	case entryDir:
		return fmt.Sprintf("%d directories", n)
	case "entry":
		return fmt.Sprintf("%d entries", n)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func shortSHA(v cty.Value) string {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return "unknown"
	}
	s := v.AsString()
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

func atoi64(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}

// KnownFrom says which facts of a reading the values an archive_file
// waits for are known from (resources.Awaiter): the archive's, and what
// destination holds at its names, which the plan could not list.
func (t *archiveFileType) KnownFrom(property, fact string) bool {
	if property != "archive" && property != "files" {
		return false
	}
	switch fact {
	case "archive", "files", xArchiveFormat, xArchiveSize, xFromCache:
		return true
	}
	return false
}
