package dubboroute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
)

// param is one compiled method parameter: where its value comes from and
// the Java type it becomes.
type param struct {
	index    int
	from     string
	name     string   // path/query/header name, or the body field
	pointer  []string // decoded JSON pointer tokens (body)
	value    *string  // constant, or default when absent
	required bool
	javaType string // as declared
	erased   string // without generic arguments: what $invoke and descriptors name
	typ      *jsonbridge.Type
	list     bool // typ takes a JSON array: a repeated query parameter or header fills it
}

// bodyMode is how a route reads the request body.
type bodyMode int

const (
	bodyNone       bodyMode = iota // no parameter reads the body
	bodyWhole                      // one parameter takes the whole body
	bodyPositional                 // several take the elements of a JSON array body, in order
	bodyFields                     // parameters read named fields or pointers
)

func compileParams(enc *jsonbridge.Encoder, cfgs []Param) ([]param, bodyMode, error) {
	ps := make([]param, len(cfgs))
	unnamedBody := 0
	mode := bodyNone
	for i, c := range cfgs {
		t, err := enc.Type(c.Type)
		if err != nil {
			return nil, 0, fmt.Errorf("params[%d].type: %w", i, err)
		}
		p := param{index: i, from: c.From, name: c.Name, value: c.Value, javaType: c.Type, erased: erase(c.Type), typ: t, list: t.IsList()}
		if c.Required != nil {
			p.required = *c.Required
		}
		if primitives[c.Type] && c.Value == nil && c.From != FromConstant {
			p.required = true // a Java primitive has no null to stand for "absent"
		}
		if c.From == FromBody {
			switch {
			case c.Pointer != "":
				if p.pointer, err = parsePointer(c.Pointer); err != nil {
					return nil, 0, fmt.Errorf("params[%d].pointer: %w", i, err)
				}
				mode = bodyFields
			case c.Name != "":
				p.pointer = []string{c.Name}
				mode = bodyFields
			default:
				unnamedBody++
			}
		}
		ps[i] = p
	}
	switch {
	case unnamedBody == 1 && mode == bodyNone:
		mode = bodyWhole
	case unnamedBody > 1 && mode == bodyNone:
		mode = bodyPositional
	case unnamedBody > 0:
		return nil, 0, errors.New("params: bind every body parameter by name or pointer, or none")
	}
	return ps, mode, nil
}

var primitives = map[string]bool{
	"int": true, "long": true, "short": true, "byte": true,
	"float": true, "double": true, "boolean": true, "char": true,
}

// erase drops generic arguments: "java.util.List<com.x.Item>" → "java.util.List".
func erase(t string) string {
	if i := strings.IndexByte(t, '<'); i >= 0 {
		j := strings.LastIndexByte(t, '>')
		if j > i {
			return strings.TrimSpace(t[:i]) + strings.TrimSpace(t[j+1:])
		}
	}
	return strings.TrimSpace(t)
}

// parsePointer splits an RFC 6901 JSON pointer into its decoded tokens.
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q: a JSON pointer starts with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// argError is a request the route cannot turn into arguments: a 400 naming the parameter.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func badArg(p *param, format string, args ...any) *argError {
	return &argError{msg: fmt.Sprintf("parameter %d (%s %s): %s", p.index, p.javaType, p.source(), fmt.Sprintf(format, args...))}
}

func (p *param) source() string {
	switch p.from {
	case FromBody:
		if len(p.pointer) > 0 {
			return "from body /" + strings.Join(p.pointer, "/")
		}
		return "from body"
	case FromConstant:
		return "constant"
	}
	return "from " + p.from + " " + strconv.Quote(p.name)
}

