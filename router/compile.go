package router

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode"
)

// maxHostLen is the longest host name (RFC 1035) New accepts.
const maxHostLen = 253

// New validates specs and compiles them into a Router. Errors name the
// spec's index and field, and New rejects a spec that can never match
// because an earlier one has the same host, the same path or prefix, an
// overlapping method list (or both have none) and equivalent predicates,
// unless both have a weight; and a split whose weights add up to 0 or to
// more than MaxSplitWeight.
func New[T any](specs []Spec[T]) (*Router[T], error) {
	r := &Router[T]{values: make([]T, len(specs)), tries: tries{
		names: make([][]string, len(specs)),
		exact: map[string]*group{},
		wild:  map[string]*group{},
	}}
	for i, s := range specs {
		if err := r.add(i, s); err != nil {
			return nil, err
		}
	}
	for _, g := range r.allGroups() {
		g.root.linkPrefixes(nil)
		if err := g.root.finish(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *tries) allGroups() []*group {
	var gs []*group
	for _, g := range r.exact {
		gs = append(gs, g)
	}
	for _, g := range r.wild {
		gs = append(gs, g)
	}
	if r.anyHost != nil {
		gs = append(gs, r.anyHost)
	}
	return gs
}

// segment is one parsed path segment.
type segment struct {
	kind segKind
	text string // static text or parameter name
}

type segKind uint8

const (
	staticSeg segKind = iota
	paramSeg
	catchAllSeg
)

func (r *Router[T]) add(i int, s Spec[T]) error {
	wildcard, host, err := parseHost(s.Host)
	if err != nil {
		return fmt.Errorf("spec %d: host %q: %w", i, s.Host, err)
	}
	if err := checkMethods(s.Methods); err != nil {
		return fmt.Errorf("spec %d: %w", i, err)
	}
	e := entry{route: i}
	if e.preds, e.key, err = compilePredicates(s.Predicates); err != nil {
		return fmt.Errorf("spec %d: %w", i, err)
	}
	if s.Weight != nil {
		if *s.Weight < 0 || *s.Weight > MaxSplitWeight {
			return fmt.Errorf("spec %d: weight %d: must be 0..%d", i, *s.Weight, MaxSplitWeight)
		}
		e.weight, e.weighted = *s.Weight, true
	}
	var (
		segs  []segment
		field = "path"
	)
	switch {
	case s.Path != "" && s.Prefix != "":
		return fmt.Errorf("spec %d: path %q and prefix %q are exclusive", i, s.Path, s.Prefix)
	case s.Path != "":
		if segs, err = parsePath(s.Path); err != nil {
			return fmt.Errorf("spec %d: path %q: %w", i, s.Path, err)
		}
	case s.Prefix != "":
		field = "prefix"
		if segs, err = parsePrefix(s.Prefix); err != nil {
			return fmt.Errorf("spec %d: prefix %q: %w", i, s.Prefix, err)
		}
	default:
		return fmt.Errorf("spec %d: one of path or prefix is required", i)
	}

	g := r.group(wildcard, host)
	n := &g.root
	var set **routeSet
	for _, sg := range segs {
		switch sg.kind {
		case staticSeg:
			n = n.addStatic(sg.text)
		case paramSeg:
			if n.param == nil {
				n.param = &node{}
			}
			n = n.param
			r.names[i] = append(r.names[i], sg.text)
		case catchAllSeg: // always last (parsePath checks)
			r.names[i] = append(r.names[i], sg.text)
			set = &n.catchAll
		}
	}
	switch {
	case field == "prefix":
		set = &n.prefixes
		g.hasPrefixes = true
	case set == nil:
		set = &n.routes
	}
	if *set == nil {
		*set = newRouteSet()
	}
	if prev, method := (*set).add(e, s.Methods); prev >= 0 {
		what := "method " + method
		if method == "" {
			what = "no method list"
		}
		if e.key == "" {
			return fmt.Errorf("spec %d is shadowed by spec %d (same host, %s and %s)", i, prev, field, what)
		}
		return fmt.Errorf("spec %d is shadowed by spec %d (same host, %s, %s and predicates; give both a weight to split their requests)", i, prev, field, what)
	}
	r.values[i] = s.Value
	return nil
}

// group returns the trie for a host, creating it.
func (r *tries) group(wildcard bool, host string) *group {
	m, lens := r.exact, &r.exactLens
	switch {
	case host == "":
		if r.anyHost == nil {
			r.anyHost = &group{}
		}
		return r.anyHost
	case wildcard:
		m, lens = r.wild, &r.wildLens
	}
	g := m[host]
	if g == nil {
		g = &group{}
		m[host] = g
		lens.add(len(host))
	}
	return g
}

// parseHost returns the lower-case host key: "" for any host, the suffix of
// a wildcard ("*.example.com" -> "example.com", wildcard true), or the exact
// host (brackets removed from an IPv6 literal).
func parseHost(h string) (wildcard bool, key string, err error) {
	if h == "" {
		return false, "", nil
	}
	b := []byte(h)
	for k, c := range b {
		b[k] = lowerASCII(c)
	}
	h = string(b)
	if suffix, ok := strings.CutPrefix(h, "*."); ok {
		if err := checkHostName(suffix); err != nil {
			return false, "", err
		}
		return true, suffix, nil
	}
	if h == "*" {
		return false, "", errors.New("leave host empty to match any host")
	}
	if strings.Contains(h, "*") {
		return false, "", errors.New(`a wildcard is "*." followed by a domain, as in "*.example.com"`)
	}
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if a, err := netip.ParseAddr(inner); !ok || err != nil || !a.Is6() {
			return false, "", errors.New(`brackets must enclose an IPv6 address, without a port`)
		}
		return false, inner, nil
	}
	if strings.Contains(h, ":") {
		if a, err := netip.ParseAddr(h); err == nil && a.Is6() {
			return false, "", fmt.Errorf("write an IPv6 address in brackets, as in %q", "["+h+"]")
		}
		return false, "", errors.New("must not include a port (the request's port is ignored when matching)")
	}
	return false, h, checkHostName(h)
}

// checkHostName accepts dot-separated non-empty labels of letters, digits,
// "-" and "_".
func checkHostName(h string) error {
	if len(h) > maxHostLen {
		return fmt.Errorf("longer than %d characters", maxHostLen)
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" {
			return errors.New("empty label")
		}
		for _, c := range label {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("invalid character %q", c)
			}
		}
	}
	return nil
}

