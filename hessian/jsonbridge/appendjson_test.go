package jsonbridge

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestAppendJSON(t *testing.T) {
	obj := func(class string, kv ...any) *hessian.Object {
		o := &hessian.Object{Class: class}
		for i := 0; i < len(kv); i += 2 {
			o.Fields = append(o.Fields, hessian.Field{Name: kv[i].(string), Value: kv[i+1]})
		}
		return o
	}
	hmap := func(typ string, kv ...any) *hessian.Map {
		m := &hessian.Map{Type: typ}
		for i := 0; i < len(kv); i += 2 {
			m.Entries = append(m.Entries, hessian.Entry{Key: kv[i], Value: kv[i+1]})
		}
		return m
	}
	list := func(typ string, items ...any) *hessian.List { return &hessian.List{Type: typ, Items: items} }

	cause := obj("java.sql.SQLException", "detailMessage", "timeout", "cause", nil)
	cause.Fields[1].Value = cause // Java's "no cause" marker
	exception := obj("com.example.BizException",
		"detailMessage", "no stock",
		"cause", cause,
		"stackTrace", list("[java.lang.StackTraceElement", obj("java.lang.StackTraceElement", "declaringClass", "com.example.Svc", "methodName", "buy", "fileName", "Svc.java", "lineNumber", int32(42))),
		"suppressedExceptions", list(""))
	shared := obj("com.example.Item", "sku", "A")

	keepClass := &DecodeOptions{KeepClass: true}
	for _, c := range []struct {
		name string
		v    any
		opts *DecodeOptions
		want string
	}{
		{"null", nil, nil, `null`},
		{"bools", list("", true, false), nil, `[true,false]`},
		{"int", int32(-5), nil, `-5`},
		{"long safe", int64(9007199254740991), nil, `9007199254740991`},
		{"long unsafe", int64(9007199254740992), nil, `"9007199254740992"`},
		{"long unsafe negative", int64(-9007199254740992), nil, `"-9007199254740992"`},
		{"long min", int64(math.MinInt64), nil, `"-9223372036854775808"`},
		{"long as number", int64(9007199254740993), &DecodeOptions{LongAsNumber: true}, `9007199254740993`},
		{"double", 1.5, nil, `1.5`},
		{"double integral", 3.0, nil, `3`},
		{"double large", 1e21, nil, `1e+21`},
		{"double below e21", 1e20, nil, `100000000000000000000`},
		{"double small", 1e-7, nil, `1e-7`},
		{"double 1e-6", 0.000001, nil, `0.000001`},
		{"double negative zero", math.Copysign(0, -1), nil, `-0`},
		{"NaN", math.NaN(), nil, `null`},
		{"Inf", list("", math.Inf(1), math.Inf(-1)), nil, `[null,null]`},
		{"escapes", "a\"b\\c\n\r\t\b\f\x01\x1f\x7f/", nil, `"a\"b\\c\n\r\t\b\f\u0001\u001f` + "\x7f" + `/"`},
		{"unicode", "é😀<>&", nil, `"é😀<>&"`},
		{"invalid UTF-8", "a\xffb\xc3", nil, `"a\ufffdb\ufffd"`},
		{"line separators", "a\u2028b\u2029", nil, `"a\u2028b\u2029"`},
		{"binary", []byte{1, 2, 3}, nil, `"AQID"`},
		{"empty binary", []byte{}, nil, `""`},
		{"date", time.Date(2024, 5, 1, 10, 30, 0, 123456789, time.FixedZone("CEST", 7200)), nil, `"2024-05-01T08:30:00.123Z"`},
		{"BigDecimal", hessian.BigDecimal{Value: "12.50"}, nil, `"12.50"`},
		{"BigDecimal pointer", &hessian.BigDecimal{Value: "-1E+3"}, nil, `"-1E+3"`},
		{"BigDecimal as number", hessian.BigDecimal{Value: "1E+3"}, &DecodeOptions{BigAsNumber: true}, `1E+3`},
		{"BigInteger as number", hessian.BigInteger{Value: "-123456789012345678901234567890"}, &DecodeOptions{BigAsNumber: true}, `-123456789012345678901234567890`},
		{"malformed big stays a string", hessian.BigDecimal{Value: "+1"}, &DecodeOptions{BigAsNumber: true}, `"+1"`},
		{"nil pointers", list("", (*hessian.List)(nil), (*hessian.Map)(nil), (*hessian.Object)(nil), (*hessian.BigDecimal)(nil)), nil, `[null,null,null,null]`},
		{"java.time", list("", hessian.LocalDate{Year: 2024, Month: 2, Day: 29},
			hessian.LocalDateTime{Date: hessian.LocalDate{Year: 2024, Month: 5, Day: 1}, Time: hessian.LocalTime{Hour: 8, Minute: 30, Nano: 5000000}},
			hessian.Duration{Seconds: 3723, Nanos: 500000000}, hessian.Locale{Value: "en_US"}), nil,
			`["2024-02-29","2024-05-01T08:30:00.005","PT1H2M3.5S","en_US"]`},
		{"list", list("[int", int32(1), int32(2)), nil, `[1,2]`},
		{"empty list", list(""), nil, `[]`},
		{"map", hmap("", "a", int32(1), "b c", list("")), nil, `{"a":1,"b c":[]}`},
		{"generic DTO drops class", hmap("", "class", "com.example.User", "id", int32(1)), nil, `{"id":1}`},
		{"HashMap DTO drops class", hmap("java.util.HashMap", "id", int32(1), "class", "com.example.User"), nil, `{"id":1}`},
		{"KeepClass keeps it", hmap("", "class", "com.example.User", "id", int32(1)), keepClass, `{"class":"com.example.User","id":1}`},
		{"typed map keeps class", hmap("java.util.LinkedHashMap", "class", "x"), nil, `{"class":"x"}`},
		{"non-string class kept", hmap("", "class", int32(1)), nil, `{"class":1}`},
		{"non-string keys", hmap("", int32(1), "a", int64(2), "b", nil, "c", true, "d", 1.5, "e",
			time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), "f", hessian.BigDecimal{Value: "0.1"}, "g",
			list("", int32(1), "x\"y"), "h", hessian.LocalDate{Year: 2024, Month: 1, Day: 2}, "i"), nil,
			`{"1":"a","2":"b","null":"c","true":"d","1.5":"e","2024-05-01T00:00:00.000Z":"f","0.1":"g","[1,\"x\\\"y\"]":"h","2024-01-02":"i"}`},
		{"object", obj("com.example.User", "id", int64(1), "name", "Ann", "address", obj("com.example.Address", "zip", nil)), nil, `{"id":1,"name":"Ann","address":{"zip":null}}`},
		{"object with class", obj("com.example.User", "id", int64(1)), keepClass, `{"class":"com.example.User","id":1}`},
		{"empty object", obj("com.example.Empty"), keepClass, `{"class":"com.example.Empty"}`},
		{"enum", obj("com.example.Color", "name", "RED"), nil, `"RED"`},
		{"exception", exception, nil, `{"class":"com.example.BizException","message":"no stock","cause":{"class":"java.sql.SQLException","message":"timeout"}}`},
		{"Exception value", &hessian.Exception{Class: "a.B", Message: "m", Cause: &hessian.Exception{Class: "c.D"}}, nil, `{"class":"a.B","message":"m","cause":{"class":"c.D","message":""}}`},
		{"shared reference", list("", shared, shared), nil, `[{"sku":"A"},{"sku":"A"}]`},
	} {
		got, err := AppendJSON(nil, c.v, c.opts)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON %s", c.name, got)
		}
	}
}

