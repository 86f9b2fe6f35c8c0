package provider

import (
	"math"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/hessian"
)

// realize turns a generic argument into the value the typed method
// expects, as Java's PojoUtils.realize does: a map with a "class" key, or
// any map passed for a class parameter, becomes an object of that class;
// numbers and strings convert to the declared primitive or boxed type.
func realize(v any, javaType string) any {
	switch x := v.(type) {
	case *hessian.Map:
		if class, ok := x.Get("class"); ok {
			if name, ok := class.(string); ok && name != "" {
				return mapToObject(x, name)
			}
		}
		if isPojoType(javaType) {
			return mapToObject(x, javaType)
		}
		out := &hessian.Map{Type: x.Type, Entries: make([]hessian.Entry, len(x.Entries))}
		for i, e := range x.Entries {
			out.Entries[i] = hessian.Entry{Key: e.Key, Value: realize(e.Value, "")}
		}
		return out
	case *hessian.List:
		elem := ""
		if strings.HasSuffix(javaType, "[]") {
			elem = strings.TrimSuffix(javaType, "[]")
		}
		out := &hessian.List{Type: x.Type, Items: make([]any, len(x.Items))}
		for i, it := range x.Items {
			out.Items[i] = realize(it, elem)
		}
		return out
	}
	return convertCompatible(v, javaType)
}

func mapToObject(m *hessian.Map, class string) *hessian.Object {
	o := &hessian.Object{Class: class, Fields: make([]hessian.Field, 0, len(m.Entries))}
	for _, e := range m.Entries {
		name, ok := e.Key.(string)
		if !ok || name == "class" {
			continue
		}
		o.Fields = append(o.Fields, hessian.Field{Name: name, Value: realize(e.Value, "")})
	}
	return o
}

// isPojoType reports whether a parameter type is a user class a map
// argument is realized into: not a primitive, an array or a java.* type.
func isPojoType(t string) bool {
	return t != "" && strings.Contains(t, ".") && !strings.HasSuffix(t, "[]") && !strings.HasPrefix(t, "[") &&
		!strings.HasPrefix(t, "java.") && !strings.HasPrefix(t, "javax.")
}

// convertCompatible converts a scalar to the declared type where Java's
// CompatibleTypeUtils would; anything else is returned unchanged.
func convertCompatible(v any, javaType string) any {
	switch javaType {
	case "int", "java.lang.Integer", "short", "java.lang.Short", "byte", "java.lang.Byte":
		if n, ok := integral(v); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			return int32(n)
		}
	case "long", "java.lang.Long":
		if n, ok := integral(v); ok {
			return n
		}
	case "double", "java.lang.Double", "float", "java.lang.Float":
		switch x := v.(type) {
		case int32:
			return float64(x)
		case int64:
			return float64(x)
		case string:
			if f, err := strconv.ParseFloat(x, 64); err == nil {
				return f
			}
		}
	case "boolean", "java.lang.Boolean":
		if s, ok := v.(string); ok {
			if b, err := strconv.ParseBool(s); err == nil {
				return b
			}
		}
	case "java.lang.String":
		switch x := v.(type) {
		case int32:
			return strconv.FormatInt(int64(x), 10)
		case int64:
			return strconv.FormatInt(x, 10)
		}
	case "java.math.BigDecimal":
		switch x := v.(type) {
		case string:
			return hessian.BigDecimal{Value: x}
		case int32, int64:
			n, _ := integral(x)
			return hessian.BigDecimal{Value: strconv.FormatInt(n, 10)}
		}
	}
	return v
}

func integral(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// generalize turns a result into what a generic consumer receives, as
// Java's PojoUtils.generalize does: objects become untyped maps with a
// "class" key, enums their constant's name, collections lists, arrays of
// objects Object[]; scalars, dates and exceptions stay as they are.
func generalize(v any) any {
	g := generalizer{seen: make(map[any]any)}
	return g.value(v)
}

type generalizer struct {
	seen map[any]any // shared or cyclic containers stay shared
}

func (g *generalizer) value(v any) any {
	switch x := v.(type) {
	case *hessian.Object:
		if x == nil {
			return nil
		}
		if name, ok := hessian.EnumName(x); ok {
			return name
		}
		if _, ok := hessian.AsException(x); ok {
			return x
		}
		if done, ok := g.seen[x]; ok {
			return done
		}
		m := &hessian.Map{Entries: make([]hessian.Entry, 0, len(x.Fields)+1)}
		g.seen[x] = m
		m.Entries = append(m.Entries, hessian.Entry{Key: "class", Value: x.Class})
		for _, f := range x.Fields {
			m.Entries = append(m.Entries, hessian.Entry{Key: f.Name, Value: g.value(f.Value)})
		}
		return m
	case *hessian.List:
		if x == nil {
			return nil
		}
		if done, ok := g.seen[x]; ok {
			return done
		}
		l := &hessian.List{Type: generalListType(x.Type), Items: make([]any, len(x.Items))}
		g.seen[x] = l
		for i, it := range x.Items {
			l.Items[i] = g.value(it)
		}
		return l
	case *hessian.Map:
		if x == nil {
			return nil
		}
		if done, ok := g.seen[x]; ok {
			return done
		}
		m := &hessian.Map{Type: x.Type, Entries: make([]hessian.Entry, len(x.Entries))}
		g.seen[x] = m
		for i, e := range x.Entries {
			m.Entries[i] = hessian.Entry{Key: g.value(e.Key), Value: g.value(e.Value)}
		}
		return m
	}
	return v
}

// generalListType keeps arrays of primitives and strings, makes other
// arrays Object[], sets HashSets and every other collection an ArrayList
// (which hessian writes untyped).
func generalListType(t string) string {
	switch {
	case strings.HasPrefix(t, "["):
		switch t {
		case "[boolean", "[byte", "[char", "[short", "[int", "[long", "[float", "[double", "[string", "[date":
			return t
		}
		return "[object"
	case strings.Contains(t, "Set"):
		return "java.util.HashSet"
	}
	return ""
}
