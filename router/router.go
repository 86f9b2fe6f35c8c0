// Package router matches a request's host, method and path to a route, with
// a fixed precedence, in time that depends on the path's length and not on
// the number of routes.
//
// Routes are given to New as a list of Spec; New validates and compiles them
// into one segment trie per host group, and Match then walks the trie of each
// applicable host group without allocating (captured parameters are appended
// to a slice the caller provides).
//
// # Patterns
//
// A path is split into segments on "/". In Spec.Path a segment is either
// static text, "{name}" (exactly one non-empty segment) or, as the final
// segment only, "{name...}" (the rest of the path, slashes included,
// possibly empty: "/files/{p...}" matches "/files/" with p="" but not
// "/files"), as net/http.ServeMux does. Names are Go identifiers, unique
// within a pattern; a parameter must be a whole segment. A trailing slash is
// significant: "/a/" and "/a" are different paths. Spec.Prefix is plain text
// and segment-aware: "/api" matches "/api", "/api/" and "/api/x" but not
// "/apix"; "/" matches every path. Paths and prefixes start with "/"; a prefix
// other than "/" has no trailing slash. Match expects the path already
// decoded and cleaned (no "." or ".." segments, no "//"); a path that does not
// start with "/" matches nothing.
//
// # Precedence
//
//  1. Host. The request host is compared case-insensitively (ASCII) with any
//     ":port" and trailing dots removed ("[::1]:8080" is compared as "::1",
//     the fully qualified "api.example.com." as "api.example.com"). Host groups are
//     tried from most to least specific: the routes of the exact host; then
//     the wildcard hosts by longest suffix ("*.a.example.com" before
//     "*.example.com"), a wildcard matching one or more labels in front of
//     its suffix but never the bare suffix; then the routes without a host.
//     A less specific group is tried only when no route of the more specific
//     groups matched both path and method.
//  2. Path, within a host group. An exact path beats a pattern. Among
//     patterns, segment by segment, a static segment beats "{param}", which
//     beats "{rest...}", with backtracking: when the more specific branch
//     has no route for the request (path and method), the next branch is
//     tried, as a depth-first walk of the trie. Any exact or pattern match
//     beats a prefix route; among prefix routes the longest prefix wins.
//  3. Method, at the same path (the same path, pattern or prefix, parameter
//     names aside). A route listing the request's method beats a route with
//     no method list. A HEAD request also matches a route listing GET, as
//     net/http does, unless a route at the same path lists HEAD itself; for
//     HEAD, a route listing GET still beats a route with no method list.
//  4. Predicates, among the routes of one slot (host, path and the method
//     rule of step 3). A route with predicates serves a request only when
//     all of them hold; one whose predicates do not hold is as if it were
//     not configured, so the next route by this precedence is tried (the
//     slot's route without predicates, then the next method rule, path,
//     prefix, host group). Routes with more predicates are tried first;
//     among routes with as many, config order decides: the first whose
//     predicates hold wins. Two routes can never tie silently: New
//     rejects a route whose host, path, methods and predicates (an
//     equivalent set, in any order) are all taken by an earlier route,
//     unless both have a weight (step 5).
//  5. Split. Routes with a weight that share a slot and equivalent
//     predicates split its requests: each serves its weight's share of
//     them, by a smooth weighted round robin (exact over every sum of the
//     weights consecutive requests, interleaved; see split). A weight of
//     0 serves none; the weights of a split add up to 1..MaxSplitWeight.
//  6. Status. Match reports MethodNotAllowed when some route without
//     predicates in the host groups it tried matched the path but none
//     accepted the method, and NotFound otherwise: a request that matches
//     only routes whose predicates do not hold is not found (the gateway
//     does not tell which methods a request with other headers could
//     use). Allowed lists the methods of the routes without predicates,
//     for the Allow header.
//
// # Predicates
//
// A Predicate reads one part of the request and compares it:
//
//   - Header: the first value of the header (as Header.Get; repeated
//     headers are not joined), by its canonical name, so "x-env" and
//     "X-Env" are the same predicate. Host and Cookie are not headers
//     here: the host is matched by Host, cookies by Cookie.
//   - Query: the first value of the parameter, as url.Values.Get reads the
//     URL's query: names and values decoded, malformed pairs skipped.
//   - Cookie: the value of the first well-formed cookie of that name
//     (case-sensitive) in the Cookie headers, its double quotes removed,
//     as net/http's Request.Cookie. The headers are scanned, without
//     allocating, once per name looked up.
//
// Exact compares bytes; Prefix tests a non-empty prefix; Regex is an RE2
// pattern (Go's regexp: time linear in the value) that must match the
// whole value, as if written ^(?:pattern)$, so "v2" does not match "xv2";
// write ".*v2.*" to search. Present holds whatever the value, even an
// empty one. Names and values are at most 256 bytes, a route has at most
// 16 predicates, one per source and name. Predicates are read only for
// the routes of a request's slot that have some: a Router without
// predicates reads nothing more than the host, method and path.
package router

