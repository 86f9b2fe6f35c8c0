package auth

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// field is one JSON field of a token's value the filter uses.
type field struct {
	name       string
	header     string // canonical request header to set; "" = none
	attachment string // Dubbo attachment name; "" = none
}

// identity is what a token's value says about its user, ready to apply.
// It is shared by every request carrying the same value: read-only.
type identity struct {
	userID      string
	headers     []headerValue
	attachments map[string]string // shared: read-only (exchange.Info.Attachments)
}

type headerValue struct {
	name   string
	values []string // one value, capacity 1: appending elsewhere copies
}

// fields is the compiled list of JSON fields; userID indexes the user id's.
type fields struct {
	list   []field
	userID int
}

// parse builds the identity in value, a flat JSON object, or returns nil
// when value is not a JSON object or has no non-empty string user id.
// Strings are taken unescaped; numbers, true and false as their JSON text;
// null, objects and arrays are skipped; of duplicate fields the last wins.
func (fs *fields) parse(value string) *identity {
	var buf [8]jsonValue
	var vals []jsonValue
	if len(fs.list) <= len(buf) {
		vals = buf[:len(fs.list)]
	} else {
		vals = make([]jsonValue, len(fs.list))
	}
	if !scanObject(value, fs.list, vals) {
		return nil
	}
	uid := vals[fs.userID]
	if !uid.isString || uid.text == "" || !validHeaderValue(uid.text) {
		return nil
	}
	id := &identity{userID: uid.text}
	for i, f := range fs.list {
		v := vals[i]
		if !v.present {
			continue
		}
		if f.header != "" && validHeaderValue(v.text) {
			id.headers = append(id.headers, headerValue{name: f.header, values: []string{v.text}[:1:1]})
		}
		if f.attachment != "" {
			if id.attachments == nil {
				id.attachments = make(map[string]string, len(fs.list))
			}
			id.attachments[f.attachment] = v.text
		}
	}
	return id
}

// jsonValue is a wanted field's value as found in the object.
type jsonValue struct {
	text     string
	present  bool // a string, number or boolean (not null, object or array)
	isString bool
}

// scanObject reads the JSON object s, recording the values of wanted
// fields in vals (parallel to wanted). It reports whether s is one valid
// JSON object and nothing else.
func scanObject(s string, wanted []field, vals []jsonValue) bool {
	p := scanner{s: s}
	p.space()
	if !p.consume('{') {
		return false
	}
	p.space()
	if p.consume('}') {
		return p.end()
	}
	for {
		p.space()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if !p.consume(':') {
			return false
		}
		p.space()
		idx := -1
		for i := range wanted {
			if wanted[i].name == key {
				idx = i
				break
			}
		}
		v, ok := p.value()
		if !ok {
			return false
		}
		if idx >= 0 {
			vals[idx] = v
		}
		p.space()
		if p.consume('}') {
			return p.end()
		}
		if !p.consume(',') {
			return false
		}
	}
}

// scanner reads JSON from s at i. Its methods report false on invalid JSON.
type scanner struct {
	s string
	i int
}

func (p *scanner) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) consume(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scanner) end() bool {
	p.space()
	return p.i == len(p.s)
}

// value reads any JSON value; nested ones are checked and skipped.
func (p *scanner) value() (jsonValue, bool) {
	if p.i >= len(p.s) {
		return jsonValue{}, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, ok := p.str()
		return jsonValue{text: s, present: true, isString: true}, ok
	case c == '{' || c == '[':
		return jsonValue{}, p.skipNested(0)
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", true)
	case c == 'n':
		return p.literal("null", false)
	default:
		start := p.i
		if !p.number() {
			return jsonValue{}, false
		}
		return jsonValue{text: p.s[start:p.i], present: true}, true
	}
}

func (p *scanner) literal(word string, present bool) (jsonValue, bool) {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return jsonValue{}, false
	}
	p.i += len(word)
	return jsonValue{text: word, present: present}, true
}

// maxDepth bounds nesting, so a hostile value cannot recurse deeply.
const maxDepth = 64

// skipNested skips an object or array at p.i.
func (p *scanner) skipNested(depth int) bool {
	if depth >= maxDepth {
		return false
	}
	closing := byte('}')
	if p.s[p.i] == '[' {
		closing = ']'
	}
	p.i++
	p.space()
	if p.consume(closing) {
		return true
	}
	for {
		p.space()
		if closing == '}' {
			if _, ok := p.str(); !ok {
				return false
			}
			p.space()
			if !p.consume(':') {
				return false
			}
			p.space()
		}
		if p.i >= len(p.s) {
			return false
		}
		if c := p.s[p.i]; c == '{' || c == '[' {
			if !p.skipNested(depth + 1) {
				return false
			}
		} else if _, ok := p.value(); !ok {
			return false
		}
		p.space()
		if p.consume(closing) {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *scanner) number() bool {
	p.consume('-')
	switch {
	case p.consume('0'):
	case p.digits() == 0:
		return false
	}
	if p.consume('.') && p.digits() == 0 {
		return false
	}
	if p.consume('e') || p.consume('E') {
		if !p.consume('+') {
			p.consume('-')
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

func (p *scanner) digits() int {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// str reads a JSON string at p.i and returns it unescaped; a string
// without escapes or invalid UTF-8 is returned without copying.
func (p *scanner) str() (string, bool) {
	if !p.consume('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c >= utf8.RuneSelf:
			return p.slowStr(start)
		case c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// slowStr finishes a string with escapes or non-ASCII bytes, the way
// encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
func (p *scanner) slowStr(start int) (string, bool) {
	var b strings.Builder
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r) // RuneError for an invalid byte
			p.i += size
		case c != '\\':
			b.WriteByte(c)
			p.i++
		default:
			p.i++
			if p.i >= len(p.s) {
				return "", false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					// A surrogate pair escaped as two \u is one rune;
					// anything else is U+FFFD, as in encoding/json.
					if strings.HasPrefix(p.s[p.i:], `\u`) {
						save := p.i
						p.i += 2
						if r2, ok := p.hex4(); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								b.WriteRune(dec)
								continue
							}
						}
						p.i = save
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
			default:
				return "", false
			}
		}
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape.
func (p *scanner) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// validHeaderValue reports whether v may be sent as an HTTP header value:
// no control characters other than tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// identityCache keeps parsed identities by token value (a value always
// parses the same way, so entries never go stale); beyond limit entries it
// starts over. entries and resets, when set, export its size and how often
// it started over (a cache that keeps starting over is too small for the
// tokens in use).
type identityCache struct {
	m       sync.Map // value → *identity, nil for a value that is no identity
	n       atomic.Int64
	limit   int64
	entries prometheus.Gauge
	resets  prometheus.Counter
}

func (c *identityCache) get(value string, parse func(string) *identity) *identity {
	if v, ok := c.m.Load(value); ok {
		return v.(*identity)
	}
	id := parse(value)
	n := c.n.Add(1)
	if n > c.limit {
		c.m.Clear()
		c.n.Store(1)
		n = 1
		if c.resets != nil {
			c.resets.Inc()
		}
	}
	c.m.Store(strings.Clone(value), id)
	if c.entries != nil {
		c.entries.Set(float64(n))
	}
	return id
}
