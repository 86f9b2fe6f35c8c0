package hessian

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// hx decodes hex written with optional spaces: "c8 30".
func hx(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// cat joins byte pieces.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func encodeOne(t testing.TB, v any) []byte {
	t.Helper()
	e := NewEncoder(nil)
	if err := e.Encode(v); err != nil {
		t.Fatalf("Encode(%T): %v", v, err)
	}
	return e.Bytes()
}

func decodeOne(t testing.TB, b []byte) any {
	t.Helper()
	d := NewDecoder(b)
	v, err := d.Decode()
	if err != nil {
		t.Fatalf("Decode(% x): %v", b, err)
	}
	if d.Remaining() != 0 {
		t.Fatalf("Decode(% x): %d bytes left over", b, d.Remaining())
	}
	return v
}

// deepEqual compares two values of the model. Floats compare with == (so
// 0.0 equals -0.0) except that NaN equals NaN; times compare with Equal;
// pointers are followed, and a pair of pointers met again is taken as equal
// so cyclic graphs terminate.
func deepEqual(a, b any) bool {
	return (&comparer{seen: map[[2]any]bool{}}).equal(a, b)
}

type comparer struct{ seen map[[2]any]bool }

func (c *comparer) equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case *List:
		y, ok := b.(*List)
		if !ok || (x == nil) != (y == nil) {
			return false
		}
		if x == nil || c.visit(x, y) {
			return true
		}
		if x.Type != y.Type || len(x.Items) != len(y.Items) {
			return false
		}
		for i := range x.Items {
			if !c.equal(x.Items[i], y.Items[i]) {
				return false
			}
		}
		return true
	case *Map:
		y, ok := b.(*Map)
		if !ok || (x == nil) != (y == nil) {
			return false
		}
		if x == nil || c.visit(x, y) {
			return true
		}
		if x.Type != y.Type || len(x.Entries) != len(y.Entries) {
			return false
		}
		for i := range x.Entries {
			if !c.equal(x.Entries[i].Key, y.Entries[i].Key) || !c.equal(x.Entries[i].Value, y.Entries[i].Value) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || (x == nil) != (y == nil) {
			return false
		}
		if x == nil || c.visit(x, y) {
			return true
		}
		if x.Class != y.Class || len(x.Fields) != len(y.Fields) {
			return false
		}
		for i := range x.Fields {
			if x.Fields[i].Name != y.Fields[i].Name || !c.equal(x.Fields[i].Value, y.Fields[i].Value) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !c.equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !c.equal(v, w) {
				return false
			}
		}
		return true
	}
	if !comparableKey(a) || !comparableKey(b) {
		return fmt.Sprint(a) == fmt.Sprint(b)
	}
	return a == b
}

func (c *comparer) visit(x, y any) bool {
	k := [2]any{x, y}
	if c.seen[k] {
		return true
	}
	c.seen[k] = true
	return false
}

// show prints a value for failure messages, without following cycles.
func show(v any) string {
	switch x := v.(type) {
	case *List:
		return fmt.Sprintf("&List{%q, %d items}", x.Type, len(x.Items))
	case *Map:
		return fmt.Sprintf("&Map{%q, %d entries}", x.Type, len(x.Entries))
	case *Object:
		return fmt.Sprintf("&Object{%q, %d fields}", x.Class, len(x.Fields))
	}
	return fmt.Sprintf("%#v", v)
}
