package dubboroute_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	_ "github.com/dubbogw/dubbogw/all"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/registry/zookeeper"
)

// dubboRoute returns a config with a static registry and one Dubbo route
// whose dubbo section is given (indented by 6).
func dubboRoute(match, dubbo string) string {
	return `
registries:
  local:
    providers:
      com.example.UserService: ["127.0.0.1:20880"]
routes:
  - name: r
    match: ` + match + `
    dubbo:
` + dubbo
}

func TestDubboConfigProblems(t *testing.T) {
	cases := []struct {
		name, yaml, path, reason string
	}{
		{"valid", dubboRoute(`{methods: [GET], path: "/u/{id}"}`, "      registry: local\n      interface: com.example.UserService\n      method: getUser\n      params: [{type: java.lang.String, from: path, name: id}]\n"), "", ""},
		{"route discovery on a static registry", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      discovery: application\n"),
			"routes[0].dubbo.discovery", `registry "local" is static: it has no discovery modes`},
		// A static registry has no discovery modes at all: any mode, known
		// or not, is refused as such (modes are now the registry type's).
		{"unknown route discovery", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      discovery: app\n"),
			"routes[0].dubbo.discovery", `registry "local" is static: it has no discovery modes`},
		{"unknown route discovery on a zookeeper registry", zkRoute("      registry: zk\n      interface: a.B\n      method: m\n      discovery: app\n"),
			"routes[0].dubbo.discovery", `unknown mode "app" (known: auto, interface, application)`},
		{"undefined registry", dubboRoute(`{path: /u}`, "      registry: zk\n      interface: com.example.UserService\n      method: m\n"),
			"routes[0].dubbo.registry", `registry "zk" is not defined; defined: local`},
		{"both upstream and dubbo", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n    upstream: x\n"),
			"routes[0]", "set one of dubbo, upstream, not dubbo and upstream"},
		{"missing method", dubboRoute(`{path: /u}`, "      registry: local\n      interface: com.example.UserService\n"),
			"routes[0].dubbo.method", "required: a Java method name"},
		{"bad interface", dubboRoute(`{path: /u}`, "      registry: local\n      interface: com..Bad\n      method: m\n"),
			"routes[0].dubbo.interface", "a Java interface name"},
		{"path param not captured", dubboRoute(`{path: "/u/{id}"}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: int, from: path, name: uid}]\n"),
			"routes[0].dubbo.params[0].name", `path parameter "uid" is not captured by the route's match.path (it captures: id)`},
		{"query without name", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: int, from: query}]\n"),
			"routes[0].dubbo.params[0].name", "required: the query parameter to read"},
		{"unknown source", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: int, from: cookie, name: c}]\n"),
			"routes[0].dubbo.params[0].from", `unknown source "cookie"`},
		{"constant without value", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: int, from: constant}]\n"),
			"routes[0].dubbo.params[0].value", "required: the constant's value"},
		{"whole body mixed with named", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: a.Dto}, {type: int, name: n}]\n"),
			"routes[0].dubbo.params[1]", "params[0] takes the whole body"},
		{"missing type", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{from: body, name: n}]\n"),
			"routes[0].dubbo.params[0].type", "required: the parameter's Java type"},
		{"JDK class without its package", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: String, from: query, name: q}]\n"),
			"routes[0].dubbo.params[0].type", `"String" names String without its package: did you mean java.lang.String?`},
		{"JDK class inside a generic type", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: \"java.util.List<Long>\"}]\n"),
			"routes[0].dubbo.params[0].type", `did you mean java.lang.Long?`},
		{"own class without its package", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: \"User[]\"}]\n"),
			"routes[0].dubbo.params[0].type", `names User without its package: Java types are written in full (com.example.User)`},
		{"not a type name", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: \"java.util.Map<a-b, c>\"}]\n"),
			"routes[0].dubbo.params[0].type", `a-b is not a class name`},
		{"unknown loadbalance", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      loadbalance: fastest\n"),
			"routes[0].dubbo.loadbalance", `unknown load balance "fastest"`},
		{"hash argument out of range", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      loadbalance: consistenthash\n      hash_arguments: [1]\n      params: [{type: int, from: constant, value: \"1\"}]\n"),
			"routes[0].dubbo.hash_arguments[0]", "argument 1 does not exist: the method has 1 parameters"},
		{"reserved attachment on the allow-list", dubboRoute(`{path: "/d/{interface}/{method}"}`, "      registry: local\n      passthrough: {allow: [com.example.*], attachments: [x-tenant, group]}\n"),
			"routes[0].dubbo.passthrough.attachments[1]", `"group" is an attachment Dubbo reserves`},
		{"bad constant tag", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      tag: \"gray; x\"\n"),
			"routes[0].dubbo.tag", `"gray; x": want at most 64 letters, digits`},
		{"bad tag header", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      tag_header: \"X Tag\"\n"),
			"routes[0].dubbo.tag_header", `"X Tag" is not an HTTP header name`},
		{"dubbo.tag on the allow-list", dubboRoute(`{path: "/d/{interface}/{method}"}`, "      registry: local\n      passthrough: {allow: [com.example.*], attachments: [Dubbo.Tag]}\n"),
			"routes[0].dubbo.passthrough.attachments[0]", `"Dubbo.Tag" is an attachment Dubbo reserves`},
		{"identity attachment on the allow-list", dubboRoute(`{path: "/d/{interface}/{method}"}`, "      registry: local\n      passthrough: {allow: [com.example.*], attachments: [userId]}\n"),
			"routes[0].dubbo.passthrough.attachments[0]", `"userId" carries identity`},
		{"gadget package allowed", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      allowed_classes: [com.example.*, com.sun.rowset.*]\n"),
			"routes[0].dubbo.allowed_classes[1]", `"com.sun.rowset.*" is or contains known deserialization gadgets`},
		{"gadget parameter type", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      params: [{type: java.lang.ProcessBuilder}]\n"),
			"routes[0].dubbo.params[0].type", `"java.lang.ProcessBuilder" is a known deserialization gadget`},
		{"budget below the body limit", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      max_body_bytes_in_flight: 1MiB\n"),
			"routes[0].dubbo.max_body_bytes_in_flight", "less than the route's max_body_bytes"},
		{"passthrough without captures", dubboRoute(`{path: /dubbo}`, "      registry: local\n      passthrough: {allow: [com.example.*]}\n"),
			"routes[0].dubbo.passthrough", "must capture {interface}"},
		{"passthrough without allow", dubboRoute(`{path: "/dubbo/{interface}/{method}"}`, "      registry: local\n      passthrough: {}\n"),
			"routes[0].dubbo.passthrough.allow", "required: list the interfaces"},
		{"exception status", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      exception_status: 200\n"),
			"routes[0].dubbo.exception_status", "must be an HTTP error status"},
		{"bad timeout", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      timeout: 1000\n"),
			"routes[0].dubbo.timeout", `duration "1000" has no unit`},
		{"failure ratio", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      breaker: {failure_ratio: 1.5}\n"),
			"routes[0].dubbo.breaker.failure_ratio", "must be 0..1"},
		{"references max", "dubbo: {references: {max: -1}}\n",
			"dubbo.references.max", "must be at least 1"},
		{"tls with a missing CA", "dubbo: {tls: {enabled: true, ca_file: /nonexistent/ca.pem}}\n",
			"dubbo.tls", "reading ca_file"},
		{"tls cert without key", "dubbo: {tls: {cert_file: /etc/c.pem}}\n",
			"dubbo.tls", "cert_file and key_file go together"},
		{"tls min version", "dubbo: {tls: {min_version: '1.1'}}\n",
			"dubbo.tls", `min_version "1.1"`},
		{"async without generic", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      generic: false\n      async: true\n"),
			"routes[0].dubbo.async", "async ($invokeAsync) is a generic call"},
		{"unknown protocol", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      protocol: grpc\n"),
			"routes[0].dubbo.protocol", `unknown protocol "grpc" (known: dubbo, tri, auto)`},
		{"generic over tri", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      protocol: tri\n      generic: true\n"),
			"routes[0].dubbo.generic", "Triple providers take typed calls only"},
		{"pass-through over tri", dubboRoute(`{path: "/d/{interface}/{method}"}`, "      registry: local\n      protocol: tri\n      generic: false\n      passthrough: {allow: [a.B]}\n"),
			"routes[0].dubbo.passthrough", "Triple providers do not serve"},
		{"static tri provider", "registries:\n  local:\n    providers:\n      a.B: [\"tri://127.0.0.1:50051\"]\n", "", ""},
		{"static provider of another protocol", "registries:\n  local:\n    providers:\n      a.B: [\"rest://127.0.0.1:8080\"]\n",
			`registries.local.providers["a.B"][0]`, `protocol "rest" is not supported (dubbo or tri)`},
		{"bad types", dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      types: {a.Dto: {\"bad field\": int}}\n"),
			`routes[0].dubbo.types["a.Dto"]["bad field"]`, "is not a Java field name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "" {
				configtest.Parse(t, tc.yaml)
				return
			}
			configtest.Parse(t, tc.yaml, configtest.Want{Path: tc.path, Reason: tc.reason})
		})
	}
}

