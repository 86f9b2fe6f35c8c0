// Package h1 is the data plane's HTTP/1.1 server: a loop of its own on
// net.Conn (Server) that hands handlers the standard http.ResponseWriter
// and *http.Request, and the request-head parser and chunked-body reader
// it reads with, without allocating per field (issue 18).
//
// Everything it accepts, refuses and answers is net/http's server's:
// Head.Parse reads the request line, fields (obs-fold unfolded with one
// space, as net/textproto does), Host, Connection and the body's framing
// (Transfer-Encoding: chunked wins over Content-Length, which is then
// dropped; differing Content-Lengths are refused) and refuses the rest
// with net/http's status; the server answers, drains and closes as
// net/http's does. Three differential tests hold that on any input:
// FuzzParseHead (heads), FuzzChunkedReader (bodies) and
// FuzzServerMatchesNetHTTP (whole exchanges, answers compared), each
// against the real net/http on loopback.
package h1

import (
	"bytes"
	"net/url"
	"strconv"

	"golang.org/x/net/http/httpguts"
)

// Field is one header field: Name canonical (as net/textproto makes it),
// Value with the leading and trailing blanks removed. Both point into the
// Head's buffer.
type Field struct {
	Name, Value []byte
}

// Head is one request head. Reuse it: Parse overwrites it and keeps its
// buffers, so a connection reading request after request allocates only
// what a larger head needs.
type Head struct {
	buf    []byte // the head's bytes, rewritten in place (unfolded, canonical names)
	Method []byte
	Target []byte   // the request-target as sent
	URL    *url.URL // Target parsed (url.ParseRequestURI)
	Major  int
	Minor  int
	// Fields are in the order sent, all of them: Host, Transfer-Encoding,
	// repeated Content-Lengths and Trailer included (net/http's server
	// drops Host, Transfer-Encoding, the repeats, and Content-Length and
	// Trailer when Chunked, from the header its handlers see).
	Fields []Field
	Host   []byte // the URL's host when the target is absolute, else the Host field's value
	// ContentLength is the body's length; -1 when Chunked.
	ContentLength int64
	Chunked       bool
	// Close says the connection ends after this exchange (Connection:
	// close, or HTTP/1.0 without keep-alive).
	Close bool
	// CacheControlAdded: Pragma: no-cache without Cache-Control, which
	// net/http reads as Cache-Control: no-cache too (fixPragmaCacheControl).
	CacheControlAdded bool
	// H2Preface: the head is HTTP/2's connection preface ("PRI *
	// HTTP/2.0"): the connection speaks HTTP/2 from here (h2c with prior
	// knowledge).
	H2Preface bool
	// spacedName: a field name with a space in it, which net/http's
	// reader keeps (as sent) and its server refuses after the version.
	spacedName bool
}

// Error is a head refused: the status net/http answers it with (400, 501
// or 505) and why.
type Error struct {
	Status int
	Reason string
}

func (e *Error) Error() string { return strconv.Itoa(e.Status) + " " + e.Reason }

func bad(reason string) error { return &Error{Status: 400, Reason: reason} }

// incompleteError is ErrIncomplete's type.
type incompleteError struct{}

func (incompleteError) Error() string { return "h1: incomplete request head" }

// ErrIncomplete: data ends before the head does; read more and parse again.
var ErrIncomplete error = incompleteError{}

// Parse reads the head at the start of data into h and returns its
// length in bytes (where the body starts). ErrIncomplete means data ends
// before the head does; any other error is an *Error.
func (h *Head) Parse(data []byte) (n int, err error) {
	end := headEnd(data)
	if end < 0 {
		return 0, ErrIncomplete
	}
	h.reset()
	h.buf = append(h.buf[:0], data[:end]...)
	if err := h.parse(); err != nil {
		return 0, err
	}
	return end, nil
}

