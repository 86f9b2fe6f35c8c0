package dubboroute_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/internal/testproto"
)

func TestIDLRouteConfig(t *testing.T) {
	set := testproto.DescriptorSet(t)
	junk := filepath.Join(t.TempDir(), "junk.pb")
	if err := os.WriteFile(junk, []byte("not protobuf \xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	route := func(extra string) string {
		return dubboRoute(`{methods: [POST], path: /p}`, "      registry: local\n      interface: p.S\n      method: Get\n"+extra)
	}
	configtest.Parse(t, route("      idl: {reflection: true}\n")) // read from the providers, at the first call
	c := configtest.Parse(t, route("      idl: {descriptor_set: "+set+"}\n"))
	if d, _ := dubboroute.RouteOf(c.Routes[0]); d.Protocol != dubboroute.ProtocolTriple || *d.Generic {
		t.Errorf("an IDL route: protocol %q, generic %v; want tri, typed", d.Protocol, *d.Generic)
	}
	for _, tc := range []struct{ name, yaml, path, reason string }{
		{"no file", route("      idl: {}\n"), "routes[0].dubbo.idl.descriptor_set", "required"},
		{"both sources", route("      idl: {reflection: true, descriptor_set: " + set + "}\n"), "routes[0].dubbo.idl", "set one of descriptor_set and reflection"},
		{"missing file", route("      idl: {descriptor_set: /nonexistent.pb}\n"), "routes[0].dubbo.idl.descriptor_set", "reading the descriptor set"},
		{"not a descriptor set", route("      idl: {descriptor_set: " + junk + "}\n"), "routes[0].dubbo.idl.descriptor_set", "is not a FileDescriptorSet"},
		{"unknown method", dubboRoute(`{path: /p}`, "      registry: local\n      interface: p.S\n      method: Put\n      idl: {descriptor_set: "+set+"}\n"),
			"routes[0].dubbo.idl.descriptor_set", "service p.S has no method Put (it has: Get, Watch)"},
		{"unknown service", dubboRoute(`{path: /p}`, "      registry: local\n      interface: p.T\n      method: Get\n      idl: {descriptor_set: "+set+"}\n"),
			"routes[0].dubbo.idl.descriptor_set", "has no service p.T"},
		{"streaming", dubboRoute(`{path: /p}`, "      registry: local\n      interface: p.S\n      method: Watch\n      idl: {descriptor_set: "+set+"}\n"),
			"routes[0].dubbo.idl.descriptor_set", "streams: an IDL route calls unary methods only"},
		{"params", route("      idl: {descriptor_set: " + set + "}\n      params: [{type: int}]\n"), "routes[0].dubbo.params", "the JSON body"},
		{"over dubbo", route("      idl: {descriptor_set: " + set + "}\n      protocol: dubbo\n"), "routes[0].dubbo.protocol", "over Triple"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configtest.Parse(t, tc.yaml, configtest.Want{Path: tc.path, Reason: tc.reason})
		})
	}
}
