package hessian

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"weak"
)

// Forms a reader must accept that this encoder (like hessian-lite) does not
// write for the value in question.
func TestDecodeOtherForms(t *testing.T) {
	ints := func(vs ...int32) []any {
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v
		}
		return out
	}
	cases := []struct {
		name string
		wire string
		want any
	}{
		{"int as I", "49 00 00 00 01", int32(1)},
		{"long as L", "4c 00 00 00 00 00 00 00 01", int64(1)},
		{"long as Y", "59 00 00 00 01", int64(1)},
		{"long 3-byte", "3c 00 01", int64(1)},
		{"double as D", "44 3f f0 00 00 00 00 00 00", 1.0},
		{"double short", "5e 00 01", 1.0},
		{"double mill negative", "5f ff ff fc 18", -1.0},
		{"string S short", "53 00 01 61", "a"},
		{"string 0x30 form", "30 01 61", "a"},
		{"string chunks, compact final", "52 00 01 61 01 62", "ab"},
		{"string chunks, 0x30 final", "52 00 01 61 30 01 62", "ab"},
		{"string three chunks", "52 00 01 61 52 00 01 62 53 00 01 63", "abc"},
		{"string empty chunks", "52 00 00 00", ""},
		{"4-byte UTF-8 counts 2", "02 f0 9f 98 80", "😀"},
		{"4-byte UTF-8 among others", "04 61 f0 9f 98 80 62", "a😀b"},
		{"pair split across chunks", "52 00 01 ed a0 bd 01 ed b8 80", "😀"},
		{"lone high surrogate", "01 ed a0 bd", "\uFFFD"},
		{"lone low surrogate", "01 ed b8 80", "\uFFFD"},
		{"high then ascii", "02 ed a0 bd 61", "\uFFFDa"},
		{"two highs", "02 ed a0 bd ed a0 bd", "\uFFFD\uFFFD"},
		{"high at end of chunks", "52 00 01 61 01 ed a0 bd", "a\uFFFD"},
		{"high then canonical chunk", "52 00 01 ed a0 bd 01 62", "\uFFFDb"},
		{"overlong NUL (modified UTF-8)", "01 c0 80", "\x00"},
		{"binary chunk, compact final", "41 00 01 aa 21 bb", []byte{0xaa, 0xbb}},
		{"binary chunk, short final", "41 00 01 aa 34 01 bb", []byte{0xaa, 0xbb}},
		{"binary B short", "42 00 02 aa bb", []byte{0xaa, 0xbb}},
		{"binary empty chunk", "41 00 00 20", []byte{}},
		{"variable untyped list", "57 90 91 5a", &List{Items: ints(0, 1)}},
		{"variable typed list", "55 04 5b 69 6e 74 90 5a", &List{Type: "[int", Items: ints(0)}},
		{"empty variable list", "57 5a", &List{Items: []any{}}},
		{"fixed untyped list, short length", "58 92 90 91", &List{Items: ints(0, 1)}},
		{"fixed untyped list, I length", "58 49 00 00 00 01 90", &List{Items: ints(0)}},
		{"fixed typed list", "56 04 5b 69 6e 74 91 90", &List{Type: "[int", Items: ints(0)}},
		{"typed list with chunked type", "71 52 00 01 5b 03 69 6e 74 90", &List{Type: "[int", Items: ints(0)}},
		{"type ref in V and U", "7a 56 01 74 90 55 90 5a", &List{Items: []any{&List{Type: "t", Items: []any{}}, &List{Type: "t", Items: []any{}}}}},
		{"map typed with empty type", "4d 00 5a", &Map{Type: "", Entries: []Entry{}}},
		{"map type ref", "7a 4d 01 6d 5a 4d 90 5a", &List{Items: []any{&Map{Type: "m", Entries: []Entry{}}, &Map{Type: "m", Entries: []Entry{}}}}},
		// The spec's object example, with the long instance form 'O'.
		{"spec object O form",
			"43 0b 65 78 61 6d 70 6c 65 2e 43 61 72 92 05 63 6f 6c 6f 72 05 6d 6f 64 65 6c 4f 90 03 72 65 64 08 63 6f 72 76 65 74 74 65",
			&Object{Class: "example.Car", Fields: []Field{{"color", "red"}, {"model", "corvette"}}}},
		{"two defs before an instance", "43 01 41 90 43 01 42 90 61",
			&Object{Class: "B", Fields: []Field{}}},
		{"class name chunked", "43 52 00 01 41 01 42 90 60", &Object{Class: "AB", Fields: []Field{}}},
		{"class def field count as I", "43 01 41 49 00 00 00 01 01 78 60 91", &Object{Class: "A", Fields: []Field{{"x", int32(1)}}}},
		{"duplicate field names", "43 01 41 92 01 78 01 78 60 91 92", &Object{Class: "A", Fields: []Field{{"x", int32(1)}, {"x", int32(2)}}}},
		{"ref as I", "79 51 49 00 00 00 00", nil}, // checked below: the list itself
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decodeOne(t, hx(t, c.wire))
			if c.name == "ref as I" {
				l := got.(*List)
				if l.Items[0] != l {
					t.Fatal("ref did not resolve to the list")
				}
				return
			}
			if !deepEqual(got, c.want) {
				t.Fatalf("got %s, want %s", show(got), show(c.want))
			}
		})
	}
}

