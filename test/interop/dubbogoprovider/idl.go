package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	tri "dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The IDL (protobuf) service exported over Triple with -tri, described at
// run time instead of by protoc-generated code, as this file would:
//
//	syntax = "proto3";
//	package org.dubbogw.idl;
//	message Pet { string name = 1; int32 legs = 2; }
//	message HelloRequest { string name = 1; int32 times = 2; repeated string tags = 3; Pet pet = 4; int64 big = 5; }
//	message HelloReply { string message = 1; int64 count = 2; repeated string tags = 3; Pet pet = 4; int64 big = 5; }
//	service Greeter {
//	    rpc SayHello(HelloRequest) returns (HelloReply);  // "hello <name>" × times, the rest echoed
//	    rpc Fail(HelloRequest) returns (HelloReply);      // a business error carrying the name
//	}
//
// The file is registered in protobuf's global registry, where dubbo-go's
// gRPC server reflection finds it, and -idl-descriptor-out writes it as
// the FileDescriptorSet `protoc --descriptor_set_out` would.
const (
	idlPackage = "org.dubbogw.idl"
	idlService = idlPackage + ".Greeter"
)

func idlFile() *descriptorpb.FileDescriptorProto {
	str, i32, i64 := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum(), descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	opt, rep := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	field := func(name string, n int32, typ *descriptorpb.FieldDescriptorProto_Type, label *descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: typ, Label: label,
			JsonName: proto.String(jsonName(name))}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	pet := "." + idlPackage + ".Pet"
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("org/dubbogw/idl/greeter.proto"),
		Package: proto.String(idlPackage),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Pet"), Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, str, opt, ""), field("legs", 2, i32, opt, "")}},
			{Name: proto.String("HelloRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, str, opt, ""), field("times", 2, i32, opt, ""), field("tags", 3, str, rep, ""),
				field("pet", 4, msg, opt, pet), field("big", 5, i64, opt, "")}},
			{Name: proto.String("HelloReply"), Field: []*descriptorpb.FieldDescriptorProto{
				field("message", 1, str, opt, ""), field("count", 2, i64, opt, ""), field("tags", 3, str, rep, ""),
				field("pet", 4, msg, opt, pet), field("big", 5, i64, opt, "")}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Greeter"),
			Method: []*descriptorpb.MethodDescriptorProto{
				{Name: proto.String("SayHello"), InputType: proto.String("." + idlPackage + ".HelloRequest"), OutputType: proto.String("." + idlPackage + ".HelloReply")},
				{Name: proto.String("Fail"), InputType: proto.String("." + idlPackage + ".HelloRequest"), OutputType: proto.String("." + idlPackage + ".HelloReply")},
			},
		}},
	}
}

// jsonName is protoc's JSON name of a field: lowerCamelCase.
func jsonName(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// IDLGreeter implements org.dubbogw.idl.Greeter on dynamic messages.
type IDLGreeter struct {
	in, out protoreflect.MessageDescriptor
}

// Reference names the service in the provider configuration.
func (*IDLGreeter) Reference() string { return "IDLGreeter" }

// registerIDL registers the file globally (for reflection), optionally
// writes its descriptor set to descriptorOut, and returns the service and
// its ServiceInfo.
func registerIDL(descriptorOut string) (*IDLGreeter, *common.ServiceInfo, error) {
	fdp := idlFile()
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		return nil, nil, fmt.Errorf("the IDL file: %w", err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		return nil, nil, fmt.Errorf("registering the IDL file: %w", err)
	}
	if descriptorOut != "" {
		b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fdp}})
		if err == nil {
			err = os.WriteFile(descriptorOut, b, 0o644)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("-idl-descriptor-out: %w", err)
		}
	}
	g := &IDLGreeter{
		in:  fd.Messages().ByName("HelloRequest"),
		out: fd.Messages().ByName("HelloReply"),
	}
	method := func(name string, f func(req *dynamicpb.Message) (proto.Message, error)) common.MethodInfo {
		return common.MethodInfo{
			Name:        name,
			Type:        constant.CallUnary,
			ReqInitFunc: func() interface{} { return dynamicpb.NewMessage(g.in) },
			MethodFunc: func(_ context.Context, args []interface{}, _ interface{}) (interface{}, error) {
				req, ok := args[0].(*dynamicpb.Message)
				if !ok {
					return nil, fmt.Errorf("argument is a %T", args[0])
				}
				res, err := f(req)
				if err != nil {
					return nil, err
				}
				return tri.NewResponse(res), nil
			},
		}
	}
	info := &common.ServiceInfo{
		InterfaceName: idlService,
		Methods: []common.MethodInfo{
			method("SayHello", g.sayHello),
			method("Fail", func(req *dynamicpb.Message) (proto.Message, error) {
				return nil, errors.New("no greeting for " + req.Get(g.in.Fields().ByName("name")).String())
			}),
		},
	}
	return g, info, nil
}

func (g *IDLGreeter) sayHello(req *dynamicpb.Message) (proto.Message, error) {
	in, out := g.in.Fields(), g.out.Fields()
	name := req.Get(in.ByName("name")).String()
	times := req.Get(in.ByName("times")).Int()
	if times < 1 {
		times = 1
	}
	res := dynamicpb.NewMessage(g.out)
	res.Set(out.ByName("message"), protoreflect.ValueOfString(strings.TrimSpace(strings.Repeat("hello "+name+" ", int(times)))))
	res.Set(out.ByName("count"), protoreflect.ValueOfInt64(times))
	if tags := req.Get(in.ByName("tags")).List(); tags.Len() > 0 {
		list := res.Mutable(out.ByName("tags")).List()
		for i := range tags.Len() {
			list.Append(tags.Get(i))
		}
	}
	if req.Has(in.ByName("pet")) {
		res.Set(out.ByName("pet"), req.Get(in.ByName("pet")))
	}
	res.Set(out.ByName("big"), req.Get(in.ByName("big")))
	return res, nil
}

// SayHello and Fail are the service's methods as Go methods too: dubbo-go
// exports only a type with methods of the usual shape, whatever its
// ServiceInfo says; calls go through the ServiceInfo's MethodFuncs.
func (g *IDLGreeter) SayHello(_ context.Context, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	res, err := g.sayHello(req)
	if err != nil {
		return nil, err
	}
	return res.(*dynamicpb.Message), nil
}

// Fail always fails.
func (g *IDLGreeter) Fail(context.Context, *dynamicpb.Message) (*dynamicpb.Message, error) {
	return nil, errors.New("no greeting")
}
