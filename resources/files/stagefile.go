//go:build unix

package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
)

// errNoSyncFS says the kernel cannot sync a whole file system.
var errNoSyncFS = errors.New("no syncfs")

// stagedFile is a new file written under a temporary name (Staged).
type stagedFile struct {
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
func (s *stagedFile) Path() string { return s.path }

// Commit renames the staged file into place, failing as Converge would
// (something appeared there since the file was read: ErrChanged).
func (s *stagedFile) Commit() error {
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
func (s *stagedFile) Abort() {
	if s.tmp != nil {
		s.tmp.Close()
		s.tmp = nil
	}
	unix.Unlinkat(s.dir.fd, s.from, 0)
	s.dir.close()
}

// Close lets go of the directory once the Staged was committed and synced.
func (s *stagedFile) Close() { s.dir.close() }

// fileSyncer syncs staged files (StageSyncer): one syncfs per file system
// where the kernel has it, else an fsync per file; one fsync per directory
// for the renames.
type fileSyncer struct{}

// Syncer is the file types' StageSyncer.
func (s *stagedFile) Syncer() resources.StageSyncer { return fileSyncer{} }

func stagedFiles(changes []resources.Staged) []*stagedFile {
	out := make([]*stagedFile, len(changes))
	for i, c := range changes {
		out[i] = c.(*stagedFile)
	}
	return out
}

// SyncStaged makes the data of every staged file durable: one syncfs per
// file system where the kernel has it, else an fsync per file.
func (fileSyncer) SyncStaged(changes []resources.Staged) error {
	staged := stagedFiles(changes)
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
func (fileSyncer) SyncCommitted(changes []resources.Staged) (int, error) {
	committed := stagedFiles(changes)
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
func stageNew(d *heldDir, name string, content []byte, mode uint32, own ownership) (*stagedFile, error) {
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
	return &stagedFile{dir: d, tmp: tmp, from: tmpName, name: name, path: path, create: true, dev: uint64(st.Dev)}, nil
}
