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
}

// applyLock is a held apply lock.
type applyLock struct {
	f *os.File
}

// acquireLock takes the apply lock in stateDir, creating the directory
// (0700) if it is missing. With timeout 0 it fails at once when the lock is
// held; otherwise it polls until timeout, ctx is done or stop is closed.
// The kernel releases an flock when its holder dies, so a lock file left by
// a dead process never blocks.
func acquireLock(ctx context.Context, stateDir string, timeout time.Duration, stop <-chan struct{}, now func() time.Time, digest string) (*applyLock, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	path := filepath.Join(stateDir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open apply lock: %w", err)
	}
	start := time.Now()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		waited := time.Since(start)
		if waited >= timeout {
			held := readHolder(f, path)
			if timeout > 0 {
				held.Waited = waited
			}
			f.Close()
			return nil, held
		}
		wait := min(lockPoll, timeout-waited)
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the apply lock: %w", ctx.Err())
		case <-stop:
			f.Close()
			return nil, &InterruptedError{}
		case <-time.After(wait):
		}
	}
	l := &applyLock{f: f}
	if err := l.record(now(), digest); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// record writes the holder's identity into the lock file.
func (l *applyLock) record(since time.Time, digest string) error {
	h := lockHolder{PID: os.Getpid(), Since: since.UTC().Format(time.RFC3339), PlanDigest: digest}
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
	e.PID, e.User, e.Hostname = h.PID, h.User, h.Hostname
	if t, err := time.Parse(time.RFC3339, h.Since); err == nil {
		e.Since = t
	}
	return e
}