import (
	"slices"
	"strings"
)

// Spec describes one route.
type Spec[T any] struct {
	// Host is "" (any host), an exact host ("api.example.com", "10.0.0.1",
	// "[::1]") or a wildcard ("*.example.com"). Never a port.
	Host string
	// Methods restricts the route to these methods (upper-case tokens); empty
	// matches any method.
	Methods []string
	// Path is an exact path or a pattern ("/users/{id}", "/files/{path...}").
	// Exactly one of Path and Prefix is set.
	Path string
	// Prefix matches this path and everything below it, segment-aware.
	Prefix string
	// Predicates must all hold for the route to serve a request.
	Predicates []Predicate
	// Weight, when set (0..MaxSplitWeight), makes the route a member of
	// the split of the routes with a weight that share its host, path,
	// method and equivalent predicates: it serves that share of their
	// requests. Nil: the route is no split's.
	Weight *int
	// Value is returned by Match for requests this route wins.
	Value T
}

// Param is one path parameter captured by a pattern.
type Param struct{ Name, Value string }

// Status is the outcome of Match.
type Status int

// Match outcomes. The zero value is NotFound.
const (
	NotFound Status = iota
	Matched
	MethodNotAllowed
)

// String returns the status name.
func (s Status) String() string {
	switch s {
	case NotFound:
		return "NotFound"
	case Matched:
		return "Matched"
	case MethodNotAllowed:
		return "MethodNotAllowed"
	}
	return "Status(?)"
}

// Router matches requests to route values. It is immutable after New (the
// splits' counters aside) and safe for concurrent use.
type Router[T any] struct {
	values []T
	tries
}

// tries are a Router's compiled routes, apart from their values: matching
// runs in code that is not generic (no dictionary to pass around).
type tries struct {
	names [][]string // parameter names of each route, in path order

	exact   map[string]*group // lower-case host without brackets -> group
	wild    map[string]*group // wildcard suffix ("example.com") -> group
	anyHost *group            // routes without a host; nil when there are none

	// Lengths of the keys of exact and wild: most map lookups are skipped.
	exactLens, wildLens lengthSet
}

// lengthSet is a set of lengths up to maxHostLen.
type lengthSet [(maxHostLen + 64) / 64]uint64

func (s *lengthSet) add(n int)      { s[n/64] |= 1 << (n % 64) }
func (s *lengthSet) has(n int) bool { return n <= maxHostLen && s[n/64]&(1<<(n%64)) != 0 }

// Match finds the route for a request. The host may carry a port; method is
// the request method as sent; path is the decoded, cleaned URL path. Captured
// parameters are appended to params (pass a stack buffer's [:0] to avoid
// allocating) and the extended slice is returned as out. When no route
// matches, v is the zero value and out is params unchanged.
func (r *Router[T]) Match(host, method, path string, params []Param) (v T, out []Param, st Status) {
	idx, out, st := r.find(host, method, path, nil, params)
	if idx >= 0 {
		v = r.values[idx]
	}
	return v, out, st
}

// MatchRequest is Match for a request whose headers, query and cookies
// the routes' predicates read (nil: none). It does not keep req, and reads
// from it only for routes with predicates.
func (r *Router[T]) MatchRequest(host, method, path string, req *Request, params []Param) (v T, out []Param, st Status) {
	idx, out, st := r.find(host, method, path, req, params)
	if idx >= 0 {
		v = r.values[idx]
	}
	return v, out, st
}

