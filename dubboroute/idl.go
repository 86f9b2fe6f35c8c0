package dubboroute

import (
	"fmt"
	"os"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// IDL makes a route call a protobuf (IDL) method over Triple: the
// request's JSON body is the request message (protobuf's JSON mapping),
// and the response message is answered as JSON.
type IDL struct {
	// DescriptorSet is a FileDescriptorSet file holding the service and
	// every type it uses (protoc --include_imports --descriptor_set_out).
	// Read when the configuration is loaded or reloaded.
	DescriptorSet string `yaml:"descriptor_set"`
}

// maxDescriptorSet bounds the descriptor set file read.
const maxDescriptorSet = 16 << 20

// loadIDLMethod finds service.method (service: the protobuf service's
// full name) in the descriptor set at path.
func loadIDLMethod(path, service, method string) (protoreflect.MethodDescriptor, error) {
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
	d, err := files.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, fmt.Errorf("the descriptor set %s has no service %s", path, service)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service in %s", service, path)
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

// idlMethod converts one IDL method's messages between JSON and protobuf.
type idlMethod struct {
	md protoreflect.MethodDescriptor
}

// encode reads the JSON body into the request message and encodes it; an
// empty body is the empty message.
func (m *idlMethod) encode(body []byte) ([]byte, error) {
	in := dynamicpb.NewMessage(m.md.Input())
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := protojson.Unmarshal(body, in); err != nil {
			return nil, &argError{msg: fmt.Sprintf("the body is not a %s message: %v", m.md.Input().FullName(), err)}
		}
	}
	return proto.Marshal(in)
}

// decode reads the response message and writes it as JSON.
func (m *idlMethod) decode(b []byte) ([]byte, error) {
	out := dynamicpb.NewMessage(m.md.Output())
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("the answer is not a %s message: %w", m.md.Output().FullName(), err)
	}
	return protojson.Marshal(out)
}
