package hessian

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic,
// fail only with a *DecodeError, and whatever it decodes must encode and
// decode again to an equal value, and encode again to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(hx(f, cauchoException))
	f.Add(hx(f, "7a 43 01 41 91 01 78 60 91 51 91"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(data)
		v, err := d.Decode()
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) && err != io.EOF {
				t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
			}
			return
		}
		for d.Remaining() > 0 { // the rest of the stream, for coverage
			if _, err := d.Decode(); err != nil {
				break
			}
		}

		e := NewEncoder(nil)
		if err := e.Encode(v); err != nil {
			t.Fatalf("decoded %s but cannot encode it: %v", show(v), err)
		}
		first := e.Bytes()
		d2 := NewDecoder(first)
		v2, err := d2.Decode()
		if err != nil {
			t.Fatalf("re-encoded % x does not decode: %v", first, err)
		}
		if d2.Remaining() != 0 {
			t.Fatalf("re-encoded value leaves %d bytes", d2.Remaining())
		}
		if !deepEqual(v, v2) {
			t.Fatalf("decode→encode→decode changed the value\n%s\n%s", show(v), show(v2))
		}
		e2 := NewEncoder(nil)
		if err := e2.Encode(v2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, e2.Bytes()) {
			t.Fatalf("encoding is not stable\n% x\n% x", first, e2.Bytes())
		}
	})
}

// FuzzRoundTrip builds a value of the model from the fuzz input, encodes
// it and decodes it: the result must equal the value.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{11, 3, 13, 2, 7, 5, 'h', 'e', 'l', 'l', 'o', 14, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &valueGen{data: data}
		var values []any
		for !g.done() && len(values) < 4 {
			values = append(values, g.value(0))
		}
		e := NewEncoder(nil)
		for _, v := range values {
			if err := e.Encode(v); err != nil {
				t.Fatalf("Encode(%s): %v", show(v), err)
			}
		}
		d := NewDecoder(e.Bytes())
		for i, want := range values {
			got, err := d.Decode()
			if err != nil {
				t.Fatalf("value %d: %v\n% x", i, err, e.Bytes())
			}
			if !deepEqual(got, want) {
				t.Fatalf("value %d: got %s, want %s", i, show(got), show(want))
			}
		}
		if d.Remaining() != 0 {
			t.Fatalf("%d bytes left", d.Remaining())
		}
	})
}

// valueGen turns fuzz bytes into values of the model, already in the form
// the decoder returns (valid UTF-8, UTC millisecond times, ...), including
// shared and circular containers.
type valueGen struct {
	data       []byte
	pos        int
	containers []any
}

func (g *valueGen) done() bool { return g.pos >= len(g.data) }

func (g *valueGen) byte() byte {
	if g.done() {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *valueGen) bytes(n int) []byte {
	n = min(n, len(g.data)-g.pos)
	b := g.data[g.pos : g.pos+n]
	g.pos += n
	return b
}

func (g *valueGen) u64() uint64 {
	var b [8]byte
	copy(b[:], g.bytes(8))
	return binary.BigEndian.Uint64(b[:])
}

func (g *valueGen) i32() int32 { return int32(g.u64() >> 32) }

var (
	genListTypes  = []string{"", "[int", "java.util.ArrayList", "[string", "java.util.HashSet"}
	genMapTypes   = []string{"", "java.util.HashMap", "java.util.LinkedHashMap", "M"}
	genClasses    = []string{"A", "com.example.User", "", "com.example.Order"}
	genFieldNames = []string{"id", "name", "", "value", "x"}
)

func (g *valueGen) value(depth int) any {
	op := g.byte() % 24
	if depth > 12 && op >= 11 && op <= 14 {
		op = 2
	}
	switch op {
	case 0:
		return nil
	case 1:
		return g.byte()&1 == 1
	case 2:
		return g.i32()
	case 3:
		return int64(g.u64())
	case 4:
		return int32(int8(g.byte()))
	case 5:
		return math.Float64frombits(g.u64())
	case 6:
		return float64(int16(g.i32())) / 1000
	case 7:
		return string([]rune(string(g.bytes(int(g.byte() % 40)))))
	case 8:
		n := int(g.u64()>>48)*2 + int(g.byte())
		return strings.Repeat(string([]rune(string(g.bytes(4))))+"😀", n/8+1)
	case 9:
		b := g.bytes(int(g.byte()))
		if g.byte()&1 == 1 {
			b = bytes.Repeat(b, 400) // past 32 KiB: chunks
		}
		return append([]byte{}, b...)
	case 10:
		if g.byte()&1 == 0 {
			return time.UnixMilli(int64(g.i32()) * 60000).UTC()
		}
		return time.UnixMilli(int64(g.u64())).UTC()
	case 11:
		l := &List{Type: genListTypes[int(g.byte())%len(genListTypes)], Items: []any{}}
		g.containers = append(g.containers, l)
		for n := int(g.byte() % 10); n > 0 && !g.done(); n-- {
			l.Items = append(l.Items, g.value(depth+1))
		}
		return l
	case 12:
		m := &Map{Type: genMapTypes[int(g.byte())%len(genMapTypes)], Entries: []Entry{}}
		g.containers = append(g.containers, m)
		for n := int(g.byte() % 6); n > 0 && !g.done(); n-- {
			m.Entries = append(m.Entries, Entry{g.value(depth + 1), g.value(depth + 1)})
		}
		return m
	case 13:
		o := &Object{Class: genClasses[int(g.byte())%len(genClasses)], Fields: []Field{}}
		g.containers = append(g.containers, o)
		for n := int(g.byte() % 5); n > 0 && !g.done(); n-- {
			o.Fields = append(o.Fields, Field{genFieldNames[int(g.byte())%len(genFieldNames)], g.value(depth + 1)})
		}
		return o
	case 14: // a container seen before, maybe an enclosing one: a cycle
		if len(g.containers) == 0 {
			return nil
		}
		return g.containers[int(g.byte())%len(g.containers)]
	case 15:
		digits := new(big.Int).SetBytes(g.bytes(int(g.byte() % 20))).String()
		if n := int(g.byte()) % (len(digits) + 1); n > 0 && n < len(digits) {
			digits = digits[:n] + "." + digits[n:]
		}
		if g.byte()&1 == 1 {
			digits = "-" + digits
		}
		return BigDecimal{digits}
	case 16:
		n := new(big.Int).SetBytes(g.bytes(int(g.byte() % 40)))
		if g.byte()&1 == 1 {
			n.Neg(n)
		}
		return BigInteger{n.String()}
	case 17:
		return Locale{string([]rune(string(g.bytes(int(g.byte() % 8)))))}
	case 18:
		return LocalDateTime{LocalDate{g.i32(), g.i32(), g.i32()}, LocalTime{g.i32(), g.i32(), g.i32(), g.i32()}}
	case 19:
		return ZonedDateTime{LocalDateTime{LocalDate{g.i32(), 1, 2}, LocalTime{3, 4, 5, g.i32()}}, ZoneOffset{g.i32()}, "Asia/Tokyo"}
	case 20:
		return Instant{int64(g.u64()), g.i32()}
	case 21:
		return Period{g.i32(), g.i32(), g.i32()}
	case 22:
		return OffsetTime{LocalTime{1, 2, 3, 4}, ZoneOffset{g.i32()}}
	default:
		return Duration{int64(g.u64()), g.i32()}
	}
}
