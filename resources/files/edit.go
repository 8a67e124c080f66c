package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// The editors: file_line, file_block and ini_setting change part of a file
// toque does not own (edit_line.go, edit_block.go, edit_ini.go hold what
// each does to the text). They share this engine:
//
//   - Reading is the file type's — held directories, no link followed, the
//     content and the inode from one descriptor — and each refuses what
//     the file type refuses (a link at the path, something other than a
//     regular file, a hard link another user could have made), and a file
//     that is not text (not UTF-8, a NUL byte, not in NFC, over 1 MiB):
//     the plan shows every edit as a line diff.
//   - Several editors of one file compose. The three types share one batch
//     (resources.BatchSharer): the planner, and apply's pre-flight, read
//     every editor of a plan with one LoadAll, which reads each file once
//     and gives each editor the content the editors declared before it
//     leave, in declaration order (composeEdits). Each editor's Plan is
//     computed on that content, so its diff shows its own edit, once, and
//     the editors' diffs together are the file's. At apply, each editor is
//     read again right before it converges (Load, alone), after the
//     editors before it wrote theirs: that reading is the one it was
//     planned on, so its step is the planned one, and the plan records the
//     resulting content (or checksum) as the change's planned value, so
//     that apply writes what the plan showed or refuses.
//   - Each editor writes its own edit atomically (temporary file, fsync,
//     rename, fsync of the directory), keeping the file's mode and owner,
//     after backing the old content up: a resource is one step of the
//     journal, with its own notifications and failure, so one write per
//     editor rather than one for several resources.
//   - What cannot be composed exactly is refused at plan: an editor read on
//     its own (it has guards, runs only when notified, or is a child
//     resource planned at another level) on a file that others of the plan
//     edit too; a value known only at apply.

// editType is one editor type: a schema and its edit.
type editType struct {
	schema *resources.Schema
	ed     textEditor
}

// textEditor is what an editor type does to a file's text.
type textEditor interface {
	// inputs are the properties the edit reads: each must be known when
	// the plan is made.
	inputs() []string
	// check says what is wrong with r's values for action beyond what
	// each property's own validation says (a value the action needs, two
	// that exclude each other).
	check(action string, r *resources.Resource) error
	// edit returns the text action makes of text, and words what it does,
	// or, when it changes nothing, why.
	edit(action string, r *resources.Resource, text string) (string, string, error)
}

// editBatch is the key the editors share their batch of reads under.
type editBatch struct{}

// textEditors are the editors by type name, for a batch of several types.
var textEditors = map[string]textEditor{"file_line": lineEditor{}, "file_block": blockEditor{}, "ini_setting": iniEditor{}}

// editPathProperty is an editor's path: an identity, but in no namespace,
// as several editors edit one file (and a file resource may create it);
// the file is a thing they share.
func editPathProperty() *resources.Property {
	return &resources.Property{Name: "path", Type: cty.String, Identity: true, Required: true, Shares: resources.NamespacePath, Normalize: props.NormalizePath, Validate: props.ValidateAbsPath,
		Description: "Absolute path of the file to edit; it must exist, or be created by an earlier resource of the plan."}
}

// editProperties are the properties every editor has after its own: the
// content and checksum the plan shows, and backup.
func editProperties(typ string) []*resources.Property {
	return []*resources.Property{
		{Name: "content", Type: cty.String, Content: true, Group: "content",
			Validate: func(cty.Value) error {
				return fmt.Errorf("%s computes the file's content from what it reads; a recipe cannot set it (use a file resource to own the whole file)", typ)
			},
			Description: "Read only: the file's content, which the plan shows as a diff of the edit."},
		{Name: "checksum", Type: cty.String, Group: "content",
			Validate: func(cty.Value) error {
				return fmt.Errorf("%s computes the file's checksum from what it reads; a recipe cannot set it", typ)
			},
			Description: "Read only: the sha256 of the file's content, which the plan shows in place of a diff when not every user may read the file."},
		{Name: "backup", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(5), Validate: props.NonNegativeInt("backup"),
			Description: "How many backups of the file's content before an edit to keep in the state directory; 0 keeps none."},
	}
}

