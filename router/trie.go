package router

import "strings"

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

// routeSet holds the routes of one path key, at most one per method and one
// without methods (New rejects the rest as shadowed).
type routeSet struct {
	methods []methodRoute
	any     int // route without a method list, or -1
}

type methodRoute struct {
	method string
	route  int
}

// pick returns the route for method: one listing it, else (for HEAD) one
// listing GET, else the one without methods; -1 if none accepts it.
func (s *routeSet) pick(method string) int {
	for _, m := range s.methods {
		if m.method == method {
			return m.route
		}
	}
	if method == "HEAD" {
		for _, m := range s.methods {
			if m.method == "GET" {
				return m.route
			}
		}
	}
	return s.any
}

// add registers route with its methods, or returns the earlier route that
// already owns one of them (or the no-method slot) and that method ("" for
// the no-method slot).
func (s *routeSet) add(route int, methods []string) (shadowedBy int, method string) {
	if len(methods) == 0 {
		if s.any >= 0 {
			return s.any, ""
		}
		s.any = route
		return -1, ""
	}
	for _, m := range methods {
		for _, e := range s.methods {
			if e.method == m {
				return e.route, m
			}
		}
	}
	for _, m := range methods {
		s.methods = append(s.methods, methodRoute{m, route})
	}
	return -1, ""
}

func newRouteSet() *routeSet { return &routeSet{any: -1} }

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

// match returns the route of this group for (method, path), or -1, with the
// captured parameter values appended to params (names are filled in by the
// caller). On -1 params is returned at its original length. pathSeen is set
// when some route matched the path but not the method.
func (g *group) match(method, path string, params []Param, pathSeen *bool) (int, []Param) {
	idx, params := g.root.match(method, path, 1, params, pathSeen)
	if idx >= 0 || !g.hasPrefixes {
		return idx, params
	}
	for n := g.deepestPrefix(path); n != nil; n = n.prefixUp {
		if idx := n.prefixes.pick(method); idx >= 0 {
			return idx, params
		}
		*pathSeen = true
	}
	return -1, params
}

// match is the depth-first walk for exact paths and patterns from n, with
// path[i:] left to consume: static child first, then the parameter child,
// then the catch-all.
func (n *node) match(method, path string, i int, params []Param, pathSeen *bool) (int, []Param) {
	if i > len(path) {
		if n.routes == nil {
			return -1, params
		}
		if idx := n.routes.pick(method); idx >= 0 {
			return idx, params
		}
		*pathSeen = true
		return -1, params
	}
	j := len(path)
	if k := strings.IndexByte(path[i:], '/'); k >= 0 {
		j = i + k
	}
	seg := path[i:j]
	if c := n.static(seg); c != nil {
		var idx int
		if idx, params = c.match(method, path, j+1, params, pathSeen); idx >= 0 {
			return idx, params
		}
	}
	if n.param != nil && seg != "" {
		var idx int
		params = append(params, Param{Value: seg})
		if idx, params = n.param.match(method, path, j+1, params, pathSeen); idx >= 0 {
			return idx, params
		}
		params = params[:len(params)-1]
	}
	if n.catchAll != nil {
		if idx := n.catchAll.pick(method); idx >= 0 {
			return idx, append(params, Param{Value: path[i:]})
		}
		*pathSeen = true
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
