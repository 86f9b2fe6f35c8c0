package hessian

// Object is a Java object: its class name and its fields in declaration order.
type Object struct {
	Class  string
	Fields []Field
}

// Field is one field of an Object.
type Field struct {
	Name  string
	Value any
}

// Get returns the value of the named field.
func (o *Object) Get(name string) (any, bool) {
	for i := range o.Fields {
		if o.Fields[i].Name == name {
			return o.Fields[i].Value, true
		}
	}
	return nil, false
}

// List is a Java list or array. Type is the hessian type string; "" is an
// untyped list.
type List struct {
	Type  string
	Items []any
}

// Map is a Java map, entries in wire order. Type is the hessian type string;
// "" is an untyped map ('H').
type Map struct {
	Type    string
	Entries []Entry
}

// Entry is one key/value pair of a Map.
type Entry struct {
	Key, Value any
}

// Get returns the value stored under key (compared with ==, so keys must be
// comparable: strings, numbers, bools). A key that cannot be compared, such
// as a []byte, is never found.
func (m *Map) Get(key any) (any, bool) {
	if !comparableKey(key) {
		return nil, false
	}
	for i := range m.Entries {
		if m.Entries[i].Key == key {
			return m.Entries[i].Value, true
		}
	}
	return nil, false
}

// comparableKey reports whether == on k cannot panic: false for the slice
// and map types the model and Encode use.
func comparableKey(k any) bool {
	switch k.(type) {
	case []byte, []any, []string, []int, []int32, []int64, []float64, []bool,
		map[string]any, map[string]string, map[any]any, List, Map, Object, Exception:
		return false
	}
	return true
}

// BigDecimal is a java.math.BigDecimal, kept as its decimal string
// ("-12.3400") so no precision is lost.
type BigDecimal struct {
	Value string
}

// BigInteger is a java.math.BigInteger, kept as its decimal string.
type BigInteger struct {
	Value string
}
