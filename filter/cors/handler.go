package cors

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter"
)

// Header names, canonical so they index http.Header directly.
const (
	hdrOrigin           = "Origin"
	hdrVary             = "Vary"
	hdrRequestMethod    = "Access-Control-Request-Method"
	hdrRequestHeaders   = "Access-Control-Request-Headers"
	hdrAllowOrigin      = "Access-Control-Allow-Origin"
	hdrAllowMethods     = "Access-Control-Allow-Methods"
	hdrAllowHeaders     = "Access-Control-Allow-Headers"
	hdrAllowCredentials = "Access-Control-Allow-Credentials"
	hdrExposeHeaders    = "Access-Control-Expose-Headers"
	hdrMaxAge           = "Access-Control-Max-Age"
	corsHeaderPrefix    = "Access-Control-"
	preflightVary       = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
	preflightErrPrefix  = "CORS preflight: "
)

// Wrap returns the cors handler in front of next.
func (p *policy) Wrap(next http.Handler) http.Handler {
	return &handler{policy: p, next: next}
}

type handler struct {
	*policy
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get(hdrOrigin)
	if r.Method == http.MethodOptions && origin != "" {
		if method := r.Header.Get(hdrRequestMethod); method != "" {
			h.preflight(w, r, origin, method)
			return
		}
	}

	hook := h.stripHook
	if origin != "" && h.allowsOrigin(origin) {
		if h.anyOrigin {
			hook = h.anyOriginHook
		} else {
			hook = func(hdr http.Header, _ int) { h.setActual(hdr, origin) }
		}
	}
	rw := filter.OnWriteHeader(w, hook)
	h.next.ServeHTTP(rw, r)
	filter.FinishHeader(rw)
}

// preflight answers an OPTIONS request carrying Origin and
// Access-Control-Request-Method without calling the upstream.
func (p *policy) preflight(w http.ResponseWriter, r *http.Request, origin, method string) {
	out := w.Header()
	out[hdrVary] = append(out[hdrVary], preflightVary)
	if !p.allowsOrigin(origin) {
		exchange.Fail(w, r, exchange.CodeForbidden,
			preflightErrPrefix+"origin "+strconv.Quote(origin)+" is not allowed")
		return
	}
	allowMethods := p.allowMethods
	if p.anyMethod {
		allowMethods = method
	} else if !p.allowsMethod(method) {
		exchange.Fail(w, r, exchange.CodeForbidden,
			preflightErrPrefix+"method "+strconv.Quote(method)+" is not allowed")
		return
	}

	allowOrigin := origin
	if p.anyOrigin {
		allowOrigin = "*"
	}
	out[hdrAllowOrigin] = []string{allowOrigin}
	out[hdrAllowMethods] = []string{allowMethods}
	allowHeaders := p.allowHeaders
	if p.echoHeaders {
		allowHeaders = strings.Join(r.Header.Values(hdrRequestHeaders), ", ")
	}
	if allowHeaders != "" {
		out[hdrAllowHeaders] = []string{allowHeaders}
	}
	if p.maxAge != "" {
		out[hdrMaxAge] = []string{p.maxAge}
	}
	if p.credentials {
		out[hdrAllowCredentials] = []string{"true"}
	}
	w.WriteHeader(http.StatusNoContent)
}

// strip removes the Access-Control-* headers the upstream set: on this route
// the gateway alone decides CORS. When the answer depends on the origin, the
// response varies by Origin even without CORS headers, so caches keep apart
// the answers to different origins.
func (p *policy) strip(h http.Header, _ int) {
	for k := range h {
		if len(k) >= len(corsHeaderPrefix) && asciiEqualFold(k[:len(corsHeaderPrefix)], corsHeaderPrefix) {
			delete(h, k)
		}
	}
	if !p.anyOrigin {
		addVary(h, hdrOrigin)
	}
}

// setActual gives the response to an allowed actual request its CORS headers.
func (p *policy) setActual(h http.Header, allowOrigin string) {
	p.strip(h, 0)
	n := 1
	if p.credentials {
		n++
	}
	if p.exposeHeaders != "" {
		n++
	}
	// One backing array for all values; each header gets a full slice of it
	// so that a later Add copies instead of overwriting its neighbour.
	vals := make([]string, 0, n)
	vals = append(vals, allowOrigin)
	h[hdrAllowOrigin] = vals[0:1:1]
	if p.credentials {
		vals = append(vals, "true")
		h[hdrAllowCredentials] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if p.exposeHeaders != "" {
		vals = append(vals, p.exposeHeaders)
		h[hdrExposeHeaders] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
}

func (p *policy) allowsOrigin(origin string) bool {
	if p.anyOrigin {
		return true
	}
	for _, o := range p.exact {
		if asciiEqualFold(origin, o) {
			return true
		}
	}
	for _, wc := range p.wildcards {
		if wc.match(origin) {
			return true
		}
	}
	return false
}

func (p *policy) allowsMethod(method string) bool {
	for _, m := range p.methods {
		if m == method {
			return true
		}
	}
	return false
}

// match reports whether origin is the wildcard's scheme, then one or more
// subdomain labels, then its domain and port, compared case-insensitively.
// The bare domain does not match.
func (wc wildcard) match(origin string) bool {
	if len(origin) <= len(wc.prefix)+len(wc.suffix) {
		return false
	}
	if !asciiEqualFold(origin[:len(wc.prefix)], wc.prefix) ||
		!asciiEqualFold(origin[len(origin)-len(wc.suffix):], wc.suffix) {
		return false
	}
	return validLabels(origin[len(wc.prefix) : len(origin)-len(wc.suffix)])
}

// addVary adds token to the Vary header unless it (or "*") is already there.
func addVary(h http.Header, token string) {
	for _, v := range h[hdrVary] {
		for v != "" {
			var item string
			item, v, _ = strings.Cut(v, ",")
			item = strings.TrimSpace(item)
			if item == "*" || asciiEqualFold(item, token) {
				return
			}
		}
	}
	h[hdrVary] = append(h[hdrVary], token)
}

// asciiEqualFold is strings.EqualFold restricted to ASCII: origins and
// header names are ASCII, and Unicode folding ("K" vs the Kelvin sign) must
// not make two different origins equal.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}

// validLabels reports whether s is one or more non-empty dot-separated
// labels of letters, digits, '-' and '_'.
func validLabels(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}
