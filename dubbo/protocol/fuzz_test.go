package protocol

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

var writeSeeds = flag.Bool("write-seeds", false, "rewrite the committed seed corpus under testdata/fuzz")

// fuzzMaxPayload keeps fuzzed frames small.
const fuzzMaxPayload = 1 << 16

// FuzzDecodeRequest feeds a byte stream through a Reader and DecodeRequest:
// nothing may panic, every error is io.EOF or a *ProtocolError, and a call
// that decodes encodes again and decodes to the same call.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), fuzzMaxPayload)
		d := hessian.NewDecoder(nil)
		e := hessian.NewEncoder(nil)
		for {
			h, body, err := r.Next()
			if err != nil {
				checkFuzzError(t, err)
				return
			}
			req, err := DecodeRequest(h, body, d)
			if err != nil {
				checkFuzzError(t, err)
				continue
			}
			if req.Event {
				continue
			}
			again := &Request{ID: req.ID, TwoWay: req.TwoWay, DubboVersion: req.DubboVersion, Path: req.Path,
				Version: req.Version, Method: req.Method, ParamTypes: req.ParamTypes, Args: req.Args}
			frame, err := AppendRequest(nil, e, again)
			if err != nil {
				t.Fatalf("decoded %+v but cannot encode it: %v", req, err)
			}
			h2, body2 := mustFrame(t, frame)
			req2, err := DecodeRequest(h2, body2, hessian.NewDecoder(nil))
			if err != nil {
				t.Fatalf("re-encoded request does not decode: %v", err)
			}
			if req2.Path != req.Path || req2.Method != req.Method || req2.ParamTypes != req.ParamTypes || len(req2.Args) != len(req.Args) {
				t.Fatalf("round trip changed the call: %+v → %+v", req, req2)
			}
		}
	})
}

// FuzzDecodeResponse is FuzzDecodeRequest for responses.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range responseSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), fuzzMaxPayload)
		d := hessian.NewDecoder(nil)
		e := hessian.NewEncoder(nil)
		for {
			h, body, err := r.Next()
			if err != nil {
				checkFuzzError(t, err)
				return
			}
			resp, err := DecodeResponse(h, body, d)
			if err != nil {
				checkFuzzError(t, err)
				continue
			}
			if resp.Status == 0 {
				continue // AppendResponse writes a zero Status as OK
			}
			resp.WithAttachments = resp.Kind.HasAttachments()
			frame, err := AppendResponse(nil, e, resp)
			if err != nil {
				t.Fatalf("decoded %+v but cannot encode it: %v", resp, err)
			}
			h2, body2 := mustFrame(t, frame)
			resp2, err := DecodeResponse(h2, body2, hessian.NewDecoder(nil))
			if err != nil {
				t.Fatalf("re-encoded response does not decode: %v", err)
			}
			if resp2.Status != resp.Status || resp2.ErrorMessage != resp.ErrorMessage || (!resp.Event && canonicalKind(resp2) != canonicalKind(resp)) {
				t.Fatalf("round trip changed the response: %+v → %+v", resp, resp2)
			}
		}
	})
}

// canonicalKind is the kind a response is written with: a value kind
// carrying null is the null kind (Java writes RESPONSE_NULL_VALUE for a
// null result; another implementation may write a value kind with N, which
// decodes to the same response).
func canonicalKind(r *Response) ResponseKind {
	switch {
	case r.Kind == KindValue && r.Value == nil:
		return KindNull
	case r.Kind == KindValueWithAttachments && r.Value == nil:
		return KindNullWithAttachments
	}
	return r.Kind
}

func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var pe *ProtocolError
	if err != io.EOF && !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is neither io.EOF nor a *ProtocolError", err, err)
	}
}

