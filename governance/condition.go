package governance

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/cluster"
)

// Bounds of a condition, so that parsing and evaluation stay linear and
// small whatever a rule node holds.
const (
	// MaxConditionLen bounds the text of one condition.
	MaxConditionLen = 4096
	// MaxArgument is the highest argument index a condition may read.
	MaxArgument = 255
)

// source says where a match's key reads its value.
type source uint8

const (
	srcParam      source = iota // a URL parameter (the consumer's on the when side, the provider's on the then side)
	srcMethod                   // when: the method called
	srcArgument                 // when: arguments[N]
	srcAttachment               // when: attachments[key]
	srcHost                     // then: the provider's host
	srcPort                     // then: the provider's port
	srcAddress                  // then: host:port
	srcProtocol                 // then: dubbo or tri
)

// match is one key of a condition side, with its values.
type match struct {
	key        string // the key as written (without consumer./provider.)
	src        source
	name       string // srcParam: the parameter; srcAttachment: the attachment
	arg        int    // srcArgument
	values     []string
	mismatches []string
}

// Condition is one compiled "when => then" condition.
type Condition struct {
	text  string
	when  []match // empty: every request
	then  []match
	block bool // an empty then side: the requests matched get no provider
	// dynamic says the when side reads arguments or attachments: it is
	// evaluated at every call rather than once per method.
	dynamic bool
}

// String returns the condition as written.
func (c *Condition) String() string { return c.text }

// ParseCondition compiles one condition.
func ParseCondition(text string) (*Condition, error) {
	if len(text) > MaxConditionLen {
		return nil, fmt.Errorf("longer than %d bytes", MaxConditionLen)
	}
	c := &Condition{text: text}
	whenText, thenText := "", text
	if i := strings.Index(text, "=>"); i >= 0 {
		whenText, thenText = text[:i], text[i+2:]
	}
	whenText, thenText = strings.TrimSpace(whenText), strings.TrimSpace(thenText)
	var err error
	if whenText != "" && whenText != "true" {
		if c.when, err = parseSide(whenText, true); err != nil {
			return nil, fmt.Errorf("when side %q: %w", whenText, err)
		}
	}
	if thenText == "" || thenText == "false" {
		c.block = true
	} else if c.then, err = parseSide(thenText, false); err != nil {
		return nil, fmt.Errorf("then side %q: %w", thenText, err)
	}
	for i := range c.when {
		if s := c.when[i].src; s == srcArgument || s == srcAttachment {
			c.dynamic = true
		}
	}
	return c, nil
}

// token is one separator and the value after it.
type token struct {
	sep, value string
	at         int // byte offset of the separator
}

// isSep reports the separator characters of Dubbo's pattern.
func isSep(c byte) bool { return c == '&' || c == '!' || c == '=' || c == ',' }

// isBlank reports the blanks of the pattern's \s as dubbo-go compiles it
// (RE2: [\t\n\f\r ]). A vertical tab is part of a value there, as the
// fuzzer found; Java's \s would also skip it.
func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// tokens splits a side as Dubbo's pattern ([&!=,]*)\s*([^&!=,\s]+) does,
// in one pass, refusing what the pattern would skip.
func tokens(s string) ([]token, error) {
	var out []token
	i := 0
	for {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		at := i
		for i < len(s) && isSep(s[i]) {
			i++
		}
		sep := s[at:i]
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		start := i
		for i < len(s) && !isSep(s[i]) && !isBlank(s[i]) {
			i++
		}
		if start == i {
			if i == len(s) {
				return nil, fmt.Errorf("%q at offset %d has no value after it", sep, at)
			}
			return nil, fmt.Errorf("%q at offset %d is followed by %q, not a value", sep, at, s[i:i+1])
		}
		out = append(out, token{sep: sep, value: s[start:i], at: at})
	}
}