func (h *Head) reset() {
	h.Method, h.Target, h.URL, h.Host = nil, nil, nil, nil
	h.Major, h.Minor = 0, 0
	h.Fields = h.Fields[:0]
	h.ContentLength, h.Chunked, h.Close, h.CacheControlAdded, h.H2Preface, h.spacedName = 0, false, false, false, false, false
}

// headEnd is the length of the head at the start of data: up to and
// including the first empty line after the request line (a line is
// ended by LF, a CR before it dropped), -1 when there is none yet. A
// line of blanks is a continuation, not the end.
func headEnd(data []byte) int {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return -1
	}
	for pos := i + 1; ; {
		j := bytes.IndexByte(data[pos:], '\n')
		if j < 0 {
			return -1
		}
		if j == 0 || j == 1 && data[pos] == '\r' {
			return pos + j + 1
		}
		pos += j + 1
	}
}

// line returns the line at buf[pos:] without its end (LF, or CRLF), and
// where the next one starts. buf holds whole lines.
func line(buf []byte, pos int) ([]byte, int) {
	i := bytes.IndexByte(buf[pos:], '\n')
	l := buf[pos : pos+i]
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	return l, pos + i + 1
}

func (h *Head) parse() error {
	buf := h.buf
	first, pos := line(buf, 0)
	if err := h.parseRequestLine(first); err != nil {
		return err
	}
	if err := h.parseFields(pos); err != nil {
		return err
	}
	return h.check()
}

// parseRequestLine reads the request line (without its end) into h.
func (h *Head) parseRequestLine(first []byte) error {
	method, rest, ok1 := bytes.Cut(first, []byte(" "))
	target, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 {
		return bad("malformed HTTP request")
	}
	if !validMethod(method) {
		return bad("invalid method")
	}
	h.Method, h.Target = method, target
	var ok bool
	if h.Major, h.Minor, ok = parseVersion(proto); !ok {
		return bad("malformed HTTP version")
	}
	raw := string(target)
	authority := string(method) == "CONNECT" && (raw == "" || raw[0] != '/')
	if authority {
		raw = "http://" + raw
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return bad("malformed request target")
	}
	if authority {
		u.Scheme = ""
	}
	h.URL = u
	return nil
}

// CheckRequestLine reports the error net/http's server answers as soon
// as it has read a request line, before any field: data holds the start
// of a head whose end has not come yet. nil when data has no whole
// first line yet, or the line is good.
func CheckRequestLine(data []byte) error {
	if bytes.IndexByte(data, '\n') < 0 {
		return nil
	}
	first, _ := line(data, 0)
	var scratch Head
	return scratch.parseRequestLine(first)
}

// parseFields reads the fields from buf[pos:] (whole lines, the last one
// empty), unfolding continuation lines in place.
func (h *Head) parseFields(pos int) error {
	buf := h.buf
	if pos < len(buf) && (buf[pos] == ' ' || buf[pos] == '\t') {
		return bad("malformed MIME header initial line")
	}
	for {
		l, next := line(buf, pos)
		if len(l) == 0 {
			return nil
		}
		if bytes.IndexByte(l, ':') < 0 {
			return bad("malformed MIME header: missing colon")
		}
		// The field is written back over its own bytes, from pos:
		// unfolding only ever shortens it.
		w := pos
		w += copy(buf[w:], trim(l))
		for next < len(buf) && (buf[next] == ' ' || buf[next] == '\t') {
			for next < len(buf) && (buf[next] == ' ' || buf[next] == '\t') {
				next++
			}
			var cont []byte
			cont, next = line(buf, next)
			buf[w] = ' '
			w++
			w += copy(buf[w:], trim(cont))
		}
		kv := buf[pos:w]
		k, v, _ := bytes.Cut(kv, []byte(":"))
		switch canonicalKey(k) {
		case keyInvalid:
			return bad("malformed MIME header line")
		case keySpaced:
			h.spacedName = true
		}
		for _, c := range v {
			if !validValueByte(c) {
				return bad("malformed MIME header line")
			}
		}
		h.Fields = append(h.Fields, Field{Name: k, Value: bytes.TrimLeft(v, " \t")})
		pos = next
	}
}

