package registry

import (
	"cmp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/dubbogw/dubbogw/cluster"
)

// This file reads the JSON documents of application-level discovery in
// their usual shape (instances and metadata as Java Dubbo and dubbo-go
// write them: names and values strings or null, ports numbers or
// strings) in one pass over the bytes, without reflection: a churn of
// instances re-reads one instance per change and the metadata of each
// new revision, and encoding/json made most of that work. Anything
// unusual (another type where a string is wanted, a field named in
// another case or twice, an escaped surrogate, invalid UTF-8, trailing
// data, any malformed JSON) makes the reader give up, and the caller
// parses the document again on the precise path (encoding/json, level by
// level), which converts what is unusual or names what is wrong. So a
// document this reader takes gives the same result as the precise path,
// which FuzzAppdiscOnePass checks.

// jsonScan reads one JSON document. Each method reports false when the
// input is not what it reads; the scan is then abandoned.
type jsonScan struct {
	data []byte
	pos  int
}

// jsonMaxDepth bounds the nesting of values skipped, so that a hostile
// document costs no deep recursion (the precise path has its own bound).
const jsonMaxDepth = 64

// ws skips whitespace.
func (s *jsonScan) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, 0 at the end.
func (s *jsonScan) peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// literal reads word (null, true, false), whitespace before it skipped.
func (s *jsonScan) literal(word string) bool {
	s.ws()
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return false
	}
	s.pos += len(word)
	return true
}

// null reads null if it comes next.
func (s *jsonScan) null() bool {
	return s.peek() == 'n' && s.literal("null")
}

// end reports whether only whitespace is left.
func (s *jsonScan) end() bool {
	s.ws()
	return s.pos == len(s.data)
}

// str reads a string, decoding its escapes.
func (s *jsonScan) str() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	s.pos++
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			v := string(s.data[start:s.pos])
			s.pos++
			return v, true
		case c == '\\':
			return s.strEscaped(start)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n == 1 {
				return "", false // encoding/json would replace it: the precise path does
			}
			s.pos += n
		}
	}
	return "", false
}

// strEscaped goes on reading a string, whose text from start has no
// escape up to s.pos, where one starts.
func (s *jsonScan) strEscaped(start int) (string, bool) {
	buf := make([]byte, 0, s.pos-start+16)
	buf = append(buf, s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(buf), true
		case c == '\\':
			if s.pos+1 >= len(s.data) {
				return "", false
			}
			e := s.data[s.pos+1]
			s.pos += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if len(s.data)-s.pos < 4 {
					return "", false
				}
				r, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 16)
				if err != nil || r >= 0xD800 && r < 0xE000 {
					return "", false // a surrogate: the precise path pairs or replaces it
				}
				s.pos += 4
				buf = utf8.AppendRune(buf, rune(r))
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n == 1 {
				return "", false
			}
			buf = append(buf, s.data[s.pos:s.pos+n]...)
			s.pos += n
		}
	}
	return "", false
}

// strOrNull reads a string or null ("" then).
func (s *jsonScan) strOrNull() (v string, null, ok bool) {
	if s.null() {
		return "", true, true
	}
	v, ok = s.str()
	return v, false, ok
}