// parseSide compiles one side of a condition.
func parseSide(s string, when bool) ([]match, error) {
	toks, err := tokens(s)
	if err != nil {
		return nil, err
	}
	var out []match
	cur := -1          // the match being filled
	var last *[]string // the value list the last value went to
	for n, t := range toks {
		switch t.sep {
		case "":
			if n > 0 {
				return nil, fmt.Errorf("%q at offset %d follows a value without & = != or , between them", t.value, t.at)
			}
			fallthrough
		case "&":
			if cur >= 0 && len(out[cur].values)+len(out[cur].mismatches) == 0 {
				return nil, fmt.Errorf("key %q has no value", out[cur].key)
			}
			key := strings.TrimPrefix(strings.TrimPrefix(t.value, "consumer."), "provider.")
			cur = -1
			for i := range out {
				if out[i].key == key {
					cur = i // a key repeated: adds to the same match
				}
			}
			if cur < 0 {
				m, err := newMatch(key, when)
				if err != nil {
					return nil, err
				}
				out = append(out, m)
				cur = len(out) - 1
			}
			last = nil
		case "=", "!=":
			if cur < 0 {
				return nil, fmt.Errorf("%q at offset %d has no key before it", t.sep, t.at)
			}
			if err := checkValue(t.value, when); err != nil {
				return nil, err
			}
			if t.sep == "=" {
				last = &out[cur].values
			} else {
				last = &out[cur].mismatches
			}
			*last = append(*last, t.value)
		case ",":
			if last == nil {
				return nil, fmt.Errorf("\",\" at offset %d does not follow a value", t.at)
			}
			if err := checkValue(t.value, when); err != nil {
				return nil, err
			}
			*last = append(*last, t.value)
		default:
			return nil, fmt.Errorf("%q at offset %d is not & = != or ,", t.sep, t.at)
		}
	}
	if cur >= 0 && len(out[cur].values)+len(out[cur].mismatches) == 0 {
		return nil, fmt.Errorf("key %q has no value", out[cur].key)
	}
	return out, nil
}

func checkValue(v string, when bool) error {
	if strings.Contains(v, "~") {
		return fmt.Errorf("value %q: range values (a~b) are not supported", v)
	}
	return nil
}

// newMatch makes the match of key on one side.
func newMatch(key string, when bool) (match, error) {
	m := match{key: key, src: srcParam, name: key}
	if when {
		switch {
		case key == "method" || key == "methods":
			m.src = srcMethod
		case strings.HasPrefix(key, "arguments[") && strings.HasSuffix(key, "]"):
			n, err := strconv.Atoi(key[len("arguments[") : len(key)-1])
			if err != nil || n < 0 || n > MaxArgument {
				return m, fmt.Errorf("key %q: want arguments[N], N from 0 to %d", key, MaxArgument)
			}
			m.src, m.arg = srcArgument, n
		case strings.HasPrefix(key, "attachments[") && strings.HasSuffix(key, "]"):
			name := key[len("attachments[") : len(key)-1]
			if name == "" {
				return m, fmt.Errorf("key %q names no attachment", key)
			}
			m.src, m.name = srcAttachment, name
		case strings.ContainsAny(key, "[]"):
			return m, fmt.Errorf("key %q: only arguments[N] and attachments[key] take brackets", key)
		}
		return m, nil
	}
	m.src = providerSource(key)
	return m, nil
}

// providerSource is where a then side's (or a tag match's) key is read
// from a provider: its host, port, address or protocol, else its URL
// parameter of that name.
func providerSource(key string) source {
	switch key {
	case "host":
		return srcHost
	case "port":
		return srcPort
	case "address":
		return srcAddress
	case "protocol":
		return srcProtocol
	}
	return srcParam
}

// Consumer is the gateway as a Dubbo consumer of one service: what the
// when side of a condition reads besides the request, what "$name" values
// of the then side name, and what configurators for consumers address.
type Consumer struct {
	Application, Host         string
	Interface, Version, Group string
}

// param returns the consumer's parameter name.
func (c *Consumer) param(name string) (string, bool) {
	switch name {
	case "application":
		return c.Application, c.Application != ""
	case "host":
		return c.Host, c.Host != ""
	case "interface", "path":
		return c.Interface, true
	case "version":
		return c.Version, c.Version != ""
	case "group":
		return c.Group, c.Group != ""
	case "side":
		return "consumer", true
	}
	return "", false
}

