package jsonbridge

import (
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner turns JSON text into a tape: one token per value, key and
// container, in document order. Containers record where their subtree ends,
// so the encoder can look ahead (find a "class" key, count list elements)
// and skip values in constant time without scanning twice. Scalars are kept
// as offsets into the source: nothing is converted until a declared Java type
// says how.

type tokKind uint8

const (
	tokNull tokKind = iota + 1
	tokFalse
	tokTrue
	tokNumber
	tokString
	tokArray
	tokObject
)

// token is one entry of the tape.
type token struct {
	kind tokKind
	// slow marks a string holding escapes or invalid UTF-8: it must go
	// through unescape; other strings are used as slices of the source.
	slow bool
	// start and end delimit a number literal or the contents of a string
	// (without quotes); for containers, start is the offset of the bracket.
	start, end int32
	// count is the number of elements of an array or members of an object.
	count int32
	// next is the index of the first token after this value's subtree.
	next int32
}

// scanner builds a tape by recursive descent; recursion is bounded by maxDepth.
type scanner struct {
	src      string
	pos      int
	toks     []token
	maxDepth int
	depth    int
	// maxTokens bounds the tape (0: no bound).
	maxTokens int
	// open holds the tape index of each container being scanned, and
	// lastKey, while one of its values is being scanned, the tape index of
	// that member's key (objects) or 0 (arrays); -1 between values. A syntax
	// error names its JSON path from them.
	open    []int32
	lastKey []int32
}

// syntaxError is a malformed-JSON report before the path is known.
type syntaxError struct {
	offset int
	msg    string
}

// scan tokenizes src, which must hold exactly one JSON value (surrounded by
// optional whitespace). toks is reused.
func (s *scanner) scan(src string, toks []token) ([]token, error) {
	if len(src) > math.MaxInt32 {
		return toks, &PathError{Path: "$", Msg: "JSON text larger than 2 GiB"}
	}
	s.src, s.pos, s.toks, s.depth = src, 0, toks[:0], 0
	s.open, s.lastKey = s.open[:0], s.lastKey[:0]
	if err := s.value(); err != nil {
		return s.toks, s.pathError(err)
	}
	s.skipSpace()
	if s.pos < len(s.src) {
		return s.toks, s.pathError(s.errorf("unexpected %s after the JSON value", s.describeByte()))
	}
	return s.toks, nil
}

func (s *scanner) errorf(format string, args ...any) *syntaxError {
	return &syntaxError{offset: s.pos, msg: fmt.Sprintf(format, args...)}
}

// pathError names where the scan stopped: the open containers give the path.
func (s *scanner) pathError(e *syntaxError) *PathError {
	var p pathBuilder
	for i, c := range s.open {
		k := s.lastKey[i]
		if k < 0 {
			break // between members or elements: the container itself
		}
		if t := &s.toks[c]; t.kind == tokArray {
			p.index(int(t.count))
		} else {
			p.key(s.keyText(k))
		}
	}
	return &PathError{Path: p.String(), Msg: fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)}
}

// keyText returns the decoded text of the string token at i.
func (s *scanner) keyText(i int32) string {
	t := &s.toks[i]
	raw := s.src[t.start:t.end]
	if !t.slow {
		return raw
	}
	return string(unescape(nil, raw))
}

