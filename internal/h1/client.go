package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
)

// ReadResponse reads the response to req at the head of br as
// http.ReadResponse does, when it has the plain shape most answers have:
// HTTP/1.1, a final status other than 204 and 304 to a request other
// than HEAD, one Content-Length, fields without folding, none of
// Connection, Pragma, Transfer-Encoding or Trailer, and a head that fits
// br's buffer. For any other, ok is false and nothing is consumed: the
// caller reads it with http.ReadResponse, which then sees the same
// bytes. FuzzReadResponse holds the two alike on any input.
//
// The head is parsed where it lies in br's buffer: one string for it,
// the header's values slices of that string.
func ReadResponse(br *bufio.Reader, req *http.Request) (res *http.Response, ok bool) {
	if req != nil && req.Method == http.MethodHead {
		return nil, false
	}
	if _, err := br.Peek(1); err != nil {
		return nil, false
	}
	var end int
	for {
		data, _ := br.Peek(br.Buffered())
		if end = headEnd(data); end >= 0 {
			break
		}
		if br.Buffered() == br.Size() {
			return nil, false
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			return nil, false
		}
	}
	data, _ := br.Peek(end)
	res, length, ok := parseResponseHead(data)
	if !ok {
		return nil, false
	}
	_, _ = br.Discard(end)
	res.Request = req
	res.ContentLength = length
	if length == 0 {
		res.Body = http.NoBody
	} else {
		res.Body = &fixedBody{br: br, left: length}
	}
	return res, true
}

// parseResponseHead parses a whole head (data ends with its empty line)
// of the plain shape, or says it is not.
func parseResponseHead(data []byte) (*http.Response, int64, bool) {
	first, pos := line(data, 0)
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(first, []byte(proto)) || len(first) < len(proto)+3 {
		return nil, 0, false
	}
	status := first[len(proto):]
	code := 0
	for _, c := range status[:3] {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		code = code*10 + int(c-'0')
	}
	if len(status) > 3 && status[3] != ' ' || code < 200 || code > 599 ||
		code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, 0, false
	}
	// One string for the head; the fields are slices of it.
	str := string(data)
	sub := func(b []byte) string { return substr(str, data, b) }
	n := bytes.Count(data[pos:], []byte{'\n'}) - 1
	hdr := make(http.Header, n)
	values := make([]string, 0, n)
	var cl []byte
	var key [64]byte
	for {
		l, next := line(data, pos)
		if len(l) == 0 {
			break
		}
		if l[0] == ' ' || l[0] == '\t' || next < len(data) && (data[next] == ' ' || data[next] == '\t') {
			return nil, 0, false // folded
		}
		k, v, found := bytes.Cut(l, []byte(":"))
		if !found || len(k) > len(key) {
			return nil, 0, false
		}
		// Canonicalized in a copy: data is br's buffer, left as it is
		// for http.ReadResponse when this head is not taken.
		ck := key[:len(k)]
		copy(ck, k)
		if canonicalKey(ck) != keyToken {
			return nil, 0, false
		}
		v = trimOWS(v)
		for _, c := range v {
			if !validValueByte(c) {
				return nil, 0, false
			}
		}
		name := commonHeader(ck)
		if name == "" {
			if bytes.Equal(ck, k) {
				name = sub(k)
			} else {
				name = string(ck)
			}
		}
		switch name {
		case "Connection", "Pragma", "Transfer-Encoding", "Trailer":
			return nil, 0, false
		case "Content-Length":
			if cl != nil {
				return nil, 0, false
			}
			cl = v
		}
		value := sub(v)
		if old := hdr[name]; len(old) > 0 {
			hdr[name] = append(old, value)
		} else {
			values = append(values, value)
			hdr[name] = values[len(values)-1 : len(values) : len(values)]
		}
		pos = next
	}
	if len(cl) == 0 {
		return nil, 0, false // no length: read to the close, or refused; net/http decides
	}
	n64, err := strconv.ParseUint(string(cl), 10, 63)
	if err != nil {
		return nil, 0, false
	}
	return &http.Response{
		Status:     sub(status),
		StatusCode: code,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     hdr,
	}, int64(n64), true
}

