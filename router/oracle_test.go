package router

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// linear is the naive matcher: it checks every route against every request
// and keeps the best by the documented precedence. It shares no matching
// code with the trie, so it serves as the test oracle and as the benchmark
// baseline. Specs must have passed New.
type linear[T any] struct {
	routes []linearRoute[T]
}

type linearRoute[T any] struct {
	index    int
	host     string // lower-case, brackets removed; "" any
	wildcard bool   // host is a suffix
	methods  []string
	prefix   string   // prefix route when non-empty
	segs     []string // path route: pattern segments as written
	value    T
}

func newLinear[T any](specs []Spec[T]) *linear[T] {
	l := &linear[T]{}
	for i, s := range specs {
		h := strings.ToLower(s.Host)
		r := linearRoute[T]{index: i, methods: s.Methods, prefix: s.Prefix, value: s.Value}
		switch {
		case strings.HasPrefix(h, "*."):
			r.host, r.wildcard = h[2:], true
		case strings.HasPrefix(h, "["):
			r.host = strings.Trim(h, "[]")
		default:
			r.host = h
		}
		if s.Path != "" {
			r.segs = strings.Split(s.Path, "/")[1:]
		}
		l.routes = append(l.routes, r)
	}
	return l
}

var (
	bracketHost = regexp.MustCompile(`^\[([^\]]*)\](?::[^:]*)?$`)
	portHost    = regexp.MustCompile(`^([^:]*):[^:]*$`)
)

func linearHost(h string) string {
	if m := bracketHost.FindStringSubmatch(h); m != nil {
		h = m[1]
	} else if m := portHost.FindStringSubmatch(h); m != nil {
		h = m[1]
	}
	h = strings.TrimRight(h, ".")
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, h)
}

// hostGroups returns the host groups to try, most specific first: each a
// predicate on a route.
func (l *linear[T]) hostGroups(host string) []func(*linearRoute[T]) bool {
	h := linearHost(host)
	groups := []func(*linearRoute[T]) bool{
		func(r *linearRoute[T]) bool { return !r.wildcard && r.host != "" && r.host == h },
	}
	var suffixes []string
	for _, r := range l.routes {
		if r.wildcard && strings.HasSuffix(h, "."+r.host) && len(h) > len(r.host)+1 && !slices.Contains(suffixes, r.host) {
			suffixes = append(suffixes, r.host)
		}
	}
	sort.Slice(suffixes, func(i, j int) bool { return len(suffixes[i]) > len(suffixes[j]) })
	for _, s := range suffixes {
		groups = append(groups, func(r *linearRoute[T]) bool { return r.wildcard && r.host == s })
	}
	return append(groups, func(r *linearRoute[T]) bool { return r.host == "" })
}

// matchPath reports whether r's path or prefix matches, with the captured
// parameters, and the precedence rank of the path: lower is better.
func (r *linearRoute[T]) matchPath(path string, reqSegs []string) (ok bool, params []Param, rank []int) {
	if r.prefix != "" {
		if r.prefix == "/" || path == r.prefix || strings.HasPrefix(path, r.prefix+"/") {
			// After every path route, longer prefixes first.
			return true, nil, []int{3, -len(r.prefix)}
		}
		return false, nil, nil
	}
	for k, s := range r.segs {
		switch {
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}"):
			if len(reqSegs) <= k {
				return false, nil, nil
			}
			params = append(params, Param{s[1 : len(s)-4], strings.Join(reqSegs[k:], "/")})
			return true, params, append(rank, 2)
		case strings.HasPrefix(s, "{"):
			if k >= len(reqSegs) || reqSegs[k] == "" {
				return false, nil, nil
			}
			params = append(params, Param{s[1 : len(s)-1], reqSegs[k]})
			rank = append(rank, 1)
		default:
			if k >= len(reqSegs) || reqSegs[k] != s {
				return false, nil, nil
			}
			rank = append(rank, 0)
		}
	}
	if len(reqSegs) != len(r.segs) {
		return false, nil, nil
	}
	return true, params, rank
}

// methodRank ranks how r accepts method: 0 listed, 1 GET for HEAD, 2 no
// list; ok false when it does not accept it.
func (r *linearRoute[T]) methodRank(method string) (rank int, ok bool) {
	switch {
	case slices.Contains(r.methods, method):
		return 0, true
	case method == "HEAD" && slices.Contains(r.methods, "GET"):
		return 1, true
	case len(r.methods) == 0:
		return 2, true
	}
	return 0, false
}

// Match mirrors Router.Match.
func (l *linear[T]) Match(host, method, path string, params []Param) (v T, out []Param, st Status) {
	if !strings.HasPrefix(path, "/") {
		return v, params, NotFound
	}
	reqSegs := strings.Split(path, "/")[1:]
	st = NotFound
	for _, inGroup := range l.hostGroups(host) {
		var (
			best       *linearRoute[T]
			bestParams []Param
			bestRank   []int
		)
		for i := range l.routes {
			r := &l.routes[i]
			if !inGroup(r) {
				continue
			}
			ok, ps, rank := r.matchPath(path, reqSegs)
			if !ok {
				continue
			}
			mr, ok := r.methodRank(method)
			if !ok {
				st = MethodNotAllowed
				continue
			}
			rank = append(rank, mr) // equal paths have equal rank lengths
			if best == nil || slices.Compare(rank, bestRank) < 0 {
				best, bestParams, bestRank = r, ps, rank
			}
		}
		if best != nil {
			return best.value, append(params, bestParams...), Matched
		}
	}
	return v, params, st
}

// Allowed mirrors Router.Allowed.
func (l *linear[T]) Allowed(host, path string) []string {
	if !strings.HasPrefix(path, "/") {
		return nil
	}
	reqSegs := strings.Split(path, "/")[1:]
	var methods []string
	for _, inGroup := range l.hostGroups(host) {
		for i := range l.routes {
			r := &l.routes[i]
			if ok, _, _ := r.matchPath(path, reqSegs); ok && inGroup(r) {
				methods = append(methods, r.methods...)
			}
		}
	}
	if slices.Contains(methods, "GET") {
		methods = append(methods, "HEAD")
	}
	slices.Sort(methods)
	return slices.Compact(methods)
}
