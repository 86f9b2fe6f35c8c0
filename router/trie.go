package router

import (
	"fmt"
	"slices"
	"strings"
)

// A path is walked by index: i is the start of the next segment to consume
// (just after a "/"), and i == len(path)+1 means every segment has been
// consumed. "/" is the single segment "", "/a/" is "a" then "".

// group is the trie of one host group.
type group struct {
	root        node
	hasPrefixes bool
}

// node is reached by consuming one segment per edge from the root.
type node struct {
	seg      string           // static text of the edge into this node
	statics  []*node          // static children, in insertion order
	index    map[string]*node // static children by text, once there are many
	param    *node            // the "{name}" child
	catchAll *routeSet        // routes ending in "{name...}" here
	routes   *routeSet        // exact paths and patterns ending here
	prefixes *routeSet        // prefix routes whose last segment is this node's
	prefixUp *node            // nearest proper static ancestor with prefixes
}

// indexFanout is the number of static children above which a map is used.
const indexFanout = 8

// routeSet holds the routes of one path key: a slot per method listed
// and one for the routes without a method list.
type routeSet struct {
	methods []methodRoute
	any     slot
	// plain is set when some slot has a route without predicates: a
	// request at this path that no slot serves is then a 405.
	plain bool
}

type methodRoute struct {
	method string
	slot   slot
}

// slot holds the routes of one path key that accept one method (or have
// no method list). Most slots are one route without predicates: fast
// holds it, and matching reads nothing else.
type slot struct {
	fast int       // that route's index + 1; 0 otherwise
	alts *slotAlts // the other slots' routes; nil for fast ones and empty ones
}

// slotAlts are a slot's routes as alternatives in precedence order: those
// with more predicates first, then in config order; the one without
// predicates, if any, last.
type slotAlts struct {
	alts    []alt
	pending []entry // while New runs
}

// alt is a route, or a split of routes, with the predicates they share.
type alt struct {
	preds []predicate
	route int    // -1 for a split
	split *split // routes sharing the slot and the predicates, by weight
}

// entry is a route as New collects it into a slot.
type entry struct {
	route    int
	preds    []predicate
	key      string // equal for equivalent predicate sets
	weight   int
	weighted bool
}

// pick returns the route of the first alternative whose predicates hold,
// or -1. A nil req has no headers, query or cookies.
func (s *slot) pick(req *Request) int {
	if s.fast != 0 {
		return s.fast - 1
	}
	return s.pickAlt(req)
}

// pickAlt is pick for a slot that is not fast (kept out of pick, so that
// pick inlines).
func (s *slot) pickAlt(req *Request) int {
	if s.alts == nil {
		return -1
	}
	if req == nil {
		req = &Request{}
	}
	for i := range s.alts.alts {
		a := &s.alts.alts[i]
		if len(a.preds) > 0 && !holdAll(a.preds, req) {
			continue
		}
		if a.split != nil {
			return a.split.pick()
		}
		return a.route
	}
	return -1
}

// plain reports whether the slot serves every request: its last
// alternative has no predicates.
func (s *slot) plain() bool {
	if s.fast != 0 {
		return true
	}
	return s.alts != nil && len(s.alts.alts) > 0 && len(s.alts.alts[len(s.alts.alts)-1].preds) == 0
}

// pick returns the route for method: from the slot listing it, else (for
// HEAD) the one listing GET, else the one without methods, the first that
// has a route whose predicates hold; -1 if none.
func (s *routeSet) pick(method string, req *Request) int {
	for i := range s.methods {
		if s.methods[i].method == method {
			if idx := s.methods[i].slot.pick(req); idx >= 0 {
				return idx
			}
			break
		}
	}
	if method == "HEAD" {
		for i := range s.methods {
			if s.methods[i].method == "GET" {
				if idx := s.methods[i].slot.pick(req); idx >= 0 {
					return idx
				}
				break
			}
		}
	}
	return s.any.pick(req)
}

