// Package triplewire is the wire of non-IDL Triple calls, shared by the
// Triple client (package triple) and the in-process provider
// (dubbo/provider): the wrapper messages that carry hessian2 values, and
// the gRPC frame around them.
package triplewire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The wire of a non-IDL Triple call, as Java Dubbo 3 and dubbo-go 3
// write it:
//
//	message TripleRequestWrapper {            // the request
//	    string serializeType = 1;             // "hessian2"
//	    repeated bytes args = 2;              // one hessian2 stream per argument
//	    repeated string argTypes = 3;         // the Java parameter types
//	}
//	message TripleResponseWrapper {           // the answer (Java)
//	    string serializeType = 1;
//	    bytes data = 2;                       // one hessian2 stream: the result
//	    string type = 3;                      // its Java type
//	}
//
// dubbo-go answers with a TripleRequestWrapper whose single args entry
// is the result: the same field numbers and wire types (a repeated bytes
// field of one entry is a bytes field on the wire), so one decoder reads
// both. Each message travels in a gRPC length-prefixed frame: a flag byte
// (1: compressed) and a big-endian uint32 length.

// Protobuf field numbers of the wrappers.
const (
	FieldSerializeType = 1
	FieldArgs          = 2 // data in the response
	FieldArgTypes      = 3 // type in the response
)

// FrameHeaderLen is the gRPC message prefix: flag byte and length.
const FrameHeaderLen = 5

// SerializeHessian2 is the serialize type of every wrapper written here.
const SerializeHessian2 = "hessian2"

// AppendRequestFrame appends the gRPC frame of a TripleRequestWrapper with
// the given hessian2 arguments and Java types to dst.
func AppendRequestFrame(dst []byte, args [][]byte, types []string) []byte {
	n := protowire.SizeTag(FieldSerializeType) + protowire.SizeBytes(len(SerializeHessian2))
	for _, a := range args {
		n += protowire.SizeTag(FieldArgs) + protowire.SizeBytes(len(a))
	}
	for _, t := range types {
		n += protowire.SizeTag(FieldArgTypes) + protowire.SizeBytes(len(t))
	}
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = appendString(dst, FieldSerializeType, SerializeHessian2)
	for _, a := range args {
		dst = protowire.AppendTag(dst, FieldArgs, protowire.BytesType)
		dst = protowire.AppendBytes(dst, a)
	}
	for _, t := range types {
		dst = appendString(dst, FieldArgTypes, t)
	}
	return dst
}

// appendString appends a string field.
func appendString(dst []byte, field protowire.Number, v string) []byte {
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	return protowire.AppendString(dst, v)
}

// Response is a decoded response wrapper. Its slices alias the message.
type Response struct {
	SerializeType string
	Data          []byte // the value
	HasData       bool   // Data was present (an empty stream is not the same as none)
	Type          string
}

// ErrMalformed is the cause of every decoding failure.
var ErrMalformed = errors.New("malformed protobuf")

// Fields calls f with each length-delimited field of msg, in order,
// and skips the others, as protobuf requires of unknown fields. It stops
// at f's first error. Linear in len(msg); nothing is allocated.
func Fields(msg []byte, f func(field protowire.Number, v []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrMalformed, protowire.ParseError(n))
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
				return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(n))
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}

// DecodeResponse reads a TripleResponseWrapper (or dubbo-go's request
// wrapper used as one). A second data entry is refused (a unary call has
// one result).
func DecodeResponse(msg []byte) (Response, error) {
	var r Response
	err := Fields(msg, func(field protowire.Number, v []byte) error {
		switch field {
		case FieldSerializeType:
			r.SerializeType = string(v)
		case FieldArgs:
			if r.HasData {
				return fmt.Errorf("%w: more than one result", ErrMalformed)
			}
			r.Data, r.HasData = v, true
		case FieldArgTypes:
			r.Type = string(v)
		}
		return nil
	})
	return r, err
}

// AppendResponseFrame appends the gRPC frame of a TripleResponseWrapper
// holding data, one hessian2 stream of Java type typ, to dst.
func AppendResponseFrame(dst, data []byte, typ string) []byte {
	n := protowire.SizeTag(FieldSerializeType) + protowire.SizeBytes(len(SerializeHessian2)) +
		protowire.SizeTag(FieldArgs) + protowire.SizeBytes(len(data))
	if typ != "" {
		n += protowire.SizeTag(FieldArgTypes) + protowire.SizeBytes(len(typ))
	}
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = appendString(dst, FieldSerializeType, SerializeHessian2)
	dst = protowire.AppendTag(dst, FieldArgs, protowire.BytesType)
	dst = protowire.AppendBytes(dst, data)
	if typ != "" {
		dst = appendString(dst, FieldArgTypes, typ)
	}
	return dst
}

// Request is a decoded request wrapper. Its slices alias the message.
type Request struct {
	SerializeType string
	Args          [][]byte // one hessian2 stream each
	Types         []string // the Java parameter types
}

// DecodeRequest reads a TripleRequestWrapper of at most maxArgs
// arguments and as many types.
func DecodeRequest(msg []byte, maxArgs int) (Request, error) {
	var r Request
	err := Fields(msg, func(field protowire.Number, v []byte) error {
		switch field {
		case FieldSerializeType:
			r.SerializeType = string(v)
		case FieldArgs:
			if len(r.Args) == maxArgs {
				return fmt.Errorf("%w: more than %d arguments", ErrMalformed, maxArgs)
			}
			r.Args = append(r.Args, v)
		case FieldArgTypes:
			if len(r.Types) == maxArgs {
				return fmt.Errorf("%w: more than %d argument types", ErrMalformed, maxArgs)
			}
			r.Types = append(r.Types, string(v))
		}
		return nil
	})
	return r, err
}
