package triple

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// Protobuf field numbers and wire types of the wrappers.
const (
	fieldSerializeType = 1
	fieldArgs          = 2 // data in the response
	fieldArgTypes      = 3 // type in the response

	wireVarint = 0
	wireI64    = 1
	wireLen    = 2
	wireI32    = 5
)

// frameHeaderLen is the gRPC message prefix: flag byte and length.
const frameHeaderLen = 5

// serializeHessian2 is the serialize type of every request we send.
const serializeHessian2 = "hessian2"

// appendRequestFrame appends the gRPC frame of a TripleRequestWrapper with
// the given hessian2 arguments and Java types to dst.
func appendRequestFrame(dst []byte, args [][]byte, types []string) []byte {
	n := fieldLen(fieldSerializeType, len(serializeHessian2))
	for _, a := range args {
		n += fieldLen(fieldArgs, len(a))
	}
	for _, t := range types {
		n += fieldLen(fieldArgTypes, len(t))
	}
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = appendField(dst, fieldSerializeType, serializeHessian2)
	for _, a := range args {
		dst = appendField(dst, fieldArgs, a)
	}
	for _, t := range types {
		dst = appendField(dst, fieldArgTypes, t)
	}
	return dst
}

// fieldLen is the encoded size of a length-delimited field of n bytes.
func fieldLen(field, n int) int {
	return varintLen(uint64(field<<3|wireLen)) + varintLen(uint64(n)) + n
}

func appendField[T string | []byte](dst []byte, field int, v T) []byte {
	dst = binary.AppendUvarint(dst, uint64(field<<3|wireLen))
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// response is a decoded response wrapper. Its slices alias the message.
type response struct {
	serializeType string
	data          []byte
	hasData       bool
	typ           string
}

var errMalformed = errors.New("malformed protobuf")

// decodeResponse reads a TripleResponseWrapper (or dubbo-go's request
// wrapper used as one). Unknown fields are skipped, as protobuf requires;
// a second data entry is refused (a unary call has one result). It runs in
// time linear in len(msg) and allocates only the two short strings.
func decodeResponse(msg []byte) (response, error) {
	var r response
	for len(msg) > 0 {
		key, n := binary.Uvarint(msg)
		if n <= 0 || key>>3 == 0 || key>>3 > 1<<29-1 {
			return r, fmt.Errorf("%w: bad field key", errMalformed)
		}
		msg = msg[n:]
		field, wire := int(key>>3), int(key&7)
		var v []byte
		switch wire {
		case wireVarint:
			_, n := binary.Uvarint(msg)
			if n <= 0 {
				return r, fmt.Errorf("%w: bad varint in field %d", errMalformed, field)
			}
			msg = msg[n:]
			continue
		case wireI64, wireI32:
			size := 8
			if wire == wireI32 {
				size = 4
			}
			if len(msg) < size {
				return r, fmt.Errorf("%w: field %d truncated", errMalformed, field)
			}
			msg = msg[size:]
			continue
		case wireLen:
			l, n := binary.Uvarint(msg)
			if n <= 0 || l > uint64(len(msg)-n) {
				return r, fmt.Errorf("%w: field %d: length beyond the message", errMalformed, field)
			}
			v, msg = msg[n:n+int(l)], msg[n+int(l):]
		default:
			return r, fmt.Errorf("%w: field %d has wire type %d", errMalformed, field, wire)
		}
		switch field {
		case fieldSerializeType:
			r.serializeType = string(v)
		case fieldArgs:
			if r.hasData {
				return r, fmt.Errorf("%w: more than one result", errMalformed)
			}
			r.data, r.hasData = v, true
		case fieldArgTypes:
			r.typ = string(v)
		}
	}
	return r, nil
}