func (s *scanner) describeByte() string {
	if s.pos >= len(s.src) {
		return "end of input"
	}
	c := s.src[s.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("character %q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) value() *syntaxError {
	s.skipSpace()
	if s.maxTokens > 0 && len(s.toks) >= s.maxTokens {
		return s.errorf("more than %d JSON values", s.maxTokens)
	}
	if s.pos >= len(s.src) {
		return s.errorf("unexpected end of input, expected a value")
	}
	switch c := s.src[s.pos]; c {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		return s.string()
	case 't':
		return s.literal("true", tokTrue)
	case 'f':
		return s.literal("false", tokFalse)
	case 'n':
		return s.literal("null", tokNull)
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return s.number()
		}
		return s.errorf("unexpected %s, expected a value", s.describeByte())
	}
}

func (s *scanner) push(t token) int32 {
	s.toks = append(s.toks, t)
	return int32(len(s.toks) - 1)
}

func (s *scanner) literal(word string, kind tokKind) *syntaxError {
	if len(s.src)-s.pos < len(word) || s.src[s.pos:s.pos+len(word)] != word {
		return s.errorf("invalid literal, expected %s", word)
	}
	i := s.push(token{kind: kind, start: int32(s.pos), end: int32(s.pos + len(word))})
	s.toks[i].next = i + 1
	s.pos += len(word)
	return nil
}

func (s *scanner) enter() *syntaxError {
	s.depth++
	if s.depth > s.maxDepth {
		return s.errorf("nesting deeper than %d", s.maxDepth)
	}
	return nil
}

func (s *scanner) array() *syntaxError {
	if err := s.enter(); err != nil {
		return err
	}
	at := s.push(token{kind: tokArray, start: int32(s.pos)})
	s.open = append(s.open, at)
	s.lastKey = append(s.lastKey, -1)
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == ']' {
		s.pos++
	} else {
		top := len(s.lastKey) - 1
		for {
			s.lastKey[top] = 0
			if err := s.value(); err != nil {
				return err
			}
			s.lastKey[top] = -1
			s.toks[at].count++
			done, err := s.separator(']')
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	s.close(at)
	return nil
}

func (s *scanner) object() *syntaxError {
	if err := s.enter(); err != nil {
		return err
	}
	at := s.push(token{kind: tokObject, start: int32(s.pos)})
	s.open = append(s.open, at)
	s.lastKey = append(s.lastKey, -1)
	top := len(s.lastKey) - 1
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == '}' {
		s.pos++
	} else {
		for {
			s.skipSpace()
			if s.pos >= len(s.src) || s.src[s.pos] != '"' {
				return s.errorf("unexpected %s, expected a string key", s.describeByte())
			}
			if err := s.string(); err != nil {
				return err
			}
			s.lastKey[top] = int32(len(s.toks) - 1)
			s.skipSpace()
			if s.pos >= len(s.src) || s.src[s.pos] != ':' {
				return s.errorf("unexpected %s, expected ':' after object key", s.describeByte())
			}
			s.pos++
			if err := s.value(); err != nil {
				return err
			}
			s.lastKey[top] = -1
			s.toks[at].count++
			done, err := s.separator('}')
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	s.close(at)
	return nil
}

// separator reads what follows an element of an array or object: ','
// (another element comes) or end, which closes it (done).
func (s *scanner) separator(end byte) (done bool, err *syntaxError) {
	s.skipSpace()
	if s.pos < len(s.src) {
		switch s.src[s.pos] {
		case end:
			s.pos++
			return true, nil
		case ',':
			s.pos++
			return false, nil
		}
	}
	return false, s.separatorError(end)
}

// separatorError is separator's refusal, out of line so that separator
// inlines.
func (s *scanner) separatorError(end byte) *syntaxError {
	if s.pos >= len(s.src) {
		return s.errorf("unexpected end of input, expected ',' or '%c'", end)
	}
	return s.errorf("unexpected %s, expected ',' or '%c'", s.describeByte(), end)
}

// close ends the array or object token at, the innermost one open.
func (s *scanner) close(at int32) {
	s.toks[at].next = int32(len(s.toks))
	s.open = s.open[:len(s.open)-1]
	s.lastKey = s.lastKey[:len(s.lastKey)-1]
	s.depth--
}

// string scans a string token; s.pos is at the opening quote.
func (s *scanner) string() *syntaxError {
	start := s.pos + 1
	slow := false
	i := start
	src := s.src
	for {
		// The common case: a run of plain ASCII.
		for i < len(src) && plainASCII[src[i]] {
			i++
		}
		if i >= len(src) {
			s.pos = i
			return s.errorf("unexpected end of input in string")
		}
		c := src[i]
		switch {
		case c == '"':
			t := s.push(token{kind: tokString, slow: slow, start: int32(start), end: int32(i)})
			s.toks[t].next = t + 1
			s.pos = i + 1
			return nil
		case c == '\\':
			slow = true
			if i+1 >= len(src) {
				s.pos = i
				return s.errorf("unexpected end of input in string escape")
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(src) || !isHex4(src[i+2:i+6]) {
					s.pos = i
					return s.errorf(`invalid \u escape in string`)
				}
				i += 6
			default:
				s.pos = i
				return s.errorf("invalid escape in string")
			}
		case c < 0x20:
			s.pos = i
			return s.errorf("control character 0x%02x in string (must be escaped)", c)
		default: // c >= 0x80
			r, size := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && size == 1 {
				slow = true // invalid UTF-8 becomes U+FFFD
			}
			i += size
		}
	}
}

// plainASCII reports the bytes a string can hold verbatim: printable ASCII
// other than the quote and the backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		if hexValue(s[i]) < 0 {
			return false
		}
	}
	return true
}

func hexValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// number scans a number with JSON's grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (s *scanner) number() *syntaxError {
	end, ok := numberEnd(s.src, s.pos)
	if !ok {
		s.pos = end
		return s.errorf("invalid number")
	}
	t := s.push(token{kind: tokNumber, start: int32(s.pos), end: int32(end)})
	s.toks[t].next = t + 1
	s.pos = end
	return nil
}

// numberEnd returns where the JSON number starting at src[i] ends, and
// whether it is well formed; on failure the offset is where it went wrong.
func numberEnd(src string, i int) (int, bool) {
	if i < len(src) && src[i] == '-' {
		i++
	}
	if i >= len(src) {
		return i, false
	}
	switch c := src[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || !isDigit(src[i]) {
			return i, false
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || !isDigit(src[i]) {
			return i, false
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	return i, true
}

// isNumber reports whether s is exactly one JSON number literal.
func isNumber(s string) bool {
	end, ok := numberEnd(s, 0)
	return ok && end == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// unescape appends the decoded contents of a scanned JSON string (without
// quotes) to dst. Invalid UTF-8 and unpaired surrogates become U+FFFD.
func unescape(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' {
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := rune(hex4(s[i+2 : i+6]))
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2 = utf16.DecodeRune(r, rune(hex4(s[i+2:i+6])))
					}
					if r2 != utf8.RuneError {
						i += 6
						r = r2
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, s[i+1])
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

func hex4(s string) int {
	return hexValue(s[0])<<12 | hexValue(s[1])<<8 | hexValue(s[2])<<4 | hexValue(s[3])
}
