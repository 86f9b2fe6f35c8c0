package requestid

import (
	"strings"
	"testing"
)

func TestPick(t *testing.T) {
	cases := []struct {
		in    string
		trust bool
		keep  bool
	}{
		{"abc-123", true, true},
		{"abc-123", false, false},
		{"", true, false},
		{"has space", true, false},
		{"new\nline", true, false},
		{strings.Repeat("a", MaxLen), true, true},
		{strings.Repeat("a", MaxLen+1), true, false},
		{"9f86d081884c7d65:1.2_x", true, true},
	}
	for _, c := range cases {
		got := Pick(new(Buf), c.in, c.trust)
		if (got == c.in) != c.keep {
			t.Errorf("Pick(%q, %v) = %q, keep=%v", c.in, c.trust, got, c.keep)
		}
		if !Valid(got) {
			t.Errorf("Pick(%q) returned invalid id %q", c.in, got)
		}
	}
}

func TestNewIsUniqueAndHex(t *testing.T) {
	seen := make(map[string]bool)
	bufs := make([]Buf, 10000)
	for i := 0; i < 10000; i++ {
		id := New()
		if i%2 == 1 {
			id = NewIn(&bufs[i]) // each its own buffer: the ids stay distinct
		}
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q after %d", id, i)
		}
		seen[id] = true
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New()
	}
}
