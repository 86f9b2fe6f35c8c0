package hessian

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// The low-level writers produce the same forms as Encode, plus the
// variable-length lists only they can start.
func TestLowLevelWriters(t *testing.T) {
	e := NewEncoder(nil)
	e.WriteListStart("", -1)
	e.WriteInt(1)
	e.WriteNull()
	e.WriteListEnd()
	e.WriteListStart("[int", -1)
	e.WriteListEnd()
	e.WriteListStart("[int", -1) // the type is a reference now
	e.WriteListEnd()
	e.WriteListStart("[int", 8)
	for range 8 {
		e.WriteInt(0)
	}
	e.WriteMapStart("java.util.HashMap")
	e.WriteDate(time.UnixMilli(60000))
	e.WriteBinary([]byte{7})
	e.WriteMapEnd()
	e.WriteObjectStart("P", []string{"a", "b"})
	e.WriteDouble(1.5)
	e.WriteBool(false)
	e.WriteObjectStart("P", []string{"a", "b"})
	e.WriteString("x")
	e.WriteLong(-1)
	want := hx(t, "57 91 4e 5a 55 04 5b 69 6e 74 5a 55 90 5a 56 90 98 90 90 90 90 90 90 90 90 "+
		"4d 11 6a 61 76 61 2e 75 74 69 6c 2e 48 61 73 68 4d 61 70 4b 00 00 00 01 21 07 5a "+
		"43 01 50 92 01 61 01 62 60 5f 00 00 05 dc 46 60 01 78 df")
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("got  % x\nwant % x", e.Bytes(), want)
	}
	d := NewDecoder(e.Bytes())
	var got []any
	for d.Remaining() > 0 {
		v, err := d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if len(got) != 7 || !deepEqual(got[0], &List{Items: []any{int32(1), nil}}) || got[2].(*List).Type != "[int" ||
		!deepEqual(got[6], &Object{Class: "P", Fields: []Field{{"a", "x"}, {"b", int64(-1)}}}) {
		t.Fatalf("decoded %v", got)
	}
	// A caller's field slice may change after WriteObjectStart.
	fields := []string{"k"}
	e.Reset(nil)
	e.WriteObjectStart("Q", fields)
	e.WriteInt(1)
	fields[0] = "changed"
	e.WriteObjectStart("Q", []string{"k"})
	e.WriteInt(2)
	if want := hx(t, "43 01 51 91 01 6b 60 91 60 92"); !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("got % x, want % x", e.Bytes(), want)
	}
}

func TestEncodeErrors(t *testing.T) {
	type custom struct{ A int }
	for _, c := range []struct {
		v    any
		want string
	}{
		{custom{1}, "hessian: cannot encode Go type hessian.custom"},
		{[]any{1, struct{}{}}, "cannot encode Go type struct {}"},
		{map[string]any{"k": make(chan int)}, "cannot encode Go type chan int"},
		{uint64(math.MaxUint64), "does not fit in a Java long"},
		{&Object{Class: "A", Fields: []Field{{"f", complex(1, 2)}}}, "complex128"},
		{&Map{Entries: []Entry{{func() {}, 1}}}, "func()"},
		{map[any]any{1: []uint{1}}, "[]uint"},
		{&Exception{Class: "E", Cause: &Exception{Suppressed: []*Exception{{Class: "X", StackTrace: nil}}}, Suppressed: []*Exception{nil}}, ""},
	} {
		e := NewEncoder([]byte{0xaa})
		err := e.Encode(c.v)
		if c.want == "" {
			if err != nil {
				t.Errorf("%T: %v", c.v, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Encode(%T) = %v, want an error containing %q", c.v, err, c.want)
			continue
		}
		// The output is cut back and the error sticks until Reset.
		if !bytes.Equal(e.Bytes(), []byte{0xaa}) {
			t.Errorf("Encode(%T) left % x", c.v, e.Bytes())
		}
		if err2 := e.Encode(int32(1)); err2 != err {
			t.Errorf("after an error Encode returned %v", err2)
		}
		e.Reset(nil)
		if err := e.Encode(int32(1)); err != nil || !bytes.Equal(e.Bytes(), []byte{0x91}) {
			t.Errorf("after Reset: % x, %v", e.Bytes(), err)
		}
	}
}

// A plain Go map that contains itself cannot be written with references;
// the encoder stops at its depth limit instead of recursing forever.
func TestEncodeSelfContainingGoMap(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	err := NewEncoder(nil).Encode(m)
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 1024") {
		t.Fatalf("err = %v", err)
	}
	l := []any{nil}
	l[0] = l
	if err := NewEncoder(nil).Encode(l); err == nil {
		t.Fatal("a slice containing itself encoded")
	}
	// Deep but finite nesting is fine.
	var v any = int32(1)
	for range 1000 {
		v = []any{v}
	}
	if err := NewEncoder(nil).Encode(v); err != nil {
		t.Fatal(err)
	}
}

func TestPlainKeys(t *testing.T) {
	color := &Object{Class: "C", Fields: []Field{{"name", "RED"}}}
	m := &Map{Entries: []Entry{
		{int64(1 << 40), 1}, {2.5, 2}, {nil, 3}, {time.UnixMilli(0).UTC(), 4}, {BigDecimal{"1.0"}, 5},
		{&List{Items: []any{int32(1), "a"}}, 6}, {color, 7}, {LocalDate{2024, 1, 2}, 8}, {false, 9},
	}}
	got, err := json.Marshal(Plain(m))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"1.0":5,"1099511627776":1,"1970-01-01T00:00:00Z":4,"2.5":2,"2024-01-02":8,"RED":7,"[1,\"a\"]":6,"false":9,"null":3}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