// object reads an object, calling member with each key; member reads the
// value. An empty key list is fine.
func (s *jsonScan) object(member func(key string) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.pos++
	if s.peek() == '}' {
		s.pos++
		return true
	}
	for {
		key, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.pos++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// fields reads an object whose known keys names lists (no more than 16),
// calling member with each known key's index; other keys' values are
// skipped. A known key given twice, or a key that differs from a known
// one only in case (encoding/json would take it for that field), ends
// the scan: the precise path decides.
func (s *jsonScan) fields(names []string, member func(i int) bool) bool {
	var seen uint16
	return s.object(func(key string) bool {
		for i, name := range names {
			if key == name {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return member(i)
			}
			if jsonFoldsTo(key, name) {
				return false
			}
		}
		return s.skip(0)
	})
}

// jsonFoldsTo reports whether key could match name (lower-case ASCII)
// without case: ASCII letters in either case, and any non-ASCII byte
// (some Unicode letters fold to ASCII ones, as K to k).
func jsonFoldsTo(key, name string) bool {
	if len(key) < len(name) {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return true
		}
	}
	if len(key) != len(name) {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// strings reads an object of strings or nulls into a map (a null leaves
// the key out, as a later null for a key given twice does); null reads
// as an empty map.
func (s *jsonScan) strings() (map[string]string, bool) {
	m := map[string]string{}
	if s.null() {
		return m, true
	}
	ok := s.object(func(key string) bool {
		v, null, ok := s.strOrNull()
		if null {
			delete(m, key)
		} else {
			m[key] = v
		}
		return ok
	})
	return m, ok
}

// port reads a port written as a number or a string (appdiscPort), null
// or "" being 0; false for anything appdiscPort would refuse.
func (s *jsonScan) port() (int, bool) {
	var text string
	switch c := s.peek(); {
	case c == 'n':
		return 0, s.null()
	case c == '"':
		v, ok := s.str()
		if !ok || v == "" {
			return 0, ok
		}
		text = v
	case c == '-' || '0' <= c && c <= '9':
		start := s.pos
		if !s.number() {
			return 0, false
		}
		text = string(s.data[start:s.pos])
	default:
		return 0, false
	}
	n, err := appdiscPortText(text)
	return n, err == nil
}

// number reads a JSON number.
func (s *jsonScan) number() bool {
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return false
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return false
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	s.pos = i
	return true
}

// skip reads any value, checking it is well formed.
func (s *jsonScan) skip(depth int) bool {
	switch c := s.peek(); {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{':
		if depth >= jsonMaxDepth {
			return false
		}
		return s.object(func(string) bool { return s.skip(depth + 1) })
	case c == '[':
		if depth >= jsonMaxDepth {
			return false
		}
		return s.array(func() bool { return s.skip(depth + 1) })
	case c == 'n':
		return s.literal("null")
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// array reads a list, calling elem to read each element.
func (s *jsonScan) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// Fields of the documents read in one pass.
var (
	scanInstanceFields = []string{"name", "id", "address", "port", "payload"}
	scanPayloadFields  = []string{"metadata"}
	scanMetadataFields = []string{"app", "revision", "services"}
	scanServiceFields  = []string{"name", "group", "version", "protocol", "port", "path", "params"}
	scanEndpointFields = []string{"port", "protocol"}
)

// scanInstance reads an instance node's data in one pass: name, id,
// address and port, and payload.metadata (see ParseInstance). It does
// not check what it read (parseInstance does).
func scanInstance(data []byte) (in *Instance, port int, ok bool) {
	s := &jsonScan{data: data}
	in = &Instance{}
	var metadata map[string]string
	ok = s.fields(scanInstanceFields, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			in.App, _, ok = s.strOrNull()
		case 1:
			in.ID, _, ok = s.strOrNull()
		case 2:
			in.Host, _, ok = s.strOrNull()
		case 3:
			port, ok = s.port()
		case 4:
			if s.null() {
				return true
			}
			ok = s.fields(scanPayloadFields, func(int) bool {
				var ok bool
				metadata, ok = s.strings()
				return ok
			})
		}
		return ok
	}) && s.end()
	if !ok {
		return nil, 0, false
	}
	if metadata == nil {
		metadata = map[string]string{}
	}
	in.Metadata = metadata
	return in, port, true
}

// scanMetadata reads a MetadataInfo document in one pass (see
// parseMetadataStrings, which takes what it returns).
func scanMetadata(data []byte) (*MetadataInfo, bool) {
	s := &jsonScan{data: data}
	m := &MetadataInfo{}
	var services map[string]*ServiceInfo
	ok := s.fields(scanMetadataFields, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			m.App, _, ok = s.strOrNull()
		case 1:
			m.Revision, _, ok = s.strOrNull()
		case 2:
			services = map[string]*ServiceInfo{}
			if s.null() {
				return true
			}
			ok = s.object(func(key string) bool {
				if s.null() {
					delete(services, key)
					return true
				}
				svc, ok := s.service()
				services[key] = svc
				return ok
			})
		}
		return ok
	}) && s.end()
	if !ok {
		return nil, false
	}
	if services == nil {
		services = map[string]*ServiceInfo{}
	}
	m.Services = services
	return m, true
}

// service reads one service of a MetadataInfo.
func (s *jsonScan) service() (*ServiceInfo, bool) {
	svc := &ServiceInfo{}
	var params []cluster.Pair
	ok := s.fields(scanServiceFields, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			svc.Name, _, ok = s.strOrNull()
		case 1:
			svc.Group, _, ok = s.strOrNull()
		case 2:
			svc.Version, _, ok = s.strOrNull()
		case 3:
			svc.Protocol, _, ok = s.strOrNull()
		case 4:
			svc.Port, ok = s.port()
		case 5:
			svc.Path, _, ok = s.strOrNull()
		case 6:
			params, ok = s.pairs()
		}
		return ok
	})
	svc.Params = cluster.NewParamsSorted(params)
	return svc, ok
}

