package hessian

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Every malformed input fails with a *DecodeError naming where and on
// which tag decoding stopped.
func TestHostileInput(t *testing.T) {
	cases := []struct {
		name   string
		wire   string
		limits Limits
		offset int
		tag    byte
		msg    string
	}{
		{"truncated int", "d4 01", Limits{}, 0, 0xd4, "unexpected end of input at offset 2"},
		{"truncated long", "4c 00 00", Limits{}, 0, 'L', "unexpected end of input"},
		{"truncated double", "44 00", Limits{}, 0, 'D', "unexpected end of input"},
		{"truncated date", "4a 00", Limits{}, 0, 0x4a, "unexpected end of input"},
		{"truncated string", "05 61 62", Limits{}, 0, 0x05, "unexpected end of input"},
		{"truncated string header", "53 00", Limits{}, 0, 'S', "unexpected end of input"},
		{"string claims 64K in 5 bytes", "53 ff ff 61 62", Limits{}, 0, 'S', "unexpected end of input"},
		{"truncated chunk sequence", "52 00 01 61", Limits{}, 0, 'R', "unexpected end of input"},
		{"bad chunk after R", "52 00 01 61 90", Limits{}, 4, 0x90, "expected a string chunk"},
		{"truncated binary", "23 01", Limits{}, 0, 0x23, "unexpected end of input"},
		{"binary claims 64K", "42 ff ff 00", Limits{}, 0, 'B', "unexpected end of input"},
		{"bad chunk after A", "41 00 01 aa 90", Limits{}, 4, 0x90, "expected a binary chunk"},
		{"invalid utf-8 lead", "01 ff", Limits{}, 0, 0x01, "invalid UTF-8 at offset 1"},
		{"invalid utf-8 continuation", "01 c3 41", Limits{}, 0, 0x01, "invalid UTF-8 at offset 1"},
		{"utf-8 past 10FFFF", "02 f4 90 80 80", Limits{}, 0, 0x02, "invalid UTF-8"},
		{"4-byte char in a 1-unit chunk", "01 f0 9f 98 80", Limits{}, 0, 0x01, "crosses the end of its chunk"},
		{"list claims 1e9 items", "58 49 3b 9a ca 00 90", Limits{}, 0, 'X', "list item count 1000000000 exceeds MaxLength"},
		{"list claims more items than bytes", "58 c8 64 90 90", Limits{}, 0, 'X', "list item count 100 exceeds the 2 bytes left"},
		{"compact list with no items", "7f", Limits{}, 0, 0x7f, "list item count 7 exceeds the 0 bytes left"},
		{"negative list length", "58 8f", Limits{}, 0, 'X', "negative list item count -1"},
		{"list length not an int", "58 01 61", Limits{}, 1, 0x01, "expected an int"},
		{"truncated variable list", "57 90", Limits{}, 0, 'W', "unexpected end of input"},
		{"truncated map", "48 91", Limits{}, 0, 'H', "unexpected end of input"},
		{"map missing its last value", "48 91 5a", Limits{}, 2, 'Z', "end marker where a value was expected"},
		{"ref to undefined value", "51 90", Limits{}, 0, 'Q', "reference 0 to an undefined value (0 defined)"},
		{"negative ref", "7a 90 51 8f", Limits{}, 2, 'Q', "reference -1"},
		{"instance without class", "60", Limits{}, 0, 0x60, "class reference 0 out of range (0 classes defined)"},
		{"O with class out of range", "43 01 41 90 4f 91", Limits{}, 4, 'O', "class reference 1 out of range (1 classes defined)"},
		{"type ref out of range", "71 91 90", Limits{}, 1, 0x91, "type reference 1 out of range (0 types defined)"},
		{"type neither string nor int", "71 4e", Limits{}, 1, 'N', "expected an int"},
		{"class name not a string", "43 90 90", Limits{}, 1, 0x90, "class name must be a string"},
		{"field name not a string", "43 01 41 91 90", Limits{}, 4, 0x90, "field name must be a string"},
		{"class def claims 1e6 fields", "43 01 41 49 00 0f 42 40", Limits{}, 0, 'C', "field count 1000000 exceeds the 0 bytes left"},
		{"class def at end of input", "43 01 41 90", Limits{}, 0, 'C', "class definition not followed by a value"},
		{"instance missing fields", "43 01 41 92 01 78 01 79 60 91", Limits{}, 8, 0x60, "field value count 2 exceeds the 1 bytes left"},
		// One value too many for the class def: the extra value shifts the
		// map's keys and values, and the map ends where a value belongs.
		{"object with more values than fields", "43 01 41 91 01 78 48 01 6b 60 91 92 5a", Limits{}, 12, 'Z', "end marker where a value was expected"},
		{"end marker as a value", "5a", Limits{}, 0, 'Z', "end marker"},
		{"reserved tag", "45", Limits{}, 0, 'E', "unknown tag"},
		{"reserved tag 0x40", "40", Limits{}, 0, 0x40, "unknown tag"},
		{"over MaxBytes", "91 91 91 91", Limits{MaxBytes: 3}, 0, 0x91, "input of 4 bytes exceeds MaxBytes 3"},
		{"string over MaxLength", "03 61 62 63", Limits{MaxLength: 2}, 0, 0x03, "string of 3 bytes exceeds MaxLength 2"},
		{"non-ascii string over MaxLength", "02 c3 a9 c3 a9", Limits{MaxLength: 3}, 0, 0x02, "exceeds MaxLength 3"},
		{"chunked string over MaxLength", "52 00 02 61 62 02 63 64", Limits{MaxLength: 3}, 0, 'R', "exceeds MaxLength 3"},
		{"binary over MaxLength", "23 01 02 03", Limits{MaxLength: 2}, 0, 0x23, "exceeds MaxLength 2"},
		{"list over MaxLength", "7b 90 90 90", Limits{MaxLength: 2}, 0, 0x7b, "list item count 3 exceeds MaxLength 2"},
		{"variable list over MaxLength", "57 90 90 90 5a", Limits{MaxLength: 2}, 0, 'W', "list longer than MaxLength 2"},
		{"map over MaxLength", "48 90 90 91 91 5a", Limits{MaxLength: 1}, 0, 'H', "map longer than MaxLength 1"},
		{"class def over MaxLength", "43 01 41 92 01 61 01 62", Limits{MaxLength: 1}, 0, 'C', "field count 2 exceeds MaxLength 1"},
		{"too deep", strings.Repeat("79 ", 4) + "90", Limits{MaxDepth: 3}, 3, 0x79, "nesting deeper than MaxDepth 3"},
		{"too deep maps", strings.Repeat("48 90 ", 3) + "90 5a 5a 5a", Limits{MaxDepth: 2}, 4, 'H', "nesting deeper than MaxDepth 2"},
		{"too deep objects", "43 01 41 91 01 78 60 60 60 90", Limits{MaxDepth: 2}, 8, 0x60, "nesting deeper than MaxDepth 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(hx(t, c.wire))
			d.SetLimits(c.limits)
			v, err := d.Decode()
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode = %s, %v; want a *DecodeError", show(v), err)
			}
			if de.Offset != c.offset || de.Tag != c.tag || !strings.Contains(de.Msg, c.msg) {
				t.Fatalf("got %v\nwant offset %d, tag %#x, message containing %q", err, c.offset, c.tag, c.msg)
			}
			// The error sticks.
			if _, err2 := d.Decode(); err2 != err {
				t.Fatalf("second Decode returned %v, want the same error", err2)
			}
		})
	}
}

