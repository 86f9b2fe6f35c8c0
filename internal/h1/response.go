package h1

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// bufferBeforeChunking is how much of a body of unknown length is held
// before the head goes out: an answer that ends within it gets a
// Content-Length, a longer one is chunked (net/http's
// bufferBeforeChunkingSize).
const bufferBeforeChunking = 2048

// response is the http.ResponseWriter of one request, and the request's
// state the loop keeps per exchange.
type response struct {
	c          *conn
	req        *http.Request
	reqValue   http.Request // the request before WithContext
	values     []string     // backs the request header's values
	valueArray [16]string   // values' backing for up to 16 fields: no allocation of its own
	body       requestBody
	ctx        requestCtx // the request's context

	header        http.Header
	status        int  // the final status; 0 until WriteHeader
	committed     bool // the head is in the write buffer
	contentLength int64
	written       int64
	chunked       bool
	closeAfter    bool // Connection: close on this answer, then close
	failed        bool // a write failed: the connection is broken
	hijacked      bool
	handlerDone   bool
	bodyLeft      bool   // the request's body was not all read when the head went out
	held          []byte // body held before the head goes out (unknown length); the connection's buffer
	// bodyAllowedForHead: not a HEAD request (a HEAD's answer has no body).
	bodyAllowedForHead bool
}

// Header implements http.ResponseWriter.
func (w *response) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter: an informational status
// (1xx but 101) goes out at once with the header so far; the first
// other status is the answer's.
func (w *response) WriteHeader(code int) {
	if w.hijacked || w.status != 0 {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		bw := w.c.bw
		_, _ = bw.WriteString("HTTP/1.1 " + statusLine(code) + "\r\n")
		w.writeFields(bw, false)
		_, _ = bw.WriteString("\r\n")
		if bw.Flush() != nil {
			w.failed = true
		}
		return
	}
	w.status = code
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		} else {
			w.header.Del("Content-Length") // as net/http: logged there, dropped here
		}
	}
}

// bodyAllowed reports whether the status allows a body.
func (w *response) bodyAllowed() bool {
	s := w.status
	return !(s >= 100 && s <= 199 || s == http.StatusNoContent || s == http.StatusNotModified)
}

