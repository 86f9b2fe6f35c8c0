package peers

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

// Value returns the value of the hessian package's model that d describes:
// what our Encoder is given. Nodes named by an id and the refs to them are
// the same Go pointer.
func Value(d *Desc) (any, error) {
	b := valueBuilder{ids: map[string]any{}}
	return b.build(d)
}

type valueBuilder struct{ ids map[string]any }

func (b *valueBuilder) remember(d *Desc, v any) {
	if d.ID != "" {
		b.ids[d.ID] = v
	}
}

func (b *valueBuilder) build(d *Desc) (any, error) {
	if d == nil {
		return nil, fmt.Errorf("missing description")
	}
	switch d.T {
	case "null":
		return nil, nil
	case "bool":
		return d.Bool, nil
	case "int":
		return d.Int, nil
	case "long":
		return d.Long, nil
	case "double":
		return d.Double, nil
	case "date":
		return time.UnixMilli(d.Date).UTC(), nil
	case "string":
		return d.Str, nil
	case "binary":
		return bytes.Clone(d.Bin), nil
	case "bigdecimal":
		return &hessian.BigDecimal{Value: d.Str}, nil
	case "ref":
		v, ok := b.ids[d.ID]
		if !ok {
			return nil, fmt.Errorf("ref to unknown id %q", d.ID)
		}
		return v, nil
	case "enum":
		o := &hessian.Object{Class: d.Type, Fields: []hessian.Field{{Name: "name", Value: d.Str}}}
		b.remember(d, o)
		return o, nil
	case "exception":
		return exceptionValue(d)
	case "list":
		l := &hessian.List{Type: d.Type, Items: make([]any, len(d.Items))}
		b.remember(d, l)
		for i, it := range d.Items {
			v, err := b.build(it)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			l.Items[i] = v
		}
		return l, nil
	case "map":
		m := &hessian.Map{Type: d.Type, Entries: make([]hessian.Entry, len(d.Entries))}
		b.remember(d, m)
		for i, e := range d.Entries {
			k, err := b.build(e.Key)
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", i, err)
			}
			v, err := b.build(e.Value)
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			m.Entries[i] = hessian.Entry{Key: k, Value: v}
		}
		return m, nil
	case "object":
		o := &hessian.Object{Class: d.Type, Fields: make([]hessian.Field, len(d.Fields))}
		b.remember(d, o)
		for i, f := range d.Fields {
			v, err := b.build(f.Value)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			o.Fields[i] = hessian.Field{Name: f.Name, Value: v}
		}
		return o, nil
	}
	return nil, fmt.Errorf("no Go value for description type %q", d.T)
}

// exceptionValue builds an exception with the one stack frame every peer
// sends (README.md).
func exceptionValue(d *Desc) (*hessian.Exception, error) {
	e := &hessian.Exception{Class: d.Type, Message: d.Str, StackTrace: []hessian.StackFrame{StackFrame}}
	if d.Cause != nil {
		c, err := exceptionValue(d.Cause)
		if err != nil {
			return nil, err
		}
		e.Cause = c
	}
	return e, nil
}

// StackFrame is the one frame of every exception the peers write:
// interop.Service.call(Service.java:42).
var StackFrame = hessian.StackFrame{DeclaringClass: "interop.Service", MethodName: "call", FileName: "Service.java", LineNumber: 42}

// Match reports how v, a value our Decoder returned, differs from d, or nil.
// A ref must be the very pointer its target decoded to.
func Match(d *Desc, v any) error {
	m := matcher{ids: map[string]any{}}
	return m.match("$", d, v)
}

type matcher struct{ ids map[string]any }

func (m *matcher) remember(d *Desc, v any) {
	if d.ID != "" {
		m.ids[d.ID] = v
	}
}

