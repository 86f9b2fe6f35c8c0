package jsonbridge

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

// fuzzTypes are the declared types FuzzEncode picks from.
var fuzzTypes = []string{
	"int", "long", "double", "float", "boolean", "char", "short", "byte",
	"java.lang.String", "java.lang.Object", "java.lang.Integer", "java.lang.Number",
	"java.math.BigDecimal", "java.math.BigInteger", "java.util.Date",
	"java.time.LocalDate", "java.time.LocalTime", "java.time.LocalDateTime",
	"[I", "[Ljava.lang.String;", "byte[]", "char[]", "long[][]",
	"java.util.List", "java.util.List<java.lang.Integer>", "java.util.Set<java.lang.String>",
	"java.util.Map", "java.util.Map<java.lang.Integer,java.lang.Long>", "java.util.Map<String,com.example.Item>",
	"com.example.User", "com.example.Color", "com.example.Unknown", "java.util.List<com.example.Item>",
	"com.example.Item[]",
}

// FuzzEncode feeds arbitrary JSON text, as one of fuzzTypes, in either
// invocation mode. It must never panic; an error must be a *PathError; a
// success must produce hessian the decoder reads back in full, and that
// AppendJSON turns into valid JSON.
func FuzzEncode(f *testing.F) {
	f.Add([]byte(userJSON), uint8(29), false)
	f.Add([]byte(`{"a":[1,2.5,"x",null,true,{"class":"com.example.Dog","weight":1}]}`), uint8(9), true)
	f.Add([]byte(`[1,"2",3e2]`), uint8(18), false)
	f.Add([]byte(`"2024-02-29T10:00:00.5"`), uint8(17), false)
	encs := [2]*Encoder{mustEncoder(f, testOptions(false)), mustEncoder(f, testOptions(true))}
	types := make([][]*Type, 2)
	for i, enc := range encs {
		for _, name := range fuzzTypes {
			t, err := enc.Type(name)
			if err != nil {
				f.Fatal(err)
			}
			types[i] = append(types[i], t)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, typeIndex uint8, generic bool) {
		mode := 0
		if generic {
			mode = 1
		}
		typ := types[mode][int(typeIndex)%len(fuzzTypes)]
		e := hessian.NewEncoder(nil)
		err := encs[mode].Encode(e, data, typ)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path == "" || pe.Path[0] != '$' {
				t.Fatalf("error %v (%T) is not a *PathError with a path", err, err)
			}
			return
		}
		d := hessian.NewDecoder(e.Bytes())
		v, err := d.Decode()
		if err != nil {
			t.Fatalf("decoding what %s %q encoded to (% x): %v", typ, data, e.Bytes(), err)
		}
		if d.Remaining() != 0 {
			t.Fatalf("%d bytes left over", d.Remaining())
		}
		out, err := AppendJSON(nil, v, nil)
		if err != nil {
			t.Fatalf("AppendJSON(%s): %v", show(v), err)
		}
		if !json.Valid(out) {
			t.Fatalf("AppendJSON(%s) wrote invalid JSON %q", show(v), out)
		}
	})
}

// FuzzType feeds arbitrary type expressions, as an operator's (Type) and
// as a client's (ClientType): never a panic, and a type that compiles as
// a client's compiles as an operator's too.
func FuzzType(f *testing.F) {
	for _, s := range fuzzTypes {
		f.Add(s)
	}
	f.Add("java.util.Map<String,java.util.List<? extends com.example.Item>>[][]")
	f.Add("[[[[Lcom.sun.rowset.JdbcRowSetImpl;")
	enc := mustEncoder(f, EncodeOptions{Generic: true, RestrictClasses: true, AllowClasses: []string{"com.example.*"}})
	f.Fuzz(func(t *testing.T, s string) {
		_, opErr := enc.Type(s)
		if _, err := enc.ClientType(s); err == nil && opErr != nil {
			t.Errorf("%q: a client's type but not an operator's: %v", s, opErr)
		}
	})
}
