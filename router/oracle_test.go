package router

import (
	"fmt"
	"net/http"
	"net/url"
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
	preds    []Predicate
	predKey  string // the predicates, sorted: equal for equivalent sets
	weight   *int
	value    T
}

func newLinear[T any](specs []Spec[T]) *linear[T] {
	l := &linear[T]{}
	for i, s := range specs {
		h := strings.ToLower(s.Host)
		r := linearRoute[T]{index: i, methods: s.Methods, prefix: s.Prefix, value: s.Value, preds: s.Predicates, weight: s.Weight}
		var keys []string
		for _, p := range s.Predicates {
			name := p.Name
			if p.In == Header {
				name = http.CanonicalHeaderKey(name)
			}
			keys = append(keys, fmt.Sprint(p.In, name, p.Op, p.Value))
		}
		sort.Strings(keys)
		r.predKey = strings.Join(keys, "|")
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

// holds reports whether every predicate of r holds for req, read through
// net/http's and net/url's own parsers.
func (r *linearRoute[T]) holds(req *Request) bool {
	for _, p := range r.preds {
		var v string
		var ok bool
		switch p.In {
		case Header:
			vs := req.Header.Values(p.Name)
			if ok = len(vs) > 0; ok {
				v = vs[0]
			}
		case Query:
			q, _ := url.ParseQuery(req.RawQuery)
			v, ok = q.Get(p.Name), q.Has(p.Name)
		case Cookie:
			c, err := (&http.Request{Header: req.Header}).Cookie(p.Name)
			if ok = err == nil; ok {
				v = c.Value
			}
		}
		switch {
		case !ok,
			p.Op == Exact && v != p.Value,
			p.Op == Prefix && !strings.HasPrefix(v, p.Value),
			p.Op == Regex && !regexp.MustCompile("^(?:"+p.Value+")$").MatchString(v):
			return false
		}
	}
	return true
}

// Match mirrors Router.Match.
func (l *linear[T]) Match(host, method, path string, params []Param) (v T, out []Param, st Status) {
	v, _, out, st = l.MatchRequest(host, method, path, &Request{}, params)
	return v, out, st
}

// MatchRequest mirrors Router.MatchRequest. When the route found is one of
// a split, split lists the values of the split's routes that may serve
// the request (weight above 0), and v is the first of them.
func (l *linear[T]) MatchRequest(host, method, path string, req *Request, params []Param) (v T, split []T, out []Param, st Status) {
	if !strings.HasPrefix(path, "/") {
		return v, nil, params, NotFound
	}
	reqSegs := strings.Split(path, "/")[1:]
	st = NotFound
	for _, inGroup := range l.hostGroups(host) {
		var (
			best       *linearRoute[T]
			bestParams []Param
			bestRank   []int
			tier       []*linearRoute[T] // the routes of bestRank
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
			if len(r.preds) > 0 && !r.holds(req) {
				continue // as if the route were not there
			}
			mr, ok := r.methodRank(method)
			if !ok {
				if len(r.preds) == 0 {
					st = MethodNotAllowed
				}
				continue
			}
			// Equal paths have equal rank lengths; then more predicates
			// first, config order among equals.
			rank = append(rank, mr, -len(r.preds))
			switch c := slices.Compare(rank, bestRank); {
			case best == nil || c < 0:
				best, bestParams, bestRank, tier = r, ps, rank, []*linearRoute[T]{r}
			case c == 0:
				tier = append(tier, r) // later in config order
			}
		}
		if best == nil {
			continue
		}
		if best.weight != nil {
			split = nil
			for _, r := range tier {
				if r.predKey == best.predKey && *r.weight > 0 {
					split = append(split, r.value)
				}
			}
			return split[0], split, append(params, bestParams...), Matched
		}
		return best.value, nil, append(params, bestParams...), Matched
	}
	return v, nil, params, st
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
			if ok, _, _ := r.matchPath(path, reqSegs); ok && inGroup(r) && len(r.preds) == 0 {
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
