package peers

// Constructors for descriptions, so the table reads like the values it holds.

// Null describes null.
func Null() *Desc { return &Desc{T: "null"} }

// Bool describes a boolean.
func Bool(v bool) *Desc { return &Desc{T: "bool", Bool: v} }

// Int describes a 32-bit int.
func Int(v int32) *Desc { return &Desc{T: "int", Int: v} }

// Long describes a 64-bit long.
func Long(v int64) *Desc { return &Desc{T: "long", Long: v} }

// Double describes a double.
func Double(v float64) *Desc { return &Desc{T: "double", Double: v} }

// Date describes a date, in milliseconds since the epoch.
func Date(ms int64) *Desc { return &Desc{T: "date", Date: ms} }

// String describes a string.
func String(v string) *Desc { return &Desc{T: "string", Str: v} }

// Binary describes a binary.
func Binary(v []byte) *Desc { return &Desc{T: "binary", Bin: v} }

// List describes a list of the given type ("" for untyped).
func List(typ string, items ...*Desc) *Desc {
	if items == nil {
		items = []*Desc{}
	}
	return &Desc{T: "list", Type: typ, Items: items}
}

// Map describes a map of the given type ("" for untyped) from alternating
// keys and values.
func Map(typ string, keyValues ...*Desc) *Desc {
	d := &Desc{T: "map", Type: typ}
	for i := 0; i+1 < len(keyValues); i += 2 {
		d.Entries = append(d.Entries, Pair{keyValues[i], keyValues[i+1]})
	}
	return d
}

// Object describes an object of class from alternating field names and
// values.
func Object(class string, nameValues ...any) *Desc {
	d := &Desc{T: "object", Type: class}
	for i := 0; i+1 < len(nameValues); i += 2 {
		d.Fields = append(d.Fields, NamedDesc{nameValues[i].(string), nameValues[i+1].(*Desc)})
	}
	return d
}

// Enum describes a Java enum constant.
func Enum(class, name string) *Desc { return &Desc{T: "enum", Type: class, Str: name} }

// BigDecimal describes a java.math.BigDecimal by its plain decimal string.
func BigDecimal(v string) *Desc { return &Desc{T: "bigdecimal", Str: v} }

// Exception describes a Java exception with its message and cause (nil for
// none).
func Exception(class, message string, cause *Desc) *Desc {
	return &Desc{T: "exception", Type: class, Str: message, Cause: cause}
}

// Ref describes a reference to the node named id.
func Ref(id string) *Desc { return &Desc{T: "ref", ID: id} }

// As names d so that Ref(id) can point at it, and returns d.
func (d *Desc) As(id string) *Desc {
	d.ID = id
	return d
}

// Varlen marks a list as written without a length (x55/x57 ... Z), and
// returns it.
func (d *Desc) Varlen() *Desc {
	d.Variable = true
	return d
}
