package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestResponseRoundTripAllKinds(t *testing.T) {
	exc := &hessian.Exception{Class: "com.example.demo.DemoException", Message: "boom"}
	att := map[string]any{"dubbo": "2.0.2", "trace": "abc"}
	for _, tc := range []struct {
		name string
		resp Response
		kind ResponseKind
	}{
		{"exception", Response{ID: 1, Exception: exc}, KindException},
		{"value", Response{ID: 2, Value: user()}, KindValue},
		{"null", Response{ID: 3}, KindNull},
		{"exception with attachments", Response{ID: 4, Exception: exc, WithAttachments: true, Attachments: att}, KindExceptionWithAttachments},
		{"value with attachments", Response{ID: 5, Value: "hello", WithAttachments: true, Attachments: att}, KindValueWithAttachments},
		{"null with attachments", Response{ID: 6, WithAttachments: true}, KindNullWithAttachments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame, err := AppendResponse(nil, hessian.NewEncoder(nil), &tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			h, body := mustFrame(t, frame)
			if h.Request || h.Event || h.Status != StatusOK || h.ID != tc.resp.ID {
				t.Fatalf("header %+v", h)
			}
			got, err := DecodeResponse(h, body, hessian.NewDecoder(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tc.kind {
				t.Errorf("kind %d, want %d", got.Kind, tc.kind)
			}
			if tc.kind.IsException() {
				x, ok := hessian.AsException(got.Exception)
				if !ok || x.Class != exc.Class || x.Message != exc.Message {
					t.Errorf("exception %#v", got.Exception)
				}
			} else if !reflect.DeepEqual(got.Value, tc.resp.Value) {
				t.Errorf("value %#v, want %#v", got.Value, tc.resp.Value)
			}
			switch {
			case !tc.kind.HasAttachments() && got.Attachments != nil:
				t.Errorf("attachments %v on kind %d", got.Attachments, tc.kind)
			case tc.kind.HasAttachments() && tc.resp.Attachments == nil && len(got.Attachments) != 0:
				t.Errorf("attachments %v, want an empty map", got.Attachments)
			case tc.resp.Attachments != nil && !reflect.DeepEqual(got.Attachments, tc.resp.Attachments):
				t.Errorf("attachments %v, want %v", got.Attachments, tc.resp.Attachments)
			}
		})
	}
}

func TestResponseErrorStatus(t *testing.T) {
	msg := "Not found exported service: com.example.Nope:1.0.0"
	frame, err := AppendResponse(nil, hessian.NewEncoder(nil), &Response{ID: 9, Status: StatusServiceNotFound, ErrorMessage: msg, Value: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	h, body := mustFrame(t, frame)
	if h.Status != StatusServiceNotFound {
		t.Fatalf("status %v", h.Status)
	}
	// The body is only the message.
	if want := append([]byte{0x30, byte(len(msg))}, msg...); string(body) != string(want) {
		t.Errorf("body % x, want % x", body, want)
	}
	got, err := DecodeResponse(h, body, hessian.NewDecoder(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusServiceNotFound || got.ErrorMessage != msg || got.Value != nil {
		t.Errorf("decoded %+v", got)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	ok := Header{Serialization: 2, Status: StatusOK, ID: 12}
	enc := func(vals ...any) []byte {
		e := hessian.NewEncoder(nil)
		for _, v := range vals {
			if err := e.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
		return e.Bytes()
	}
	for _, tc := range []struct {
		name string
		h    Header
		body []byte
		want string
	}{
		{"empty", ok, nil, "response 12: reading response kind: unexpected EOF"},
		{"garbage", ok, []byte{0xff, 0x00}, "reading response kind"},
		{"kind out of range", ok, enc(int32(6)), "got int 6, want an int 0-5"},
		{"kind not an int", ok, enc("x"), "got a string, want an int 0-5"},
		{"missing value", ok, enc(int32(1)), "reading value: unexpected EOF"},
		{"null exception", ok, enc(int32(0), nil), "reading exception: got null"},
		{"missing attachments", ok, enc(int32(5)), "reading attachments: missing"},
		{"truncated value", ok, enc(int32(1), "a long enough string")[:5], "reading value"},
		{"error message not a string", Header{Serialization: 2, Status: StatusServiceError, ID: 12}, enc(int32(1)), "reading error message: got an int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeResponse(tc.h, tc.body, hessian.NewDecoder(nil))
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := DecodeResponse(Header{Request: true, Serialization: 2}, nil, hessian.NewDecoder(nil)); err == nil {
		t.Error("a request header decoded as a response")
	}
}
