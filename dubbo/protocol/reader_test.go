package protocol

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestReaderReadsFramesInOrder(t *testing.T) {
	e := hessian.NewEncoder(nil)
	var stream []byte
	stream = AppendHeartbeat(stream, 1, true)
	stream, _ = AppendRequest(stream, e, &Request{ID: 2, TwoWay: true, Path: "p", Method: "m", ParamTypes: "Ljava/lang/String;", Args: []any{strings.Repeat("x", 100_000)}})
	stream = AppendReadonlyEvent(stream, 3)
	stream, _ = AppendResponse(stream, e, &Response{ID: 4, Value: "v"})

	r := NewReader(bytes.NewReader(stream), 0)
	d := hessian.NewDecoder(nil)
	var ids []uint64
	for {
		h, body, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(body) != h.BodyLen {
			t.Fatalf("frame %d: body %d bytes, header says %d", h.ID, len(body), h.BodyLen)
		}
		ids = append(ids, h.ID)
		if h.ID == 2 {
			req, err := DecodeRequest(h, body, d)
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := req.Args[0].(string); len(s) != 100_000 {
				t.Errorf("large argument came back with %d bytes", len(s))
			}
		}
	}
	if len(ids) != 4 || ids[0] != 1 || ids[3] != 4 {
		t.Errorf("frames %v", ids)
	}
}

func TestReaderTruncated(t *testing.T) {
	frame := AppendHeartbeat(nil, 1, true)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"header", frame[:10], "reading frame header: unexpected EOF"},
		{"body", append(AppendHeader(nil, Header{Request: true, ID: 3, BodyLen: 10}), 1, 2, 3), "reading body of frame 3 (3 of 10 bytes): unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := NewReader(bytes.NewReader(tc.in), 0).Next()
			var pe *ProtocolError
			if !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v (%T)", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestReaderBadMagic(t *testing.T) {
	_, _, err := NewReader(strings.NewReader("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0).Next()
	if err == nil || !strings.Contains(err.Error(), "bad magic 0x4745") {
		t.Errorf("error %v", err)
	}
}

// headerOnly yields one frame header and fails the test if anything more
// is read from it.
type headerOnly struct {
	t      *testing.T
	header []byte
}

func (h *headerOnly) Read(p []byte) (int, error) {
	if len(h.header) == 0 {
		h.t.Error("the body of an oversized frame was read")
		return 0, io.EOF
	}
	n := copy(p, h.header)
	h.header = h.header[n:]
	return n, nil
}

func TestReaderRejectsOversizedBodyBeforeReadingIt(t *testing.T) {
	src := &headerOnly{t: t, header: AppendHeader(nil, Header{Request: true, TwoWay: true, ID: 77, BodyLen: DefaultMaxPayload + 1})}
	h, _, err := NewReader(src, DefaultMaxPayload).Next()
	if !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"frame 77", "8388609 bytes", "payload limit of 8388608 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if h.ID != 77 { // so a server can answer the request it refuses
		t.Errorf("header %+v", h)
	}
}

func TestReaderReusesItsBuffer(t *testing.T) {
	e := hessian.NewEncoder(nil)
	frame, _ := AppendResponse(nil, e, &Response{ID: 1, Value: user()})
	src := bytes.NewReader(nil)
	r := NewReader(src, 0)
	read := func() {
		src.Reset(frame)
		if _, _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if allocs := testing.AllocsPerRun(100, read); allocs != 0 {
		t.Errorf("Next allocates %.1f times per frame", allocs)
	}
}
