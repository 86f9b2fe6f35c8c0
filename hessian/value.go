package hessian

// The value model. Decode returns, and Encode accepts, these Go types:
//
//	hessian            Go
//	null               nil
//	boolean            bool
//	int                int32
//	long               int64
//	double             float64
//	date               time.Time (UTC, millisecond precision)
//	string             string
//	binary             []byte
//	list               *List   (Type keeps the type string: "", "java.util.ArrayList", "[int", "[java.lang.String", ...)
//	map                *Map    (Type keeps the type string: "" for an untyped map, "java.util.HashMap", ...)
//	object             *Object (Class plus fields in declaration order)
//
// Java classes Dubbo's hessian-lite writes in a special form decode to
// dedicated types: BigDecimal, BigInteger. Enums and exceptions stay *Object
// (see EnumName and AsException). Shared and circular references decode to
// the same pointer, so a graph with cycles decodes without looping and
// without duplication.
//
// For callers who do not care about Java types, Plain turns a value into
// map[string]any / []any / numbers / strings, and Encode also accepts plain
// Go values: int, int8, int16, uint8, uint16 (written as int when they fit in
// 32 bits, else long), uint32, uint64 (long), float32, []any, []string,
// map[string]any, map[any]any, and pointers to the model types.

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
// comparable: strings, numbers, bools).
func (m *Map) Get(key any) (any, bool) {
	for i := range m.Entries {
		if m.Entries[i].Key == key {
			return m.Entries[i].Value, true
		}
	}
	return nil, false
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
