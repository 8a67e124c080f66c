package shellexec

import "errors"

// ErrOutputLimit is what a LimitedBuffer's Write returns once the process
// printed more than its Max.
var ErrOutputLimit = errors.New("the output is longer than its limit")

// LimitedBuffer is a Spec.Stdout for output a caller needs whole, up to
// Max bytes (a reading it parses): it keeps everything the process
// prints while that fits in Max, and nothing once it does not — it lets
// go of what it held and refuses every further write, so that Run stops
// reading and the process's next write fails. It holds what it keeps in
// chunks, never copying it while the process prints, so that memory is
// bounded by Max (not twice Max, as a doubling buffer's would be),
// however much the process would have printed; Over says it went past.
// Run calls Write from one goroutine; read the buffer once Run returned.
type LimitedBuffer struct {
	Max    int
	chunks [][]byte
	size   int
	over   bool
}

// Chunks start at minChunk bytes, each twice the one before, up to
// maxChunk: a short output takes one small allocation.
const (
	minChunk = 4 << 10
	maxChunk = 1 << 20
)

// Write keeps p, or refuses it (ErrOutputLimit) when the buffer would
// then hold more than Max bytes.
func (b *LimitedBuffer) Write(p []byte) (int, error) {
	if b.over {
		return 0, ErrOutputLimit
	}
	if len(p) > b.Max-b.size {
		b.over, b.chunks, b.size = true, nil, 0
		return 0, ErrOutputLimit
	}
	n := len(p)
	for len(p) > 0 {
		last := len(b.chunks) - 1
		if last < 0 || len(b.chunks[last]) == cap(b.chunks[last]) {
			size := minChunk
			if last >= 0 {
				size = min(2*cap(b.chunks[last]), maxChunk)
			}
			b.chunks = append(b.chunks, make([]byte, 0, min(size, b.Max-b.size)))
			last++
		}
		c := b.chunks[last]
		k := min(len(p), cap(c)-len(c))
		b.chunks[last] = append(c, p[:k]...)
		p = p[k:]
		b.size += k
	}
	return n, nil
}

// Bytes is what the process printed, in one slice (nil when it printed
// more than Max, or nothing).
func (b *LimitedBuffer) Bytes() []byte {
	if len(b.chunks) > 1 {
		all := make([]byte, 0, b.size)
		for _, c := range b.chunks {
			all = append(all, c...)
		}
		b.chunks = [][]byte{all}
	}
	if len(b.chunks) == 0 {
		return nil
	}
	return b.chunks[0]
}

// Over reports whether the process printed more than Max bytes.
func (b *LimitedBuffer) Over() bool { return b.over }