func TestAppendJSONAppends(t *testing.T) {
	got, err := AppendJSON([]byte("x="), int32(1), nil)
	if err != nil || string(got) != "x=1" {
		t.Fatalf("got %q, %v", got, err)
	}
	bad := &hessian.List{Items: []any{struct{}{}}}
	got, err = AppendJSON([]byte("x="), bad, nil)
	if err == nil || string(got) != "x=" {
		t.Fatalf("on error: got %q, %v; want dst unchanged and an error", got, err)
	}
}

func TestAppendJSONErrors(t *testing.T) {
	selfList := &hessian.List{}
	selfList.Items = []any{int32(1), selfList}
	selfMap := &hessian.Map{}
	selfMap.Entries = []hessian.Entry{{Key: "a b", Value: selfMap}}
	parent := &hessian.Object{Class: "com.example.Order"}
	child := &hessian.Object{Class: "com.example.Line", Fields: []hessian.Field{{Name: "order", Value: parent}}}
	parent.Fields = []hessian.Field{{Name: "lines", Value: &hessian.List{Items: []any{child}}}}
	intKeyed := &hessian.Map{}
	intKeyed.Entries = []hessian.Entry{{Key: int32(7), Value: intKeyed}}

	big := &hessian.List{}
	for range 100 {
		big.Items = append(big.Items, "0123456789")
	}
	deep := &hessian.List{}
	for l, i := deep, 0; i < 1100; i++ {
		next := &hessian.List{}
		l.Items = []any{next}
		l = next
	}

	for _, c := range []struct {
		name string
		v    any
		opts *DecodeOptions
		err  string
	}{
		{"cycle in a list", selfList, nil, `$[1]: cycle: the value contains itself, which JSON cannot express`},
		{"cycle in a map", selfMap, nil, `$["a b"]: cycle: the value contains itself, which JSON cannot express`},
		{"cycle through objects", parent, nil, `$.lines[0].order: cycle: the value contains itself, which JSON cannot express`},
		{"cycle under a number key", intKeyed, nil, `$["7"]: cycle: the value contains itself, which JSON cannot express`},
		{"not a hessian value", &hessian.List{Items: []any{int32(1), []string{"x"}}}, nil, `$[1]: cannot write a Go []string as JSON: not a hessian value`},
		{"too large", big, &DecodeOptions{MaxBytes: 100}, `$: JSON output larger than 100 bytes`},
		{"too deep", deep, nil, `$` + strings.Repeat("[0]", 1000) + `: nesting deeper than 1000`},
	} {
		_, err := AppendJSON(nil, c.v, c.opts)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a *PathError", c.name, err)
			continue
		}
		if err.Error() != c.err {
			t.Errorf("%s:\n got %s\nwant %s", c.name, err, c.err)
		}
	}
}