// commonHeader is the canonical name k (canonical already) as a constant
// string, for the fields most answers carry; "" for others.
func commonHeader(k []byte) string {
	switch string(k) {
	case "Content-Length":
		return "Content-Length"
	case "Content-Type":
		return "Content-Type"
	case "Date":
		return "Date"
	case "Server":
		return "Server"
	case "Cache-Control":
		return "Cache-Control"
	case "Etag":
		return "Etag"
	case "Last-Modified":
		return "Last-Modified"
	case "Vary":
		return "Vary"
	case "Content-Encoding":
		return "Content-Encoding"
	case "Set-Cookie":
		return "Set-Cookie"
	case "Connection":
		return "Connection"
	case "Pragma":
		return "Pragma"
	case "Transfer-Encoding":
		return "Transfer-Encoding"
	case "Trailer":
		return "Trailer"
	}
	return ""
}

// fixedBody is a response body of a known length on br: io.EOF at its
// end, io.ErrUnexpectedEOF if the stream ends before.
type fixedBody struct {
	br     *bufio.Reader
	left   int64
	closed bool
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// Close marks the body closed; it does not read what is left (the
// caller, which owns the connection, decides what becomes of it).
func (b *fixedBody) Close() error {
	b.closed = true
	return nil
}

// WriteRequest writes req to bw as req.Write does, for the requests the
// gateway sends most (a Content-Length body or none, an ASCII host and
// a plain path, no Transfer-Encoding or Trailer); ok is false, with
// nothing written, for any other: the caller writes it with req.Write.
// Fields go out in map order, not sorted as req.Write sorts them; what a
// server reads is the same (TestWriteRequestMatches parses both). The
// head and the body go out in one flush, never the head alone first.
func WriteRequest(bw *bufio.Writer, req *http.Request) (ok bool, err error) {
	u := req.URL
	if u == nil || u.Opaque != "" || len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 || req.Method == "CONNECT" {
		return false, nil
	}
	length := int64(0)
	if req.Body != nil && req.Body != http.NoBody {
		if req.ContentLength <= 0 {
			return false, nil // unknown length: net/http probes or chunks it
		}
		length = req.ContentLength
	}
	host := req.Host
	if host == "" {
		host = u.Host
	}
	if !plainHost(host) {
		return false, nil
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if hasCTL(path) || hasCTL(u.RawQuery) {
		return false, nil // net/http refuses it: let it say so
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	_, _ = bw.WriteString(method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(path)
	if u.ForceQuery || u.RawQuery != "" {
		_ = bw.WriteByte('?')
		_, _ = bw.WriteString(u.RawQuery)
	}
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	if ua, set := req.Header["User-Agent"]; !set {
		_, _ = bw.WriteString("User-Agent: Go-http-client/1.1\r\n") // req.Write's default
	} else if len(ua) > 0 && ua[0] != "" {
		_, _ = bw.WriteString("User-Agent: ")
		writeRequestValue(bw, ua[0])
		_, _ = bw.WriteString("\r\n")
	}
	if req.Close && !hasToken(req.Header["Connection"][:min(len(req.Header["Connection"]), 1)], "close") { // req.Write looks at the first
		_, _ = bw.WriteString("Connection: close\r\n")
	}
	if length > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.WriteString(strconv.FormatInt(length, 10))
		_, _ = bw.WriteString("\r\n")
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			continue // req.Write drops it too
		}
		for _, v := range vv {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			writeRequestValue(bw, v)
			_, _ = bw.WriteString("\r\n")
		}
	}
	_, err = bw.WriteString("\r\n")
	if length > 0 {
		var n, extra int64
		n, err = io.Copy(bw, io.LimitReader(req.Body, length))
		if err == nil {
			extra, err = io.Copy(io.Discard, req.Body)
			n += extra
		}
		if cerr := req.Body.Close(); err == nil {
			err = cerr
		}
		if err == nil && n != length {
			err = fmt.Errorf("http: ContentLength=%d with Body length %d", length, n)
		}
	} else if req.Body != nil {
		err = req.Body.Close()
	}
	return true, err
}

// plainHost reports whether host goes out as it is in req.Write: valid
// as a Host field, ASCII (no punycode to make), no IPv6 zone to strip.
func plainHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if c := host[i]; c >= utf8.RuneSelf || c == '%' {
			return false
		}
	}
	return httpguts.ValidHostHeader(host)
}

// hasCTL reports whether s holds an ASCII control byte (req.Write refuses those in the target).
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return true
		}
	}
	return false
}

// writeRequestValue writes v as req.Write does: CR and LF made spaces,
// then ASCII blanks trimmed at both ends (textproto.TrimString).
func writeRequestValue(bw *bufio.Writer, v string) {
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\n", " ", "\r", " ").Replace(v)
	}
	_, _ = bw.WriteString(textproto.TrimString(v))
}
