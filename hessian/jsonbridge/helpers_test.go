package jsonbridge

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

// show renders a value of the hessian value model compactly and without
// ambiguity, so that tests compare the exact Java types that came out:
//
//	int(1) long(1) double(1.5) "s" true null bin(0102) date(2024-05-01T08:30:00.123Z)
//	list[type](…) map[type]{k: v, …} obj Class{field: v, …} BigDecimal(1.5) BigInteger(7)
func show(v any) string {
	var b strings.Builder
	showTo(&b, v, 0)
	return b.String()
}

func showTo(b *strings.Builder, v any, depth int) {
	if depth > 50 {
		b.WriteString("…")
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int32:
		fmt.Fprintf(b, "int(%d)", v)
	case int64:
		fmt.Fprintf(b, "long(%d)", v)
	case float64:
		if math.IsNaN(v) {
			b.WriteString("double(NaN)")
		} else {
			fmt.Fprintf(b, "double(%s)", strconv.FormatFloat(v, 'g', -1, 64))
		}
	case string:
		b.WriteString(strconv.Quote(v))
	case []byte:
		fmt.Fprintf(b, "bin(%s)", hex.EncodeToString(v))
	case time.Time:
		fmt.Fprintf(b, "date(%s)", v.UTC().Format("2006-01-02T15:04:05.000Z"))
	case hessian.BigDecimal:
		fmt.Fprintf(b, "BigDecimal(%s)", v.Value)
	case hessian.BigInteger:
		fmt.Fprintf(b, "BigInteger(%s)", v.Value)
	case *hessian.List:
		fmt.Fprintf(b, "list[%s](", v.Type)
		for i, item := range v.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			showTo(b, item, depth+1)
		}
		b.WriteString(")")
	case *hessian.Map:
		fmt.Fprintf(b, "map[%s]{", v.Type)
		for i, e := range v.Entries {
			if i > 0 {
				b.WriteString(", ")
			}
			showTo(b, e.Key, depth+1)
			b.WriteString(": ")
			showTo(b, e.Value, depth+1)
		}
		b.WriteString("}")
	case *hessian.Object:
		fmt.Fprintf(b, "obj %s{", v.Class)
		for i, f := range v.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			showTo(b, f.Value, depth+1)
		}
		b.WriteString("}")
	case fmt.Stringer: // java.time values, Locale
		fmt.Fprintf(b, "%s(%s)", strings.TrimPrefix(fmt.Sprintf("%T", v), "hessian."), v)
	default:
		fmt.Fprintf(b, "?%T(%v)", v, v)
	}
}

// encodeOne encodes json as javaType with enc and decodes the hessian bytes
// back into the value model.
func encodeOne(t *testing.T, enc *Encoder, json, javaType string) (any, error) {
	t.Helper()
	typ, err := enc.Type(javaType)
	if err != nil {
		t.Fatalf("Type(%q): %v", javaType, err)
	}
	e := hessian.NewEncoder(nil)
	if err := enc.Encode(e, []byte(json), typ); err != nil {
		return nil, err
	}
	return decodeAll(t, e.Bytes(), 1)[0], nil
}

// decodeAll decodes exactly n values from b.
func decodeAll(t *testing.T, b []byte, n int) []any {
	t.Helper()
	d := hessian.NewDecoder(b)
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		v, err := d.Decode()
		if err != nil {
			t.Fatalf("decoding value %d of the encoder's output % x: %v", i, b, err)
		}
		out = append(out, v)
	}
	if d.Remaining() != 0 {
		t.Fatalf("%d bytes left after %d values in % x", d.Remaining(), n, b)
	}
	return out
}

func mustEncoder(t testing.TB, opts EncodeOptions) *Encoder {
	t.Helper()
	enc, err := NewEncoder(opts)
	if err != nil {
		t.Fatalf("NewEncoder: %v", err)
	}
	return enc
}

// testSchema is the DTO model the tests share.
var testSchema = Schema{
	"com.example.User": {
		"id":       "long",
		"name":     "java.lang.String",
		"age":      "int",
		"active":   "boolean",
		"address":  "com.example.Address",
		"tags":     "java.util.List<java.lang.String>",
		"birthday": "java.util.Date",
		"salary":   "java.math.BigDecimal",
		"items":    "java.util.List<com.example.Item>",
		"color":    "com.example.Color",
		"friend":   "com.example.User",
		"scores":   "java.util.Map<java.lang.String, java.lang.Integer>",
	},
	"com.example.Address": {
		"street": "String",
		"zip":    "java.lang.Integer",
	},
	"com.example.Item": {
		"sku":   "java.lang.String",
		"qty":   "int",
		"price": "java.math.BigDecimal",
	},
	"com.example.Dog": {
		"name":   "java.lang.String",
		"weight": "double",
	},
}

var testEnums = map[string][]string{
	"com.example.Color": {"RED", "GREEN"},
	"com.example.Mood":  nil,
}

func testOptions(generic bool) EncodeOptions {
	return EncodeOptions{Generic: generic, Schema: testSchema, Enums: testEnums}
}
