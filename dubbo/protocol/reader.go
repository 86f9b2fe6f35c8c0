package protocol

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// ErrPayloadTooLarge is wrapped by the error Reader.Next returns for a frame
// whose declared body exceeds the payload limit.
var ErrPayloadTooLarge = errors.New("payload too large")

const (
	readBufferSize = 32 << 10
	// bodyChunk is how much of a large body is read before the buffer grows
	// further, so a peer that declares a large body and sends little of it
	// costs little memory.
	bodyChunk = 64 << 10
	// keepBody is the largest body buffer kept between frames.
	keepBody = 1 << 20
)

// Reader reads whole frames from a stream. It is not safe for concurrent use.
type Reader struct {
	r          *bufio.Reader
	maxPayload int
	header     [HeaderLen]byte
	body       []byte
}

// NewReader returns a Reader of frames from r whose bodies may be up to
// maxPayload bytes (DefaultMaxPayload when maxPayload <= 0). The Reader
// buffers r unless it already is a *bufio.Reader.
func NewReader(r io.Reader, maxPayload int) *Reader {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, readBufferSize)
	}
	return &Reader{r: br, maxPayload: maxPayload}
}

// Next reads the next frame. The body is valid until the next call. It
// returns io.EOF when the stream ends between frames; any other error — a
// truncated frame, a bad header, a body over the payload limit (which is
// not read) — is a *ProtocolError, after which the stream is out of step
// and must be closed.
func (r *Reader) Next() (Header, []byte, error) {
	if _, err := io.ReadFull(r.r, r.header[:]); err != nil {
		if err == io.EOF {
			return Header{}, nil, io.EOF
		}
		return Header{}, nil, &ProtocolError{Msg: "reading frame header", Err: err}
	}
	h, err := ParseHeader(r.header[:])
	if err != nil {
		return Header{}, nil, err
	}
	if h.BodyLen > r.maxPayload {
		return h, nil, &ProtocolError{
			Msg: "frame " + strconv.FormatUint(h.ID, 10) + " declares a body of " + strconv.Itoa(h.BodyLen) +
				" bytes, over the payload limit of " + strconv.Itoa(r.maxPayload) + " bytes",
			Err: ErrPayloadTooLarge,
		}
	}
	if cap(r.body) > keepBody && h.BodyLen <= keepBody {
		r.body = nil
	}
	body, err := readBody(r.r, r.body[:0], h.BodyLen)
	r.body = body
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, &ProtocolError{
			Msg: "reading body of frame " + strconv.FormatUint(h.ID, 10) + " (" + strconv.Itoa(len(body)) +
				" of " + strconv.Itoa(h.BodyLen) + " bytes)",
			Err: err,
		}
	}
	return h, body, nil
}

// readBody appends n bytes from r to buf, growing buf by at most bodyChunk
// beyond what has arrived so far.
func readBody(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		want := min(n, len(buf)+max(bodyChunk, len(buf)))
		if cap(buf) < want {
			grown := make([]byte, len(buf), want)
			copy(grown, buf)
			buf = grown
		}
		got, err := io.ReadFull(r, buf[len(buf):want])
		buf = buf[:len(buf)+got]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}
