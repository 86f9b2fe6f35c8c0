package jsonbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

// A typical request body: an order DTO with 8 fields, among them a nested
// DTO and a list of 10 DTOs.
var benchSchema = Schema{
	"com.example.Order": {
		"id":       "long",
		"customer": "java.lang.String",
		"email":    "java.lang.String",
		"priority": "int",
		"express":  "boolean",
		"address":  "com.example.Address",
		"tags":     "java.util.List<java.lang.String>",
		"lines":    "java.util.List<com.example.Line>",
	},
	"com.example.Address": {"street": "java.lang.String", "city": "java.lang.String", "zip": "java.lang.String"},
	"com.example.Line":    {"sku": "java.lang.String", "name": "java.lang.String", "qty": "int", "price": "java.math.BigDecimal"},
}

func benchRequest() []byte {
	var b strings.Builder
	b.WriteString(`{"id": 1234567890123, "customer": "Ann Lee", "email": "ann@example.com", "priority": 3, "express": true,
		"address": {"street": "1 Main St", "city": "Springfield", "zip": "12345"},
		"tags": ["gift", "fragile", "weekend"], "lines": [`)
	for i := range 10 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"sku": "SKU-%04d", "name": "Item number %d", "qty": %d, "price": %d.99}`, i, i, i+1, 10+i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func BenchmarkEncodeRequest(b *testing.B) {
	body := benchRequest()
	for _, mode := range []struct {
		name    string
		generic bool
	}{{"typed", false}, {"generic", true}} {
		enc := mustEncoder(b, EncodeOptions{Generic: mode.generic, Schema: benchSchema})
		typ, err := enc.Type("com.example.Order")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("jsonbridge/"+mode.name, func(b *testing.B) {
			e := hessian.NewEncoder(make([]byte, 0, 4096))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(e.Bytes()[:0])
				if err := enc.Encode(e, body, typ); err != nil {
					b.Fatal(err)
				}
			}
		})
		// In place, with a deadline: what the gateway's routes use.
		b.Run("jsonbridge-context/"+mode.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			e := hessian.NewEncoder(make([]byte, 0, 4096))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(e.Bytes()[:0])
				if err := enc.EncodeContext(ctx, e, body, typ); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The naive path: encoding/json into interface{}, then the hessian
	// encoder on the result (which knows no Java types: every number is a
	// double, every object an untyped map).
	b.Run("naive/unmarshal+Encode", func(b *testing.B) {
		e := hessian.NewEncoder(make([]byte, 0, 4096))
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			e.Reset(e.Bytes()[:0])
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				b.Fatal(err)
			}
			if err := e.Encode(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchResponse is the typed request decoded back: the value model a
// provider's answer of that shape decodes to.
func benchResponse(b *testing.B) any {
	enc := mustEncoder(b, EncodeOptions{Schema: benchSchema})
	typ, _ := enc.Type("com.example.Order")
	e := hessian.NewEncoder(nil)
	if err := enc.Encode(e, benchRequest(), typ); err != nil {
		b.Fatal(err)
	}
	v, err := hessian.NewDecoder(e.Bytes()).Decode()
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkAppendJSON(b *testing.B) {
	v := benchResponse(b)
	out, err := AppendJSON(nil, v, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("jsonbridge", func(b *testing.B) {
		buf := make([]byte, 0, 2*len(out))
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = AppendJSON(buf[:0], v, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// encoding/json on the Plain() form, converted once outside the loop.
	plain := hessian.Plain(v)
	b.Run("encoding_json/Marshal(Plain)", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json/Plain+Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(hessian.Plain(v)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