// JSON → hessian bytes → hessian.Decoder → AppendJSON comes back as the
// same JSON (modulo the documented normalizations), in both invocation modes.
func TestRoundTrip(t *testing.T) {
	const userOut = `{"id":"9007199254740993","name":"Ann \"A\" Lee","age":42,"active":true,` +
		`"address":{"street":"1 Main St","zip":12345},"tags":["a","7"],"birthday":"1990-01-02T03:04:05.678Z","salary":"12345.67",` +
		`"items":[{"sku":"A-1","qty":2,"price":"9.99"},{"sku":"B-2","qty":1,"price":"0.5"}],` +
		`"color":"GREEN","scores":{"math":90},"nickname":"annie","friend":null}`
	for _, c := range []struct {
		javaType, in, out string
	}{
		{"com.example.User", userJSON, userOut},
		{"java.lang.Object", `{"a":1,"b":[true,null,"x\u0001\u00e9"],"c":{"d":1.5,"e":9007199254740993,"f":-0.25,"g":1e300}}`,
			`{"a":1,"b":[true,null,"x\u0001é"],"c":{"d":1.5,"e":"9007199254740993","f":-0.25,"g":1e+300}}`},
		{"java.util.List<com.example.Item>", `[{"sku":"x","qty":"1","price":1e-3}]`, `[{"sku":"x","qty":1,"price":"1e-3"}]`},
		{"java.util.Map<java.lang.Integer,java.time.LocalDate>", `{"1":"2024-02-29","2":null}`, `{"1":"2024-02-29","2":null}`},
		{"java.time.LocalDateTime", `"2024-05-01T08:30:15.123456"`, `"2024-05-01T08:30:15.123456"`},
		{"java.time.LocalTime", `"23:59:59.000000001"`, `"23:59:59.000000001"`},
		{"byte[]", `"AQID"`, `"AQID"`},
		{"[I", `[1,-2]`, `[1,-2]`},
		{"java.math.BigInteger", `"-123456789012345678901234567890"`, `"-123456789012345678901234567890"`},
		{"java.util.Date", `0`, `"1970-01-01T00:00:00.000Z"`},
		{"char[]", `["h","i"]`, `"hi"`},
	} {
		for _, generic := range []bool{false, true} {
			v, err := encodeOne(t, mustEncoder(t, testOptions(generic)), c.in, c.javaType)
			if err != nil {
				t.Errorf("%s (generic=%v): %v", c.javaType, generic, err)
				continue
			}
			got, err := AppendJSON(nil, v, nil)
			if err != nil {
				t.Errorf("%s (generic=%v): AppendJSON: %v", c.javaType, generic, err)
				continue
			}
			if string(got) != c.out {
				t.Errorf("%s (generic=%v):\n got %s\nwant %s", c.javaType, generic, got, c.out)
			}
		}
	}
}

// The hessian value of a typed DTO keeps its classes; the generic one is
// maps with "class" keys. With KeepClass both say which class each value has.
func TestRoundTripKeepClass(t *testing.T) {
	in := `{"address":{"zip":1},"items":[{"qty":1}],"color":"RED"}`
	for generic, want := range map[bool]string{
		false: `{"class":"com.example.User","address":{"class":"com.example.Address","zip":1},"items":[{"class":"com.example.Item","qty":1}],"color":"RED"}`,
		true:  `{"class":"com.example.User","address":{"class":"com.example.Address","zip":1},"items":[{"class":"com.example.Item","qty":1}],"color":"RED"}`,
	} {
		v, err := encodeOne(t, mustEncoder(t, testOptions(generic)), in, "com.example.User")
		if err != nil {
			t.Fatal(err)
		}
		switch v.(type) {
		case *hessian.Object:
			if generic {
				t.Errorf("generic: got an *Object, want a map")
			}
		case *hessian.Map:
			if !generic {
				t.Errorf("typed: got a map, want an *Object")
			}
		}
		got, err := AppendJSON(nil, v, &DecodeOptions{KeepClass: true})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("generic=%v:\n got %s\nwant %s", generic, got, want)
		}
	}
}

// AppendJSON agrees with encoding/json on what strings are: every string
// it writes decodes back to the (UTF-8-repaired) original.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	var all strings.Builder
	for c := 0; c < 0x80; c++ {
		all.WriteByte(byte(c))
	}
	for _, s := range []string{all.String(), "\u2028\u2029\ufeff", "\xed\xa0\x80", "a\xc0\xafb", strings.Repeat("é", 100)} {
		out := appendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, out, err)
		}
		want := string([]rune(s)) // each invalid byte becomes U+FFFD
		if back != want {
			t.Errorf("%q → %s → %q", s, out, back)
		}
	}
}
