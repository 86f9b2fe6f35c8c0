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

// TestProvidersShareParams: providers whose parameters differ only in
// what is per process (pid, timestamp) or taken out (weight) hold one
// copy of them; others hold their own.
func TestProvidersShareParams(t *testing.T) {
	provider := func(addr, pid, ts, methods string) *Provider {
		p, err := NewProvider(addr, map[string]string{"application": "app", "methods": methods, "pid": pid, "timestamp": ts, "side": "provider"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := provider("10.0.0.1:20880", "1", "1700000000000", "a,b")
	b := provider("10.0.0.2:20880", "2", "1700000000001", "a,b")
	c := provider("10.0.0.3:20880", "1", "1700000000000", "a")
	data := func(p *Provider) *byte { return unsafe.StringData(p.Params.encoded()) }
	if data(a) != data(b) || a.Params.Compare(b.Params) != 0 {
		t.Error("two providers of one service keep their parameters apart")
	}
	if data(a) == data(c) || a.Params.Compare(c.Params) == 0 {
		t.Error("different parameters share one copy")
	}
	if _, ok := a.Params.Lookup("pid"); ok || a.Params.Len() != 3 {
		t.Errorf("params %v, want application, methods and side", a.Params.Map())
	}
}

// TestParamsEncodingIsUnambiguous: keys and values holding the bytes a
// separator-based encoding would use cannot forge another pair.
func TestParamsEncodingIsUnambiguous(t *testing.T) {
	m := map[string]string{"a": "x\x00b\x00y", "b\x00": "", "": "\x80\xff", "long": strings.Repeat("v", 300)}
	if p := NewParams(m); !maps.Equal(p.Map(), m) || p.Get("b") != "" || p.Get("") != "\x80\xff" {
		t.Errorf("params %q, want %q", p.Map(), m)
	}
}
