package triple

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/internal/triplewire"
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
		msg = protowire.AppendString(protowire.AppendTag(msg, 4, protowire.BytesType), q.Symbol)
	} else {
		msg = protowire.AppendString(protowire.AppendTag(msg, 3, protowire.BytesType), q.Filename)
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
	err := triplewire.Fields(b, func(field protowire.Number, v []byte) error {
		switch field {
		case 4: // FileDescriptorResponse { repeated bytes file_descriptor_proto = 1; }
			return triplewire.Fields(v, func(f protowire.Number, fv []byte) error {
				if f == 1 {
					files = append(files, fv)
				}
				return nil
			})
		case 7: // ErrorResponse { int32 error_code = 1; string error_message = 2; }
			msg := "error"
			_ = triplewire.Fields(v, func(f protowire.Number, fv []byte) error {
				if f == 2 {
					msg = string(fv)
				}
				return nil
			})
			return errors.New("the provider's reflection answered: " + msg)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the reflection answer: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("the reflection answer holds no file")
	}
	return files, nil
}