// check applies what net/http's request reader and server check after
// the fields: Host, the protocol version, the body's framing.
func (h *Head) check() error {
	var hosts, te, cl, conn, trailer, pragmas, cacheControl int
	var host, clValue []byte
	differingCL, pragmaNoCache := false, false
	for _, f := range h.Fields {
		switch string(f.Name) {
		case "Host":
			if hosts == 0 {
				host = f.Value
			}
			hosts++
		case "Transfer-Encoding":
			te++
		case "Content-Length":
			if cl == 0 {
				clValue = f.Value
			} else if !bytes.Equal(trimSpace(clValue), trimSpace(f.Value)) {
				differingCL = true
			}
			cl++
		case "Connection":
			conn++
		case "Trailer":
			trailer++
		case "Pragma":
			if pragmas == 0 {
				pragmaNoCache = string(f.Value) == "no-cache"
			}
			pragmas++
		case "Cache-Control":
			cacheControl++
		}
	}
	if hosts > 1 {
		return bad("too many Host headers")
	}
	h.Host = []byte(h.URL.Host)
	if len(h.Host) == 0 {
		h.Host = host
	}
	h.CacheControlAdded = pragmaNoCache && cacheControl == 0
	h.Close = h.shouldClose(conn)

	// Transfer-Encoding (ignored before HTTP/1.1), then Content-Length.
	if te > 0 && (h.Major > 1 || h.Major == 1 && h.Minor >= 1) {
		if te != 1 {
			return &Error{Status: 501, Reason: "too many transfer encodings"}
		}
		if !asciiEqualFold(h.field("Transfer-Encoding"), "chunked") {
			return &Error{Status: 501, Reason: "unsupported transfer encoding"}
		}
		h.Chunked = true
	}
	if differingCL {
		return bad("multiple differing Content-Length headers")
	}
	if cl > 0 {
		v := trimSpace(clValue)
		if len(v) == 0 {
			return bad("invalid empty Content-Length")
		}
		n, err := strconv.ParseUint(string(v), 10, 63)
		if err != nil {
			return bad("bad Content-Length")
		}
		h.ContentLength = int64(n)
	}
	if h.Chunked {
		h.ContentLength = -1
		if trailer > 0 {
			if err := h.checkTrailer(); err != nil {
				return err
			}
		}
	}
	// HTTP/2's preface, as net/http tells it (isH2Upgrade): no field left
	// once Transfer-Encoding, and Content-Length when chunked, are read.
	left := len(h.Fields) - te
	if h.Chunked {
		left -= cl
	}
	if string(h.Method) == "PRI" && left == 0 && h.URL.Path == "*" && h.Major == 2 && h.Minor == 0 {
		h.H2Preface, h.ContentLength, h.Close = true, -1, true
	}
	// net/http serves any HTTP/1.x (http1ServerSupportsRequest).
	supported := h.Major == 1 || h.Major == 2 && h.Minor == 0 && string(h.Method) == "PRI" && string(h.Target) == "*"
	if !supported {
		return &Error{Status: 505, Reason: "unsupported protocol version"}
	}
	// net/http's server checks, in its order: Host, then field names.
	if !h.H2Preface && (h.Major > 1 || h.Minor >= 1) && hosts == 0 && string(h.Method) != "CONNECT" {
		return bad("missing required Host header")
	}
	if hosts == 1 && !httpguts.ValidHostHeader(string(host)) {
		return bad("malformed Host header")
	}
	if h.spacedName {
		return bad("invalid header name")
	}
	return nil
}

// field is the first value of the field named name (canonical), nil if
// none.
func (h *Head) field(name string) []byte {
	for _, f := range h.Fields {
		if string(f.Name) == name {
			return f.Value
		}
	}
	return nil
}

