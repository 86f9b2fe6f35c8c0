package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ChunkedReader reads a request body sent with Transfer-Encoding:
// chunked (RFC 9112, section 7.1) as net/http's server reads it, and
// ends with io.EOF at the last chunk (size 0), before the trailer
// section, which the server loop reads next. What it refuses, and where,
// is net/http's (FuzzChunkedReader holds the two side by side):
//
//   - a chunk line must end with CRLF, with no other CR in it (a bare LF
//     ends no chunk line: RFC 9112 errata 7633);
//   - a chunk line of more than maxChunkLine bytes, CRLF included, is
//     too long (what a 4 KiB read buffer holds);
//   - the size is 1 to 16 hexadecimal digits; extensions (after ';')
//     are read and dropped;
//   - chunk data must be followed by exactly CRLF;
//   - the bytes that are not data (lines, extensions, CRLFs) may exceed
//     16 per chunk plus twice the data by at most 16 KiB: a client
//     cannot make the gateway read megabytes of extensions for a byte.
//
// The stream ending early is io.ErrUnexpectedEOF, after the data read so
// far.
type ChunkedReader struct {
	r        *bufio.Reader
	left     uint64 // bytes of the current chunk not read yet
	excess   int64  // non-data bytes beyond the allowance (see above)
	checkEnd bool   // the current chunk's data is read: its CRLF is next
	err      error
	crlf     [2]byte
}

// maxChunkLine bounds a chunk line, CRLF included.
const maxChunkLine = 4096

// maxChunkExcess bounds the non-data bytes beyond the allowance.
const maxChunkExcess = 16 << 10

// Errors of a malformed chunked body.
var (
	ErrChunkLineTooLong = errors.New("h1: chunk line too long")
	errChunkBareLF      = errors.New("h1: chunk line ends with a bare LF")
	errChunkCR          = errors.New("h1: CR inside a chunk line")
	errChunkSize        = errors.New("h1: malformed chunk size")
	errChunkEnd         = errors.New("h1: chunk data not followed by CRLF")
	errChunkOverhead    = errors.New("h1: chunked body holds too much that is not data")
)

// Reset makes c read a new chunked body from r.
func (c *ChunkedReader) Reset(r *bufio.Reader) {
	*c = ChunkedReader{r: r}
}

func (c *ChunkedReader) Read(p []byte) (n int, err error) {
	for c.err == nil {
		if c.checkEnd {
			if n > 0 && c.r.Buffered() < 2 {
				break // data in hand: do not wait for the CRLF now
			}
			if _, err := io.ReadFull(c.r, c.crlf[:]); err != nil {
				c.err = unexpected(err)
				break
			}
			if c.crlf != [2]byte{'\r', '\n'} {
				c.err = errChunkEnd
				break
			}
			c.checkEnd = false
		}
		if c.left == 0 {
			if n > 0 && !c.lineBuffered() {
				break // data in hand: do not wait for the next chunk line
			}
			c.nextChunk()
			continue
		}
		if len(p) == 0 {
			break
		}
		q := p
		if uint64(len(q)) > c.left {
			q = q[:c.left]
		}
		m, err := c.r.Read(q)
		n += m
		p = p[m:]
		c.left -= uint64(m)
		switch {
		case err != nil:
			c.err = unexpected(err)
		case c.left == 0:
			c.checkEnd = true
		}
	}
	return n, c.err
}

// lineBuffered reports whether a whole chunk line is in the buffer.
func (c *ChunkedReader) lineBuffered() bool {
	b, _ := c.r.Peek(c.r.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// nextChunk reads a chunk line.
func (c *ChunkedReader) nextChunk() {
	line, err := c.r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxChunkLine:
		c.err = ErrChunkLineTooLong
		return
	case err != nil:
		c.err = unexpected(err)
		return
	}
	cr := bytes.IndexByte(line, '\r')
	switch {
	case cr < 0:
		c.err = errChunkBareLF
		return
	case cr != len(line)-2:
		c.err = errChunkCR
		return
	}
	line = line[:cr]
	c.excess += int64(len(line)) + 2 // the line, and the CRLF after the data
	line = bytes.TrimRight(line, " \t")
	line, _, _ = bytes.Cut(line, []byte(";"))
	size, ok := parseChunkSize(line)
	if !ok {
		c.err = errChunkSize
		return
	}
	c.left = size
	c.excess = max(c.excess-(16+2*int64(size)), 0)
	switch {
	case c.excess > maxChunkExcess:
		c.err = errChunkOverhead
	case size == 0:
		c.err = io.EOF
	}
}

// parseChunkSize reads 1 to 16 hexadecimal digits.
func parseChunkSize(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(d)
	}
	return n, true
}

// unexpected turns the stream's end inside a body into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
