package triplewire

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// TestRequestRoundTrip: what AppendRequestFrame writes, DecodeRequest
// reads back, within its bound on arguments.
func TestRequestRoundTrip(t *testing.T) {
	args := [][]byte{{0x05, 'h', 'e', 'l', 'l', 'o'}, {0x90}, {}}
	types := []string{"java.lang.String", "int", "com.example.User"}
	frame := AppendRequestFrame(nil, args, types)
	if frame[0] != 0 || int(binary.BigEndian.Uint32(frame[1:5])) != len(frame)-FrameHeaderLen {
		t.Fatalf("frame prefix % x for %d bytes", frame[:5], len(frame))
	}
	r, err := DecodeRequest(frame[FrameHeaderLen:], 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.SerializeType != SerializeHessian2 || !slices.EqualFunc(r.Args, args, slices.Equal) || !slices.Equal(r.Types, types) {
		t.Fatalf("decoded %+v", r)
	}
	if _, err := DecodeRequest(frame[FrameHeaderLen:], 2); !errors.Is(err, ErrMalformed) {
		t.Fatalf("3 arguments under a bound of 2: %v", err)
	}
}

// TestResponseRoundTrip: AppendResponseFrame's wrapper reads back with
// DecodeResponse, a value that is an empty stream included.
func TestResponseRoundTrip(t *testing.T) {
	for _, c := range []struct {
		data []byte
		typ  string
	}{{[]byte{0x05, 'w', 'o', 'r', 'l', 'd'}, "java.lang.String"}, {[]byte{'N'}, ""}, {nil, "void"}} {
		frame := AppendResponseFrame(nil, c.data, c.typ)
		if int(binary.BigEndian.Uint32(frame[1:5])) != len(frame)-FrameHeaderLen {
			t.Fatalf("frame length % x for %d bytes", frame[1:5], len(frame))
		}
		r, err := DecodeResponse(frame[FrameHeaderLen:])
		if err != nil || r.SerializeType != SerializeHessian2 || !r.HasData || !slices.Equal(r.Data, c.data) || r.Type != c.typ {
			t.Fatalf("%q %q: decoded %+v, %v", c.data, c.typ, r, err)
		}
	}
}

// TestMalformed: truncated fields and varints are ErrMalformed, never a
// panic or a read past the message.
func TestMalformed(t *testing.T) {
	frame := AppendRequestFrame(nil, [][]byte{{1, 2, 3, 4}}, []string{"int"})
	msg := frame[FrameHeaderLen:]
	for n := range len(msg) {
		// A cut at a field's end is a shorter message; any other is an error.
		if _, err := DecodeRequest(msg[:n], 8); err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
	for _, bad := range [][]byte{{0x12}, {0x12, 0x05, 'a'}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, err := DecodeRequest(bad, 8); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v", bad, err)
		}
	}
	if _, err := DecodeResponse(slices.Concat(AppendResponseFrame(nil, []byte{'N'}, "")[FrameHeaderLen:], []byte{0x12, 0x01, 'N'})); !errors.Is(err, ErrMalformed) {
		t.Errorf("two results: %v", err)
	}
}
