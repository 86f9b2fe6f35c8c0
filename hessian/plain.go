package hessian

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// PlainOptions tunes Plain.
type PlainOptions struct {
	// KeepClass adds the Java class name under the key "class" to the map
	// made of each object, as Dubbo's generic invocation does (a field
	// named "class" wins).
	KeepClass bool
	// EnumNames turns an object whose only field is the string "name" —
	// the way Java enums are written — into that string. A class with a
	// single field called name looks the same on the wire and becomes a
	// string too.
	EnumNames bool
}

// Plain turns a decoded value into the types encoding/json works with, for
// callers who do not care about Java types: lists become []any, maps and
// objects map[string]any, BigDecimal and BigInteger json.Number, java.time
// values and Locale their ISO / Java string form, java.sql dates time.Time.
// Map keys that are not strings are written as text. A value met again
// through a shared reference is converted once and shared; a reference
// that closes a cycle becomes nil. Plain(v) is PlainOptions{}.Plain(v).
func Plain(v any) any { return PlainOptions{}.Plain(v) }

// Plain converts v as the package-level Plain does, with these options.
func (o PlainOptions) Plain(v any) any {
	p := plainer{opts: o}
	return p.plain(v)
}

type plainer struct {
	opts PlainOptions
	// done maps each container converted, or being converted (to nil), to
	// its plain form.
	done map[any]any
}

// enter reports whether the container k was met before; if so, result is
// its plain form, nil while it is still being converted (a cycle). The
// caller stores the plain form in done once it is complete.
func (p *plainer) enter(k any) (result any, seen bool) {
	if p.done == nil {
		p.done = make(map[any]any)
	}
	if r, ok := p.done[k]; ok {
		return r, true
	}
	p.done[k] = nil
	return nil, false
}

func (p *plainer) plain(v any) any {
	switch x := v.(type) {
	case nil, bool, int32, int64, float64, string, []byte, time.Time:
		return v
	case *List:
		if x == nil {
			return nil
		}
		if r, seen := p.enter(x); seen {
			return r
		}
		out := make([]any, len(x.Items))
		for i, it := range x.Items {
			out[i] = p.plain(it)
		}
		p.done[x] = out
		return out
	case *Map:
		if x == nil {
			return nil
		}
		if r, seen := p.enter(x); seen {
			return r
		}
		out := make(map[string]any, len(x.Entries))
		for _, en := range x.Entries {
			out[p.key(en.Key)] = p.plain(en.Value)
		}
		p.done[x] = out
		return out
	case *Object:
		if x == nil {
			return nil
		}
		if t, ok := sqlDate(x); ok {
			return t
		}
		if p.opts.EnumNames {
			if name, ok := EnumName(x); ok {
				return name
			}
		}
		if r, seen := p.enter(x); seen {
			return r
		}
		out := make(map[string]any, len(x.Fields)+1)
		if p.opts.KeepClass {
			out["class"] = x.Class
		}
		for _, f := range x.Fields {
			out[f.Name] = p.plain(f.Value)
		}
		p.done[x] = out
		return out
	case *Exception:
		if x == nil {
			return nil
		}
		if r, seen := p.enter(x); seen {
			return r
		}
		out := map[string]any{"class": x.Class, "message": x.Message}
		out["cause"] = p.plain(x.Cause)
		frames := make([]any, len(x.StackTrace))
		for i, f := range x.StackTrace {
			frames[i] = map[string]any{"declaringClass": f.DeclaringClass, "methodName": f.MethodName,
				"fileName": f.FileName, "lineNumber": f.LineNumber}
		}
		out["stackTrace"] = frames
		suppressed := make([]any, len(x.Suppressed))
		for i, s := range x.Suppressed {
			suppressed[i] = p.plain(s)
		}
		out["suppressed"] = suppressed
		p.done[x] = out
		return out
	case BigDecimal:
		return json.Number(x.Value)
	case BigInteger:
		return json.Number(x.Value)
	case Locale:
		return x.Value
	case LocalDate, LocalTime, LocalDateTime, Instant, Duration, ZoneOffset, ZoneID,
		OffsetDateTime, OffsetTime, ZonedDateTime, Year, YearMonth, MonthDay, Period:
		return x.(fmt.Stringer).String()
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = p.plain(it)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, it := range x {
			out[k] = p.plain(it)
		}
		return out
	}
	return v
}

// key turns a map key into text.
func (p *plainer) key(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case *Object:
		if name, ok := EnumName(x); ok {
			return name
		}
	}
	switch x := p.plain(k).(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

// sqlDate returns the time of a java.sql.Date, Time or Timestamp, which
// hessian-lite writes as an object with one date field, "value".
func sqlDate(o *Object) (time.Time, bool) {
	switch o.Class {
	case "java.sql.Timestamp", "java.sql.Date", "java.sql.Time":
		if len(o.Fields) == 1 && o.Fields[0].Name == "value" {
			t, ok := o.Fields[0].Value.(time.Time)
			return t, ok
		}
	}
	return time.Time{}, false
}

// EnumName returns the constant's name of a decoded Java enum: hessian-lite
// writes an enum as an object with the single field "name".
func EnumName(v any) (string, bool) {
	o, ok := v.(*Object)
	if !ok || o == nil || len(o.Fields) != 1 || o.Fields[0].Name != "name" {
		return "", false
	}
	s, ok := o.Fields[0].Value.(string)
	return s, ok
}
