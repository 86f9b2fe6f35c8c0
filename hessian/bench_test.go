package hessian

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The same four payloads through this codec (Hessian) and through
// encoding/json (JSON), the baseline: encode, decode, and both.
//
//	go test -run '^$' -bench . -benchmem ./hessian

type benchUser struct {
	ID     int64   `json:"id"`
	Name   string  `json:"name"`
	Age    int32   `json:"age"`
	Active bool    `json:"active"`
	Score  float64 `json:"score"`
}

func benchPOJO(i int) *Object {
	return &Object{Class: "com.example.User", Fields: []Field{
		{"id", int64(1234567890123 + i)},
		{"name", "Alice Example"},
		{"age", int32(42)},
		{"active", true},
		{"score", 98.25},
	}}
}

func benchStruct(i int) benchUser {
	return benchUser{ID: 1234567890123 + int64(i), Name: "Alice Example", Age: 42, Active: true, Score: 98.25}
}

type benchPayload struct {
	name  string
	model any // for the hessian codec
	plain any // the equivalent Go value for encoding/json
	fresh func() any
}

func benchPayloads() []benchPayload {
	pojos := &List{Type: "java.util.ArrayList"}
	structs := make([]benchUser, 100)
	for i := range 100 {
		pojos.Items = append(pojos.Items, benchPOJO(i))
		structs[i] = benchStruct(i)
	}
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 1500)[:64<<10]
	m := &Map{Type: "java.util.HashMap"}
	gm := make(map[string]int, 1000)
	for i := range 1000 {
		k := fmt.Sprintf("key-%04d", i)
		m.Entries = append(m.Entries, Entry{k, int32(i)})
		gm[k] = i
	}
	return []benchPayload{
		{"POJO", benchPOJO(0), benchStruct(0), func() any { return new(benchUser) }},
		{"POJOx100", pojos, structs, func() any { return new([]benchUser) }},
		{"String64K", long, long, func() any { return new(string) }},
		{"Map1000", m, gm, func() any { return new(map[string]int) }},
	}
}

func BenchmarkHessian(b *testing.B) {
	for _, p := range benchPayloads() {
		wire := encodeOne(b, p.model)
		b.Run(p.name+"/encode", func(b *testing.B) {
			e := NewEncoder(nil)
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(e.Bytes()[:0])
				if err := e.Encode(p.model); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/decode", func(b *testing.B) {
			d := NewDecoder(nil)
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(wire)
				if _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/roundtrip", func(b *testing.B) {
			e := NewEncoder(nil)
			d := NewDecoder(nil)
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				e.Reset(e.Bytes()[:0])
				if err := e.Encode(p.model); err != nil {
					b.Fatal(err)
				}
				d.Reset(e.Bytes())
				if _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJSON(b *testing.B) {
	for _, p := range benchPayloads() {
		wire, err := json.Marshal(p.plain)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.name+"/encode", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(p.plain); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if err := json.Unmarshal(wire, p.fresh()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/roundtrip", func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := json.Marshal(p.plain)
				if err != nil {
					b.Fatal(err)
				}
				if err := json.Unmarshal(out, p.fresh()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
