package files

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// TestRaceEditorSwap races the editors as race_test.go races file: a
// local user swaps the edited path (or its parent) between nothing, a
// symbolic link to a sentinel, a hard link to it and a file of their own,
// while Load, Plan and Converge run as apply runs them right before
// converging. The sentinel never changes: an editor edits the file it
// read, through no link, or refuses.
func TestRaceEditorSwap(t *testing.T) {
	types := []resources.Type{FileLineType(), FileBlockType(), IniSettingType()}
	w := newRaceWorld(t)
	vault := filepath.Dir(w.secretFile.path)
	target := filepath.Join(w.drop, "target")
	sub := filepath.Join(w.drop, "sub")
	env := resourcetest.TestEnv(t)
	ownFile := func(tmp string) error { return os.WriteFile(tmp, []byte("theirs\n"), 0o644) }
	finalSwap := []swapMove{linkTo(w.secretFile.path), nil, hardLinkTo(w.secretFile.path), ownFile}
	var tally raceTally
	start := time.Now()
	for i := range raceAttempts {
		os.RemoveAll(target)
		os.RemoveAll(sub)
		mkdir(t, sub, 0o777)
		path, swapped, moves := target, target, finalSwap
		if i%4 == 1 { // the parent is swapped for a link to the sentinel's directory
			path, swapped, moves = filepath.Join(sub, "target"), sub, []swapMove{linkTo(vault), emptyDir}
		}
		resourcetest.WriteFile(t, path, "[s]\nk = 1\n", 0o644)
		typ := types[i%len(types)]
		vals := map[string]any{"path": path}
		switch typ.Schema().Name {
		case "file_line":
			vals["line"] = "k = 2"
			vals["match"] = "^k ="
		case "file_block":
			vals["block"] = "planned"
		case "ini_setting":
			vals["section"], vals["value"] = "s", "2"
		}
		wait := int64(i/2) % 5
		attack := func() *swapper { return startSwapper(swapped, wait, moves) }
		raceOnce(t, (i/4)%3 == 0, typ, env, resourcetest.BuildRes(t, typ, "k", "", vals), attack, &tally)
		w.secretFile.check(t, i)
	}
	t.Logf("%d attempts in %v: %+v", raceAttempts, time.Since(start).Round(time.Millisecond), tally)
	if tally.converged == 0 || tally.refused+tally.refusedEarly == 0 {
		t.Fatalf("the race was not run both ways: %+v", tally)
	}
}
