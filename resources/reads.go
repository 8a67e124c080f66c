package resources

import (
	"context"
	"sync"
)

// Reads is one batch of reads of a host that nothing changes meanwhile:
// the reads of one plan, or of apply's pre-flight (never apply's re-read
// right before a resource converges). A type keeps in it, under a key of
// its own, what serves every read of the batch (the file types hold the
// directories on the way to the paths they read, so that 10,000 files of
// one directory open it once), and Close releases it all. The caller that
// reads makes one with NewReads, passes it down with WithReads and closes
// it when the batch is over.
type Reads struct {
	mu      sync.Mutex
	vals    map[any]any
	closers []func()
	closed  bool
}

// NewReads returns an empty batch.
func NewReads() *Reads { return &Reads{vals: map[any]any{}} }

type readsKey struct{}

// WithReads returns ctx carrying r, for the Loads and LoadAlls of the batch.
func WithReads(ctx context.Context, r *Reads) context.Context {
	return context.WithValue(ctx, readsKey{}, r)
}

// ReadsOf is the batch ctx carries, or nil outside one.
func ReadsOf(ctx context.Context) *Reads {
	r, _ := ctx.Value(readsKey{}).(*Reads)
	return r
}

// Get returns what the batch holds under key, made by make on first use
// (whose close, when not nil, Close calls). It returns nil for a nil
// batch (reads outside a batch share nothing) or a closed one.
func (r *Reads) Get(key any, make func() (v any, close func())) any {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if v, ok := r.vals[key]; ok {
		return v
	}
	v, c := make()
	r.vals[key] = v
	if c != nil {
		r.closers = append(r.closers, c)
	}
	return v
}

// Close releases what the batch holds; it then holds nothing.
func (r *Reads) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	cs := r.closers
	r.closers, r.vals, r.closed = nil, map[any]any{}, true
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

type downloadDirKey struct{}

// WithDownloadDir returns ctx carrying dir, where types keep what they
// download (a cache of content by its digest). The command sets it from
// the state directory its settings name, so that every read and step of
// a run, in-process or not, uses that one.
func WithDownloadDir(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, downloadDirKey{}, dir)
}

// DownloadDirOf is the download directory ctx carries, or "".
func DownloadDirOf(ctx context.Context) string {
	d, _ := ctx.Value(downloadDirKey{}).(string)
	return d
}
