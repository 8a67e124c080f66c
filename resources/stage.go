package resources

import (
	"context"
	"fmt"
)

// Staging lets apply make many changes durable at once (its group commit,
// apply/commit.go) instead of waiting for the disk after each one: a file
// written with temporary file, fsync, rename and fsync of its directory
// costs three disk flushes, and creating 10,000 files took 20 s.
//
// A Stager's Stage does a step's work without making it visible: the new
// file is written, with its owner and mode, under its temporary name, and
// not synced. Apply stages a run of resources that cannot see each other
// (see apply/commit.go), then SyncStaged makes all their data durable in
// one flush per file system, then each Staged is committed in plan order
// (the rename that makes it visible), then SyncCommitted makes the renames
// durable with one fsync per directory. So after a crash at any point,
// power loss included, every file is its old content or its new one: no
// rename reaches the disk before the data it names.

// Stager is implemented by a type some of whose steps can be staged.
type Stager interface {
	Type
	// StagePath is the path a staged step of desired would change, or ""
	// when desired's steps are never staged. Apply commits a staged step
	// before it reads anything at or under that path.
	StagePath(desired *Resource) string
	// Stage prepares step, as Converge would carry it out, without making
	// it visible or durable. It returns nil and no error when the step is
	// not one it stages: apply then calls Converge. On error nothing was
	// changed (what it wrote is removed).
	Stage(ctx context.Context, env *Env, desired *Resource, current *State, step *Step) (Staged, error)
}

// Staged is a change written under a temporary name: Commit makes it
// visible, Abort removes it. Either must be called, once; Close lets go
// of what it holds once it was committed and synced.
type Staged interface {
	// Path is the path the change lands at.
	Path() string
	// Commit makes the change visible, failing as the step would have
	// (something appeared there since it was read).
	Commit() error
	// Abort removes the staged change; it never happened.
	Abort()
	Close()
	// Syncer makes staged changes durable; the changes of one Syncer are
	// synced together (SyncStaged, SyncCommitted).
	Syncer() StageSyncer
}

// StageSyncer makes the changes its Stager staged durable in batches.
type StageSyncer interface {
	// SyncStaged makes the data of staged durable, before any is
	// committed.
	SyncStaged(staged []Staged) error
	// SyncCommitted makes the commits of committed durable; it returns
	// the index in committed of the first it could not, with the error,
	// or -1.
	SyncCommitted(committed []Staged) (int, error)
}

// bySyncer groups changes by their Syncer, keeping each change's index.
func bySyncer(changes []Staged) ([]StageSyncer, map[StageSyncer][]int) {
	var order []StageSyncer
	idx := map[StageSyncer][]int{}
	for i, c := range changes {
		s := c.Syncer()
		if _, ok := idx[s]; !ok {
			order = append(order, s)
		}
		idx[s] = append(idx[s], i)
	}
	return order, idx
}

// SyncStaged makes the data of every staged change durable, one batch per
// Syncer.
func SyncStaged(staged []Staged) error {
	order, idx := bySyncer(staged)
	for _, s := range order {
		batch := make([]Staged, len(idx[s]))
		for j, i := range idx[s] {
			batch[j] = staged[i]
		}
		if err := s.SyncStaged(batch); err != nil {
			return err
		}
	}
	return nil
}

// SyncCommitted makes the commits of committed durable, one batch per
// Syncer; it returns the index of the first that could not be, with the
// error, or -1.
func SyncCommitted(committed []Staged) (int, error) {
	order, idx := bySyncer(committed)
	first, firstErr := -1, error(nil)
	for _, s := range order {
		batch := make([]Staged, len(idx[s]))
		for j, i := range idx[s] {
			batch[j] = committed[i]
		}
		j, err := s.SyncCommitted(batch)
		if err == nil {
			continue
		}
		if j < 0 || j >= len(batch) {
			return 0, fmt.Errorf("syncing staged changes: %w", err)
		}
		if at := idx[s][j]; first < 0 || at < first {
			first, firstErr = at, err
		}
	}
	return first, firstErr
}