// Write implements http.ResponseWriter.
func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if w.handlerDone {
		return 0, errAfterHandler
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.contentLength >= 0 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if !w.committed {
		if w.contentLength < 0 && len(w.held)+len(p) <= bufferBeforeChunking {
			if w.held == nil {
				w.held = w.c.held[:0]
			}
			w.held = append(w.held, p...)
			return len(p), nil
		}
		w.commit(p)
		if w.held != nil {
			held := w.held
			w.held = nil
			if err := w.writeBody(held); err != nil {
				return 0, err
			}
		}
	}
	if err := w.writeBody(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeBody writes p as the answer's framing says.
func (w *response) writeBody(p []byte) error {
	if !w.bodyAllowedForHead {
		return nil // a HEAD's answer: counted, not sent
	}
	if w.failed {
		return errWriteFailed
	}
	bw := w.c.bw
	var err error
	if w.chunked {
		_, _ = bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		_, _ = bw.WriteString("\r\n")
		_, _ = bw.Write(p)
		_, err = bw.WriteString("\r\n")
	} else {
		_, err = bw.Write(p)
	}
	if err != nil {
		w.failed = true
		return err
	}
	return nil
}

var (
	errWriteFailed  = errors.New("h1: an earlier write on the connection failed")
	errAfterHandler = errors.New("h1: write after the handler returned")
)

// commit writes the head: the status line, the handler's fields, and
// what the loop adds (Content-Length, a sniffed Content-Type, Date,
// Transfer-Encoding, Connection), deciding framing and keep-alive with
// net/http's server's rules in its order (chunkWriter.writeHeader).
// first is the first body bytes (for sniffing).
func (w *response) commit(first []byte) {
	w.committed = true
	h := w.header
	bw := w.c.bw
	req := w.req
	is11 := req.ProtoAtLeast(1, 1)
	keepAlives := !w.c.s.inShutdown.Load()
	isHEAD := !w.bodyAllowedForHead
	allowed := w.bodyAllowed()
	te := firstValue(h["Transfer-Encoding"])
	hasTE := te != ""
	trailers := len(h["Trailer"]) > 0
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailers = true
			break
		}
	}
	handlerCL := w.contentLength != -1
	// An answer that ended within the held bytes gets its length.
	if w.handlerDone && !trailers && !hasTE && allowed && !handlerCL && (!isHEAD || len(w.held) > 0) {
		w.contentLength = int64(len(w.held))
	}
	hasCL := w.contentLength != -1

	// Keep-alive: HTTP/1.0's by request, and what the handler says.
	var setConn string
	wants10KeepAlive := req.ProtoMajor == 1 && req.ProtoMinor == 0 && hasToken(firstOnly(req.Header["Connection"]), "keep-alive")
	if wants10KeepAlive && keepAlives && handlerCL && firstValue(h["Connection"]) == "keep-alive" {
		w.closeAfter = false
	}
	if wants10KeepAlive && (isHEAD || hasCL || !allowed) {
		if _, set := h["Connection"]; !set {
			setConn = "keep-alive"
		}
	} else if !is11 || req.Close || hasToken(firstOnly(req.Header["Connection"]), "close") {
		w.closeAfter = true
	}
	if firstValue(h["Connection"]) == "close" || !keepAlives {
		w.closeAfter = true
	}
	dropConn := false
	if !w.closeAfter {
		switch w.body.settle() {
		case settleClose:
			w.closeAfter = true
		case settleTooLarge:
			w.closeAfter = true
			dropConn, setConn = true, "close"
		}
	}
	w.bodyLeft = w.body.kind != bodyNone && !w.body.eof

	// Framing.
	if hasCL && hasTE && te != "identity" {
		w.contentLength, hasCL = -1, false // net/http ignores the length then
	}
	switch {
	case isHEAD || !allowed:
	case hasCL:
	case is11 && te == "identity":
		w.closeAfter = true
	case is11:
		w.chunked = true
	default:
		w.closeAfter = true // HTTP/1.0: the close ends the body
	}
	if w.closeAfter && (!keepAlives || !hasToken(firstOnly(h["Connection"]), "close")) &&
		!(w.status == http.StatusSwitchingProtocols && h.Get("Upgrade") != "") {
		dropConn = true
		if is11 {
			setConn = "close"
		}
	}

	if is11 {
		_, _ = bw.WriteString("HTTP/1.1 ")
	} else {
		_, _ = bw.WriteString("HTTP/1.0 ")
	}
	_, _ = bw.WriteString(statusLine(w.status))
	_, _ = bw.WriteString("\r\n")
	w.writeFields(bw, dropConn)
	if hasCL && allowed {
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.WriteString(strconv.FormatInt(w.contentLength, 10))
		_, _ = bw.WriteString("\r\n")
	}
	if _, typed := h["Content-Type"]; !typed && allowed && !hasTE && h.Get("Content-Encoding") == "" {
		sniff := first
		if len(w.held) > 0 {
			sniff = w.held
		}
		if len(sniff) > 0 {
			_, _ = bw.WriteString("Content-Type: ")
			_, _ = bw.WriteString(http.DetectContentType(sniff))
			_, _ = bw.WriteString("\r\n")
		}
	}
	if setConn != "" {
		_, _ = bw.WriteString("Connection: ")
		_, _ = bw.WriteString(setConn)
		_, _ = bw.WriteString("\r\n")
	}
	if w.chunked {
		_, _ = bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if _, ok := h["Date"]; !ok {
		_, _ = bw.WriteString("Date: ")
		_, _ = bw.Write(w.c.s.date())
		_, _ = bw.WriteString("\r\n")
	}
	_, _ = bw.WriteString("\r\n")
}

// firstValue is a field's first value, "" if none (Header.Get).
func firstValue(vv []string) string {
	if len(vv) == 0 {
		return ""
	}
	return vv[0]
}

// firstOnly is the field's first value alone: net/http's server reads
// Connection's tokens from the first only (Header.get).
func firstOnly(vv []string) []string { return vv[:min(len(vv), 1)] }

// writeFields writes the handler's fields but those the loop writes
// itself (Content-Length, Transfer-Encoding), those the status forbids
// (net/http's suppressedHeaders), and Connection when dropConn. Names
// that are not tokens are dropped and CR/LF in values become spaces, as
// net/http does, so no handler can split the answer.
func (w *response) writeFields(bw *bufio.Writer, dropConn bool) {
	notModified := w.status == http.StatusNotModified
	for k, vv := range w.header {
		switch {
		case k == "Content-Length", k == "Transfer-Encoding":
			continue
		case k == "Connection" && dropConn, k == "Content-Type" && notModified:
			continue
		}
		if strings.HasPrefix(k, http.TrailerPrefix) || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vv {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			writeValue(bw, v)
			_, _ = bw.WriteString("\r\n")
		}
	}
}

// writeValue writes a field value with CR and LF made spaces and the
// blanks around it trimmed (net/http's headerNewlineToSpace and
// TrimString).
func writeValue(bw *bufio.Writer, v string) {
	v = strings.Trim(v, " \t")
	if strings.IndexByte(v, '\r') < 0 && strings.IndexByte(v, '\n') < 0 {
		_, _ = bw.WriteString(v)
		return
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		_ = bw.WriteByte(c)
	}
}

// commitHeld writes the head, if not out yet, and the body held before it.
func (w *response) commitHeld() error {
	if w.committed {
		return nil
	}
	w.commit(nil)
	if len(w.held) == 0 {
		return nil
	}
	held := w.held
	w.held = nil
	return w.writeBody(held)
}

// finish completes the answer once the handler returned: the head if
// not out yet, the held body, the last chunk and trailers.
func (w *response) finish() {
	w.handlerDone = true
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = w.commitHeld()
	if w.chunked && !w.failed {
		bw := w.c.bw
		_, _ = bw.WriteString("0\r\n")
		w.writeTrailers(bw)
		if _, err := bw.WriteString("\r\n"); err != nil {
			w.failed = true
		}
	}
	if w.bodyAllowedForHead && w.contentLength >= 0 && w.bodyAllowed() && w.written != w.contentLength {
		w.closeAfter = true // short of its Content-Length: the client must see the close
	}
}

// writeTrailers writes the trailers the handler set: the keys declared
// in Trailer, and those set with http.TrailerPrefix.
func (w *response) writeTrailers(bw *bufio.Writer) {
	for k, vv := range w.header {
		name, ok := strings.CutPrefix(k, http.TrailerPrefix)
		if !ok {
			if !w.declared(k) {
				continue
			}
			name = k
		}
		if !httpguts.ValidHeaderFieldName(name) {
			continue
		}
		for _, v := range vv {
			_, _ = bw.WriteString(name)
			_, _ = bw.WriteString(": ")
			writeValue(bw, v)
			_, _ = bw.WriteString("\r\n")
		}
	}
}

// declared reports whether the header's Trailer field names k.
func (w *response) declared(k string) bool {
	for _, v := range w.header["Trailer"] {
		for _, t := range strings.Split(v, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(t)) == k {
				return true
			}
		}
	}
	return false
}