// pairs reads an object of strings or nulls as sorted pairs, as strings
// would read it into a map (a key given twice: the last wins; null
// leaves it out); null reads as none.
func (s *jsonScan) pairs() ([]cluster.Pair, bool) {
	type member struct {
		cluster.Pair
		null bool
	}
	var members []member
	if s.null() {
		return nil, true
	}
	ok := s.object(func(key string) bool {
		v, null, ok := s.strOrNull()
		members = append(members, member{cluster.Pair{Key: key, Value: v}, null})
		return ok
	})
	if !ok {
		return nil, false
	}
	slices.SortStableFunc(members, func(a, b member) int { return cmp.Compare(a.Key, b.Key) })
	pairs := make([]cluster.Pair, 0, len(members))
	for i, m := range members {
		if m.null || i+1 < len(members) && members[i+1].Key == m.Key {
			continue // a later one of the key decides
		}
		pairs = append(pairs, m.Pair)
	}
	return pairs, true
}

// scanEndpoints reads dubbo.endpoints in one pass: a list of objects
// with a port and a protocol (string), each given. Anything else, or an
// entry appdiscEndpoints would refuse, reports false.
func scanEndpoints(text string) ([]Endpoint, bool) {
	s := &jsonScan{data: []byte(text)}
	out := []Endpoint{} // as appdiscEndpoints: empty, not nil, for []
	ok := s.array(func() bool {
		var e Endpoint
		ok := s.fields(scanEndpointFields, func(i int) bool {
			var ok bool
			if i == 0 {
				e.Port, ok = s.port()
			} else {
				e.Protocol, ok = s.str()
			}
			return ok
		})
		out = append(out, e)
		return ok && e.Port != 0 && e.Protocol != "" && len(out) <= appdiscMaxEndpoints
	}) && s.end()
	return out, ok
}

// scanMetadataServiceParams reads dubbo.metadata-service.url-params in
// one pass when it is flat and all strings or nulls (as Dubbo 3 writes
// it); the nested form of Dubbo 2.7, numbers, or a port that is not one
// report false.
func scanMetadataServiceParams(text string) (MetadataServiceParams, bool) {
	s := &jsonScan{data: []byte(text)}
	if s.peek() != '{' {
		return MetadataServiceParams{}, false
	}
	params, ok := s.strings()
	if !ok || !s.end() {
		return MetadataServiceParams{}, false
	}
	ms := MetadataServiceParams{Params: params, Protocol: params["protocol"], Group: params["group"],
		Version: params["version"], Serialization: params["serialization"]}
	if p := params["port"]; p != "" {
		n, err := appdiscPortText(p)
		if err != nil {
			return MetadataServiceParams{}, false
		}
		ms.Port = n
	}
	return ms, true
}