// zkRoute returns a config with a zookeeper registry "zk" and one Dubbo
// route on /u whose dubbo section is given (indented by 6).
func zkRoute(dubbo string) string {
	return `
registries:
  zk: {type: zookeeper, address: 127.0.0.1:2181}
routes:
  - name: r
    match: {path: /u}
    dubbo:
` + dubbo
}

func TestDubboDefaults(t *testing.T) {
	c := configtest.Parse(t, dubboRoute(`{methods: [GET], path: "/u/{id}"}`,
		"      registry: local\n      interface: com.example.UserService\n      method: getUser\n      params: [{type: java.lang.String, from: path, name: id}, {type: a.Dto}]\n"))
	d, ok := dubboroute.RouteOf(c.Routes[0])
	if !ok {
		t.Fatalf("route kind %q, spec %T", c.Routes[0].Kind, c.Routes[0].Spec)
	}
	if !*d.Generic || d.Timeout != dubboroute.DefaultDubboTimeout || d.Cluster != "failover" || *d.Retries != 2 || !*d.Idempotent ||
		d.LoadBalance != "random" || d.ExceptionStatus != 500 || !*d.Breaker.Enabled || c.Routes[0].Timeout != dubboroute.DefaultDubboTimeout {
		t.Errorf("defaults: %+v", d)
	}
	if d.Params[1].From != dubboroute.FromBody || *d.Params[0].Required != true || *d.Params[1].Required != false {
		t.Errorf("param defaults: %+v", d.Params)
	}
	cl := dubboroute.ClientOf(c)
	if c.Registries["local"].Type != "static" || cl.MaxPayload != 8<<20 || cl.Heartbeat != dubboroute.DefaultDubboHeartbeat {
		t.Errorf("client defaults: %+v %+v", c.Registries["local"], cl)
	}
	// The zookeeper registry's own defaults are checked in registry/zookeeper.
	zk := configtest.Parse(t, "registries:\n  zk: {type: zookeeper, address: \"zookeeper://127.0.0.1:2181,127.0.0.1:2182\"}\n")
	if cl := dubboroute.ClientOf(zk); cl.References.Max != dubboroute.DefaultMaxReferences {
		t.Errorf("references defaults: %+v", cl.References)
	}
	if d.Protocol != dubboroute.ProtocolAuto {
		t.Errorf("protocol %q, want auto", d.Protocol)
	}
	// Over Triple, calls are typed by default.
	c = configtest.Parse(t, dubboRoute(`{path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n      protocol: tri\n"))
	if d, _ := dubboroute.RouteOf(c.Routes[0]); *d.Generic {
		t.Errorf("a tri route is generic by default")
	}
	// POST is not idempotent unless the route says so.
	c = configtest.Parse(t, dubboRoute(`{methods: [POST], path: /u}`, "      registry: local\n      interface: a.B\n      method: m\n"))
	if d, _ := dubboroute.RouteOf(c.Routes[0]); *d.Idempotent {
		t.Errorf("POST route idempotent by default")
	}
}

// TestRouteDiscovery: routes asking for another discovery mode than their
// zookeeper registry's share one derived registry per mode, a copy of
// theirs; a route asking for the registry's own mode keeps it.
func TestRouteDiscovery(t *testing.T) {
	route := func(name, mode string) string {
		return fmt.Sprintf("  - {name: %s, match: {path: /%s}, dubbo: {registry: zk, interface: a.B, method: m, discovery: %q}}\n", name, name, mode)
	}
	c := configtest.Parse(t, "registries:\n  zk: {type: zookeeper, address: 127.0.0.1:2181, root: g, metadata: {timeout: 1s}}\nroutes:\n"+
		route("a", "application")+route("b", "application")+route("c", "auto")+route("d", "")+route("e", "interface"))
	var regs []string
	for _, r := range c.Routes {
		d, _ := dubboroute.RouteOf(r)
		regs = append(regs, d.Registry)
	}
	if want := []string{"zk@application", "zk@application", "zk", "zk", "zk@interface"}; !slices.Equal(regs, want) {
		t.Errorf("routes' registries %v, want %v", regs, want)
	}
	app, base := c.Registries["zk@application"], c.Registries["zk"]
	if len(c.Registries) != 3 || app == nil {
		t.Fatalf("registries %v", slices.Sorted(maps.Keys(c.Registries)))
	}
	appZK, _ := app.Spec.(*zookeeper.Config)
	baseZK, _ := base.Spec.(*zookeeper.Config)
	if appZK == nil || baseZK == nil || appZK == baseZK || app.DerivedFrom != "zk" || base.DerivedFrom != "" ||
		appZK.Discovery != "application" || baseZK.Discovery != "auto" ||
		appZK.Root != "g" || appZK.Metadata.Timeout != config.Duration(time.Second) || appZK.Address != baseZK.Address {
		t.Errorf("registries %v; zk@application %+v %+v", slices.Sorted(maps.Keys(c.Registries)), app, appZK)
	}
	// Defaults again (a reload re-parses; a caller may call it twice): nothing more.
	config.Defaults(c)
	if d, _ := dubboroute.RouteOf(c.Routes[0]); len(c.Registries) != 3 || d.Registry != "zk@application" {
		t.Errorf("Defaults is not idempotent: %v", slices.Sorted(maps.Keys(c.Registries)))
	}
}