func (t *editType) Schema() *resources.Schema { return t.schema }

// BatchKey makes file_line, file_block and ini_setting one batch of reads
// (resources.BatchSharer).
func (t *editType) BatchKey() any { return editBatch{} }

// editReads counts the files the editors read, for the tests that check
// that a plan reads each file once.
var editReads atomic.Int64

// maxEditBytes is the largest file an editor edits: a plan shows the edit
// as a diff, and shows none of a larger text.
const maxEditBytes = 1 << 20

// Load reads the file at path on its own (apply's reading right before
// the editor converges, or one the planner reads outside the batch). At
// plan time, when editors of the plan's batch edit the file too, it says
// so (fsReading.outside) and Plan refuses: its step could not be planned
// on what they leave.
func (t *editType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := r.String("path")
	if err := props.CtxErr(ctx, "reading "+path); err != nil {
		return nil, err
	}
	st, err := readEdited(ctx, dirCacheOf(ctx), path)
	if err != nil {
		return nil, err
	}
	claims := editClaimsOf(ctx)
	if others := claims.othersOf(path, r.Address()); len(others) > 0 {
		fsw(st).outside = others
	} else if others := claims.alone(path, r.Address()); len(others) > 0 {
		fsw(st).outside = others
	}
	return st, nil
}

// LoadAll reads every file the editors rs edit once, and gives each
// editor the content the editors before it in rs leave (resources.
// BatchSharer). rs may hold resources of the three editor types.
func (t *editType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	out := make([]*resources.State, len(rs))
	claims := editClaimsOf(ctx)
	batch := claims.newBatch()
	c := dirCacheOf(ctx)
	byPath := map[string][]int{}
	var paths []string
	for i, r := range rs {
		p := r.String("path")
		if _, ok := byPath[p]; !ok {
			paths = append(paths, p)
		}
		byPath[p] = append(byPath[p], i)
	}
	for _, p := range paths {
		if err := props.CtxErr(ctx, "reading "+p); err != nil {
			return nil, err
		}
		idx := byPath[p]
		addrs := make([]string, len(idx))
		for j, i := range idx {
			addrs[j] = rs[i].Address()
		}
		if !claims.claim(p, batch, addrs) {
			continue // another batch edits it: each Load says so
		}
		base, err := readEdited(ctx, c, p)
		if err != nil {
			continue // each Load reports it
		}
		composeEdits(base, rs, idx, out)
	}
	return out, nil
}

// composeEdits gives each of the editors rs[idx] of one file, in order,
// base with the content the editors before it leave. Then it checks that
// the editors agree: each, made again on the text they all leave, changes
// nothing. One that would edit the file again undoes, or is undone by,
// an editor after it (a file_line that changes a line of a file_block):
// the two would fight on every apply, and its Plan refuses it
// (fsReading.undoneBy).
func composeEdits(base *resources.State, rs []*resources.Resource, idx []int, out []*resources.State) {
	text, editable := editableText(base)
	type changer struct {
		pos  int
		addr string
		text string // what it leaves
	}
	var before []string
	var changers []changer
	var applied []int // positions in idx of the editors that were made
	for pos, i := range idx {
		st := base.Clone()
		rd := *fsr(base)
		rd.editors = slices.Clone(before)
		st.Local = &rd
		if editable {
			setEditValues(st, text)
		}
		out[i] = st
		r := rs[i]
		ed := textEditors[r.Type]
		action := r.EffectiveAction()
		if !editable || ed == nil || action == "nothing" || ed.check(action, r) != nil {
			continue
		}
		// Its own Plan refuses an edit that fails; the others are planned
		// on the text it leaves as it is.
		next, _, err := ed.edit(action, r, text)
		if err != nil {
			continue
		}
		applied = append(applied, pos)
		if next != text {
			before = append(before, r.Address())
			changers = append(changers, changer{pos, r.Address(), next})
			text = next
		}
	}
	for _, pos := range applied {
		r := rs[idx[pos]]
		again, _, err := textEditors[r.Type].edit(r.EffectiveAction(), r, text)
		if err == nil && again == text {
			continue
		}
		// The first editor after it that leaves a text it would change.
		by := []string{}
		for _, c := range changers {
			if c.pos <= pos {
				continue
			}
			if again, _, err := textEditors[r.Type].edit(r.EffectiveAction(), r, c.text); err != nil || again != c.text {
				by = append(by, c.addr)
				break
			}
		}
		fsr(out[idx[pos]]).undoneBy = by
	}
}

