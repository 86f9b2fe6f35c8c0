package protocol

import (
	"bytes"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

// The benchmarks carry a 5-field POJO (com.example.demo.User) as the one
// argument of a request and as the value of a response.

func benchRequest() *Request {
	return &Request{ID: 1, TwoWay: true, Path: "com.example.demo.UserService", Version: "1.0.0",
		Method: "createUser", ParamTypes: "Lcom/example/demo/User;", Args: []any{user()},
		Attachments: map[string]string{"group": "g", "timeout": "1000", "path": "com.example.demo.UserService"}}
}

func BenchmarkAppendRequest(b *testing.B) {
	req := benchRequest()
	e := hessian.NewEncoder(nil)
	buf, _ := AppendRequest(nil, e, req)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		req.ID++
		buf, _ = AppendRequest(buf[:0], e, req)
	}
}

// BenchmarkAppendRequestWriteArgs streams the POJO with the encoder's
// low-level calls, as the gateway does from JSON.
func BenchmarkAppendRequestWriteArgs(b *testing.B) {
	req := benchRequest()
	fields := []string{"id", "name", "age", "email", "active"}
	req.Args = nil
	req.WriteArgs = func(e *hessian.Encoder) error {
		e.WriteObjectStart("com.example.demo.User", fields)
		e.WriteString("u-1001")
		e.WriteString("Ada Lovelace")
		e.WriteInt(36)
		e.WriteString("ada@example.com")
		e.WriteBool(true)
		return nil
	}
	e := hessian.NewEncoder(nil)
	buf, _ := AppendRequest(nil, e, req)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendRequest(buf[:0], e, req)
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	frame, _ := AppendRequest(nil, hessian.NewEncoder(nil), benchRequest())
	h, body := mustFrame(b, frame)
	d := hessian.NewDecoder(nil)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(h, body, d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	resp := &Response{ID: 1, Value: user(), WithAttachments: true, Attachments: map[string]any{AttachmentDubbo: "2.0.2"}}
	e := hessian.NewEncoder(nil)
	buf, _ := AppendResponse(nil, e, resp)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendResponse(buf[:0], e, resp)
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	frame, _ := AppendResponse(nil, hessian.NewEncoder(nil), &Response{ID: 1, Value: user(), WithAttachments: true, Attachments: map[string]any{AttachmentDubbo: "2.0.2"}})
	h, body := mustFrame(b, frame)
	d := hessian.NewDecoder(nil)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeResponse(h, body, d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeader(b *testing.B) {
	buf := make([]byte, 0, HeaderLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendHeader(buf[:0], Header{Request: true, TwoWay: true, ID: 7, BodyLen: 300})
		if _, err := ParseHeader(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReaderNext(b *testing.B) {
	frame, _ := AppendResponse(nil, hessian.NewEncoder(nil), &Response{ID: 1, Value: user()})
	stream := bytes.Repeat(frame, 1000)
	src := bytes.NewReader(stream)
	r := NewReader(src, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Next(); err != nil {
			src.Reset(stream)
		}
	}
}

// The baselines: the POJO alone through the hessian codec, no framing.

func BenchmarkBaselineHessianEncodePOJO(b *testing.B) {
	u := user()
	e := hessian.NewEncoder(nil)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(buf[:0])
		if err := e.Encode(u); err != nil {
			b.Fatal(err)
		}
		buf = e.Bytes()
	}
}

func BenchmarkBaselineHessianDecodePOJO(b *testing.B) {
	e := hessian.NewEncoder(nil)
	if err := e.Encode(user()); err != nil {
		b.Fatal(err)
	}
	data := e.Bytes()
	d := hessian.NewDecoder(nil)
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(data)
		if _, err := d.Decode(); err != nil {
			b.Fatal(err)
		}
	}
}