func TestDecoderEOFAndOffsets(t *testing.T) {
	d := NewDecoder(nil)
	if _, err := d.Decode(); err != io.EOF {
		t.Fatalf("empty input: %v, want io.EOF", err)
	}
	d.Reset(hx(t, "91 01 61"))
	if d.Offset() != 0 || d.Remaining() != 3 {
		t.Fatalf("offset %d remaining %d", d.Offset(), d.Remaining())
	}
	if v, err := d.Decode(); err != nil || v != int32(1) {
		t.Fatalf("%v %v", v, err)
	}
	if d.Offset() != 1 || d.Remaining() != 2 {
		t.Fatalf("offset %d remaining %d", d.Offset(), d.Remaining())
	}
	if v, err := d.Decode(); err != nil || v != "a" {
		t.Fatalf("%v %v", v, err)
	}
	if _, err := d.Decode(); err != io.EOF {
		t.Fatalf("after the last value: %v, want io.EOF", err)
	}
}

// A long stream of the same class: the def is read once, every later
// instance points at it.
func TestDecodeManyInstances(t *testing.T) {
	e := NewEncoder(nil)
	for i := range 100 {
		if err := e.Encode(&Object{Class: "P", Fields: []Field{{"i", int32(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDecoder(e.Bytes())
	for i := range 100 {
		v, err := d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := v.(*Object).Get("i"); got != int32(i) {
			t.Fatalf("instance %d: i = %v", i, got)
		}
	}
	if len(d.classes) != 1 {
		t.Fatalf("%d class defs, want 1", len(d.classes))
	}
}

func TestMapGet(t *testing.T) {
	m := &Map{Entries: []Entry{{[]byte{1}, "bytes"}, {"k", "v"}, {int32(1), "one"}}}
	if v, ok := m.Get("k"); !ok || v != "v" {
		t.Fatalf("Get(k) = %v %v", v, ok)
	}
	if v, ok := m.Get(int32(1)); !ok || v != "one" {
		t.Fatalf("Get(1) = %v %v", v, ok)
	}
	if _, ok := m.Get(int64(1)); ok {
		t.Fatal("int64 key matched an int32 key")
	}
	// Comparing two []byte with == would panic; Get must not.
	if _, ok := m.Get([]byte{1}); ok {
		t.Fatal("[]byte key found")
	}
	o := &Object{Fields: []Field{{"a", 1}}}
	if _, ok := o.Get("b"); ok {
		t.Fatal("missing field found")
	}
}

func TestDecodeErrorString(t *testing.T) {
	e := &DecodeError{Offset: 17, Tag: 'C', Msg: "class name must be a string"}
	if got, want := e.Error(), "hessian: offset 17, tag 0x43 ('C'): class name must be a string"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	e = &DecodeError{Offset: 0, Tag: 0x90, Msg: "x"}
	if got, want := e.Error(), "hessian: offset 0, tag 0x90: x"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	var de *DecodeError
	_, err := NewDecoder(hx(t, "40")).Decode()
	if !errors.As(err, &de) || de.Tag != 0x40 || !strings.Contains(de.Msg, "unknown tag") {
		t.Fatalf("err = %v", err)
	}
}

// A Decoder kept for reuse must not keep the values it returned alive
// after Reset: not through its reference table, its slabs or its string
// window.
func TestResetReleasesDecodedValues(t *testing.T) {
	wire := encodeOne(t, &List{Items: []any{
		&Object{Class: "Big", Fields: []Field{{"blob", bytes.Repeat([]byte{1}, 1<<20)}, {"s", "short"}}},
	}})
	d := NewDecoder(wire)
	v, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	w := weak.Make(v.(*List).Items[0].(*Object))
	v = nil
	d.Reset(nil)
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the decoder still holds the object it returned")
	}
	runtime.KeepAlive(d)
}