// find is Match, with the index of the route found (-1 for none).
func (r *tries) find(host, method, path string, req *Request, params []Param) (int, []Param, Status) {
	if path == "" || path[0] != '/' {
		return -1, params, NotFound
	}
	var stack [8]*group
	groups := r.appendGroups(stack[:0], host)
	base := len(params)
	l := lookup{method: method, req: req}
	for _, g := range groups {
		var idx int
		idx, params = g.match(&l, path, params)
		if idx < 0 {
			continue
		}
		for k, name := range r.names[idx] {
			params[base+k].Name = name
		}
		return idx, params, Matched
	}
	if l.pathSeen {
		return -1, params, MethodNotAllowed
	}
	return -1, params, NotFound
}

// Allowed lists the methods that Match accepts at (host, path), sorted, for
// the Allow header of a 405 response: the explicit methods of every route in
// the host groups Match tries whose path matches, plus HEAD when GET is
// there. Routes without a method list add nothing (they accept every method,
// so Match never reports MethodNotAllowed where one matches). It allocates.
func (r *tries) Allowed(host, path string) []string {
	if path == "" || path[0] != '/' {
		return nil
	}
	var methods []string
	add := func(rs *routeSet) {
		for i := range rs.methods {
			if rs.methods[i].slot.plain() {
				methods = append(methods, rs.methods[i].method)
			}
		}
	}
	for _, g := range r.appendGroups(nil, host) {
		g.root.collect(path, 1, add)
		if g.hasPrefixes {
			for n := g.deepestPrefix(path); n != nil; n = n.prefixUp {
				add(n.prefixes)
			}
		}
	}
	if slices.Contains(methods, "GET") {
		methods = append(methods, "HEAD")
	}
	slices.Sort(methods)
	return slices.Compact(methods)
}

// appendGroups appends to dst the host groups to try for host, most specific
// first. It allocates only when dst's capacity is exceeded.
func (r *tries) appendGroups(dst []*group, host string) []*group {
	if len(r.exact) > 0 || len(r.wild) > 0 {
		h := stripPort(host)
		for len(h) > 0 && h[len(h)-1] == '.' {
			h = h[:len(h)-1] // "api.example.com." is api.example.com: never the catch-all's
		}
		// Lower-case into a stack buffer; m[string(b)] lookups do not allocate.
		// Configured hosts are at most maxHostLen long, so for a longer request
		// host only its tail can matter (as a wildcard suffix).
		var buf [maxHostLen + 1]byte
		off := max(0, len(h)-len(buf))
		lower := buf[:len(h)-off]
		for i := range lower {
			lower[i] = lowerASCII(h[off+i])
		}
		if off == 0 && r.exactLens.has(len(lower)) {
			if g := r.exact[string(lower)]; g != nil {
				dst = append(dst, g)
			}
		}
		if len(r.wild) > 0 {
			for i, c := range lower {
				if c == '.' && off+i > 0 && r.wildLens.has(len(lower)-i-1) {
					if g := r.wild[string(lower[i+1:])]; g != nil {
						dst = append(dst, g)
					}
				}
			}
		}
	}
	if r.anyHost != nil {
		dst = append(dst, r.anyHost)
	}
	return dst
}

// stripPort removes a ":port" from a request host: "[addr]" and "[addr]:port"
// become addr; otherwise everything from a single colon on is dropped. A
// host with two or more colons and no brackets (a bare IPv6 address) is
// kept whole.
func stripPort(h string) string {
	if len(h) > 0 && h[0] == '[' {
		if end := strings.IndexByte(h, ']'); end > 0 {
			rest := h[end+1:]
			if rest == "" || (rest[0] == ':' && strings.IndexByte(rest[1:], ':') < 0) {
				return h[1:end]
			}
		}
	}
	if i := strings.IndexByte(h, ':'); i >= 0 && strings.IndexByte(h[i+1:], ':') < 0 {
		return h[:i]
	}
	return h
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