// checkMethods requires methods New accepts (CheckMethod), each listed once.
func checkMethods(methods []string) error {
	for k, m := range methods {
		if err := CheckMethod(m); err != nil {
			return err
		}
		if k > 0 && slices.Contains(methods[:k], m) {
			return fmt.Errorf("method %s listed twice", m)
		}
	}
	return nil
}

// parsePath splits an exact path or pattern into segments.
func parsePath(p string) ([]segment, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, errors.New(`must start with "/"`)
	}
	raw := strings.Split(p[1:], "/")
	segs := make([]segment, 0, len(raw))
	var names []string
	for k, s := range raw {
		last := k == len(raw)-1
		if s == "" && !last {
			return nil, errors.New(`empty segment ("//")`)
		}
		open, closing := strings.IndexByte(s, '{'), strings.IndexByte(s, '}')
		switch {
		case open < 0 && closing < 0:
			segs = append(segs, segment{staticSeg, s})
			continue
		case open < 0:
			return nil, fmt.Errorf(`segment %q: "}" without "{"`, s)
		case closing < 0:
			return nil, errors.New(`unclosed "{"`)
		case open != 0 || closing != len(s)-1:
			return nil, fmt.Errorf("segment %q mixes text and a parameter; a parameter must be a whole segment", s)
		}
		name, rest := strings.CutSuffix(s[1:len(s)-1], "...")
		switch {
		case name == "":
			return nil, fmt.Errorf("segment %q: empty parameter name", s)
		case !isIdentifier(name):
			return nil, fmt.Errorf("segment %q: parameter name %q is not a Go identifier", s, name)
		case slices.Contains(names, name):
			return nil, fmt.Errorf("duplicate parameter name %q", name)
		case rest && !last:
			return nil, fmt.Errorf("segment %q: a {name...} parameter must be the final segment", s)
		}
		names = append(names, name)
		kind := paramSeg
		if rest {
			kind = catchAllSeg
		}
		segs = append(segs, segment{kind, name})
	}
	return segs, nil
}

// parsePrefix splits a prefix into static segments; "/" has none.
func parsePrefix(p string) ([]segment, error) {
	switch {
	case !strings.HasPrefix(p, "/"):
		return nil, errors.New(`must start with "/"`)
	case strings.ContainsAny(p, "{}"):
		return nil, errors.New(`a prefix is plain text; use path with "{name...}" for a pattern`)
	case p == "/":
		return nil, nil
	case strings.Contains(p, "//"):
		return nil, errors.New(`empty segment ("//")`)
	case strings.HasSuffix(p, "/"):
		t := p[:len(p)-1]
		return nil, fmt.Errorf(`trailing "/" not allowed: write %q, it already matches %q`, t, t+"/...")
	}
	raw := strings.Split(p[1:], "/")
	segs := make([]segment, len(raw))
	for k, s := range raw {
		segs[k] = segment{staticSeg, s}
	}
	return segs, nil
}

// isIdentifier reports whether s is a Go identifier (keywords allowed).
func isIdentifier(s string) bool {
	for k, c := range s {
		if !unicode.IsLetter(c) && c != '_' && (k == 0 || !unicode.IsDigit(c)) {
			return false
		}
	}
	return s != ""
}
