package shellexec

import (
	"bytes"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// DefaultOutputLimit is how many bytes of each stream Run keeps when
// Spec.OutputLimit is 0.
const DefaultOutputLimit = 64 << 10

// maxLogLine bounds a line streamed to the logger; longer lines are logged in
// pieces of this size.
const maxLogLine = 4 << 10

// capture reads one output stream of the child to EOF, keeping the last
// limit bytes and logging each line at debug level.
type capture struct {
	stream string
	limit  int
	log    hclog.Logger // nil when not logging

	mu    sync.Mutex
	buf   []byte // up to 2*limit; trimmed to the tail when read
	total int64
	line  []byte // partial line awaiting its newline
}

func newCapture(stream string, limit int, log hclog.Logger) *capture {
	c := &capture{stream: stream, limit: limit}
	if log != nil && log.IsDebug() {
		c.log = log
	}
	return c
}

// drain copies r into c until EOF or a read error, then closes done.
func (c *capture) drain(r *os.File, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			return // io.EOF, or the read end was closed by Run
		}
	}
}

func (c *capture) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	c.buf = append(c.buf, p...)
	if len(c.buf) > 2*c.limit {
		c.buf = append(c.buf[:0:0], c.buf[len(c.buf)-c.limit:]...)
	}
	if c.log != nil {
		c.logLines(p)
	}
}

func (c *capture) logLines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			for len(c.line) >= maxLogLine {
				c.emit(c.line[:maxLogLine])
				c.line = append(c.line[:0], c.line[maxLogLine:]...)
			}
			return
		}
		if len(c.line) > 0 {
			c.line = append(c.line, p[:i]...)
			c.emit(c.line)
			c.line = c.line[:0]
		} else {
			c.emit(p[:i])
		}
		p = p[i+1:]
	}
}

func (c *capture) emit(line []byte) {
	c.log.Debug("output", "stream", c.stream, "line", string(bytes.TrimSuffix(line, []byte("\r"))))
}

// result returns the kept tail and whether anything was dropped, and flushes
// a last unterminated line to the logger.
func (c *capture) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log != nil && len(c.line) > 0 {
		c.emit(c.line)
		c.line = nil
	}
	out := c.buf
	truncated := c.total > int64(c.limit)
	if len(out) > c.limit {
		out = out[len(out)-c.limit:]
	}
	if truncated {
		// Do not start in the middle of a UTF-8 sequence.
		for i := 0; i < 3 && len(out) > 0 && out[0]&0xC0 == 0x80; i++ {
			out = out[1:]
		}
	}
	return string(out), truncated
}