// editableText is the text of a reading an editor can edit.
func editableText(st *resources.State) (string, bool) {
	if !st.Exists || st.Extra["kind"] != "file" || st.Extra["text"] != "" || st.Extra["refused"] != "" {
		return "", false
	}
	v, ok := st.Values["content"]
	if !ok || v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return "", false
	}
	return v.AsString(), true
}

// readEdited reads the file at path as the file type reads one, holding
// its directory from c when set. A regular file's content is read when it
// is text an editor can edit; otherwise Extra "text" says why not. When
// the host lacks the file and an earlier step of the plan ships it (a
// package's configuration file: resources.ForesightOf), the editor reads
// the file that step ships, as a template over it does (foreseen).
func readEdited(ctx context.Context, c *DirCache, path string) (*resources.State, error) {
	f, err := lookupPathIn(c, path, false)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.close()
	if pst, err := foreseen(ctx, path, f, true); err != nil {
		return nil, err
	} else if pst != nil {
		// An editor reads a file's text, not its owner or mode (which a
		// reading of the installed file does not hold either).
		content, hasContent := pst.Values["content"]
		for k := range pst.Values {
			delete(pst.Values, k)
		}
		if pst.Extra["kind"] == "file" && hasContent {
			text := content.AsString()
			if why := notText([]byte(text)); why != "" || pst.Extra["content_bytes"] != "" {
				if why == "" {
					why = "its text is not in Unicode normal form C (NFC)"
				}
				delete(pst.Values, "content")
				pst.Extra["text"] = why
				return pst, nil
			}
			setEditValues(pst, text)
		}
		return pst, nil
	}
	st := stateOf(f)
	if !f.exists || f.link != "" || f.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return st, nil
	}
	data, fst, err := readRegular(f.dir, f.name, idOf(&f.st))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	editReads.Add(1)
	si := statInfoOf(&fst)
	fsw(st).obj = idOf(&fst)
	if why := hardLinkRisk(f, si); why != "" {
		st.Extra["refused"] = why
	}
	if why := notText(data); why != "" {
		st.Extra["text"] = why
		return st, nil
	}
	if why := privateContent(f, si); why != "" {
		st.Private = map[string]string{"content": why}
	}
	setEditValues(st, string(data))
	return st, nil
}

// setEditValues sets the content an editor reads in st, and its checksum
// when the content is private: the plan then shows the checksum change
// in place of a diff. (Of a public file the checksum would only be noise
// in the plan: the content says it all.)
func setEditValues(st *resources.State, text string) {
	st.Values["content"] = cty.StringVal(text)
	if st.Private["content"] != "" {
		st.Values["checksum"] = cty.StringVal(sha256Hex(text))
	} else {
		delete(st.Values, "checksum")
	}
}

