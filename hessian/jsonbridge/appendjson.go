package jsonbridge

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dubbogw/dubbogw/hessian"
)

// DecodeOptions configure AppendJSON. The zero value is the default.
type DecodeOptions struct {
	// LongAsNumber writes every long as a JSON number. By default a long
	// beyond ±(2^53−1), which JavaScript cannot hold exactly, is written as
	// a JSON string of its digits.
	LongAsNumber bool
	// KeepClass keeps class names: the "class" key of maps from generic
	// invocation, and a "class" member first in every object. By default
	// both are left out (exceptions always carry theirs).
	KeepClass bool
	// BigAsNumber writes BigDecimal and BigInteger as JSON numbers. By
	// default they are JSON strings, which keep every digit whatever the
	// client's number type.
	BigAsNumber bool
	// MaxBytes stops the output growing beyond this many bytes (shared
	// references render in full, so a small hessian value can expand a
	// lot). 0 means no limit.
	MaxBytes int
}

// maxJSONDepth bounds the nesting AppendJSON follows.
const maxJSONDepth = 1000

// AppendJSON appends v, a value of the hessian value model (as
// hessian.Decoder returns), to dst as JSON:
//
//   - nil → null; bool → true/false; int32 → number; int64 → number, or a
//     string beyond ±(2^53−1) (see LongAsNumber); float64 → number, NaN and
//     ±Inf → null (JSON has no spelling for them)
//   - string → string, with every control character escaped and invalid
//     UTF-8 replaced by U+FFFD; []byte → base64 string
//   - time.Time → RFC 3339 string in UTC with milliseconds
//     ("2024-05-01T08:30:00.000Z")
//   - *List → array; *Map → object, keys that are not strings written as
//     their JSON text ("1", "true", "null"); entries in wire order
//   - *Object → object of its fields in declaration order; an enum (an
//     object whose only field is "name", as hessian-lite writes enums) → its
//     constant name; an exception → {"class","message"}, with "cause" (the
//     same form) when it has one, and no stack trace
//   - BigDecimal, BigInteger → string (see BigAsNumber); java.time values
//     and Locale → their ISO / Java text ("2024-05-01", "PT1H", "en_US")
//   - a map carrying a "class" key (a DTO from generic invocation) loses
//     that key (see KeepClass)
//
// A value referenced twice is written twice; a cycle, which JSON cannot
// express, is an error naming its path. Errors are *PathError; on error dst
// comes back unchanged.
func AppendJSON(dst []byte, v any, opts *DecodeOptions) ([]byte, error) {
	var w jsonWriter
	var open [8]any // room for usual depths in one small allocation
	w.open = open[:0]
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.MaxBytes > 0 {
		w.limit = len(dst) + w.opts.MaxBytes
	}
	out, err := w.value(dst, v)
	if err != nil {
		return dst, err.pathError()
	}
	if w.limit > 0 && len(out) > w.limit {
		return dst, &PathError{Path: "$", Msg: fmt.Sprintf("JSON output larger than %d bytes", w.opts.MaxBytes)}
	}
	return out, nil
}

type jsonWriter struct {
	opts  DecodeOptions
	limit int
	open  []any // containers being written, to find cycles
}

// walkError collects its path while the walk unwinds, so that a successful
// walk pays nothing for paths.
type walkError struct {
	rev []pathSeg
	msg string
}

func (e *walkError) at(seg pathSeg) *walkError {
	e.rev = append(e.rev, seg)
	return e
}

func (e *walkError) pathError() *PathError {
	segs := make([]pathSeg, len(e.rev))
	for i, s := range e.rev {
		segs[len(segs)-1-i] = s
	}
	return &PathError{Path: renderPath(segs), Msg: e.msg}
}

func (w *jsonWriter) value(b []byte, v any) ([]byte, *walkError) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return w.long(b, v), nil
	case float64:
		return appendFloat(b, v), nil
	case string:
		return appendString(b, v), nil
	case []byte:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"'), nil
	case time.Time:
		return appendTime(b, v), nil
	case hessian.BigDecimal:
		return w.big(b, v.Value), nil
	case hessian.BigInteger:
		return w.big(b, v.Value), nil
	case *hessian.List:
		if v == nil {
			return append(b, "null"...), nil
		}
		return w.list(b, v)
	case *hessian.Map:
		if v == nil {
			return append(b, "null"...), nil
		}
		return w.mapValue(b, v)
	case *hessian.Object:
		if v == nil {
			return append(b, "null"...), nil
		}
		return w.object(b, v)
	case *hessian.BigDecimal:
		if v == nil {
			return append(b, "null"...), nil
		}
		return w.big(b, v.Value), nil
	case *hessian.BigInteger:
		if v == nil {
			return append(b, "null"...), nil
		}
		return w.big(b, v.Value), nil
	case *hessian.Exception:
		if v == nil {
			return append(b, "null"...), nil
		}
		return w.exception(b, v)
	case hessian.Locale:
		return appendString(b, v.Value), nil
	case fmt.Stringer:
		// java.time values: the ISO text their toString prints.
		return appendString(b, v.String()), nil
	}
	return b, &walkError{msg: fmt.Sprintf("cannot write a Go %T as JSON: not a hessian value", v)}
}

func (w *jsonWriter) long(b []byte, v int64) []byte {
	const maxSafe = 1<<53 - 1
	if !w.opts.LongAsNumber && (v > maxSafe || v < -maxSafe) {
		b = append(b, '"')
		b = strconv.AppendInt(b, v, 10)
		return append(b, '"')
	}
	return strconv.AppendInt(b, v, 10)
}

