//go:build unix

package resources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
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
	Stage(ctx context.Context, env *Env, desired *Resource, current *State, step *Step) (*Staged, error)
}

// errNoSyncFS says the kernel cannot sync a whole file system.
var errNoSyncFS = errors.New("no syncfs")

// Staged is a change written under a temporary name: Commit makes it
// visible, Abort removes it. Either must be called, once.
type Staged struct {
	dir  *heldDir
	tmp  *os.File
	from string // temporary name in dir
	name string // final name in dir
	path string
	// create renames without replacing anything (a new file).
	create bool
	// dev is the file system of dir, for one syncfs per file system.
	dev uint64
}

// Path is the path the change lands at.
func (s *Staged) Path() string { return s.path }

// Commit renames the staged file into place, failing as Converge would
// (something appeared there since the file was read: ErrChanged).
func (s *Staged) Commit() error {
	if s.tmp != nil {
		s.tmp.Close()
		s.tmp = nil
	}
	err := renameAt(s.dir, s.from, s.name, s.create)
	if err == nil {
		return nil
	}
	unix.Unlinkat(s.dir.fd, s.from, 0)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: something appeared there: %w", s.path, ErrChanged)
	}
	return fmt.Errorf("creating %s: %w", s.path, err)
}

// Abort removes the staged file; the change never happened.
func (s *Staged) Abort() {
	if s.tmp != nil {
		s.tmp.Close()
		s.tmp = nil
	}
	unix.Unlinkat(s.dir.fd, s.from, 0)
	s.dir.close()
}

// Close lets go of the directory once the Staged was committed and synced.
func (s *Staged) Close() { s.dir.close() }

// SyncStaged makes the data of every staged file durable: one syncfs per
// file system where the kernel has it, else an fsync per file.
func SyncStaged(staged []*Staged) error {
	done := map[uint64]bool{}
	for _, s := range staged {
		if done[s.dev] {
			continue
		}
		// The temporary file's descriptor names the file system (the
		// directory is held by an O_PATH descriptor, which syncfs refuses).
		err := syncFS(int(s.tmp.Fd()))
		if err == nil {
			done[s.dev] = true
			continue
		}
		if !errors.Is(err, errNoSyncFS) {
			return fmt.Errorf("syncing the file system of %s: %w", s.dir.path, err)
		}
		// No syncfs: every file of this file system on its own.
		for _, o := range staged {
			if o.dev == s.dev && o.tmp != nil {
				if err := o.tmp.Sync(); err != nil {
					return fmt.Errorf("syncing %s: %w", o.tmp.Name(), err)
				}
			}
		}
		done[s.dev] = true
	}
	return nil
}

// SyncCommitted makes the renames of committed stages durable, with one
// fsync per directory; it returns the index of the first whose directory
// could not be synced, with the error, or -1.
func SyncCommitted(committed []*Staged) (int, error) {
	synced := map[fileID]error{}
	for i, s := range committed {
		st, err := s.dir.stat()
		if err != nil {
			return i, err
		}
		id := idOf(&st)
		serr, seen := synced[id]
		if !seen {
			serr = s.dir.sync()
			synced[id] = serr
		}
		if serr != nil {
			return i, serr
		}
	}
	return -1, nil
}

// stageNew writes content to a new temporary file in d, with mode and
// owner, and returns it staged for a rename that replaces nothing (as
// writeNew, whose fsyncs it leaves to SyncStaged and SyncCommitted).
func stageNew(d *heldDir, name string, content []byte, mode uint32, own ownership) (*Staged, error) {
	path := d.join(name)
	st, err := d.stat()
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	tmp, tmpName, err := createTemp(d, name)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if err := fillNew(tmp, content, mode, own); err != nil {
		tmp.Close()
		unix.Unlinkat(d.fd, tmpName, 0)
		return nil, fmt.Errorf("creating %s (nothing was changed): %w", path, err)
	}
	return &Staged{dir: d, tmp: tmp, from: tmpName, name: name, path: path, create: true, dev: uint64(st.Dev)}, nil
}
