// Package idl converts the messages of IDL (protobuf) methods between
// JSON (protobuf's JSON mapping) and the wire, with the methods described
// by a FileDescriptorSet: what an HTTP route or the CLI needs to call a
// Triple or gRPC method without generated code.
package idl

import (
	"context"
	"fmt"
	"os"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// maxDescriptorSet bounds the descriptor set file read.
const maxDescriptorSet = 16 << 20

// loadMethod finds service.method (service: the protobuf service's
// full name) in the descriptor set at path.
func loadMethod(path, service, method string) (protoreflect.MethodDescriptor, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the descriptor set: %w", err)
	}
	if st.Size() > maxDescriptorSet {
		return nil, fmt.Errorf("the descriptor set %s is %d bytes, over %d", path, st.Size(), maxDescriptorSet)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the descriptor set: %w", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("%s is not a FileDescriptorSet (protoc --descriptor_set_out): %w", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("the descriptor set %s: %w (build it with --include_imports)", path, err)
	}
	return findMethod(files, path, service, method)
}

// findMethod finds service.method among files (read from source, for
// errors).
func findMethod(files *protoregistry.Files, source, service, method string) (protoreflect.MethodDescriptor, error) {
	d, err := files.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, fmt.Errorf("%s has no service %s", source, service)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service in %s", service, source)
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		var names []string
		for i := range sd.Methods().Len() {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, fmt.Errorf("service %s has no method %s (it has: %s)", service, method, strings.Join(names, ", "))
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("%s.%s streams: an IDL route calls unary methods only", service, method)
	}
	return md, nil
}

// Method converts one unary method's messages between JSON and protobuf.
type Method struct {
	md protoreflect.MethodDescriptor
}

// Load finds service.method (service: the protobuf service's full name,
// method: the rpc's name) in the FileDescriptorSet file at path (protoc
// --include_imports --descriptor_set_out). A streaming method is refused.
func Load(path, service, method string) (*Method, error) {
	md, err := loadMethod(path, service, method)
	if err != nil {
		return nil, err
	}
	return &Method{md: md}, nil
}

// RequestError is a request that is not the method's request message.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// Encode reads JSON (protobuf's JSON mapping) into the request message
// and encodes it; empty JSON is the empty message. The error is a
// *RequestError naming the message.
func (m *Method) Encode(json []byte) ([]byte, error) {
	in := dynamicpb.NewMessage(m.md.Input())
	if len(strings.TrimSpace(string(json))) > 0 {
		if err := protojson.Unmarshal(json, in); err != nil {
			return nil, &RequestError{Msg: fmt.Sprintf("the body is not a %s message: %v", m.md.Input().FullName(), err)}
		}
	}
	return proto.Marshal(in)
}

// Decode reads an encoded response message and writes it as JSON.
func (m *Method) Decode(b []byte) ([]byte, error) {
	out := dynamicpb.NewMessage(m.md.Output())
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("the answer is not a %s message: %w", m.md.Output().FullName(), err)
	}
	return protojson.Marshal(out)
}

// maxReflectedFiles bounds the files read through reflection for one
// service (its file and the files it imports, transitively).
const maxReflectedFiles = 64

// Fetch asks a provider for encoded FileDescriptorProtos: the file
// defining symbol, or (symbol empty) the file named filename.
type Fetch func(ctx context.Context, symbol, filename string) ([][]byte, error)

// LoadFromReflection finds service.method with descriptors read through
// fetch (a provider's gRPC server reflection): the service's file, then
// every file it imports that the answers did not already hold, at most
// 64 files.
func LoadFromReflection(ctx context.Context, fetch Fetch, service, method string) (*Method, error) {
	files := map[string]*descriptorpb.FileDescriptorProto{}
	var order []string
	add := func(raw [][]byte) error {
		for _, b := range raw {
			fd := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("a file of the reflection answer: %w", err)
			}
			if _, ok := files[fd.GetName()]; !ok {
				files[fd.GetName()] = fd
				order = append(order, fd.GetName())
			}
		}
		return nil
	}
	raw, err := fetch(ctx, service, "")
	if err != nil {
		return nil, err
	}
	if err := add(raw); err != nil {
		return nil, err
	}
	for i := 0; i < len(order); i++ {
		for _, dep := range files[order[i]].GetDependency() {
			if _, ok := files[dep]; ok {
				continue
			}
			if len(files) >= maxReflectedFiles {
				return nil, fmt.Errorf("service %s imports more than %d files", service, maxReflectedFiles)
			}
			raw, err := fetch(ctx, "", dep)
			if err != nil {
				return nil, fmt.Errorf("reading %s, which %s imports: %w", dep, order[i], err)
			}
			if err := add(raw); err != nil {
				return nil, err
			}
			if _, ok := files[dep]; !ok {
				return nil, fmt.Errorf("the provider did not send %s, which %s imports", dep, order[i])
			}
		}
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, name := range order {
		set.File = append(set.File, files[name])
	}
	reg, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("the reflected descriptors of %s: %w", service, err)
	}
	md, err := findMethod(reg, "the provider's reflection", service, method)
	if err != nil {
		return nil, err
	}
	return &Method{md: md}, nil
}
