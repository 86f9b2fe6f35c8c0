package protocol

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestAppendRequestBytes(t *testing.T) {
	req := &Request{
		ID: 42, TwoWay: true,
		Path: "com.example.Echo", Method: "echo", ParamTypes: "Ljava/lang/String;",
		Args:        []any{"hi"},
		Attachments: map[string]string{"k": "v"},
	}
	got, err := AppendRequest(nil, hessian.NewEncoder(nil), req)
	if err != nil {
		t.Fatal(err)
	}
	want := hx(t, `
		da bb c2 00 | 00 00 00 00 00 00 00 2a | 00 00 00 39
		05 322e302e32
		10 636f6d2e6578616d706c652e4563686f
		00
		04 6563686f
		12 4c6a6176612f6c616e672f537472696e673b
		02 6869
		48 01 6b 01 76 5a`)
	if !bytes.Equal(got, want) {
		t.Errorf("got\n% x\nwant\n% x", got, want)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	e := hessian.NewEncoder(nil)
	d := hessian.NewDecoder(nil)
	for _, req := range []*Request{
		{ID: 1, TwoWay: true, DubboVersion: "2.0.2", Path: "com.example.demo.UserService", Version: "1.0.0",
			Method: "createUser", ParamTypes: "Lcom/example/demo/User;", Args: []any{user()},
			Attachments: map[string]string{"group": "g1", "timeout": "1000", "path": "com.example.demo.UserService"}},
		{ID: 2, Path: "com.example.demo.UserService", Method: "greet"},
		{ID: 3, TwoWay: true, Path: "p", Method: MethodInvoke, ParamTypes: GenericParamTypes,
			WriteArgs: func(e *hessian.Encoder) error {
				e.WriteString("getUser")
				e.WriteListStart(GenericTypesListType, 1)
				e.WriteString("java.lang.String")
				e.WriteListStart(GenericArgsListType, 1)
				e.WriteString("7")
				return nil
			},
			Attachments: map[string]string{AttachmentGeneric: "true"}},
		{ID: 4, TwoWay: true, Path: "p", Method: "m", ParamTypes: "IJ[ILjava/lang/String;",
			Args: []any{int32(1), int64(2), &hessian.List{Type: "[int", Items: []any{int32(3)}}, nil}},
	} {
		frame, err := AppendRequest([]byte("xx"), e, req)
		if err != nil {
			t.Fatal(err)
		}
		h, body := mustFrame(t, frame[2:])
		if !h.Request || h.TwoWay != req.TwoWay || h.Event || h.ID != req.ID {
			t.Errorf("header %+v for %+v", h, req)
		}
		got, err := DecodeRequest(h, body, d)
		if err != nil {
			t.Fatalf("request %d: %v", req.ID, err)
		}
		wantVersion := req.DubboVersion
		if wantVersion == "" {
			wantVersion = DefaultDubboVersion
		}
		if got.DubboVersion != wantVersion || got.Path != req.Path || got.Version != req.Version ||
			got.Method != req.Method || got.ParamTypes != req.ParamTypes {
			t.Errorf("request %d decoded as %+v", req.ID, got)
		}
		wantArgs := req.Args
		if req.WriteArgs != nil {
			wantArgs = []any{"getUser",
				&hessian.List{Type: "[string", Items: []any{"java.lang.String"}},
				&hessian.List{Type: "[object", Items: []any{"7"}}}
		}
		if len(wantArgs) == 0 {
			wantArgs = nil
		}
		if !reflect.DeepEqual(got.Args, wantArgs) {
			t.Errorf("request %d args %#v, want %#v", req.ID, got.Args, wantArgs)
		}
		wantAtt := map[string]any{}
		for k, v := range req.Attachments {
			wantAtt[k] = v
		}
		if !reflect.DeepEqual(got.Attachments, wantAtt) {
			t.Errorf("request %d attachments %v, want %v", req.ID, got.Attachments, wantAtt)
		}
	}
}

func TestAppendRequestKeepsDstOnError(t *testing.T) {
	e := hessian.NewEncoder(nil)
	boom := errors.New("boom")
	dst := []byte("keep")
	got, err := AppendRequest(dst, e, &Request{Path: "p", Method: "m", WriteArgs: func(*hessian.Encoder) error { return boom }})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "writing arguments of p.m") {
		t.Errorf("error %v", err)
	}
	if string(got) != "keep" {
		t.Errorf("dst became %q", got)
	}
	_, err = AppendRequest(dst, e, &Request{Path: "p", Method: "m", Args: []any{struct{}{}}})
	if err == nil || !strings.Contains(err.Error(), "argument 0 of p.m") {
		t.Errorf("unencodable argument: %v", err)
	}
}