// A length claimed by a 20-byte input must be rejected before anything of
// that size is allocated.
func TestHostileLengthsDoNotAllocate(t *testing.T) {
	for _, wire := range []string{
		"58 49 3b 9a ca 00 90 90 90 90 90 90 90 90 90 90 90 90 90 90", // list of 1e9
		"56 01 74 49 7f ff ff ff 90 90 90 90 90 90 90 90 90 90 90 90", // typed list of 2^31-1
		"43 01 41 49 7f ff ff ff 01 61 01 62 01 63 01 64 01 65 01 66", // class of 2^31-1 fields
		"53 ff ff 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61", // 64K-unit string
		"42 ff ff 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61", // 64K binary
	} {
		b := hx(t, wire)
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := NewDecoder(b).Decode(); err == nil {
				t.Fatalf("% x decoded", b)
			}
		})
		// The count is exact without the race detector, which makes
		// sync.Pool drop items; the bytes below are the real guard.
		if allocs > 8 && !raceEnabled {
			t.Errorf("% x: %v allocations", b, allocs)
		}
		before := totalAlloc()
		for range 10 {
			_, _ = NewDecoder(b).Decode()
		}
		if perRun := (totalAlloc() - before) / 10; perRun > 4096 {
			t.Errorf("% x: allocated %d bytes per decode", b, perRun)
		}
	}
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// Nested fixed-length lists each claiming the whole remaining input would
// multiply the memory preallocated; what the enclosing lists still expect
// counts against what an inner list may claim.
func TestNestedClaimsShareTheInput(t *testing.T) {
	// 'X' claiming 60 items whose first item is an 'X' claiming 60 items...
	// in 190 bytes: the first three claims fit (60, 60+59, 60+118 of the
	// 187, 184, 181 bytes left), the fourth (60+177 of 178) does not.
	var b []byte
	for range 40 {
		b = append(b, 0x58, 0xc8, 60)
	}
	b = append(b, bytes.Repeat([]byte{0x90}, 70)...)
	_, err := NewDecoder(b).Decode()
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 9 || !strings.Contains(de.Msg, "exceeds the 1 bytes left") {
		t.Fatalf("err = %v, want the fourth list's claim rejected", err)
	}
}

