package shellexec

import (
	"bytes"
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// DefaultOutputLimit is how many bytes of each stream Run keeps when
// Spec.OutputLimit is 0.
const DefaultOutputLimit = 64 << 10

// maxLogLine bounds a line streamed to the logger or to Spec.Output; longer
// lines are passed on in pieces of this size.
const maxLogLine = 4 << 10

// capture reads one output stream of the child to EOF, keeping the last
// limit bytes and passing each line on, as it comes, to the logger at debug
// level and to the output function.
type capture struct {
	stream string
	limit  int
	log    hclog.Logger // nil when not logging
	out    *lineOutput  // nil when not streaming

	mu    sync.Mutex
	buf   []byte // up to 2*limit; trimmed to the tail when read
	total int64
	line  []byte // partial line awaiting its newline
	// sink, when set (Spec.Stdout), gets what the stream prints in place
	// of buf; sinkErr is its first failure, which ends the reading.
	sink    io.Writer
	sinkErr error
}

// lineOutput is Spec.Output, shared by the two streams of one process so
// that its calls never overlap.
type lineOutput struct {
	mu sync.Mutex
	fn func(stream, line string)
}

func (o *lineOutput) emit(stream, line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fn(stream, line)
}

func newCapture(stream string, limit int, log hclog.Logger, out *lineOutput) *capture {
	c := &capture{stream: stream, limit: limit, out: out}
	if log != nil && log.IsDebug() {
		c.log = log
	}
	return c
}

// splits reports whether c passes lines on.
func (c *capture) splits() bool { return c.log != nil || c.out != nil }

// drain copies r into c until EOF or a read error, then closes done. When
// c's sink refuses what was read, it closes r: the process's next write
// to the stream fails (EPIPE, SIGPIPE) rather than waiting for a reader.
func (c *capture) drain(r *os.File, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && !c.write(buf[:n]) {
			r.Close()
			return
		}
		if err != nil {
			return // io.EOF, or the read end was closed by Run
		}
	}
}

// write keeps p (or hands it to the sink) and passes its lines on. It
// reports false when the sink refused it.
func (c *capture) write(p []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if c.sink != nil {
		if _, err := c.sink.Write(p); err != nil {
			c.sinkErr = err
		}
	} else {
		c.buf = append(c.buf, p...)
		if len(c.buf) > 2*c.limit {
			// Keep the tail, in place: the buffer is allocated once, not
			// once per write past the limit.
			c.buf = c.buf[:copy(c.buf, c.buf[len(c.buf)-c.limit:])]
		}
	}
	if c.splits() {
		c.logLines(p)
	}
	return c.sinkErr == nil
}

func (c *capture) logLines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			for len(c.line) >= maxLogLine {
				cut := pieceEnd(c.line)
				c.emit(c.line[:cut])
				c.line = append(c.line[:0], c.line[cut:]...)
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

// pieceEnd is where the first piece of a line longer than maxLogLine ends:
// at maxLogLine, moved back to the start of a UTF-8 character when one
// straddles it.
func pieceEnd(line []byte) int {
	cut := maxLogLine
	for i := 0; i < utf8.UTFMax-1 && cut > 1 && cut < len(line) && !utf8.RuneStart(line[cut]); i++ {
		cut--
	}
	return cut
}

// emit passes one line on, in pieces of at most maxLogLine bytes, each
// ending on a UTF-8 character boundary where there is one.
func (c *capture) emit(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	for {
		piece := line
		if len(piece) > maxLogLine {
			piece = line[:pieceEnd(line)]
		}
		text := string(piece)
		if c.log != nil {
			c.log.Debug("output", "stream", c.stream, "line", text)
		}
		if c.out != nil {
			c.out.emit(c.stream, text)
		}
		line = line[len(piece):]
		if len(line) == 0 {
			return
		}
	}
}

// result returns the kept tail and whether anything was dropped, and passes
// on a last unterminated line.
func (c *capture) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.splits() && len(c.line) > 0 {
		c.emit(c.line)
		c.line = nil
	}
	out := c.buf
	truncated := c.sink == nil && c.total > int64(c.limit)
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
