package protocol

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

// hx decodes hex written with optional spaces and a '|' between fields.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// user is the small POJO of the benchmarks and round trips.
func user() *hessian.Object {
	return &hessian.Object{Class: "com.example.demo.User", Fields: []hessian.Field{
		{Name: "id", Value: "u-1001"},
		{Name: "name", Value: "Ada Lovelace"},
		{Name: "age", Value: int32(36)},
		{Name: "email", Value: "ada@example.com"},
		{Name: "active", Value: true},
	}}
}

// mustFrame splits one whole frame into its header and body.
func mustFrame(t testing.TB, frame []byte) (Header, []byte) {
	t.Helper()
	h, err := ParseHeader(frame)
	if err != nil {
		t.Fatalf("ParseHeader: %v", err)
	}
	if got := len(frame) - HeaderLen; got != h.BodyLen {
		t.Fatalf("header declares %d body bytes, frame has %d", h.BodyLen, got)
	}
	return h, frame[HeaderLen:]
}