func TestDepthLimitIsConfigurable(t *testing.T) {
	wire := append(bytes.Repeat([]byte{0x79}, 300), 0x90)
	if _, err := NewDecoder(wire).Decode(); err == nil {
		t.Fatal("300 levels decoded with the default MaxDepth 256")
	}
	d := NewDecoder(wire)
	d.SetLimits(Limits{MaxDepth: 300})
	v, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		v = v.(*List).Items[0]
	}
	if v != int32(0) {
		t.Fatalf("innermost = %v", v)
	}
	// Exactly MaxDepth levels are fine, one more is not.
	wire = append(bytes.Repeat([]byte{0x79}, 256), 0x90)
	if _, err := NewDecoder(wire).Decode(); err != nil {
		t.Fatalf("256 levels: %v", err)
	}
}

// Every prefix of a valid stream is an error, never a panic, and never
// returns a value as if complete.
func TestTruncationsNeverPanic(t *testing.T) {
	node := &Object{Class: "Node", Fields: []Field{{"v", "é😀"}, {"next", nil}}}
	node.Fields[1].Value = node
	v := &List{Type: "java.util.ArrayList", Items: []any{
		int32(-2049), int64(1 << 40), 12.25, 3.14159, true, nil,
		time.UnixMilli(61000), strings.Repeat("x", 40000), bytes.Repeat([]byte{1}, 40000),
		&Map{Type: "java.util.HashMap", Entries: []Entry{{"k", node}, {int32(1), []any{"a"}}}},
		node, BigDecimal{"1.50"}, BigInteger{"-123456789012345678901234567890"},
		LocalDateTime{LocalDate{2024, 2, 29}, LocalTime{23, 59, 59, 999}},
		&Exception{Class: "E", Message: "m", StackTrace: []StackFrame{{"C", "m", "F.java", 1}}},
	}}
	wire := encodeOne(t, v)
	if _, err := NewDecoder(wire).Decode(); err != nil {
		t.Fatal(err)
	}
	for n := range len(wire) {
		if n > 200 && n < len(wire)-200 && n%97 != 0 {
			continue // the long string and binary: sample them
		}
		d := NewDecoder(wire[:n])
		got, err := d.Decode()
		if n == 0 {
			continue // io.EOF
		}
		if err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded as %s", n, len(wire), show(got))
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("prefix %d: %v is not a *DecodeError", n, err)
		}
	}
}
