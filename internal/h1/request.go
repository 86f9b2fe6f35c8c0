package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// serveOne serves the request whose head is in c.head (n bytes of br,
// not yet discarded) with r; false: the connection must close after it.
func (c *conn) serveOne(w *response, n int) (keep bool) {
	s := c.s
	h := &c.head
	// One string for the whole head: the request's strings are slices of it.
	str := string(h.buf)
	if n > 0 {
		_, _ = c.br.Discard(n)
	}
	c.big = c.big[:0]
	sub := func(b []byte) string { return substr(str, h.buf, b) }
	if s.WriteTimeout > 0 {
		_ = c.rwc.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	}

	req := &w.reqValue
	req.Method = method(sub(h.Method))
	req.URL = h.URL
	req.ProtoMajor, req.ProtoMinor = h.Major, h.Minor
	req.Proto = proto(h.Major, h.Minor)
	req.RequestURI = sub(h.Target)
	if inside(h.Host, h.buf) {
		req.Host = sub(h.Host)
	} else {
		req.Host = h.URL.Host // an absolute target's
	}
	req.RemoteAddr = c.remote
	req.TLS = c.tls // one per connection (net/http copies it per request; handlers only read it)
	req.Close = h.Close
	req.ContentLength = h.ContentLength
	w.values = w.valueArray[:0]
	req.Header = requestHeader(h, str, &w.values)
	if h.Chunked {
		req.TransferEncoding = chunkedEncoding()
		req.Trailer = declaredTrailer(h)
	}

	// Expect: 100-continue is answered when the body is first read
	// (HTTP/1.1, a body announced); any other expectation is 417.
	expect := req.Header["Expect"]
	continueOK, expectFailed := false, false
	if len(expect) > 0 {
		if hasToken(expect[:1], "100-continue") {
			continueOK = req.ProtoAtLeast(1, 1) && h.ContentLength != 0
		} else if expect[0] != "" {
			expectFailed = true
		}
	}

	body := &w.body
	body.c = c
	switch {
	case h.Chunked:
		body.chunked.Reset(c.br)
		body.kind, body.left = bodyChunked, -1
		req.Body = body
	case h.ContentLength > 0:
		body.kind, body.left = bodyFixed, h.ContentLength
		req.Body = body
	default:
		body.kind = bodyNone
		req.Body = http.NoBody
	}
	body.continueOK = continueOK
	if s.ReadHeaderTimeout > 0 && body.kind != bodyNone {
		// The head's deadline is not the body's: the handler sets that.
		// Without a body nothing more is read before the next head, and
		// a deadline set for this one is left (awaitRequest sets the
		// next; the client watch clears it before it reads).
		_ = c.rwc.SetReadDeadline(time.Time{})
	}

	ctx := &w.ctx
	ctx.init(c.ctx)
	defer ctx.cancel()
	c.cr.setCtx(ctx)
	defer c.cr.setCtx(nil)
	*req = *req.WithContext(ctx) // inlined: the copy stays on the stack
	rq := req
	body.req = rq

	w.c, w.req = c, rq
	w.header = make(http.Header)
	w.contentLength = -1
	w.bodyAllowedForHead = req.Method != http.MethodHead
	if expectFailed {
		w.header.Set("Connection", "close")
		w.WriteHeader(http.StatusExpectationFailed)
		w.finish()
		return false
	}
	if body.kind == bodyNone {
		c.cr.arm()
	}
	s.Handler.ServeHTTP(w, rq) // a panic unwinds to serve, which closes the connection
	if w.hijacked {
		return false
	}
	c.cr.disarm()
	w.finish()
	return !w.closeAfter && !w.failed
}

// substr is the part of str (a copy of buf) that b is of buf.
func substr(str string, buf, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	return str[off : off+len(b)]
}

// inside reports whether b is a slice of buf.
func inside(b, buf []byte) bool {
	if len(b) == 0 || len(buf) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= start && p+uintptr(len(b)) <= start+uintptr(len(buf))
}

// header builds the request's header map as net/http's server hands it
// (Host and Transfer-Encoding out, one Content-Length, none when
// chunked, Trailer moved out when chunked, Cache-Control for Pragma:
// no-cache), its values backed by one slice.
func requestHeader(h *Head, str string, values *[]string) http.Header {
	sub := func(b []byte) string { return substr(str, h.buf, b) }
	hdr := make(http.Header, len(h.Fields))
	vs := (*values)[:0]
	if cap(vs) < len(h.Fields) {
		vs = make([]string, 0, len(h.Fields))
	}
	for _, f := range h.Fields {
		name := sub(f.Name)
		switch name {
		case "Host", "Transfer-Encoding":
			continue
		case "Trailer":
			if h.Chunked {
				continue
			}
		case "Content-Length":
			if h.Chunked || len(hdr[name]) > 0 {
				continue
			}
			vs = append(vs, sub(trimSpace(f.Value)))
			hdr[name] = vs[len(vs)-1 : len(vs) : len(vs)]
			continue
		}
		v := sub(f.Value)
		if old := hdr[name]; len(old) > 0 {
			hdr[name] = append(old, v) // a repeat: its own slice from here
			continue
		}
		vs = append(vs, v)
		hdr[name] = vs[len(vs)-1 : len(vs) : len(vs)]
	}
	if h.CacheControlAdded {
		hdr["Cache-Control"] = []string{"no-cache"}
	}
	*values = nil // the backing now belongs to this request's header
	return hdr
}