// shouldClose is net/http's shouldClose for a request.
func (h *Head) shouldClose(conn int) bool {
	if h.Major < 1 {
		return true
	}
	var hasClose, hasKeepAlive bool
	if conn > 0 {
		for _, f := range h.Fields {
			if string(f.Name) == "Connection" {
				hasClose = hasClose || containsToken(f.Value, "close")
				hasKeepAlive = hasKeepAlive || containsToken(f.Value, "keep-alive")
			}
		}
	}
	if h.Major == 1 && h.Minor == 0 {
		return hasClose || !hasKeepAlive
	}
	return hasClose
}

// checkTrailer refuses a chunked request whose Trailer field names a
// field that frames the message (net/http's fixTrailer).
func (h *Head) checkTrailer() error {
	for _, f := range h.Fields {
		if string(f.Name) != "Trailer" {
			continue
		}
		for elem := range bytes.SplitSeq(f.Value, []byte(",")) {
			elem = trimSpace(elem)
			if len(elem) == 0 {
				continue
			}
			switch canonical(elem) {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return bad("bad trailer key")
			}
		}
	}
	return nil
}

// containsToken reports whether the comma-separated list v holds token
// (case-insensitively), as httpguts.HeaderValuesContainsToken.
func containsToken(v []byte, token string) bool {
	for elem := range bytes.SplitSeq(v, []byte(",")) {
		if asciiEqualFold(trimOWS(elem), token) {
			return true
		}
	}
	return false
}

// trimOWS trims spaces and tabs (RFC 7230 OWS).
func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }

// trimSpace trims ASCII space, tab, CR and LF (textproto.TrimString).
func trimSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// trim trims spaces and tabs (textproto's trim of a line).
func trim(b []byte) []byte { return bytes.Trim(b, " \t") }

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// validMethod: a non-empty token.
func validMethod(m []byte) bool {
	if len(m) == 0 {
		return false
	}
	for _, c := range m {
		if !validFieldByte(c) {
			return false
		}
	}
	return true
}

// parseVersion is net/http's ParseHTTPVersion.
func parseVersion(v []byte) (major, minor int, ok bool) {
	switch string(v) {
	case "HTTP/1.1":
		return 1, 1, true
	case "HTTP/1.0":
		return 1, 0, true
	}
	if len(v) != len("HTTP/X.Y") || string(v[:5]) != "HTTP/" || v[6] != '.' {
		return 0, 0, false
	}
	if v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// What canonicalKey found a field name to be.
const (
	keyToken   = iota // a token: canonicalized
	keySpaced         // tchars and spaces: left as sent (net/http's reader keeps it, its server refuses it)
	keyInvalid        // empty, or another byte: the reader refuses it
)

// canonicalKey canonicalizes the field name k in place when it is a
// token (net/textproto's rule: upper case first and after each dash,
// lower case elsewhere).
func canonicalKey(k []byte) int {
	if len(k) == 0 {
		return keyInvalid
	}
	spaced := false
	for _, c := range k {
		switch {
		case c == ' ':
			spaced = true
		case !validFieldByte(c):
			return keyInvalid
		}
	}
	if spaced {
		return keySpaced
	}
	upper := true
	for i, c := range k {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k[i] = c
		upper = c == '-'
	}
	return keyToken
}

// canonical is the canonical form of a token, as a new string (or b as
// a string when it is not a token, as textproto leaves it).
func canonical(b []byte) string {
	c := []byte(string(b))
	canonicalKey(c) // left as is unless a token
	return string(c)
}

// validFieldByte: a tchar (RFC 9110 token character).
func validFieldByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// validValueByte: VCHAR, obs-text, SP or HTAB.
func validValueByte(c byte) bool {
	return c == ' ' || c == '\t' || c >= 0x21 && c != 0x7f
}
