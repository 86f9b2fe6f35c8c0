package idl

import (
	"errors"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/internal/testproto"
)

func TestEncodeDecode(t *testing.T) {
	m, err := Load(testproto.DescriptorSet(t), "p.S", "Get")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Encode([]byte(`{"s": "héllo"}`))
	if err != nil || string(b) != "\x0a\x06h\xc3\xa9llo" {
		t.Fatalf("Encode = %q, %v", b, err)
	}
	out, err := m.Decode(b)
	if err != nil || strings.ReplaceAll(string(out), " ", "") != `{"s":"héllo"}` {
		t.Fatalf("Decode = %s, %v", out, err)
	}
	if b, err := m.Encode([]byte("  ")); err != nil || len(b) != 0 {
		t.Errorf("empty JSON: %q, %v; want the empty message", b, err)
	}
	for _, bad := range []string{`{"x": 1}`, `{"s": 5}`, `[`, `"s"`} {
		var re *RequestError
		if _, err := m.Encode([]byte(bad)); !errors.As(err, &re) || !strings.Contains(re.Msg, "is not a p.M message") {
			t.Errorf("Encode(%s) = %v, want a RequestError naming p.M", bad, err)
		}
	}
	if _, err := m.Decode([]byte{0x0a, 0x7f}); err == nil {
		t.Error("a truncated message decoded")
	}
}