// add registers e in the slots of methods, or returns the earlier route
// that already holds one of them with equivalent predicates, and that
// method ("" for the no-method slot), unless both have a weight (they
// split it).
func (s *routeSet) add(e entry, methods []string) (shadowedBy int, method string) {
	clash := func(sl *slot) int {
		if sl.alts == nil {
			return -1
		}
		for _, p := range sl.alts.pending {
			if p.key == e.key && !(p.weighted && e.weighted) {
				return p.route
			}
		}
		return -1
	}
	if len(methods) == 0 {
		if prev := clash(&s.any); prev >= 0 {
			return prev, ""
		}
		s.any.add(e)
		return -1, ""
	}
	for _, m := range methods {
		for i := range s.methods {
			if s.methods[i].method == m {
				if prev := clash(&s.methods[i].slot); prev >= 0 {
					return prev, m
				}
			}
		}
	}
	for _, m := range methods {
		i := slices.IndexFunc(s.methods, func(mr methodRoute) bool { return mr.method == m })
		if i < 0 {
			s.methods = append(s.methods, methodRoute{method: m})
			i = len(s.methods) - 1
		}
		s.methods[i].slot.add(e)
	}
	return -1, ""
}

func (s *slot) add(e entry) {
	if s.alts == nil {
		s.alts = &slotAlts{}
	}
	s.alts.pending = append(s.alts.pending, e)
}

// finish orders the slots' routes into alternatives and makes their
// splits.
func (s *routeSet) finish() error {
	if err := s.any.finish(""); err != nil {
		return err
	}
	s.plain = s.any.plain()
	for i := range s.methods {
		if err := s.methods[i].slot.finish(s.methods[i].method); err != nil {
			return err
		}
		s.plain = s.plain || s.methods[i].slot.plain()
	}
	return nil
}

// finish groups the slot's routes by predicate set into alternatives,
// orders them and makes the splits; method names the slot in errors.
func (s *slot) finish(method string) error {
	if s.alts == nil {
		return nil
	}
	var groups [][]entry // by predicate key, in order of first route
	for _, e := range s.alts.pending {
		k := slices.IndexFunc(groups, func(g []entry) bool { return g[0].key == e.key })
		if k < 0 {
			groups = append(groups, nil)
			k = len(groups) - 1
		}
		groups[k] = append(groups[k], e)
	}
	s.alts.pending = nil
	// More predicates first; config order among equals (stable).
	slices.SortStableFunc(groups, func(a, b []entry) int { return len(b[0].preds) - len(a[0].preds) })
	for _, g := range groups {
		a := alt{preds: g[0].preds, route: g[0].route}
		if g[0].weighted {
			routes, weights := make([]int, len(g)), make([]int, len(g))
			sum := 0
			for k, e := range g {
				routes[k], weights[k] = e.route, e.weight
				sum += e.weight
			}
			what := "method " + method
			if method == "" {
				what = "no method list"
			}
			switch {
			case sum == 0:
				return fmt.Errorf("specs %v (%s): their weights add up to 0, so no route would serve these requests", routes, what)
			case sum > MaxSplitWeight:
				return fmt.Errorf("specs %v (%s): their weights add up to %d; at most %d", routes, what, sum, MaxSplitWeight)
			case len(g) > 1:
				a.route, a.split = -1, newSplit(routes, weights)
			}
		}
		s.alts.alts = append(s.alts.alts, a)
	}
	if as := s.alts.alts; len(as) == 1 && len(as[0].preds) == 0 && as[0].split == nil {
		s.fast, s.alts = as[0].route+1, nil
	}
	return nil
}

// finish finishes the route sets of n and below.
func (n *node) finish() error {
	for _, rs := range [...]*routeSet{n.routes, n.catchAll, n.prefixes} {
		if rs != nil {
			if err := rs.finish(); err != nil {
				return err
			}
		}
	}
	for _, c := range n.statics {
		if err := c.finish(); err != nil {
			return err
		}
	}
	if n.param != nil {
		return n.param.finish()
	}
	return nil
}

func newRouteSet() *routeSet { return &routeSet{} }

func (n *node) static(seg string) *node {
	if n.index != nil {
		return n.index[seg]
	}
	for _, c := range n.statics {
		if c.seg == seg {
			return c
		}
	}
	return nil
}

