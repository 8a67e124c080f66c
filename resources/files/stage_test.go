package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

func stagedCreate(t *testing.T, path, content string) resources.Staged {
	t.Helper()
	ft := FileType().(*fileType)
	d := resources.NewResource(ft.schema, path, "create", map[string]cty.Value{
		"path": cty.StringVal(path), "content": cty.StringVal(content), "mode": cty.StringVal("0640"),
	})
	s, err := ft.Stage(context.Background(), &resources.Env{}, d, resources.Absent(), &resources.Step{Kind: resources.Create})
	if err != nil || s == nil {
		t.Fatalf("Stage: %v, %v", s, err)
	}
	return s
}

// TestStagedCreate: a staged file is invisible until committed, then has
// its content and mode; nothing is left under the temporary name.
func TestStagedCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "motd")
	s := stagedCreate(t, path, "hello\n")
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("staged file visible before its commit: %v", err)
	}
	if err := resources.SyncStaged([]resources.Staged{s}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if i, err := resources.SyncCommitted([]resources.Staged{s}); err != nil {
		t.Fatalf("SyncCommitted: %d %v", i, err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "hello\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after commit: %q %v %v", b, fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %v, want only motd", entries)
	}
}

// TestStagedCreateReplacesNothing: something that appeared at the path
// after the stage is left alone, and the commit fails with ErrChanged.
func TestStagedCreateReplacesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "motd")
	s := stagedCreate(t, path, "hello\n")
	if err := os.WriteFile(path, []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Commit()
	s.Close()
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("Commit over a file that appeared: %v, want ErrChanged", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "someone else's\n" {
		t.Errorf("the file that appeared was changed: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v after the failed commit, want only motd", entries)
	}
}

// TestStagedCreateAbort: an aborted stage leaves nothing.
func TestStagedCreateAbort(t *testing.T) {
	dir := t.TempDir()
	s := stagedCreate(t, filepath.Join(dir, "motd"), "hello\n")
	s.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("directory holds %v after Abort, want nothing", entries)
	}
}

// TestStageLeavesOtherStepsToConverge: only atomic creates are staged.
func TestStageLeavesOtherStepsToConverge(t *testing.T) {
	dir := t.TempDir()
	ft := FileType().(*fileType)
	for _, c := range []struct {
		kind   resources.Kind
		atomic bool
	}{{resources.Update, true}, {resources.Delete, true}, {resources.Create, false}} {
		d := resources.NewResource(ft.schema, "x", "create", map[string]cty.Value{
			"path": cty.StringVal(filepath.Join(dir, "x")), "content": cty.StringVal("x"), "atomic_update": cty.BoolVal(c.atomic),
		})
		if s, err := ft.Stage(context.Background(), &resources.Env{}, d, resources.Absent(), &resources.Step{Kind: c.kind}); s != nil || err != nil {
			t.Errorf("%s (atomic %v) staged: %v %v", c.kind, c.atomic, s, err)
		}
	}
}