func (m *matcher) match(path string, d *Desc, v any) error {
	wrong := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	want := func(what string) error { return wrong("want %s, got %T %s", what, v, short(v)) }
	switch d.T {
	case "null":
		if v != nil {
			return want("nil")
		}
	case "bool":
		if g, ok := v.(bool); !ok || g != d.Bool {
			return want(fmt.Sprintf("bool %v", d.Bool))
		}
	case "int":
		if g, ok := v.(int32); !ok || g != d.Int {
			return want(fmt.Sprintf("int32 %d", d.Int))
		}
	case "long":
		if g, ok := v.(int64); !ok || g != d.Long {
			return want(fmt.Sprintf("int64 %d", d.Long))
		}
	case "double":
		g, ok := v.(float64)
		same := ok && (g == d.Double && math.Signbit(g) == math.Signbit(d.Double) || math.IsNaN(g) && math.IsNaN(d.Double))
		if !same {
			return want(fmt.Sprintf("float64 %v", d.Double))
		}
	case "date":
		g, ok := v.(time.Time)
		if !ok || g.UnixMilli() != d.Date || !g.Equal(time.UnixMilli(d.Date)) {
			return want(fmt.Sprintf("time.Time %v (%d ms)", time.UnixMilli(d.Date).UTC(), d.Date))
		}
		if g.Location() != time.UTC {
			return wrong("date %v is not in UTC", g)
		}
	case "string":
		if g, ok := v.(string); !ok || g != d.Str {
			return want(fmt.Sprintf("string %s", short(d.Str)))
		}
	case "binary":
		if g, ok := v.([]byte); !ok || !bytes.Equal(g, d.Bin) {
			return want(fmt.Sprintf("[]byte of %d bytes %s", len(d.Bin), short(d.Bin)))
		}
	case "bigdecimal":
		var g string
		switch x := v.(type) {
		case hessian.BigDecimal:
			g = x.Value
		case *hessian.BigDecimal:
			g = x.Value
		default:
			return want("hessian.BigDecimal " + d.Str)
		}
		if g != d.Str {
			return want("hessian.BigDecimal " + d.Str)
		}
	case "ref":
		target, ok := m.ids[d.ID]
		if !ok {
			return wrong("ref to %q, which was not decoded before", d.ID)
		}
		if !samePointer(target, v) {
			return wrong("want the same pointer as %q (%p), got %T %p", d.ID, target, v, v)
		}
	case "enum":
		o, ok := v.(*hessian.Object)
		if !ok || o.Class != d.Type || len(o.Fields) != 1 || o.Fields[0].Name != "name" || o.Fields[0].Value != any(d.Str) {
			return want(fmt.Sprintf("*hessian.Object %s{name: %q}", d.Type, d.Str))
		}
		m.remember(d, o)
	case "exception":
		e, ok := hessian.AsException(v)
		if !ok {
			return want("an exception " + d.Type)
		}
		return matchException(path, d, e)
	case "list":
		l, ok := v.(*hessian.List)
		if !ok {
			return want("*hessian.List")
		}
		if l.Type != d.Type {
			return wrong("list type: want %q, got %q", d.Type, l.Type)
		}
		if len(l.Items) != len(d.Items) {
			return wrong("list length: want %d, got %d", len(d.Items), len(l.Items))
		}
		m.remember(d, l)
		for i, it := range d.Items {
			if err := m.match(fmt.Sprintf("%s[%d]", path, i), it, l.Items[i]); err != nil {
				return err
			}
		}
	case "map":
		g, ok := v.(*hessian.Map)
		if !ok {
			return want("*hessian.Map")
		}
		if g.Type != d.Type {
			return wrong("map type: want %q, got %q", d.Type, g.Type)
		}
		if len(g.Entries) != len(d.Entries) {
			return wrong("map size: want %d, got %d", len(d.Entries), len(g.Entries))
		}
		m.remember(d, g)
		for i, e := range d.Entries {
			p := fmt.Sprintf("%s{%d}", path, i)
			if err := m.match(p+".key", e.Key, g.Entries[i].Key); err != nil {
				return err
			}
			if err := m.match(p+".value", e.Value, g.Entries[i].Value); err != nil {
				return err
			}
		}
	case "object":
		o, ok := v.(*hessian.Object)
		if !ok {
			return want("*hessian.Object " + d.Type)
		}
		if o.Class != d.Type {
			return wrong("class: want %q, got %q", d.Type, o.Class)
		}
		if len(o.Fields) != len(d.Fields) {
			return wrong("%d fields, want %d: got %v", len(o.Fields), len(d.Fields), fieldNames(o))
		}
		m.remember(d, o)
		for i, f := range d.Fields {
			if o.Fields[i].Name != f.Name {
				return wrong("field %d: want %q, got %q", i, f.Name, o.Fields[i].Name)
			}
			if err := m.match(path+"."+f.Name, f.Value, o.Fields[i].Value); err != nil {
				return err
			}
		}
	default:
		return wrong("unknown description type %q", d.T)
	}
	return nil
}

