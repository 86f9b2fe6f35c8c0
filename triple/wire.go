package triple

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
	fieldSerializeType = 1
	fieldArgs          = 2 // data in the response
	fieldArgTypes      = 3 // type in the response
)

// frameHeaderLen is the gRPC message prefix: flag byte and length.
const frameHeaderLen = 5

// serializeHessian2 is the serialize type of every request we send.
const serializeHessian2 = "hessian2"

// appendRequestFrame appends the gRPC frame of a TripleRequestWrapper with
// the given hessian2 arguments and Java types to dst.
func appendRequestFrame(dst []byte, args [][]byte, types []string) []byte {
	n := protowire.SizeTag(fieldSerializeType) + protowire.SizeBytes(len(serializeHessian2))
	for _, a := range args {
		n += protowire.SizeTag(fieldArgs) + protowire.SizeBytes(len(a))
	}
	for _, t := range types {
		n += protowire.SizeTag(fieldArgTypes) + protowire.SizeBytes(len(t))
	}
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = appendString(dst, fieldSerializeType, serializeHessian2)
	for _, a := range args {
		dst = protowire.AppendTag(dst, fieldArgs, protowire.BytesType)
		dst = protowire.AppendBytes(dst, a)
	}
	for _, t := range types {
		dst = appendString(dst, fieldArgTypes, t)
	}
	return dst
}

// appendString appends a string field.
func appendString(dst []byte, field protowire.Number, v string) []byte {
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	return protowire.AppendString(dst, v)
}

// response is a decoded response wrapper. Its slices alias the message.
type response struct {
	serializeType string
	data          []byte
	hasData       bool
	typ           string
}

var errMalformed = errors.New("malformed protobuf")

// bytesFields calls f with each length-delimited field of msg, in order,
// and skips the others, as protobuf requires of unknown fields. It stops
// at f's first error. Linear in len(msg); nothing is allocated.
func bytesFields(msg []byte, f func(field protowire.Number, v []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
				return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}

// decodeResponse reads a TripleResponseWrapper (or dubbo-go's request
// wrapper used as one). A second data entry is refused (a unary call has
// one result).
func decodeResponse(msg []byte) (response, error) {
	var r response
	err := bytesFields(msg, func(field protowire.Number, v []byte) error {
		switch field {
		case fieldSerializeType:
			r.serializeType = string(v)
		case fieldArgs:
			if r.hasData {
				return fmt.Errorf("%w: more than one result", errMalformed)
			}
			r.data, r.hasData = v, true
		case fieldArgTypes:
			r.typ = string(v)
		}
		return nil
	})
	return r, err
}
