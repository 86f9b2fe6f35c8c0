package jsonbridge

import (
	"strings"
	"testing"
)

func TestTypeParsing(t *testing.T) {
	enc := mustEncoder(t, testOptions(false))
	for _, c := range []struct {
		in   string
		kind kind
		wire string
		elem kind // for lists, arrays and maps
		key  kind // for maps
	}{
		{"int", kindInt, "", 0, 0},
		{" java.lang.Integer ", kindInt, "", 0, 0},
		{"String", kindString, "", 0, 0},
		{"java.lang.Object", kindAny, "", 0, 0},
		{"[I", kindList, "[int", kindInt, 0},
		{"int[]", kindList, "[int", kindInt, 0},
		{"int []", kindList, "[int", kindInt, 0},
		{"[[J", kindList, "[[long", kindList, 0},
		{"long[][]", kindList, "[[long", kindList, 0},
		{"[Ljava.lang.String;", kindList, "[string", kindString, 0},
		{"[Ljava.lang.Object;", kindList, "[object", kindAny, 0},
		{"[Ljava.util.Date;", kindList, "[date", kindDate, 0},
		{"[Ljava.lang.Integer;", kindList, "[java.lang.Integer", kindInt, 0},
		{"Integer[]", kindList, "[java.lang.Integer", kindInt, 0},
		{"[Lcom.example.Item;", kindList, "[com.example.Item", kindClass, 0},
		{"[[Lcom.example.Item;", kindList, "[[com.example.Item", kindList, 0},
		{"java.util.List<String>[]", kindList, "[java.util.List", kindList, 0},
		{"[B", kindBytes, "", 0, 0},
		{"byte[]", kindBytes, "", 0, 0},
		{"[C", kindChars, "", 0, 0},
		{"[[B", kindList, "[[byte", kindBytes, 0},
		{"java.lang.Byte[]", kindList, "[java.lang.Byte", kindByte, 0},
		{"java.util.List", kindList, "", kindAny, 0},
		{"java.util.List<com.example.Item>", kindList, "", kindClass, 0},
		{"java.util.Set<java.lang.Long>", kindList, "java.util.HashSet", kindLong, 0},
		{"java.util.Map", kindMap, "", kindAny, kindAny},
		{"java.util.Map<java.lang.String,com.example.Item>", kindMap, "", kindClass, kindString},
		{"java.util.Map< String , java.util.List< Integer > >", kindMap, "", kindList, kindString},
		{"java.util.Map<Long,?>", kindMap, "", kindAny, kindLong},
		{"java.util.LinkedHashMap<String,String>", kindMap, "java.util.LinkedHashMap", kindString, kindString},
		{"com.example.User", kindClass, "com.example.User", 0, 0},
		{"com.example.Page<com.example.Item>", kindClass, "com.example.Page", 0, 0},
		{"com.example.Outer$Inner", kindClass, "com.example.Outer$Inner", 0, 0},
		{"com.example.Color", kindEnum, "com.example.Color", 0, 0},
		{"java.time.LocalDate", kindLocalDate, "", 0, 0},
	} {
		typ, err := enc.Type(c.in)
		if err != nil {
			t.Errorf("Type(%q): %v", c.in, err)
			continue
		}
		if typ.kind != c.kind || typ.wire != c.wire {
			t.Errorf("Type(%q): kind %d wire %q, want kind %d wire %q", c.in, typ.kind, typ.wire, c.kind, c.wire)
		}
		if c.elem != 0 && (typ.elem == nil || typ.elem.kind != c.elem) {
			t.Errorf("Type(%q): element %+v, want kind %d", c.in, typ.elem, c.elem)
		}
		if c.key != 0 && (typ.key == nil || typ.key.kind != c.key) {
			t.Errorf("Type(%q): key %+v, want kind %d", c.in, typ.key, c.key)
		}
		if typ.String() != strings.TrimSpace(c.in) {
			t.Errorf("Type(%q).String() = %q", c.in, typ.String())
		}
	}

	// The schema's classes are linked, cycles included.
	user, _ := enc.Type("com.example.User")
	if user.class == nil || user.class.fields["friend"].class != user.class {
		t.Error("com.example.User is not linked to its schema entry and to itself")
	}
	if f := user.class.fields["items"]; f.elem.class == nil || f.elem.class.fields["qty"].kind != kindInt {
		t.Error("List<com.example.Item> does not type its elements by the schema")
	}
	if !user.class.fields["age"].primitive || user.class.fields["address"].class.fields["zip"].primitive {
		t.Error("primitive flags wrong")
	}
}

func TestTypeErrors(t *testing.T) {
	enc := mustEncoder(t, testOptions(false))
	for _, c := range []struct{ in, err string }{
		{"", `java type "": expected a type name at offset 0`},
		{"java.util.List<", `java type "java.util.List<": expected a type name at offset 15`},
		{"java.util.List<int", `java type "java.util.List<int": expected ',' or '>' at offset 18`},
		{"java.util.List<A,B>", `java type "java.util.List<A,B>": java.util.List takes one type argument, found 2`},
		{"java.util.Map<String>", `java type "java.util.Map<String>": java.util.Map takes two type arguments, found 1`},
		{"java.util.Map<com.example.Item,String>", `java type "java.util.Map<com.example.Item,String>": map keys of type com.example.Item cannot come from JSON object keys`},
		{"int<String>", `java type "int<String>": int takes no type arguments`},
		{"com..Foo", `java type "com..Foo": "com..Foo" is not a Java class name`},
		{"1abc", `java type "1abc": "1abc" is not a Java class name`},
		{"int[", `java type "int[": unexpected "[" at offset 3`},
		{"int x", `java type "int x": unexpected "x" at offset 4`},
		{"[", `java type "[": array descriptor without a component type`},
		{"[X", `java type "[X": invalid array descriptor "[X"`},
		{"[Ljava.lang.String", `java type "[Ljava.lang.String": array descriptor "[Ljava.lang.String" lacks the closing ';'`},
		{"[L;", `java type "[L;": invalid class name "" in array descriptor`},
	} {
		_, err := enc.Type(c.in)
		if err == nil || err.Error() != c.err {
			t.Errorf("Type(%q): got error %v, want %q", c.in, err, c.err)
		}
	}
}

func TestNewEncoderErrors(t *testing.T) {
	for _, c := range []struct {
		opts EncodeOptions
		err  string
	}{
		{EncodeOptions{Schema: Schema{"a b": nil}}, `schema class "a b": not a Java class name`},
		{EncodeOptions{Schema: Schema{"java.util.Map": nil}}, `schema class "java.util.Map": a built-in type has no schema`},
		{EncodeOptions{Schema: Schema{"com.x.A": {"f": "java.util.List<"}}}, `schema class com.x.A, field f: java type "java.util.List<": expected a type name at offset 15`},
		{EncodeOptions{Enums: map[string][]string{"x y": nil}}, `enum "x y": not a Java class name`},
		{EncodeOptions{Enums: map[string][]string{"int": nil}}, `enum "int": a built-in type, not an enum`},
		{EncodeOptions{Enums: map[string][]string{"com.x.E": nil}, Schema: Schema{"com.x.E": nil}}, `schema class "com.x.E": declared as an enum too`},
	} {
		_, err := NewEncoder(c.opts)
		if err == nil || err.Error() != c.err {
			t.Errorf("NewEncoder: got error %v, want %q", err, c.err)
		}
	}
}
