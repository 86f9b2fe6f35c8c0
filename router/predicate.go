package router

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Source is the part of a request a Predicate reads.
type Source uint8

// Sources of a Predicate.
const (
	Header Source = iota + 1 // a request header, by its canonical name
	Query                    // a query parameter, by its decoded name
	Cookie                   // a cookie, by its name
)

// String returns the source's config key.
func (s Source) String() string {
	switch s {
	case Header:
		return "header"
	case Query:
		return "query"
	case Cookie:
		return "cookie"
	}
	return "Source(?)"
}

// Op is how a Predicate compares the value it reads.
type Op uint8

// Comparisons of a Predicate.
const (
	Exact   Op = iota + 1 // the value is Value
	Prefix                // the value starts with Value
	Regex                 // the whole value matches the RE2 pattern Value
	Present               // the request has the header, parameter or cookie, whatever its value
)

// String returns the comparison's config key.
func (o Op) String() string {
	switch o {
	case Exact:
		return "exact"
	case Prefix:
		return "prefix"
	case Regex:
		return "regex"
	case Present:
		return "present"
	}
	return "Op(?)"
}

// Predicate is one condition of a route on its requests.
type Predicate struct {
	In    Source
	Name  string
	Op    Op
	Value string // the text of Exact and Prefix, the pattern of Regex; unused by Present
}

// Bounds of predicates: they are compiled once, but every request a route
// could serve may evaluate them.
const (
	// MaxPredicates is the most predicates one route may have.
	MaxPredicates = 16
	// MaxPredicateValue is the longest text or pattern of a predicate.
	MaxPredicateValue = 256
	// MaxPredicateName is the longest name a predicate reads.
	MaxPredicateName = 256
)

// Request is the part of a request predicates read. The zero value has no
// headers, query or cookies.
type Request struct {
	// Header are the request's headers, with canonical keys, as net/http
	// gives them.
	Header http.Header
	// RawQuery is the URL's encoded query, without "?".
	RawQuery string

	// The last cookie looked up: the routes of one slot usually test the
	// same cookie, and the Cookie headers are scanned once for it.
	cookieName, cookieValue string
	cookieFound, cookieDone bool
}

// predicate is a compiled Predicate.
type predicate struct {
	Predicate
	re *regexp.Regexp // Regex: the anchored pattern
}

// compilePredicates checks and compiles a route's predicates, and returns
// the key that is equal for two routes exactly when their predicate sets
// are equivalent.
func compilePredicates(ps []Predicate) ([]predicate, string, error) {
	if len(ps) > MaxPredicates {
		return nil, "", fmt.Errorf("%d predicates: at most %d", len(ps), MaxPredicates)
	}
	out := make([]predicate, len(ps))
	keys := make([]string, len(ps))
	for i, p := range ps {
		c, err := compilePredicate(p)
		if err != nil {
			return nil, "", fmt.Errorf("%s %q: %w", p.In, p.Name, err)
		}
		for _, q := range out[:i] {
			if q.In == c.In && q.Name == c.Name {
				return nil, "", fmt.Errorf("%s %q is tested twice: one predicate per name", p.In, c.Name)
			}
		}
		out[i] = c
		keys[i] = fmt.Sprintf("%d\x00%s\x00%d\x00%s", c.In, c.Name, c.Op, c.Value)
	}
	slices.Sort(keys)
	return out, strings.Join(keys, "\x01"), nil
}

// CheckPredicate says why New would refuse a predicate, or nil.
func CheckPredicate(p Predicate) error {
	_, err := compilePredicate(p)
	return err
}

