package files

import (
	"github.com/toquehq/toque/resources"
)

// fsReading is what the file-system types' Load hands their Plan and
// steps (State.Local): never stored in a plan.
type fsReading struct {
	// parentMissing is set when a directory on the way to the path does
	// not exist: a create then needs its parent from an earlier resource
	// (Step.Needs).
	parentMissing bool
	// ownerUID is the owner of what Load found (ownerKnown), and
	// dirUnwritable the directory toque's user may not write, "" when it
	// may: for the plan to refuse what apply could not do (privilege.go).
	ownerUID      int
	ownerKnown    bool
	dirUnwritable string
	// fetched is what remote_file's Load downloaded (or found in its
	// cache) for Plan to show: the plan records only its digest, in
	// Extra.
	fetched *fetchedSource
	// obj and src identify the objects Load read (the file at a path; a
	// hard link's source), so that a step changes those and no other.
	obj, src fileID
	// editors are the editors of the same file (file_line, file_block,
	// ini_setting) declared before this one whose edits the reading
	// holds (edit.go); outside, those a batch composed on a file this
	// editor, read on its own, cannot be planned with.
	editors, outside []string
	// undoneBy, when not nil, are the editors after this one that change
	// what it puts in the file: they would fight on every apply.
	undoneBy []string
	// foreseenBy names the earlier step of the plan whose prediction Load
	// read, the host lacking the path (foreseen.go): "package[nginx]
	// (nginx-common 1.22.1-9+deb12u9)".
	foreseenBy string
}

var noReading fsReading

// fsr is st's reading, for reading only (a zero one when Load left
// none).
func fsr(st *resources.State) *fsReading {
	if r, ok := st.Local.(*fsReading); ok {
		return r
	}
	return &noReading
}

// fsw is st's reading, for Load to fill in: made on first use.
func fsw(st *resources.State) *fsReading {
	if r, ok := st.Local.(*fsReading); ok {
		return r
	}
	r := &fsReading{}
	st.Local = r
	return r
}
