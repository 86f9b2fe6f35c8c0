package protocol

import (
	"encoding/binary"
	"math"
	"strconv"
)

// HeaderLen is the size of a frame header.
const HeaderLen = 16

// DefaultMaxPayload is Java Dubbo's default payload limit (8 MiB), the
// largest body a frame may declare.
const DefaultMaxPayload = 8 << 20

// SerializationHessian2 is the serialization id of hessian2, the only
// serialization this package speaks.
const SerializationHessian2 = 2

const (
	magicHigh = 0xda
	magicLow  = 0xbb

	flagRequest       = 0x80
	flagTwoWay        = 0x40
	flagEvent         = 0x20
	serializationMask = 0x1f
)

// Status is the status byte of a response.
type Status byte

// The response statuses of Java Dubbo's org.apache.dubbo.remoting.exchange.Response.
const (
	StatusOK                  Status = 20
	StatusClientTimeout       Status = 30
	StatusServerTimeout       Status = 31
	StatusBadRequest          Status = 40
	StatusBadResponse         Status = 50
	StatusServiceNotFound     Status = 60
	StatusServiceError        Status = 70
	StatusServerError         Status = 80
	StatusClientError         Status = 90
	StatusThreadpoolExhausted Status = 100
)

// String returns Java's name of the status ("OK", "SERVICE_NOT_FOUND"...),
// or "STATUS(n)" for a byte Dubbo does not define.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusClientTimeout:
		return "CLIENT_TIMEOUT"
	case StatusServerTimeout:
		return "SERVER_TIMEOUT"
	case StatusBadRequest:
		return "BAD_REQUEST"
	case StatusBadResponse:
		return "BAD_RESPONSE"
	case StatusServiceNotFound:
		return "SERVICE_NOT_FOUND"
	case StatusServiceError:
		return "SERVICE_ERROR"
	case StatusServerError:
		return "SERVER_ERROR"
	case StatusClientError:
		return "CLIENT_ERROR"
	case StatusThreadpoolExhausted:
		return "SERVER_THREADPOOL_EXHAUSTED_ERROR"
	}
	return "STATUS(" + strconv.Itoa(int(s)) + ")"
}

// Header is a decoded frame header.
type Header struct {
	Request       bool   // a request (or a request event); false for a response
	TwoWay        bool   // the sender expects a response
	Event         bool   // a heartbeat or readonly event rather than a call
	Serialization byte   // serialization id; 0 means hessian2 when appending
	Status        Status // responses only
	ID            uint64 // pairs a response with its request
	BodyLen       int    // bytes of body after the header
}

// ParseHeader decodes the first HeaderLen bytes of b. A short b, a bad
// magic, a serialization other than hessian2 or a negative body length is
// a *ProtocolError.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, &ProtocolError{Msg: "frame header of " + strconv.Itoa(len(b)) + " bytes, want 16"}
	}
	if b[0] != magicHigh || b[1] != magicLow {
		return Header{}, &ProtocolError{Msg: "bad magic 0x" + hexByte(b[0]) + hexByte(b[1]) + " in frame header, want 0xdabb"}
	}
	flag := b[2]
	h := Header{
		Request:       flag&flagRequest != 0,
		TwoWay:        flag&flagTwoWay != 0,
		Event:         flag&flagEvent != 0,
		Serialization: flag & serializationMask,
		Status:        Status(b[3]),
		ID:            binary.BigEndian.Uint64(b[4:12]),
	}
	if h.Serialization != SerializationHessian2 {
		return Header{}, &ProtocolError{Msg: "frame header declares serialization id " + strconv.Itoa(int(h.Serialization)) + ", only hessian2 (2) is supported"}
	}
	n := int32(binary.BigEndian.Uint32(b[12:16]))
	if n < 0 {
		return Header{}, &ProtocolError{Msg: "frame header declares a negative body length " + strconv.Itoa(int(n))}
	}
	h.BodyLen = int(n)
	return h, nil
}

// AppendHeader appends the 16-byte encoding of h to dst. A zero
// Serialization is written as hessian2; the Status byte is written for
// responses only (requests carry 0).
func AppendHeader(dst []byte, h Header) []byte {
	flag := h.Serialization & serializationMask
	if flag == 0 {
		flag = SerializationHessian2
	}
	var status byte
	if h.Request {
		flag |= flagRequest
		if h.TwoWay {
			flag |= flagTwoWay
		}
	} else {
		status = byte(h.Status)
	}
	if h.Event {
		flag |= flagEvent
	}
	dst = append(dst, magicHigh, magicLow, flag, status)
	dst = binary.BigEndian.AppendUint64(dst, h.ID)
	return binary.BigEndian.AppendUint32(dst, uint32(clampLen(h.BodyLen)))
}

func clampLen(n int) int32 {
	if n < 0 || n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}

// patchBodyLen writes the length of the body that follows the header
// starting at frame[start] into that header.
func patchBodyLen(frame []byte, start int) error {
	n := len(frame) - start - HeaderLen
	if n > math.MaxInt32 {
		return &ProtocolError{Msg: "body of " + strconv.Itoa(n) + " bytes does not fit a frame"}
	}
	binary.BigEndian.PutUint32(frame[start+12:start+16], uint32(n))
	return nil
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&0xf]})
}

// ProtocolError reports a frame that breaks the Dubbo protocol: a bad
// header, an oversized or truncated frame, or a body that does not decode.
// Err, when set, is the underlying error (a *hessian.DecodeError, an I/O
// error, ErrPayloadTooLarge).
type ProtocolError struct {
	Msg string
	Err error
}

func (e *ProtocolError) Error() string {
	if e.Err == nil {
		return "dubbo protocol: " + e.Msg
	}
	return "dubbo protocol: " + e.Msg + ": " + e.Err.Error()
}

func (e *ProtocolError) Unwrap() error { return e.Err }