func matchException(path string, d *Desc, e *hessian.Exception) error {
	if e.Class != d.Type || e.Message != d.Str {
		return fmt.Errorf("%s: want exception %s(%q), got %s(%q)", path, d.Type, d.Str, e.Class, e.Message)
	}
	switch {
	case d.Cause == nil && e.Cause != nil:
		return fmt.Errorf("%s: want no cause, got %s(%q)", path, e.Cause.Class, e.Cause.Message)
	case d.Cause != nil && e.Cause == nil:
		return fmt.Errorf("%s: want cause %s(%q), got none", path, d.Cause.Type, d.Cause.Str)
	case d.Cause != nil:
		return matchException(path+".cause", d.Cause, e.Cause)
	}
	return nil
}

func samePointer(a, b any) bool {
	switch x := a.(type) {
	case *hessian.List:
		y, ok := b.(*hessian.List)
		return ok && x == y
	case *hessian.Map:
		y, ok := b.(*hessian.Map)
		return ok && x == y
	case *hessian.Object:
		y, ok := b.(*hessian.Object)
		return ok && x == y
	}
	return false
}

func fieldNames(o *hessian.Object) []string {
	names := make([]string, len(o.Fields))
	for i, f := range o.Fields {
		names[i] = f.Name
	}
	return names
}

// short prints v, cut to a readable length.
func short(v any) string {
	s := fmt.Sprintf("%v", v)
	switch x := v.(type) {
	case string:
		s = fmt.Sprintf("%q", x)
	case []byte:
		s = fmt.Sprintf("%x", x)
	}
	if len(s) > 120 {
		s = s[:120] + fmt.Sprintf("… (%d chars)", len(s))
	}
	return s
}

// Describe is the inverse of Value: the description of a value of our model
// (as our Decoder returns it). Shared pointers become refs; an exception,
// enum or BigDecimal is described as the object it is on the wire.
func Describe(v any) (*Desc, error) {
	s := valueDescriber{ids: map[any]string{}}
	return s.describe(v)
}

type valueDescriber struct{ ids map[any]string }

// named returns a ref when p was described before, else an id for it.
func (s *valueDescriber) named(p any) (*Desc, string) {
	if id, ok := s.ids[p]; ok {
		return Ref(id), ""
	}
	id := fmt.Sprintf("v%d", len(s.ids))
	s.ids[p] = id
	return nil, id
}

func (s *valueDescriber) describe(v any) (*Desc, error) {
	switch x := v.(type) {
	case nil:
		return Null(), nil
	case bool:
		return Bool(x), nil
	case int32:
		return Int(x), nil
	case int64:
		return Long(x), nil
	case float64:
		return Double(x), nil
	case time.Time:
		return Date(x.UnixMilli()), nil
	case string:
		return String(x), nil
	case []byte:
		return Binary(x), nil
	case hessian.BigDecimal:
		return BigDecimal(x.Value), nil
	case *hessian.BigDecimal:
		return BigDecimal(x.Value), nil
	case *hessian.List:
		if ref, id := s.named(x); ref != nil {
			return ref, nil
		} else {
			l := List(x.Type).As(id)
			for _, it := range x.Items {
				d, err := s.describe(it)
				if err != nil {
					return nil, err
				}
				l.Items = append(l.Items, d)
			}
			return l, nil
		}
	case *hessian.Map:
		if ref, id := s.named(x); ref != nil {
			return ref, nil
		} else {
			m := Map(x.Type).As(id)
			for _, e := range x.Entries {
				k, err := s.describe(e.Key)
				if err != nil {
					return nil, err
				}
				val, err := s.describe(e.Value)
				if err != nil {
					return nil, err
				}
				m.Entries = append(m.Entries, Pair{k, val})
			}
			return m, nil
		}
	case *hessian.Object:
		if ref, id := s.named(x); ref != nil {
			return ref, nil
		} else {
			o := Object(x.Class).As(id)
			for _, f := range x.Fields {
				d, err := s.describe(f.Value)
				if err != nil {
					return nil, err
				}
				o.Fields = append(o.Fields, NamedDesc{f.Name, d})
			}
			return o, nil
		}
	}
	return nil, fmt.Errorf("no description for %T", v)
}