// Request is what the when side of a condition and a tag router read of one call.
type Request struct {
	Method string
	// Tag is the request's tag (attachment dubbo.tag), "" for none.
	Tag string
	// Args renders the call's arguments; nil: none can be read.
	Args Arguments
	// Attachments are the attachments the gateway sends.
	Attachments map[string]string
}

// Arguments renders a call's arguments as Java's String.valueOf would
// (strings and numbers; false for another type or no such argument).
type Arguments interface {
	Argument(i int) (string, bool)
}

// value is the value the when-side match m reads of req and c.
func (m *match) whenValue(c *Consumer, req *Request) (string, bool) {
	switch m.src {
	case srcMethod:
		return req.Method, true
	case srcArgument:
		if req.Args == nil {
			return "", false
		}
		return req.Args.Argument(m.arg)
	case srcAttachment:
		v, ok := req.Attachments[m.name]
		return v, ok
	}
	return c.param(m.name)
}

// thenValue is the value the then-side match m reads of provider p.
func (m *match) thenValue(p *cluster.Provider) (string, bool) {
	switch m.src {
	case srcHost:
		h, _ := splitAddr(p.Addr)
		return h, true
	case srcPort:
		_, port := splitAddr(p.Addr)
		return port, port != ""
	case srcAddress:
		return p.Addr, true
	case srcProtocol:
		return p.Protocol.String(), true
	}
	return p.Params.Lookup(m.name)
}

// splitAddr splits host:port ([v6]:port) without allocating.
func splitAddr(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, ""
	}
	host, port = addr[:i], addr[i+1:]
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	return host, port
}

// holds reports whether value (found: present) satisfies m's values.
// resolve, when set, gives "$name" values their meaning.
func (m *match) holds(value string, found bool, resolve *Consumer) bool {
	if !found {
		return false
	}
	anyOf := func(patterns []string) bool {
		for _, p := range patterns {
			if resolve != nil && strings.HasPrefix(p, "$") {
				p, _ = resolve.param(p[1:])
			}
			if globMatch(p, value) {
				return true
			}
		}
		return false
	}
	switch {
	case len(m.values) > 0 && len(m.mismatches) == 0:
		return anyOf(m.values)
	case len(m.mismatches) > 0 && len(m.values) == 0:
		return !anyOf(m.mismatches)
	case len(m.values) > 0:
		return !anyOf(m.mismatches) && anyOf(m.values)
	}
	return false
}

// globMatch is Dubbo's UrlUtils.isMatchGlobPattern without "$": "*"
// matches anything; otherwise the last "*" splits a prefix and a suffix.
func globMatch(pattern, value string) bool {
	if pattern == "*" {
		return true
	}
	if pattern == "" || value == "" {
		return pattern == value
	}
	i := strings.LastIndexByte(pattern, '*')
	switch {
	case i < 0:
		return value == pattern
	case i == len(pattern)-1:
		return strings.HasPrefix(value, pattern[:i])
	case i == 0:
		return strings.HasSuffix(value, pattern[1:])
	}
	return strings.HasPrefix(value, pattern[:i]) && strings.HasSuffix(value, pattern[i+1:])
}

// matchesWhen reports whether the when side matches the request.
func (c *Condition) matchesWhen(cons *Consumer, req *Request) bool {
	for i := range c.when {
		m := &c.when[i]
		v, ok := m.whenValue(cons, req)
		if !m.holds(v, ok, nil) {
			return false
		}
	}
	return true
}

// matchesThen reports whether provider p satisfies the then side.
func (c *Condition) matchesThen(cons *Consumer, p *cluster.Provider) bool {
	if c.block {
		return false
	}
	for i := range c.then {
		m := &c.then[i]
		v, ok := m.thenValue(p)
		if !m.holds(v, ok, cons) {
			return false
		}
	}
	return true
}