func (n *node) addStatic(seg string) *node {
	if c := n.static(seg); c != nil {
		return c
	}
	c := &node{seg: seg}
	n.statics = append(n.statics, c)
	if n.index != nil {
		n.index[seg] = c
	} else if len(n.statics) > indexFanout {
		n.index = make(map[string]*node, len(n.statics))
		for _, s := range n.statics {
			n.index[s.seg] = s
		}
	}
	return c
}

// lookup is what a walk of the trie compares besides the path, and what
// it learns: one pointer down the recursion instead of three arguments.
type lookup struct {
	method   string
	req      *Request
	pathSeen bool // some route without predicates matched the path but not the method
}

// match returns the route of this group for (l.method, path), or -1, with
// the captured parameter values appended to params (names are filled in
// by the caller). On -1 params is returned at its original length.
func (g *group) match(l *lookup, path string, params []Param) (int, []Param) {
	idx, params := g.root.match(l, path, 1, params)
	if idx >= 0 || !g.hasPrefixes {
		return idx, params
	}
	for n := g.deepestPrefix(path); n != nil; n = n.prefixUp {
		if idx := n.prefixes.pick(l.method, l.req); idx >= 0 {
			return idx, params
		}
		l.pathSeen = l.pathSeen || n.prefixes.plain
	}
	return -1, params
}

// match is the depth-first walk for exact paths and patterns from n, with
// path[i:] left to consume: static child first, then the parameter child,
// then the catch-all.
func (n *node) match(l *lookup, path string, i int, params []Param) (int, []Param) {
	if i > len(path) {
		if n.routes == nil {
			return -1, params
		}
		if idx := n.routes.pick(l.method, l.req); idx >= 0 {
			return idx, params
		}
		l.pathSeen = l.pathSeen || n.routes.plain
		return -1, params
	}
	j := len(path)
	if k := strings.IndexByte(path[i:], '/'); k >= 0 {
		j = i + k
	}
	seg := path[i:j]
	if c := n.static(seg); c != nil {
		var idx int
		if idx, params = c.match(l, path, j+1, params); idx >= 0 {
			return idx, params
		}
	}
	if n.param != nil && seg != "" {
		var idx int
		params = append(params, Param{Value: seg})
		if idx, params = n.param.match(l, path, j+1, params); idx >= 0 {
			return idx, params
		}
		params = params[:len(params)-1]
	}
	if n.catchAll != nil {
		if idx := n.catchAll.pick(l.method, l.req); idx >= 0 {
			return idx, append(params, Param{Value: path[i:]})
		}
		l.pathSeen = l.pathSeen || n.catchAll.plain
	}
	return -1, params
}

// deepestPrefix returns the deepest node with prefix routes on the static
// walk of path, or nil; shorter prefixes follow through prefixUp.
func (g *group) deepestPrefix(path string) *node {
	n := &g.root
	var best *node
	if n.prefixes != nil {
		best = n
	}
	for i := 1; i <= len(path); {
		j := len(path)
		if k := strings.IndexByte(path[i:], '/'); k >= 0 {
			j = i + k
		}
		if n = n.static(path[i:j]); n == nil {
			break
		}
		if n.prefixes != nil {
			best = n
		}
		i = j + 1
	}
	return best
}

// collect calls fn with every route set below n whose exact path or pattern
// matches path[i:], whatever the method.
func (n *node) collect(path string, i int, fn func(*routeSet)) {
	if i > len(path) {
		if n.routes != nil {
			fn(n.routes)
		}
		return
	}
	j := len(path)
	if k := strings.IndexByte(path[i:], '/'); k >= 0 {
		j = i + k
	}
	seg := path[i:j]
	if c := n.static(seg); c != nil {
		c.collect(path, j+1, fn)
	}
	if n.param != nil && seg != "" {
		n.param.collect(path, j+1, fn)
	}
	if n.catchAll != nil {
		fn(n.catchAll)
	}
}

// linkPrefixes sets prefixUp on n and its static descendants; up is the
// nearest proper ancestor of n with prefix routes.
func (n *node) linkPrefixes(up *node) {
	n.prefixUp = up
	if n.prefixes != nil {
		up = n
	}
	for _, c := range n.statics {
		c.linkPrefixes(up)
	}
}