// declaredTrailer is the trailer keys a chunked request announces, as
// net/http's server sets Request.Trailer (values filled at the body's
// end); nil when it announces none. Parse refused the framing ones.
func declaredTrailer(h *Head) http.Header {
	var t http.Header
	for _, f := range h.Fields {
		if string(f.Name) != "Trailer" {
			continue
		}
		for _, k := range strings.Split(string(f.Value), ",") {
			if k = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(k)); k != "" {
				if t == nil {
					t = make(http.Header)
				}
				t[k] = nil
			}
		}
	}
	return t
}

func chunkedEncoding() []string { return []string{"chunked"} }

// method interns the common methods: no allocation, and the strings
// compare by pointer first.
func method(m string) string {
	switch m {
	case "GET":
		return http.MethodGet
	case "POST":
		return http.MethodPost
	case "PUT":
		return http.MethodPut
	case "HEAD":
		return http.MethodHead
	case "DELETE":
		return http.MethodDelete
	case "OPTIONS":
		return http.MethodOptions
	case "PATCH":
		return http.MethodPatch
	}
	return m
}

func proto(major, minor int) string {
	switch {
	case major == 1 && minor == 1:
		return "HTTP/1.1"
	case major == 1 && minor == 0:
		return "HTTP/1.0"
	case major == 2 && minor == 0:
		return "HTTP/2.0"
	}
	return "HTTP/" + strconv.Itoa(major) + "." + strconv.Itoa(minor)
}

// The body's framing.
const (
	bodyNone = iota
	bodyFixed
	bodyChunked
)

// requestBody is a request's body on the connection.
type requestBody struct {
	c          *conn
	req        *http.Request
	kind       int
	left       int64 // bytes left of a fixed body
	chunked    ChunkedReader
	continueOK bool // Expect: 100-continue, not answered yet
	continued  bool
	eof        bool
	closed     bool
	settling   bool // read by settle: no background read at its end
	err        error
}

var errBodyClosed = errors.New("http: invalid Read on closed Body")

func (b *requestBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBodyClosed
	}
	return b.read(p)
}

// What settle found.
const (
	settleKeep     = iota // the body is all read: the connection can go on
	settleClose           // it cannot: close after the answer
	settleTooLarge        // more than discardLimit is left: close, and say so (Connection: close)
)

// settle reads what the handler left of the body before the answer's
// head goes out, as net/http does, so that the connection can carry the
// next request. It cannot when the client was never told to send it
// (Expect), the handler closed it early, it failed, or it does not come
// within the header timeout; more than discardLimit is not read at all.
func (b *requestBody) settle() int {
	if b.kind == bodyNone || b.eof {
		return settleKeep
	}
	switch {
	case b.err != nil, b.continueOK && !b.continued, b.closed:
		return settleClose
	case b.kind == bodyFixed && b.left >= discardLimit:
		return settleTooLarge
	}
	c := b.c
	wait := c.s.ReadHeaderTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	_ = c.rwc.SetReadDeadline(time.Now().Add(wait))
	b.settling = true
	n, err := io.CopyN(io.Discard, readerFunc(b.read), discardLimit+1)
	_ = c.rwc.SetReadDeadline(time.Time{})
	switch {
	case err == nil && n > discardLimit:
		return settleTooLarge
	case err == io.EOF:
		return settleKeep
	}
	return settleClose
}

// readerFunc is a function as an io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func (b *requestBody) read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.continueOK && !b.continued {
		b.continued = true
		c := b.c
		if _, err := c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n"); err == nil {
			_ = c.bw.Flush()
		}
	}
	var n int
	var err error
	switch b.kind {
	case bodyFixed:
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err = b.c.br.Read(p)
		b.left -= int64(n)
		if b.left == 0 {
			err = io.EOF
		} else if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	case bodyChunked:
		n, err = b.chunked.Read(p)
		if err == io.EOF {
			if terr := b.readTrailer(); terr != nil {
				err = terr
			}
		}
	default:
		return 0, io.EOF
	}
	if err == io.EOF {
		b.eof = true
		if !b.settling {
			b.c.cr.arm()
		}
	} else if err != nil {
		b.err = err
	}
	return n, err
}

// Close is a no-op for the handler: what it leaves unread is drained
// (or the connection closed) after it returns, as net/http does.
func (b *requestBody) Close() error {
	b.closed = true
	return nil
}

// readTrailer reads the trailer section after the last chunk as
// net/http's body does: an empty one is CRLF; any other must end with
// CRLFCRLF within the read buffer (4 KiB), and its fields are read by
// textproto into the request's Trailer.
func (b *requestBody) readTrailer() error {
	br := b.c.br
	buf, err := br.Peek(2)
	if string(buf) == "\r\n" {
		_, _ = br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !upcomingDoubleCRLF(br) {
		return errTrailerTooLong
	}
	hdr, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil {
		return err
	}
	if b.req == nil {
		return nil
	}
	if b.req.Trailer == nil {
		b.req.Trailer = http.Header(hdr)
		return nil
	}
	for k, vv := range hdr {
		b.req.Trailer[k] = vv
	}
	return nil
}

var (
	errTrailerEOF     = errors.New("http: unexpected EOF reading trailer")
	errTrailerTooLong = errors.New("http: suspiciously long trailer after chunked body")
)

// upcomingDoubleCRLF reports whether CRLFCRLF comes before the read
// buffer is full (net/http's seeUpcomingDoubleCRLF).
func upcomingDoubleCRLF(br *bufio.Reader) bool {
	for size := 4; ; size++ {
		buf, err := br.Peek(size)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