// notText says why data is not text an editor edits, or "".
func notText(data []byte) string {
	switch {
	case len(data) > maxEditBytes:
		return fmt.Sprintf("it is %s, more than the 1 MiB a plan shows as a diff", humanBytes(int64(len(data))))
	case !utf8.Valid(data):
		return "it is not UTF-8 text"
	case slices.Contains(data, 0):
		return "it holds a NUL byte"
	case cty.StringVal(string(data)).AsString() != string(data):
		return "its text is not in Unicode normal form C (NFC), in which toque compares and shows text, so an edit would change other lines too"
	}
	return ""
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// editClaims records, for the reads of one plan (resources.Reads), which
// batch read each edited file and for which editors: an editor read on
// its own, of a file a batch composed, cannot be planned with them.
type editClaims struct {
	mu      sync.Mutex
	batches int
	byPath  map[string]editClaim
	// solo lists, by path, the editors the planner read on their own:
	// two of one file would each be planned on the file as it is, and
	// the second to converge would find the first's edit.
	solo map[string][]string
}

type editClaim struct {
	batch int
	addrs []string
}

type editClaimsKey struct{}

// editClaimsOf is the claims of the batch of reads ctx carries, or nil
// outside one (apply's reads: nothing to compose with there).
func editClaimsOf(ctx context.Context) *editClaims {
	c, _ := resources.ReadsOf(ctx).Get(editClaimsKey{}, func() (any, func()) {
		return &editClaims{byPath: map[string]editClaim{}}, nil
	}).(*editClaims)
	return c
}

func (c *editClaims) newBatch() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	return c.batches
}

// claim records that batch composes the editors addrs of path; false
// when another batch composed editors of path already.
func (c *editClaims) claim(path string, batch int, addrs []string) bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byPath[path]; ok && cl.batch != batch {
		return false
	}
	c.byPath[path] = editClaim{batch: batch, addrs: append(c.byPath[path].addrs, addrs...)}
	return true
}

// othersOf lists the editors a batch composed on path, when addr is not
// one of them: an editor that cannot be planned with them.
func (c *editClaims) othersOf(path, addr string) []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.byPath[path]
	if !ok || slices.Contains(cl.addrs, addr) {
		return nil
	}
	return slices.Clone(cl.addrs)
}

// alone records that the editor addr of path was read on its own, and
// lists the editors of path read on their own before it (none the first
// time: which of two is refused depends on the order the planner reads
// them in; one is).
func (c *editClaims) alone(path, addr string) []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.solo == nil {
		c.solo = map[string][]string{}
	}
	var others []string
	for _, a := range c.solo[path] {
		if a != addr {
			others = append(others, a)
		}
	}
	if !slices.Contains(c.solo[path], addr) {
		c.solo[path] = append(c.solo[path], addr)
	}
	return others
}

// Plan decides what the editor's action does to the content it was read
// with. It never does I/O.
func (t *editType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	step, err := t.plan(action, desired, current)
	step, err = withForeseen(step, err, current)
	return withPathNeeds(step, err, current, desired.String("path"), false, false)
}

