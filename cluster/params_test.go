package cluster

import (
	"maps"
	"strings"
	"testing"
	"unsafe"
)

func TestParams(t *testing.T) {
	m := map[string]string{"side": "provider", "application": "app", "methods": "a,b", "empty": ""}
	p := NewParams(m)
	if p.Len() != 4 || !maps.Equal(p.Map(), m) {
		t.Fatalf("params %v, want %v", p.Map(), m)
	}
	for k, v := range m {
		if got, ok := p.Lookup(k); !ok || got != v {
			t.Errorf("Lookup(%q) = %q, %v; want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"", "a", "zzz", "methodz", "side2"} {
		if got, ok := p.Lookup(k); ok || got != "" {
			t.Errorf("Lookup(%q) = %q, %v; want absent", k, got, ok)
		}
	}
	var keys []string
	for k := range p.All() {
		keys = append(keys, k)
	}
	if strings.Join(keys, " ") != "application empty methods side" {
		t.Errorf("All yields %v, want key order", keys)
	}
	var zero Params
	if zero.Len() != 0 || zero.Get("x") != "" || len(zero.Map()) != 0 || NewParams(nil).Compare(zero) != 0 {
		t.Error("the zero Params is not empty")
	}
}

// TestParamsCopyTheirStrings: a value sliced out of a larger string (a
// decoded URL) is not kept by reference, so the URL can be collected.
func TestParamsCopyTheirStrings(t *testing.T) {
	url := strings.Repeat("x", 1<<10) + "provider"
	v := NewParams(map[string]string{"side": url[1<<10:]}).Get("side")
	start := uintptr(unsafe.Pointer(unsafe.StringData(url)))
	at := uintptr(unsafe.Pointer(unsafe.StringData(v)))
	if v != "provider" || at >= start && at < start+uintptr(len(url)) {
		t.Errorf("value %q shares the memory of the string it was sliced from", v)
	}
}

func TestParamsCompare(t *testing.T) {
	a := NewParams(map[string]string{"application": "a", "side": "provider"})
	b := NewParams(map[string]string{"application": "b", "side": "provider"})
	short := NewParams(map[string]string{"application": "a"})
	for _, c := range []struct {
		p, q Params
		want int
	}{
		{a, a, 0}, {a, NewParams(map[string]string{"side": "provider", "application": "a"}), 0},
		{a, b, -1}, {b, a, 1}, {short, a, -1}, {a, short, 1}, {Params{}, short, -1},
	} {
		if got := c.p.Compare(c.q); got != c.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", c.p.Map(), c.q.Map(), got, c.want)
		}
	}
}

func TestParamsShares(t *testing.T) {
	m := map[string]string{"a": "1"}
	p, q := NewParams(m), NewParams(m)
	if p.Compare(q) != 0 || p.Shares(q) || !p.Shares(p) || !(Params{}).Shares(Params{}) {
		t.Error("Shares: equal lists made apart are not one, a list is itself")
	}
}