func requestSeeds(t testing.TB) [][]byte {
	e := hessian.NewEncoder(nil)
	frame := func(req *Request) []byte {
		b, err := AppendRequest(nil, e, req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	typed := frame(&Request{ID: 1, TwoWay: true, Path: "com.example.demo.UserService", Version: "1.0.0",
		Method: "createUser", ParamTypes: "Lcom/example/demo/User;", Args: []any{user()},
		Attachments: map[string]string{"group": "g", "timeout": "1000"}})
	generic := frame(&Request{ID: 2, TwoWay: true, Path: "com.example.demo.UserService", Method: MethodInvoke,
		ParamTypes: GenericParamTypes, Args: []any{"getUser",
			&hessian.List{Type: GenericTypesListType, Items: []any{"java.lang.String"}},
			&hessian.List{Type: GenericArgsListType, Items: []any{"42"}}},
		Attachments: map[string]string{AttachmentGeneric: "true"}})
	primitives := frame(&Request{ID: 3, TwoWay: true, Path: "p", Method: "m", ParamTypes: "IJZD[I",
		Args: []any{int32(-1), int64(1 << 40), true, 2.5, &hessian.List{Type: "[int", Items: []any{int32(1), int32(2)}}}})
	badMagic := bytes.Clone(typed)
	badMagic[0] = 0xca
	oversized := AppendHeader(nil, Header{Request: true, TwoWay: true, ID: 9, BodyLen: fuzzMaxPayload + 1})
	garbage := append(AppendHeader(nil, Header{Request: true, TwoWay: true, ID: 10, BodyLen: 6}), 0xff, 0x41, 0x00, 0x55, 0x43, 0x90)
	return [][]byte{
		typed, generic, primitives,
		AppendHeartbeat(nil, 4, true),
		AppendReadonlyEvent(nil, 5),
		append(AppendHeartbeat(nil, 6, true), primitives...), // two frames
		typed[:HeaderLen+20],                                 // truncated body
		typed[:7],                                            // truncated header
		badMagic, oversized, garbage,
	}
}

func responseSeeds(t testing.TB) [][]byte {
	e := hessian.NewEncoder(nil)
	frame := func(resp *Response) []byte {
		b, err := AppendResponse(nil, e, resp)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	exc := &hessian.Exception{Class: "com.example.demo.DemoException", Message: "boom",
		StackTrace: []hessian.StackFrame{{DeclaringClass: "com.example.demo.UserServiceImpl", MethodName: "fail", FileName: "UserServiceImpl.java", LineNumber: 42}}}
	att := map[string]any{AttachmentDubbo: "2.0.2"}
	value := frame(&Response{ID: 1, Value: user()})
	list := frame(&Response{ID: 2, Value: &hessian.List{Type: "java.util.ArrayList", Items: []any{user(), user()}}, WithAttachments: true, Attachments: att})
	badMagic := bytes.Clone(value)
	badMagic[1] = 0x00
	return [][]byte{
		value, list,
		frame(&Response{ID: 3}),
		frame(&Response{ID: 4, WithAttachments: true}),
		frame(&Response{ID: 5, Exception: exc}),
		frame(&Response{ID: 6, Exception: exc, WithAttachments: true, Attachments: att}),
		frame(&Response{ID: 7, Status: StatusServiceNotFound, ErrorMessage: "Not found exported service: x"}),
		frame(&Response{ID: 8, Status: StatusThreadpoolExhausted, ErrorMessage: "thread pool is exhausted"}),
		AppendHeartbeat(nil, 9, false),
		value[:HeaderLen+3],
		badMagic,
		AppendHeader(nil, Header{ID: 10, Status: StatusOK, BodyLen: fuzzMaxPayload + 1}),
		append(AppendHeader(nil, Header{ID: 11, Status: StatusOK, BodyLen: 3}), 0x97, 0x4f, 0xff),
	}
}

// TestSeedCorpus rewrites testdata/fuzz/<Target>/ with -write-seeds;
// otherwise it checks the committed corpus is there.
func TestSeedCorpus(t *testing.T) {
	for target, seeds := range map[string][][]byte{
		"FuzzDecodeRequest":  requestSeeds(t),
		"FuzzDecodeResponse": responseSeeds(t),
	} {
		dir := filepath.Join("testdata", "fuzz", target)
		if !*writeSeeds {
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) < len(seeds) {
				t.Errorf("%s: %d committed seeds (%v), want %d: run go test -run TestSeedCorpus -write-seeds", dir, len(entries), err, len(seeds))
			}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
