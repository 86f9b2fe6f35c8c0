package interop

import (
	"fmt"
	"reflect"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"
	gxbig "github.com/dubbogo/gost/math/big"

	"github.com/dubbogw/dubbogw/test/peers"
)

// toDubbo builds the dubbo-go-hessian2 value a description names. Nodes
// with an id and the refs to them are the same pointer (or slice, or map).
func toDubbo(d *peers.Desc) (any, error) {
	b := dubboBuilder{ids: map[string]any{}}
	return b.build(d)
}

type dubboBuilder struct{ ids map[string]any }

func (b *dubboBuilder) remember(d *peers.Desc, v any) {
	if d.ID != "" {
		b.ids[d.ID] = v
	}
}

func (b *dubboBuilder) build(d *peers.Desc) (any, error) {
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
		return append([]byte{}, d.Bin...), nil
	case "bigdecimal":
		var dec gxbig.Decimal
		if err := dec.FromString(d.Str); err != nil {
			return nil, fmt.Errorf("bigdecimal %q: %w", d.Str, err)
		}
		return &dec, nil
	case "enum":
		var c Color
		e := c.EnumValue(d.Str)
		if d.Type != c.JavaClassName() || e == hessian.InvalidJavaEnum {
			return nil, fmt.Errorf("no Go enum for %s.%s", d.Type, d.Str)
		}
		c = Color(e)
		b.remember(d, c)
		return c, nil
	case "exception":
		return b.exception(d)
	case "ref":
		v, ok := b.ids[d.ID]
		if !ok {
			return nil, fmt.Errorf("ref to unknown id %q", d.ID)
		}
		return v, nil
	case "list":
		return b.list(d)
	case "map":
		if d.Type != "" {
			return nil, fmt.Errorf("dubbo-go-hessian2 writes a Go map untyped; no form for %s", d.Type)
		}
		m := make(map[any]any, len(d.Entries))
		b.remember(d, m)
		for _, e := range d.Entries {
			k, err := b.build(e.Key)
			if err != nil {
				return nil, err
			}
			v, err := b.build(e.Value)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case "object":
		return b.object(d)
	}
	return nil, fmt.Errorf("no dubbo-go-hessian2 value for %q", d.T)
}

func (b *dubboBuilder) list(d *peers.Desc) (any, error) {
	items := make([]any, len(d.Items))
	if d.Type == "" {
		b.remember(d, items) // same backing array: dubbo-go-hessian2 sees the reference
	}
	for i, it := range d.Items {
		v, err := b.build(it)
		if err != nil {
			return nil, err
		}
		items[i] = v
	}
	var typed reflect.Value
	switch d.Type {
	case "":
		return items, nil
	case "[int":
		typed = reflect.ValueOf(make([]int32, len(items)))
	case "[long":
		typed = reflect.ValueOf(make([]int64, len(items)))
	case "[double":
		typed = reflect.ValueOf(make([]float64, len(items)))
	case "[boolean":
		typed = reflect.ValueOf(make([]bool, len(items)))
	case "[string":
		typed = reflect.ValueOf(make([]string, len(items)))
	default:
		return nil, fmt.Errorf("dubbo-go-hessian2 has no Go slice it writes as a %s list", d.Type)
	}
	for i, it := range items {
		typed.Index(i).Set(reflect.ValueOf(it))
	}
	b.remember(d, typed.Interface())
	return typed.Interface(), nil
}

func (b *dubboBuilder) object(d *peers.Desc) (any, error) {
	var target reflect.Value
	switch d.Type {
	case peers.PojoClass:
		p := &Pojo{}
		b.remember(d, p)
		target = reflect.ValueOf(p).Elem()
	case peers.NodeClass:
		n := &Node{}
		b.remember(d, n)
		target = reflect.ValueOf(n).Elem()
	default:
		return nil, fmt.Errorf("no registered Go type for class %s", d.Type)
	}
	for _, f := range d.Fields {
		v, err := b.build(f.Value)
		if err != nil {
			return nil, err
		}
		field := fieldByTag(target, f.Name)
		if !field.IsValid() {
			return nil, fmt.Errorf("%s has no field %s", d.Type, f.Name)
		}
		if v == nil {
			field.SetZero()
			continue
		}
		field.Set(reflect.ValueOf(v))
	}
	return target.Addr().Interface(), nil
}

