package jsonbridge

import (
	"strconv"
	"strings"
)

// PathError is every error of this package: Path names the JSON value it
// is about, in JSONPath notation rooted at "$" ("$", "$.items[2].price",
// `$["a key"]`); Msg says what is wrong, naming the declared Java type and
// what was found.
type PathError struct {
	Path string
	Msg  string
	// Err is the cause when there is one to test for: the caller's
	// context's error when an encoding gave up at its deadline.
	Err error
}

// Error returns "path: message".
func (e *PathError) Error() string { return e.Path + ": " + e.Msg }

// Unwrap returns the cause, if any.
func (e *PathError) Unwrap() error { return e.Err }

// pathSeg is one step of a path: a member key or an array index.
type pathSeg struct {
	key     string
	index   int
	isIndex bool
}

// pathBuilder renders path segments in JSONPath notation.
type pathBuilder struct {
	b strings.Builder
}

func (p *pathBuilder) key(k string) {
	if p.b.Len() == 0 {
		p.b.WriteByte('$')
	}
	if isIdentifier(k) {
		p.b.WriteByte('.')
		p.b.WriteString(k)
		return
	}
	p.b.WriteByte('[')
	p.b.Write(appendString(nil, k))
	p.b.WriteByte(']')
}

func (p *pathBuilder) index(i int) {
	if p.b.Len() == 0 {
		p.b.WriteByte('$')
	}
	p.b.WriteByte('[')
	p.b.WriteString(strconv.Itoa(i))
	p.b.WriteByte(']')
}

func (p *pathBuilder) String() string {
	if p.b.Len() == 0 {
		return "$"
	}
	return p.b.String()
}

// renderPath turns a segment stack into a path string.
func renderPath(segs []pathSeg) string {
	var p pathBuilder
	for _, s := range segs {
		if s.isIndex {
			p.index(s.index)
		} else {
			p.key(s.key)
		}
	}
	return p.String()
}

// isIdentifier reports whether k can follow a dot in a path: a letter, '_'
// or '$', then letters, digits, '_' or '$' (ASCII only, so the path reads
// the same everywhere).
func isIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