func (t *editType) plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	name, path := t.schema.Name, desired.String("path")
	if action != "create" && action != "delete" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	if others := fsr(current).outside; len(others) > 0 {
		return nil, fmt.Errorf("%s edits %s, which %s edit%s too: toque plans the editors of one file together, each on the content those declared before it leave, and %s cannot be planned with them, as it has guards decided when they run (commands, or guards decided at apply; expressions known when the plan is made are fine), runs only when notified, or is a child resource planned apart: edit the file with editors that have none of these, or leave this one alone on its file",
			desired.Address(), path, joinAddrs(others), plural1(len(others)), desired.Address())
	}
	if undone := fsr(current).undoneBy; len(undone) == 0 && undone != nil {
		return nil, fmt.Errorf("%s would edit %s again on the next apply: made once more on the content it leaves, it changes it again (a match that matches other lines than the one it replaces?); make the edit one that, once made, is in place", desired.Address(), path)
	} else if undone != nil {
		return nil, fmt.Errorf("%s, declared after %s, changes what %s puts in %s: on every apply it would edit the file again, and %s would undo it again; let each editor of a file edit lines of its own (a file_line must not change a line of a file_block, nor two editors the same line)",
			undone[0], desired.Address(), desired.Address(), path, undone[0])
	}
	for _, p := range t.ed.inputs() {
		if v, ok := desired.Values[p]; ok && v != cty.NilVal && !v.IsWhollyKnown() {
			return nil, &resources.PropertyError{Property: p, Err: fmt.Errorf("%s must be known when the plan is made: the plan shows the edit as a diff of the file", p)}
		}
	}
	if err := t.ed.check(action, desired); err != nil {
		return nil, err
	}
	if !current.Exists {
		if action == "delete" {
			return &resources.Step{Kind: resources.NoOp, Reason: path + " does not exist"}, nil
		}
		return awaitFileStep(name, desired.Address(), path), nil
	}
	switch {
	case current.Extra["kind"] == "symlink":
		return nil, fmt.Errorf("%s is a symbolic link to %s; %s edits a regular file, never through a link: name the file it leads to", path, current.Extra["link_target"], name)
	case current.Extra["kind"] != "file":
		return nil, fmt.Errorf("%s cannot edit %s at %s; it edits regular text files", name, props.Article(current.Extra["kind"]), path)
	case current.Extra["refused"] != "":
		return nil, errors.New(current.Extra["refused"])
	case current.Extra["text"] != "":
		return nil, fmt.Errorf("%s is not a text file %s can edit: %s", path, name, current.Extra["text"])
	}
	text, ok := editableText(current)
	if !ok {
		return nil, fmt.Errorf("%s was not read (a bug in %s)", path, name)
	}
	out, what, err := t.ed.edit(action, desired, text)
	if err != nil {
		return nil, err
	}
	if out == text {
		return &resources.Step{Kind: resources.NoOp, Reason: what}, nil
	}
	changes := editChanges(current, text, out)
	return &resources.Step{Kind: resources.Update, Reason: what, Changes: changes, Groups: t.schema.Groups(changes)}, nil
}

// editChanges are the changes of an edit from text to out: the content,
// shown as a diff, or, when not every user may read the file, only its
// checksum (the new content is made of the old). The note names the
// editors the content was planned after.
func editChanges(current *resources.State, text, out string) []resources.Change {
	note := ""
	if ed := fsr(current).editors; len(ed) > 0 {
		note = "planned on the content " + joinAddrs(ed) + " leave" + plural1(len(ed)) + " (declared before it)"
	}
	if why := current.Private["content"]; why != "" {
		n := "the content is not shown: not every user of this host may read the file"
		if note != "" {
			n += "; " + note
		}
		return []resources.Change{{Property: "checksum", Before: cty.StringVal(sha256Hex(text)), After: cty.StringVal(sha256Hex(out)), Note: n}}
	}
	return []resources.Change{{Property: "content", Before: cty.StringVal(text), After: cty.StringVal(out), Note: note}}
}

// awaitFileStep is the step of an editor of a file that does not exist:
// an earlier resource of the plan must create it (a file resource with
// create_if_missing), and the edit is known once it exists
// (resources.Need.AtApply). Both content and checksum wait: which of the
// two the edit shows depends on whether every user may read the file the
// earlier resource makes.
func awaitFileStep(typ, addr, path string) *resources.Step {
	need := func(prop string) resources.Need {
		n := resources.Need{
			Namespace: resources.NamespacePath, Value: path, What: fileNeedWhat + path,
			AtApply: true, Property: prop,
			StillMissing: fmt.Sprintf("%s still does not exist, now that the resources before %s have run; %s edits an existing file", path, addr, typ),
		}
		if prop == "content" {
			n.Missing = fmt.Sprintf("%s does not exist, and no earlier resource of the plan creates it: %s edits an existing file. Declare a file resource for it (action = \"create_if_missing\") before %s.", path, typ, addr)
		}
		return n
	}
	return &resources.Step{
		Kind:   resources.Update,
		Reason: path + " does not exist yet: an earlier resource creates it, and the edit is planned right before " + addr + " converges",
		Changes: []resources.Change{
			{Property: "content", Before: cty.NilVal, After: cty.UnknownVal(cty.String)},
			{Property: "checksum", Before: cty.NilVal, After: cty.UnknownVal(cty.String)},
		},
		Groups: []string{"content"},
		Needs:  []resources.Need{need("content"), need("checksum")},
	}
}

