package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one mistake in a configuration.
type Problem struct {
	// Path is the YAML path of the offending key, such as
	// "routes[2].filters[0].cors.allow_origins[1]" or `upstreams["my svc"].targets`;
	// empty when the problem is the document itself.
	Path string `json:"path"`
	// Line is the 1-based line of the key in the source file; 0 when unknown.
	Line int `json:"line,omitempty"`
	// Reason says what is wrong, on one line.
	Reason string `json:"reason"`
}

// String renders the problem as "path: reason", without source or line.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Reason
	}
	return p.Path + ": " + p.Reason
}

// Error is a configuration refused for one or more problems.
type Error struct {
	// Source names where the configuration came from (a file name); may be empty.
	Source string `json:"source,omitempty"`
	// Problems are sorted by path.
	Problems []Problem `json:"problems"`
}

// Error renders one problem per line: "source:line: path: reason".
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case e.Source != "" && p.Line > 0:
			fmt.Fprintf(&b, "%s:%d: ", e.Source, p.Line)
		case e.Source != "":
			b.WriteString(e.Source + ": ")
		case p.Line > 0:
			fmt.Fprintf(&b, "line %d: ", p.Line)
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects Problems; reasons are forced onto one line.
type problems []Problem

func (ps *problems) add(path string, line int, format string, args ...any) {
	reason := strings.ReplaceAll(fmt.Sprintf(format, args...), "\r", "")
	reason = strings.ReplaceAll(reason, "\n", " ")
	*ps = append(*ps, Problem{Path: path, Line: line, Reason: reason})
}

// sortProblems orders problems by path (list indexes compared as numbers),
// keeping the order of problems that share a path.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int { return comparePaths(a.Path, b.Path) })
}

// keyPath appends a mapping key to a path: `a.b` for plain names,
// `a["my key"]` for anything else.
func keyPath(parent, key string) string {
	if !isPlainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// indexPath appends a list index to a path.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// isPlainKey reports whether key can be written unquoted in a path: an
// identifier that may also hold '-' (header names such as X-Request-Id).
func isPlainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// pathSegment is one step of a path: a key or a list index. end is the
// length of the path prefix that ends with this segment.
type pathSegment struct {
	key   string
	index int
	isIdx bool
	end   int
}

// splitPath parses a path written by keyPath and indexPath.
func splitPath(p string) []pathSegment {
	var segs []pathSegment
	for i := 0; i < len(p); {
		switch {
		case strings.HasPrefix(p[i:], `["`):
			q, err := strconv.QuotedPrefix(p[i+1:])
			if err != nil || !strings.HasPrefix(p[i+1+len(q):], "]") {
				return append(segs, pathSegment{key: p[i:], end: len(p)})
			}
			key, _ := strconv.Unquote(q)
			i += 1 + len(q) + 1
			segs = append(segs, pathSegment{key: key, end: i})
		case p[i] == '[':
			j := strings.IndexByte(p[i:], ']')
			n, err := strconv.Atoi(p[i+1 : i+max(j, 1)])
			if j < 0 || err != nil {
				return append(segs, pathSegment{key: p[i:], end: len(p)})
			}
			i += j + 1
			segs = append(segs, pathSegment{index: n, isIdx: true, end: i})
		default:
			if p[i] == '.' {
				i++
			}
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			segs = append(segs, pathSegment{key: p[i:j], end: j})
			i = j
		}
	}
	return segs
}

// comparePaths orders paths segment by segment, list indexes numerically.
func comparePaths(a, b string) int {
	if a == b {
		return 0
	}
	sa, sb := splitPath(a), splitPath(b)
	for i := 0; i < len(sa) && i < len(sb); i++ {
		x, y := sa[i], sb[i]
		switch {
		case x.isIdx && y.isIdx:
			if c := x.index - y.index; c != 0 {
				return c
			}
		case x.isIdx != y.isIdx:
			if x.isIdx {
				return -1
			}
			return 1
		default:
			if c := strings.Compare(x.key, y.key); c != 0 {
				return c
			}
		}
	}
	return len(sa) - len(sb)
}

// related reports whether one path is the other or lies below it.
func related(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if a == "" || a == b {
		return true
	}
	return strings.HasPrefix(b, a) && (b[len(a)] == '.' || b[len(a)] == '[')
}