// lookup returns the raw JSON at pointer inside body; found is false when a
// token is missing. Invalid JSON is an error.
func lookup(body []byte, pointer []string) (raw []byte, found bool, err error) {
	// span keeps each level a slice of the body: no copies.
	cur := span(body)
	for _, tok := range pointer {
		cur = bytes.TrimSpace(cur)
		if len(cur) == 0 {
			return nil, false, nil
		}
		switch cur[0] {
		case '{':
			var m map[string]span
			if err := json.Unmarshal(cur, &m); err != nil {
				return nil, false, err
			}
			next, ok := m[tok]
			if !ok {
				return nil, false, nil
			}
			cur = next
		case '[':
			var a []span
			if err := json.Unmarshal(cur, &a); err != nil {
				return nil, false, err
			}
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(a) {
				return nil, false, nil
			}
			cur = a[i]
		default:
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// args is what one request's parameters resolved to, written into the call's
// hessian stream by write.
type args struct {
	h     *Handler
	ctx   context.Context // the route's deadline: encoding gives up there
	r     *http.Request
	query url.Values // the request's query, parsed once (nil until a parameter reads it)
	body  []byte
	raws  [][]byte // per parameter, for body fields
	found []bool
}

var _ governance.Arguments = (*args)(nil)

// Argument renders argument i for condition rules (arguments[i]) as
// Java's String.valueOf would: a string, a number, true or false; false
// for another JSON value, a body not split into arguments, or no such
// argument.
func (a *args) Argument(i int) (string, bool) {
	h := a.h
	if i < 0 || i >= len(h.params) {
		return "", false
	}
	p := &h.params[i]
	if p.from != FromBody {
		return a.str(p)
	}
	var raw []byte
	switch {
	case a.raws != nil:
		raw = a.raws[i]
	case h.bodyMode == bodyWhole && len(h.params) == 1:
		raw = a.body
	default:
		return "", false
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", false
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9' || string(raw) == "true" || string(raw) == "false":
		return string(raw), true
	}
	return "", false
}

// resolve checks every parameter's source before anything is sent, so a bad
// request is a 400 and never reaches a provider.
func (h *Handler) resolve(r *http.Request, body []byte) (*args, *argError) {
	a := &args{h: h, r: r, body: body}
	switch h.bodyMode {
	case bodyWhole, bodyPositional:
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, &argError{msg: "the request body is empty; this route takes its arguments from a JSON body"}
		}
	case bodyFields:
		a.raws = make([][]byte, len(h.params))
		a.found = make([]bool, len(h.params))
		for i := range h.params {
			p := &h.params[i]
			if p.from != FromBody {
				continue
			}
			raw, found, err := lookup(body, p.pointer)
			if err != nil {
				return nil, &argError{msg: "the request body is not valid JSON: " + err.Error()}
			}
			if !found && p.required && p.value == nil {
				return nil, badArg(p, "missing")
			}
			a.raws[i], a.found[i] = raw, found
		}
	}
	for i := range h.params {
		p := &h.params[i]
		if p.from == FromBody || p.from == FromConstant {
			continue
		}
		if n := a.count(p); n > 1 && !p.list {
			// Which one would the provider see? HTTP parameter pollution:
			// a check in front may have read the first, the call the last.
			return nil, badArg(p, "given %d times; it takes one value", n)
		}
		if _, ok := a.str(p); !ok && p.required && p.value == nil {
			return nil, badArg(p, "missing")
		}
	}
	return a, nil
}

// count is how many values a path, query or header parameter has.
func (a *args) count(p *param) int {
	if p.from == FromQuery || p.from == FromHeader {
		return len(a.values(p))
	}
	return 1
}

// values are the values a query or header parameter was given; nil for
// the other sources.
func (a *args) values(p *param) []string {
	switch p.from {
	case FromQuery:
		return a.queryValues()[p.name]
	case FromHeader:
		return a.r.Header.Values(p.name)
	}
	return nil
}

func (a *args) queryValues() url.Values {
	if a.query == nil {
		a.query = a.r.URL.Query()
	}
	return a.query
}

// str returns a path/query/header parameter's string.
func (a *args) str(p *param) (string, bool) {
	if p.from == FromPath {
		v := exchange.PathValue(a.r, p.name)
		return v, v != ""
	}
	return listOrOne(p, a.values(p))
}

// listOrOne is the string of a query parameter's or header's values: for
// a list or array type, a JSON array of them (one value written as a JSON
// array, "[1,2]", is taken as it is); else its one value (resolve refused
// more).
func listOrOne(p *param, vs []string) (string, bool) {
	switch {
	case len(vs) == 0:
		return "", false
	case !p.list:
		return vs[0], true
	case len(vs) == 1 && strings.HasPrefix(strings.TrimSpace(vs[0]), "["):
		return vs[0], true
	}
	b, _ := json.Marshal(vs)
	return string(b), true
}

// write writes the arguments, in order, into e.
func (a *args) write(e *hessian.Encoder) error {
	h := a.h
	switch h.bodyMode {
	case bodyWhole:
		for i := range h.params {
			p := &h.params[i]
			if p.from == FromBody {
				if err := h.enc.EncodeContext(a.ctx, e, a.body, p.typ); err != nil {
					return paramErr(p, err)
				}
				continue
			}
			if err := a.writeOne(e, p); err != nil {
				return err
			}
		}
		return nil
	case bodyPositional:
		if len(h.params) == h.bodyParams {
			if err := h.enc.EncodeArgsContext(a.ctx, e, a.body, h.bodyTypes); err != nil {
				if isContextErr(err) {
					return err // the deadline passed: a 504, not the client's mistake
				}
				return &argError{msg: "arguments from the body: " + err.Error()}
			}
			return nil
		}
		return errors.New("dubboroute: positional body mixed with other sources") // refused by config validation
	}
	for i := range h.params {
		if err := a.writeOne(e, &h.params[i]); err != nil {
			return err
		}
	}
	return nil
}

func (a *args) writeOne(e *hessian.Encoder, p *param) error {
	h := a.h
	switch p.from {
	case FromConstant:
		return paramErr(p, h.enc.EncodeString(e, *p.value, p.typ))
	case FromBody:
		if a.found[p.index] {
			return paramErr(p, h.enc.EncodeContext(a.ctx, e, a.raws[p.index], p.typ))
		}
	default:
		if s, ok := a.str(p); ok {
			return paramErr(p, h.enc.EncodeString(e, s, p.typ))
		}
	}
	if p.value != nil {
		return paramErr(p, h.enc.EncodeString(e, *p.value, p.typ))
	}
	e.WriteNull()
	return nil
}

func paramErr(p *param, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err // the deadline passed: a 504, not the client's mistake
	}
	// A string from the path, query or a header has no JSON structure:
	// the root path "$" would only be noise in its message.
	var pe *jsonbridge.PathError
	if errors.As(err, &pe) && pe.Path == "$" && p.from != FromBody {
		return badArg(p, "%s", pe.Msg)
	}
	return badArg(p, "%v", err)
}

// isContextErr says whether encoding the arguments stopped because the
// route's deadline passed (or the client left), rather than on something
// wrong with them. Judged by the error, not by the context afterwards: a
// body the client got wrong is a 400 even if the deadline passed meanwhile.
func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