func (w *jsonWriter) big(b []byte, s string) []byte {
	if w.opts.BigAsNumber && isNumber(s) {
		return append(b, s...)
	}
	return appendString(b, s)
}

// enter marks container c open; it fails on a cycle, too deep a value or
// too much output.
func (w *jsonWriter) enter(b []byte, c any) *walkError {
	for _, o := range w.open {
		if o == c {
			return &walkError{msg: "cycle: the value contains itself, which JSON cannot express"}
		}
	}
	if len(w.open) >= maxJSONDepth {
		return &walkError{msg: fmt.Sprintf("nesting deeper than %d", maxJSONDepth)}
	}
	if w.limit > 0 && len(b) > w.limit {
		return &walkError{msg: fmt.Sprintf("JSON output larger than %d bytes", w.opts.MaxBytes)}
	}
	w.open = append(w.open, c)
	return nil
}

func (w *jsonWriter) leave() { w.open = w.open[:len(w.open)-1] }

func (w *jsonWriter) list(b []byte, l *hessian.List) ([]byte, *walkError) {
	if err := w.enter(b, l); err != nil {
		return b, err
	}
	b = append(b, '[')
	for i, item := range l.Items {
		if i > 0 {
			b = append(b, ',')
		}
		var err *walkError
		if b, err = w.value(b, item); err != nil {
			return b, err.at(pathSeg{index: i, isIndex: true})
		}
	}
	w.leave()
	return append(b, ']'), nil
}

func (w *jsonWriter) mapValue(b []byte, m *hessian.Map) ([]byte, *walkError) {
	if err := w.enter(b, m); err != nil {
		return b, err
	}
	dropClass := !w.opts.KeepClass && (m.Type == "" || m.Type == "java.util.HashMap")
	b = append(b, '{')
	first := true
	for i := range m.Entries {
		e := &m.Entries[i]
		key, isString := e.Key.(string)
		if dropClass && isString && key == "class" {
			if _, ok := e.Value.(string); ok {
				continue
			}
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		var err *walkError
		if isString {
			b = appendString(b, key)
		} else if b, err = w.key(b, e.Key); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = w.value(b, e.Value); err != nil {
			if isString {
				return b, err.at(pathSeg{key: key})
			}
			return b, err.at(pathSeg{key: string(w.keyText(e.Key))})
		}
	}
	w.leave()
	return append(b, '}'), nil
}

// key writes a map key that is not a string as a string of its JSON text.
func (w *jsonWriter) key(b []byte, k any) ([]byte, *walkError) {
	switch k := k.(type) {
	case int32:
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(k), 10)
		return append(b, '"'), nil
	case int64:
		b = append(b, '"')
		b = strconv.AppendInt(b, k, 10)
		return append(b, '"'), nil
	}
	var text []byte
	var err *walkError
	if text, err = w.value(nil, k); err != nil {
		return b, err.at(pathSeg{key: "(map key)"})
	}
	if len(text) > 0 && text[0] == '"' {
		return append(b, text...), nil // already a JSON string
	}
	return appendString(b, string(text)), nil
}

// keyText is a key's JSON text, for paths.
func (w *jsonWriter) keyText(k any) []byte {
	text, err := w.value(nil, k)
	if err != nil {
		return []byte("?")
	}
	if len(text) > 1 && text[0] == '"' {
		return text[1 : len(text)-1]
	}
	return text
}

func (w *jsonWriter) object(b []byte, o *hessian.Object) ([]byte, *walkError) {
	if name, ok := hessian.EnumName(o); ok {
		return appendString(b, name), nil
	}
	if ex, ok := hessian.AsException(o); ok {
		return w.exception(b, ex)
	}
	if err := w.enter(b, o); err != nil {
		return b, err
	}
	b = append(b, '{')
	first := true
	if w.opts.KeepClass {
		b = append(b, `"class":`...)
		b = appendString(b, o.Class)
		first = false
	}
	for i := range o.Fields {
		f := &o.Fields[i]
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, f.Name)
		b = append(b, ':')
		var err *walkError
		if b, err = w.value(b, f.Value); err != nil {
			return b, err.at(pathSeg{key: f.Name})
		}
	}
	w.leave()
	return append(b, '}'), nil
}

// exception writes a Java exception as {"class", "message", "cause"}; the
// stack trace stays on the server side.
func (w *jsonWriter) exception(b []byte, ex *hessian.Exception) ([]byte, *walkError) {
	b = append(b, `{"class":`...)
	b = appendString(b, ex.Class)
	b = append(b, `,"message":`...)
	b = appendString(b, ex.Message)
	depth := 0
	for c := ex.Cause; c != nil && c != ex; c = c.Cause {
		if depth++; depth > 64 { // a hand-made chain that loops
			break
		}
		b = append(b, `,"cause":{"class":`...)
		b = appendString(b, c.Class)
		b = append(b, `,"message":`...)
		b = appendString(b, c.Message)
	}
	for ; depth > 0; depth-- {
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendFloat writes a double the way encoding/json does (shortest form,
// exponent only for very large or small magnitudes); NaN and ±Inf, which
// JSON cannot spell, become null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendTime writes an instant as RFC 3339 in UTC with milliseconds.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	return append(b, '"')
}

// appendString writes s as a JSON string: quote, backslash and every control
// character escaped, U+2028 and U+2029 escaped (JavaScript line
// terminators), invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
