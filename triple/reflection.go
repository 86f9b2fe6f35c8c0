package triple

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dubbogw/dubbogw/dubbo"
)

// ReflectionQuery asks a provider's gRPC server reflection for the file
// that defines Symbol (a service's full name), or for the file named
// Filename (a dependency).
type ReflectionQuery struct {
	Symbol, Filename string
}

// The reflection services tried, the current one first.
var reflectionServices = [...]string{"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}

// Reflect asks the provider t's gRPC server reflection (v1, else
// v1alpha) one question and returns the FileDescriptorProtos of its
// answer, encoded. Answers are bounded by MaxPayload like any message.
func (c *Client) Reflect(ctx context.Context, t dubbo.Target, q ReflectionQuery) ([][]byte, error) {
	// ServerReflectionRequest: file_by_filename = 3, file_containing_symbol = 4.
	var msg []byte
	if q.Symbol != "" {
		msg = appendField(msg, 4, q.Symbol)
	} else {
		msg = appendField(msg, 3, q.Filename)
	}
	var err error
	for _, svc := range reflectionServices {
		inv := &dubbo.Invocation{Interface: svc, Method: "ServerReflectionInfo"}
		var res []byte
		res, err = c.InvokeProto(ctx, t, inv, msg)
		if isUnimplemented(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return reflectionFiles(res)
	}
	return nil, fmt.Errorf("the provider at %s offers no gRPC server reflection: %w", t.Addr, err)
}

// reflectionFiles reads a ServerReflectionResponse: the files of its
// file_descriptor_response (4), or its error_response (7) as an error.
func reflectionFiles(b []byte) ([][]byte, error) {
	var files [][]byte
	for len(b) > 0 {
		field, v, rest, err := nextLenField(b)
		if err != nil {
			return nil, fmt.Errorf("the reflection answer: %w", err)
		}
		b = rest
		switch field {
		case 4: // FileDescriptorResponse { repeated bytes file_descriptor_proto = 1; }
			for len(v) > 0 {
				f, fv, r, err := nextLenField(v)
				if err != nil {
					return nil, fmt.Errorf("the reflection answer's files: %w", err)
				}
				v = r
				if f == 1 {
					files = append(files, fv)
				}
			}
		case 7: // ErrorResponse { int32 error_code = 1; string error_message = 2; }
			msg := "error"
			for len(v) > 0 {
				f, fv, r, err := nextLenField(v)
				if err != nil {
					break
				}
				v = r
				if f == 2 {
					msg = string(fv)
				}
			}
			return nil, errors.New("the provider's reflection answered: " + msg)
		}
	}
	if len(files) == 0 {
		return nil, errors.New("the reflection answer holds no file")
	}
	return files, nil
}

// nextLenField reads the next field of a message, skipping varint and
// fixed-size ones: its number and, for a length-delimited one, its bytes.
func nextLenField(b []byte) (field int, v, rest []byte, err error) {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, nil, nil, errMalformed
		}
		b = b[n:]
		switch key & 7 {
		case wireVarint:
			if _, n := binary.Uvarint(b); n <= 0 {
				return 0, nil, nil, errMalformed
			} else {
				b = b[n:]
			}
		case wireI64, wireI32:
			size := 8
			if key&7 == wireI32 {
				size = 4
			}
			if len(b) < size {
				return 0, nil, nil, errMalformed
			}
			b = b[size:]
		case wireLen:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return 0, nil, nil, errMalformed
			}
			return int(key >> 3), b[n : n+int(l)], b[n+int(l):], nil
		default:
			return 0, nil, nil, errMalformed
		}
	}
	return 0, nil, nil, nil
}
