package rewrite

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/dubbogw/dubbogw/exchange"
)

// Wrap returns the rewrite handler in front of next.
func (rw *rewriter) Wrap(next http.Handler) http.Handler {
	return &handler{rewriter: rw, next: next}
}

type handler struct {
	*rewriter
	next http.Handler
}

// ServeHTTP works on the escaped path, so percent-encoding the client sent
// (an encoded slash in "/api/a%2Fb") reaches the upstream as it was. When the
// path changes, next gets a shallow copy of r with its own URL, as
// http.StripPrefix does: r itself (read by the access log) keeps the path
// the client asked for.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	old := r.URL.EscapedPath()
	esc := old
	switch {
	case h.strip != "":
		esc = stripPrefix(esc, h.strip)
	case h.template != nil:
		esc = escapePath(h.fill(r))
	case h.re != nil:
		esc = h.re.ReplaceAllString(esc, h.replacement)
	}
	if !strings.HasPrefix(esc, "/") {
		esc = "/" + esc
	}
	if h.addPrefix != "" {
		esc = h.addPrefix + esc
	}
	if esc == old {
		h.next.ServeHTTP(w, r)
		return
	}
	rw := &rewritten{req: *r, url: *r.URL} // one allocation for both
	setEscapedPath(&rw.url, esc)
	rw.req.URL = &rw.url
	h.next.ServeHTTP(w, &rw.req)
}

// rewritten is the request passed on, with its URL.
type rewritten struct {
	req http.Request
	url url.URL
}

// stripPrefix removes prefix (a decoded path) from esc (an escaped path)
// when esc is prefix itself or lies below it, segment-aware. Bytes are
// compared decoded, as the router matches, so "/%61pi/x" is under "/api"; an
// encoded slash right after the prefix ("/api%2Fx") counts as a separator.
// Anything else comes back unchanged.
func stripPrefix(esc, prefix string) string {
	j := 0
	for i := 0; i < len(prefix); i++ {
		if j >= len(esc) {
			return esc
		}
		c, n := esc[j], 1
		if c == '%' && j+2 < len(esc) && isHex(esc[j+1]) && isHex(esc[j+2]) {
			c, n = unhex(esc[j+1])<<4|unhex(esc[j+2]), 3
		}
		if c != prefix[i] {
			return esc
		}
		j += n
	}
	rest := esc[j:]
	switch {
	case rest == "":
		return "/"
	case rest[0] == '/':
		return rest
	case len(rest) >= 3 && rest[0] == '%' && rest[1] == '2' && (rest[2] == 'F' || rest[2] == 'f'):
		return "/" + rest[3:]
	}
	return esc
}

// fill returns the template with each parameter replaced by its decoded value.
func (h *handler) fill(r *http.Request) string {
	n := 0
	for _, p := range h.template {
		if p.param != "" {
			n += len(exchange.PathValue(r, p.param))
		} else {
			n += len(p.literal)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range h.template {
		if p.param != "" {
			b.WriteString(exchange.PathValue(r, p.param))
		} else {
			b.WriteString(p.literal)
		}
	}
	return b.String()
}

// setEscapedPath sets u's path from its escaped form, keeping Path and
// RawPath consistent the way url.Parse does: RawPath is set only when esc is
// a valid encoding that differs from the standard one (an encoded slash, say).
// An esc that does not decode (a regex capture splitting "%2F") is taken as
// a decoded path.
func setEscapedPath(u *url.URL, esc string) {
	p, err := url.PathUnescape(esc)
	if err != nil {
		u.Path, u.RawPath = esc, ""
		return
	}
	u.Path, u.RawPath = p, ""
	if u.EscapedPath() != esc {
		u.RawPath = esc
		if u.EscapedPath() != esc { // esc holds bytes that must be escaped: not a valid RawPath
			u.RawPath = ""
		}
	}
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