func TestDecodeRequestNullVersionAndNoAttachments(t *testing.T) {
	// A Java consumer without a service version writes null; very old ones
	// write no attachments.
	e := hessian.NewEncoder(nil)
	e.WriteString("2.0.2")
	e.WriteString("p")
	e.WriteNull()
	e.WriteString("m")
	e.WriteString("I")
	e.WriteInt(5)
	h := Header{Request: true, TwoWay: true, Serialization: 2, ID: 1, BodyLen: len(e.Bytes())}
	req, err := DecodeRequest(h, e.Bytes(), hessian.NewDecoder(nil))
	if err != nil {
		t.Fatal(err)
	}
	if req.Version != "" || req.Attachments != nil || !reflect.DeepEqual(req.Args, []any{int32(5)}) {
		t.Errorf("decoded %+v", req)
	}
}

func TestDecodeRequestErrorsNameTheField(t *testing.T) {
	h := Header{Request: true, TwoWay: true, Serialization: 2, ID: 11}
	body := func(build func(e *hessian.Encoder)) []byte {
		e := hessian.NewEncoder(nil)
		build(e)
		return e.Bytes()
	}
	strs := func(e *hessian.Encoder, s ...string) {
		for _, x := range s {
			e.WriteString(x)
		}
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"garbage", []byte{0xff, 0xfe, 0x00}, "request 11: reading dubbo version"},
		{"empty", nil, "reading dubbo version: unexpected EOF"},
		{"number for path", body(func(e *hessian.Encoder) { e.WriteString("2.0.2"); e.WriteInt(3) }), "reading service path: got an int, want a string"},
		{"truncated method", body(func(e *hessian.Encoder) { strs(e, "2.0.2", "p", "") })[:9], "reading method name: unexpected EOF"},
		{"bad descriptor", body(func(e *hessian.Encoder) { strs(e, "2.0.2", "p", "", "m", "Ljava/lang/String") }), "reading parameter types: invalid parameter descriptor"},
		{"missing argument", body(func(e *hessian.Encoder) { strs(e, "2.0.2", "p", "", "m", "II"); e.WriteInt(1) }), "reading argument"},
		{"more types than bytes", body(func(e *hessian.Encoder) { strs(e, "2.0.2", "p", "", "m", strings.Repeat("I", 100)) }), "100 parameter types but 0 bytes left"},
		{"attachments not a map", body(func(e *hessian.Encoder) { strs(e, "2.0.2", "p", "", "m", "", "x") }), "reading attachments: got a string, want a map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest(h, tc.body, hessian.NewDecoder(nil))
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := DecodeRequest(Header{Serialization: 2}, nil, hessian.NewDecoder(nil)); err == nil {
		t.Error("a response header decoded as a request")
	}
	_, err := DecodeRequest(h, body(func(e *hessian.Encoder) { strs(e, "2.0.2", "p", "", "m", "II"); e.WriteInt(1) }), hessian.NewDecoder(nil))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("missing last argument: %v", err)
	}
}

func TestSupportsResponseAttachments(t *testing.T) {
	for v, want := range map[string]bool{
		"2.0.2": true, "2.0.3": true, "2.0.10": true, "2.0.99": true,
		"2.0.0": false, "2.0.1": false, "": false, "2.6.5": false, "2.7.8": false, "3.0.0": false, "x": false,
		"2.0.2.1": true, // four parts are not scaled, as in Java
	} {
		if got := SupportsResponseAttachments(v); got != want {
			t.Errorf("SupportsResponseAttachments(%q) = %v, want %v", v, got, want)
		}
	}
}
