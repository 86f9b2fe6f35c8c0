package protocol

import (
	"errors"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/hessian"
)

// ResponseKind is the int that starts the body of an OK response.
type ResponseKind byte

// The response kinds of Java Dubbo's DubboCodec.
const (
	KindException                ResponseKind = 0
	KindValue                    ResponseKind = 1
	KindNull                     ResponseKind = 2
	KindExceptionWithAttachments ResponseKind = 3
	KindValueWithAttachments     ResponseKind = 4
	KindNullWithAttachments      ResponseKind = 5
)

// HasAttachments reports whether a body of this kind ends with attachments.
func (k ResponseKind) HasAttachments() bool { return k >= KindExceptionWithAttachments }

// IsException reports whether the body carries a Throwable.
func (k ResponseKind) IsException() bool {
	return k == KindException || k == KindExceptionWithAttachments
}

// Response is a response to encode, or one decoded.
type Response struct {
	ID     uint64
	Event  bool   // a heartbeat response: Value is its data (nil)
	Status Status // StatusOK, or an error status whose body is ErrorMessage

	Value        any // the result: KindValue, or KindNull when nil
	Exception    any // the Throwable (*hessian.Exception, or the *hessian.Object decoded; see hessian.AsException)
	ErrorMessage string

	Attachments     map[string]any // decoded when present on the wire
	WithAttachments bool           // write the kinds 3/4/5 (Attachments may be nil: an empty map is written)

	// Kind is set by DecodeResponse for an OK, non-event response; AppendResponse
	// derives it from Exception, Value and WithAttachments instead.
	Kind ResponseKind
}

// AppendResponse appends the whole frame of resp (header and body) to dst.
// e is a reusable encoder; AppendResponse resets it. On error dst is
// returned as it was given.
func AppendResponse(dst []byte, e *hessian.Encoder, resp *Response) ([]byte, error) {
	start := len(dst)
	status := resp.Status
	if status == 0 {
		status = StatusOK
	}
	dst = AppendHeader(dst, Header{Event: resp.Event, Status: status, ID: resp.ID})
	e.Reset(dst)
	if err := writeResponseBody(e, status, resp); err != nil {
		return dst[:start], &ProtocolError{Msg: "writing response " + strconv.FormatUint(resp.ID, 10), Err: err}
	}
	frame := e.Bytes()
	if err := patchBodyLen(frame, start); err != nil {
		return dst[:start], err
	}
	return frame, nil
}

func writeResponseBody(e *hessian.Encoder, status Status, resp *Response) error {
	switch {
	case status != StatusOK:
		e.WriteString(resp.ErrorMessage)
		return nil
	case resp.Event:
		return e.Encode(resp.Value)
	}
	var kind ResponseKind
	var v any
	switch {
	case resp.Exception != nil:
		kind, v = KindException, resp.Exception
	case resp.Value != nil:
		kind, v = KindValue, resp.Value
	default:
		kind = KindNull
	}
	if resp.WithAttachments {
		kind += 3
	}
	e.WriteInt(int32(kind))
	if kind != KindNull && kind != KindNullWithAttachments {
		if err := e.Encode(v); err != nil {
			return err
		}
	}
	if resp.WithAttachments {
		if resp.Attachments == nil {
			e.WriteMapStart("")
			e.WriteMapEnd()
			return nil
		}
		return e.Encode(resp.Attachments)
	}
	return nil
}

// DecodeResponse decodes the body of a response frame with d (which it
// resets). Errors are *ProtocolError naming what was being read.
func DecodeResponse(h Header, body []byte, d *hessian.Decoder) (*Response, error) {
	if h.Request {
		return nil, &ProtocolError{Msg: "frame " + strconv.FormatUint(h.ID, 10) + " is a request, not a response"}
	}
	d.Reset(body)
	resp := &Response{ID: h.ID, Event: h.Event, Status: h.Status}
	if h.Status != StatusOK {
		if len(body) == 0 {
			return resp, nil
		}
		v, err := d.Decode()
		if err != nil {
			return nil, responseError(h, "error message", err)
		}
		switch m := v.(type) {
		case string:
			resp.ErrorMessage = m
		case nil:
		default:
			return nil, responseError(h, "error message", errors.New("got "+typeName(v)+", want a string"))
		}
		return resp, nil
	}
	if h.Event {
		if len(body) == 0 {
			return resp, nil
		}
		v, err := d.Decode()
		if err != nil {
			return nil, responseError(h, "event data", err)
		}
		resp.Value = v
		return resp, nil
	}
	v, err := d.Decode()
	if err != nil {
		return nil, responseError(h, "response kind", noEOF(err))
	}
	k, ok := v.(int32)
	if !ok || k < 0 || k > int32(KindNullWithAttachments) {
		return nil, responseError(h, "response kind", errors.New("got "+describe(v)+", want an int 0-5"))
	}
	resp.Kind = ResponseKind(k)
	switch resp.Kind {
	case KindException, KindExceptionWithAttachments:
		x, err := d.Decode()
		if err != nil {
			return nil, responseError(h, "exception", noEOF(err))
		}
		if x == nil {
			return nil, responseError(h, "exception", errors.New("got null"))
		}
		resp.Exception = x
	case KindValue, KindValueWithAttachments:
		x, err := d.Decode()
		if err != nil {
			return nil, responseError(h, "value", noEOF(err))
		}
		resp.Value = x
	}
	if resp.Kind.HasAttachments() {
		if d.Remaining() == 0 {
			return nil, responseError(h, "attachments", errors.New("missing"))
		}
		att, err := decodeAttachments(d)
		if err != nil {
			return nil, responseError(h, "attachments", err)
		}
		resp.Attachments = att
	}
	return resp, nil
}

func responseError(h Header, what string, err error) error {
	return &ProtocolError{Msg: "response " + strconv.FormatUint(h.ID, 10) + ": reading " + what, Err: err}
}

func describe(v any) string {
	if n, ok := v.(int32); ok {
		return "int " + strconv.Itoa(int(n))
	}
	return typeName(v)
}

// SupportsResponseAttachments reports whether a consumer sending this dubbo
// version reads responses with attachments (kinds 3, 4 and 5), as Java's
// Version.isSupportResponseAttachment decides: 2.0.2 up to 2.0.99.
func SupportsResponseAttachments(dubboVersion string) bool {
	v, ok := intVersion(dubboVersion)
	return ok && v >= 2000200 && v <= 2009900
}

// intVersion is Java Dubbo's Version.getIntVersion: each dot-separated part
// (its leading digits) is two decimal digits, and a three-part version is
// scaled to four parts ("2.0.2" → 2000200).
func intVersion(version string) (int, bool) {
	if version == "" {
		return 0, false
	}
	parts := 1
	for i := range len(version) {
		if version[i] == '.' {
			parts++
		}
	}
	if parts > 4 {
		return 0, false
	}
	v, place := 0, parts-1
	for part := range strings.SplitSeq(version, ".") {
		n, digits := 0, 0
		for digits < len(part) && part[digits] >= '0' && part[digits] <= '9' && digits < 4 {
			n = n*10 + int(part[digits]-'0')
			digits++
		}
		v += n * pow100(place)
		place--
	}
	if parts == 3 {
		v *= 100
	}
	return v, true
}

func pow100(n int) int {
	p := 1
	for range n {
		p *= 100
	}
	return p
}