// Steps: an edit is an update of the file (the editors never create or
// delete one).
func (t *editType) Steps() resources.Steps { return resources.Steps{Update: t.update} }

// update reads the file again through held directories, checks it is the
// inode and the content the step was planned on, makes the edit again,
// checks it gives what the step says, backs the old content up and
// replaces the file atomically, keeping its mode and owner.
func (t *editType) update(_ context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("path")
	f, err := lookupPath(path, false)
	if err != nil {
		return fmt.Errorf("editing %s: %w", path, err)
	}
	defer f.close()
	switch {
	case !f.exists:
		return fmt.Errorf("editing %s: it is gone: %w", path, ErrChanged)
	case f.link != "":
		return fmt.Errorf("editing %s: it is a symbolic link now: %w", path, ErrChanged)
	}
	file, fst, err := openAt(f.dir, f.name, unix.O_RDONLY, unix.S_IFREG, fsr(current).obj)
	if err != nil {
		return fmt.Errorf("editing %s: %w", path, err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxEditBytes+1))
	if err != nil {
		return fmt.Errorf("editing %s: %w", path, err)
	}
	text := string(data)
	if read, ok := editableText(current); !ok || read != text {
		return fmt.Errorf("editing %s: its content is not the content read: %w", path, ErrChanged)
	}
	out, _, err := t.ed.edit(desired.Action, desired, text)
	if err != nil {
		return fmt.Errorf("editing %s: %w", path, err)
	}
	if c := step.Change("content"); c != nil && c.After.IsKnown() && c.After.AsString() != out {
		return fmt.Errorf("editing %s: the edit gives another content than the step's (a bug in %s); the file is unchanged", path, t.schema.Name)
	}
	if c := step.Change("checksum"); c != nil && c.After.IsKnown() && c.After.AsString() != sha256Hex(out) {
		return fmt.Errorf("editing %s: the edit gives another content than the step's (a bug in %s); the file is unchanged", path, t.schema.Name)
	}
	if out == text {
		return nil
	}
	live := statInfoOf(&fst)
	if _, err := backupFrom(env, path, file, live.mode, desired.Int("backup"), time.Now()); err != nil {
		return err
	}
	nf, err := replaceAtomic(f.dir, f.name, []byte(out), live.mode, ownership{uid: int(live.uid), gid: int(live.gid)})
	if err != nil {
		return err
	}
	return nf.Close()
}

// joinAddrs words a list of resource addresses.
func joinAddrs(addrs []string) string {
	switch len(addrs) {
	case 1:
		return addrs[0]
	case 2:
		return addrs[0] + " and " + addrs[1]
	}
	if len(addrs) > 5 {
		return strings.Join(addrs[:4], ", ") + fmt.Sprintf(" and %d more", len(addrs)-4)
	}
	return strings.Join(addrs[:len(addrs)-1], ", ") + " and " + addrs[len(addrs)-1]
}

// plural1 is "s" for one, the third person of a verb after one subject.
func plural1(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// Predict is the state an edit leaves: the file with the edited content
// (and its checksum, when the content is private and the step shows only
// that), as the next reading of the file will find it.
func (t *editType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	if step.Kind != resources.Update || !current.Exists {
		return resources.PredictFromChanges(current, step), nil
	}
	text, ok := editableText(current)
	if !ok {
		return resources.PredictFromChanges(current, step), nil
	}
	out, _, err := t.ed.edit(desired.Action, desired, text)
	if err != nil {
		return nil, err
	}
	st := current.Clone()
	setEditValues(st, out)
	return st, nil
}
