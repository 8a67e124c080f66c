package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// LockFileName is the apply lock's name inside the state directory.
const LockFileName = "apply.lock"

// lockPoll is how often a waiting apply tries the lock again.
const lockPoll = 50 * time.Millisecond

// lockHolder is what the holder writes into the lock file.
type lockHolder struct {
	PID        int    `json:"pid"`
	User       string `json:"user"`
	Hostname   string `json:"hostname"`
	Since      string `json:"since"` // RFC 3339
	PlanDigest string `json:"plan_digest,omitempty"`
	// StateDir is the holder's state directory: in the host-wide lock it
	// tells an apply with another state directory who is running.
	StateDir string `json:"state_dir,omitempty"`
}

// applyLock is a held apply lock.
type applyLock struct {
	f *os.File
	// dev and ino identify the lock file, so that one file named both as
	// the host-wide lock and as the state directory's is locked once.
	dev, ino uint64
}

// lockRequest is what acquireLock needs besides the file.
type lockRequest struct {
	// deadline is when to give up on a held lock; the zero time (or one
	// already past) fails at once.
	deadline time.Time
	// started is when the waiting began, for LockHeldError.Waited.
	started  time.Time
	stop     <-chan struct{}
	now      func() time.Time
	digest   string
	stateDir string
	hostWide bool
}

// acquireLock takes the lock file name in dir (opened no-follow and checked
// like every state file). It fails at once when the lock is held and
// req.deadline is past; otherwise it polls until the deadline, ctx is done
// or stop is closed. The kernel releases an flock when its holder dies, so
// a lock file left by a dead process never blocks.
func acquireLock(ctx context.Context, dir *StateDir, name string, req lockRequest) (*applyLock, error) {
	path := dir.Join(name)
	f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open apply lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		left := time.Until(req.deadline)
		if left <= 0 {
			held := readHolder(f, path)
			held.HostWide = req.hostWide
			if !req.deadline.IsZero() {
				held.Waited = time.Since(req.started)
			}
			f.Close()
			return nil, held
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the apply lock: %w", ctx.Err())
		case <-req.stop:
			f.Close()
			return nil, &InterruptedError{}
		case <-time.After(min(lockPoll, left)):
		}
	}
	l := &applyLock{f: f}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err == nil {
		l.dev, l.ino = uint64(st.Dev), st.Ino
	}
	if err := l.record(req.now(), req.digest, req.stateDir); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// sameFile reports whether the lock file name in dir is the file l holds.
func (l *applyLock) sameFile(dir *StateDir, name string) bool {
	var st unix.Stat_t
	if l == nil || unix.Fstatat(dir.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return uint64(st.Dev) == l.dev && st.Ino == l.ino
}

// record writes the holder's identity into the lock file.
func (l *applyLock) record(since time.Time, digest, stateDir string) error {
	h := lockHolder{PID: os.Getpid(), Since: since.UTC().Format(time.RFC3339), PlanDigest: digest, StateDir: stateDir}
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	} else {
		h.User = strconv.Itoa(os.Getuid())
	}
	h.Hostname, _ = os.Hostname()
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("record apply lock holder: %w", err)
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("record apply lock holder: %w", err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("record apply lock holder: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("record apply lock holder: %w", err)
	}
	return nil
}

// release empties the holder record and drops the lock. The file stays:
// removing it would let two processes lock different inodes.
func (l *applyLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// readHolder reads the holder's record; a missing or half-written record
// gives an error with PID 0.
func readHolder(f *os.File, path string) *LockHeldError {
	e := &LockHeldError{Path: path}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 64<<10))
	if err != nil {
		return e
	}
	var h lockHolder
	if json.Unmarshal(b, &h) != nil {
		return e
	}
	e.PID, e.User, e.Hostname, e.StateDir = h.PID, h.User, h.Hostname, h.StateDir
	if t, err := time.Parse(time.RFC3339, h.Since); err == nil {
		e.Since = t
	}
	return e
}

// lock takes the host-wide apply lock (when Applier.HostLock names one),
// then the state directory's, both within one LockTimeout, always in that
// order so that two waiting applies cannot deadlock. It returns the
// function that releases them. An *InterruptedError (Stop while it
// waited) counts every resource with work as not started.
func (r *run) lock(ctx context.Context) (release func(), err error) {
	defer func() {
		var ie *InterruptedError
		if errors.As(err, &ie) {
			ie.NotStarted = countWork(r.p)
		}
	}()
	a := r.a
	start := time.Now()
	req := lockRequest{started: start, stop: a.Stop, now: r.now, digest: r.digest, stateDir: r.state.Path()}
	if a.LockTimeout > 0 {
		req.deadline = start.Add(a.LockTimeout)
	}
	var host *applyLock
	if a.HostLock != "" {
		dir, err := OpenStateDir(filepath.Dir(a.HostLock))
		if err != nil {
			return nil, fmt.Errorf("host-wide apply lock: %w", err)
		}
		hreq := req
		hreq.hostWide = true
		host, err = acquireLock(ctx, dir, filepath.Base(a.HostLock), hreq)
		dir.Close()
		if err != nil {
			return nil, err
		}
		r.logger.Debug("host-wide apply lock taken", "path", a.HostLock)
	}
	if host.sameFile(r.state, LockFileName) {
		return host.release, nil
	}
	own, err := acquireLock(ctx, r.state, LockFileName, req)
	if err != nil {
		host.release()
		return nil, err
	}
	r.logger.Debug("apply lock taken", "path", own.f.Name())
	return func() {
		own.release()
		host.release()
	}, nil
}