func fieldByTag(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("hessian") == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

func (b *dubboBuilder) exception(d *peers.Desc) (java_exception.Throwabler, error) {
	var cause java_exception.Throwabler
	if d.Cause != nil {
		c, err := b.exception(d.Cause)
		if err != nil {
			return nil, err
		}
		cause = c
	}
	// The one stack frame every peer sends (test/peers/README.md).
	frames := []java_exception.StackTraceElement{{
		DeclaringClass: peers.StackFrame.DeclaringClass, MethodName: peers.StackFrame.MethodName,
		FileName: peers.StackFrame.FileName, LineNumber: peers.StackFrame.LineNumber,
	}}
	switch d.Type {
	case peers.ExceptionClass:
		e := &TestException{Exception: *java_exception.NewException(d.Str)}
		e.Cause, e.StackTrace = cause, frames
		return e, nil
	case "java.lang.IllegalStateException":
		e := java_exception.NewIllegalStateException(d.Str)
		e.Cause, e.StackTrace = cause, frames
		return e, nil
	}
	return nil, fmt.Errorf("no Go exception type for %s", d.Type)
}

// fromDubbo describes a value dubbo-go-hessian2 decoded. Pointers, slices
// and maps seen twice become refs.
func fromDubbo(v any) (*peers.Desc, error) {
	s := describer{seen: map[identity]string{}}
	return s.describe(v)
}

type identity struct {
	typ reflect.Type
	ptr uintptr
	len int
}

type describer struct{ seen map[identity]string }

// shared returns a ref if v was described before, else names it.
func (s *describer) shared(v reflect.Value) (ref *peers.Desc, id string) {
	key := identity{typ: v.Type(), ptr: v.Pointer()}
	if v.Kind() == reflect.Slice {
		key.len = v.Len()
	}
	if key.ptr == 0 {
		return nil, ""
	}
	if id, ok := s.seen[key]; ok {
		return peers.Ref(id), ""
	}
	id = fmt.Sprintf("g%d", len(s.seen))
	s.seen[key] = id
	return nil, id
}

func (s *describer) describe(v any) (*peers.Desc, error) {
	switch x := v.(type) {
	case nil:
		return peers.Null(), nil
	case bool:
		return peers.Bool(x), nil
	case int32:
		return peers.Int(x), nil
	case int64:
		return peers.Long(x), nil
	case float64:
		return peers.Double(x), nil
	case time.Time:
		return peers.Date(x.UnixMilli()), nil
	case string:
		return peers.String(x), nil
	case []byte:
		return peers.Binary(x), nil
	case *gxbig.Decimal:
		if x.Value != "" {
			return peers.BigDecimal(x.Value), nil
		}
		return peers.BigDecimal(x.String()), nil
	case Color:
		return peers.Enum(x.JavaClassName(), x.String()), nil
	case *Color:
		return peers.Enum(x.JavaClassName(), x.String()), nil
	case java_exception.Throwabler:
		return s.exception(x, 0)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice:
		ref, id := s.shared(rv)
		if ref != nil {
			return ref, nil
		}
		typ := map[reflect.Type]string{
			reflect.TypeOf([]int32{}): "[int", reflect.TypeOf([]int64{}): "[long", reflect.TypeOf([]float64{}): "[double",
			reflect.TypeOf([]bool{}): "[boolean", reflect.TypeOf([]string{}): "[string",
		}[rv.Type()]
		l := peers.List(typ).As(id)
		for i := range rv.Len() {
			d, err := s.describe(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, d)
		}
		return l, nil
	case reflect.Map:
		ref, id := s.shared(rv)
		if ref != nil {
			return ref, nil
		}
		m := peers.Map("").As(id)
		iter := rv.MapRange()
		for iter.Next() {
			k, err := s.describe(iter.Key().Interface())
			if err != nil {
				return nil, err
			}
			val, err := s.describe(iter.Value().Interface())
			if err != nil {
				return nil, err
			}
			m.Entries = append(m.Entries, peers.Pair{Key: k, Value: val})
		}
		return m, nil
	case reflect.Pointer:
		if rv.IsNil() {
			return peers.Null(), nil
		}
		p, ok := v.(hessian.POJO)
		if !ok || rv.Elem().Kind() != reflect.Struct {
			break
		}
		ref, id := s.shared(rv)
		if ref != nil {
			return ref, nil
		}
		o := peers.Object(p.JavaClassName()).As(id)
		st := rv.Elem()
		for i := range st.NumField() {
			d, err := s.describe(st.Field(i).Interface())
			if err != nil {
				return nil, err
			}
			o.Fields = append(o.Fields, peers.NamedDesc{Name: st.Type().Field(i).Tag.Get("hessian"), Value: d})
		}
		return o, nil
	}
	return nil, fmt.Errorf("no description for %T", v)
}

// exception describes a Throwabler: class, message and cause (a cause that
// is the exception itself, Java's "no cause yet", is no cause).
func (s *describer) exception(e java_exception.Throwabler, depth int) (*peers.Desc, error) {
	if depth > 16 {
		return nil, fmt.Errorf("exception causes nest deeper than 16")
	}
	d := peers.Exception(e.JavaClassName(), e.Error(), nil)
	rv := reflect.Indirect(reflect.ValueOf(e))
	if rv.Kind() != reflect.Struct {
		return d, nil
	}
	cause := rv.FieldByName("Cause")
	if !cause.IsValid() || cause.IsNil() {
		return d, nil
	}
	c, ok := cause.Interface().(java_exception.Throwabler)
	if !ok || reflect.ValueOf(c).Kind() == reflect.Pointer && reflect.ValueOf(e).Kind() == reflect.Pointer && reflect.ValueOf(c).Pointer() == reflect.ValueOf(e).Pointer() {
		return d, nil
	}
	cd, err := s.exception(c, depth+1)
	if err != nil {
		return nil, err
	}
	d.Cause = cd
	return d, nil
}
