// Package testproto gives tests a protobuf descriptor set file to read.
package testproto

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// DescriptorSet writes, in a temporary directory, a FileDescriptorSet of
//
//	package p; message M { string s = 1; }
//	service S { rpc Get(M) returns (M); rpc Watch(M) returns (stream M); }
func DescriptorSet(t testing.TB) string {
	t.Helper()
	m := ".p.M"
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{{
		Name: proto.String("p.proto"), Package: proto.String("p"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: proto.String("s"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("s")}}}},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("S"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("Get"), InputType: proto.String(m), OutputType: proto.String(m)},
			{Name: proto.String("Watch"), InputType: proto.String(m), OutputType: proto.String(m), ServerStreaming: proto.Bool(true)},
		}}},
	}}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "set.pb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