// Flush sends what is written so far (the head first, chunked when the
// length is unknown).
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error (http.ResponseController).
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if err := w.commitHeld(); err != nil {
		return err
	}
	if w.failed {
		return errWriteFailed
	}
	if err := w.c.bw.Flush(); err != nil {
		w.failed = true
		return err
	}
	return nil
}

// Hijack hands the connection to the handler (http.Hijacker): the loop
// lets go of it, unflushed answer bytes are sent first.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	c := w.c
	c.cr.disarm()
	if err := c.bw.Flush(); err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	c.s.forget(c)
	c.setState(http.StateHijacked)
	_ = c.rwc.SetDeadline(time.Time{})
	return c.rwc, bufio.NewReadWriter(c.br, c.bw), nil
}

// SetReadDeadline sets the connection's read deadline (http.ResponseController).
func (w *response) SetReadDeadline(t time.Time) error { return w.c.rwc.SetReadDeadline(t) }

// SetWriteDeadline sets the connection's write deadline (http.ResponseController).
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

// hasToken is net/http's hasToken, which its server and Request.Write
// apply to the first value of Connection and Expect: whether token (lower
// case) appears in vv's first value, ASCII case-insensitively, between
// spaces, tabs, commas or the ends. It is not a list parse: "0 keep-alive"
// holds keep-alive. (A request's Close is the list parse: containsToken.)
func hasToken(vv []string, token string) bool {
	if len(vv) == 0 {
		return false
	}
	v := vv[0]
	for start := 0; start+len(token) <= len(v); start++ {
		end := start + len(token)
		if start > 0 && !isTokenBoundary(v[start-1]) || end < len(v) && !isTokenBoundary(v[end]) {
			continue
		}
		match := true
		for i := range len(token) {
			if lower(v[start+i]) != token[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func isTokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// statusLine is "code text".
func statusLine(code int) string {
	switch code {
	case 200:
		return "200 OK"
	case 404:
		return "404 Not Found"
	}
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return strconv.Itoa(code) + " " + text
}

// dateCache is the Date field's value, made once per second.
type dateCache struct {
	sec int64
	b   []byte
}

// date is the current Date value (http.TimeFormat), shared by every
// answer of the same second.
func (s *Server) date() []byte {
	now := time.Now()
	if d := s.dates.Load(); d != nil && d.sec == now.Unix() {
		return d.b
	}
	d := &dateCache{sec: now.Unix(), b: now.UTC().AppendFormat(nil, http.TimeFormat)}
	s.dates.Store(d)
	return d.b
}