func compilePredicate(p Predicate) (predicate, error) {
	c := predicate{Predicate: p}
	switch p.In {
	case Header:
		if !httpguts.ValidHeaderFieldName(p.Name) {
			return c, errors.New("not a header name")
		}
		c.Name = http.CanonicalHeaderKey(p.Name)
		switch c.Name {
		case "Host":
			return c, errors.New("the host is matched by host")
		case "Cookie":
			return c, errors.New("test a cookie by its name under cookies")
		}
	case Query:
		if p.Name == "" {
			return c, errors.New("empty parameter name")
		}
	case Cookie:
		if !httpguts.ValidHeaderFieldName(p.Name) { // a cookie name is a token (RFC 6265)
			return c, errors.New("not a cookie name")
		}
	default:
		return c, errors.New("unknown source")
	}
	if len(p.Name) > MaxPredicateName {
		return c, fmt.Errorf("name longer than %d bytes", MaxPredicateName)
	}
	if len(p.Value) > MaxPredicateValue {
		return c, fmt.Errorf("%s longer than %d bytes", p.Op, MaxPredicateValue)
	}
	switch p.Op {
	case Exact:
	case Prefix:
		if p.Value == "" {
			return c, errors.New("an empty prefix matches every value: use present")
		}
	case Regex:
		// The pattern must stand alone: "a)|(b" would otherwise close the
		// anchoring group and match "xb".
		if _, err := regexp.Compile(p.Value); err != nil {
			return c, err
		}
		re, err := regexp.Compile(`^(?:` + p.Value + `)$`)
		if err != nil {
			return c, err
		}
		c.re = re
	case Present:
		if p.Value != "" {
			return c, errors.New("present takes no value")
		}
	default:
		return c, errors.New("say how to compare: exact, prefix, regex or present")
	}
	return c, nil
}

// holds reports whether the predicate holds for req.
func (p *predicate) holds(req *Request) bool {
	var v string
	var ok bool
	switch p.In {
	case Header:
		// The first value, as Header.Get: repeated headers are not joined.
		if vs := req.Header[p.Name]; len(vs) > 0 {
			v, ok = vs[0], true
		}
	case Query:
		v, ok = queryValue(req.RawQuery, p.Name)
	case Cookie:
		v, ok = req.cookie(p.Name)
	}
	if !ok {
		return false
	}
	switch p.Op {
	case Exact:
		return v == p.Value
	case Prefix:
		return strings.HasPrefix(v, p.Value)
	case Regex:
		return p.re.MatchString(v)
	}
	return true // Present
}

// holdAll reports whether every predicate of ps holds for req.
func holdAll(ps []predicate, req *Request) bool {
	for i := range ps {
		if !ps[i].holds(req) {
			return false
		}
	}
	return true
}

// queryValue is url.ParseQuery(raw).Get(name) without the map: the value
// of the first well-formed pair whose decoded key is name. It allocates
// only to decode an escaped key or value.
func queryValue(raw, name string) (string, bool) {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.IndexByte(pair, ';') >= 0 { // as url.ParseQuery: skipped
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k, ok := unescapeQuery(k); !ok || k != name {
			continue
		}
		if v, ok := unescapeQuery(v); ok {
			return v, true
		}
	}
	return "", false
}

func unescapeQuery(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s, true
	}
	u, err := url.QueryUnescape(s)
	return u, err == nil
}

// cookie is (&http.Request{Header: req.Header}).Cookie(name) without its
// allocations: the value of the first well-formed cookie called name in
// the Cookie headers, its double quotes removed. One scan of the headers,
// linear in their length, per name looked up; the last answer is kept.
func (req *Request) cookie(name string) (string, bool) {
	if req.cookieDone && req.cookieName == name {
		return req.cookieValue, req.cookieFound
	}
	v, ok := scanCookies(req.Header["Cookie"], name)
	req.cookieName, req.cookieValue, req.cookieFound, req.cookieDone = name, v, ok, true
	return v, ok
}

func scanCookies(lines []string, name string) (string, bool) {
	for _, line := range lines {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			k, v, _ := strings.Cut(trimOWS(part), "=")
			if trimOWS(k) != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if validCookieValue(v) {
				return v, true
			}
		}
	}
	return "", false
}

// validCookieValue is net/http's test of a cookie value's bytes.
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return false
		}
	}
	return true
}

// trimOWS removes spaces and tabs at both ends, as textproto.TrimString
// (which also removes CR and LF, never found in a header value).
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r' || s[0] == '\n') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t' || s[len(s)-1] == '\r' || s[len(s)-1] == '\n') {
		s = s[:len(s)-1]
	}
	return s
}
