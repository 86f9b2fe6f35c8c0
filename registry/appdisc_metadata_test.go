package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// appdiscDecodeFrame decodes a whole response frame (header and body) with
// the gateway's own decoder, as dubbo.Client does.
func appdiscDecodeFrame(t testing.TB, frame []byte) *protocol.Response {
	t.Helper()
	if len(frame) < protocol.HeaderLen {
		t.Fatalf("frame of %d bytes", len(frame))
	}
	h, err := protocol.ParseHeader(frame[:protocol.HeaderLen])
	if err != nil {
		t.Fatal(err)
	}
	if h.BodyLen != len(frame)-protocol.HeaderLen {
		t.Fatalf("header says %d body bytes, the file has %d", h.BodyLen, len(frame)-protocol.HeaderLen)
	}
	resp, err := protocol.DecodeResponse(h, frame[protocol.HeaderLen:], hessian.NewDecoder(nil))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// appdiscGreeterUser is what the real dubbo-go v3.3.0 providers of
// testdata/appdisc serve, at port.
func appdiscGreeterUser(app, ts string, port int) map[string]*ServiceInfo {
	return map[string]*ServiceInfo{
		"org.dubbogw.interop.UserService:1.0.0:dubbo": {
			Name: "org.dubbogw.interop.UserService", Version: "1.0.0", Protocol: "dubbo", Port: port,
			Path: "org.dubbogw.interop.UserService",
			Params: cluster.NewParams(map[string]string{
				"methods":     "Add,add,AddBonus,addBonus,Crash,crash,CreateUser,createUser,Fail,fail,GetUser,getUser,Greet,greet,Join,join,ListUsers,listUsers,Shift,shift,Slow,slow,Whoami,whoami",
				"loadbalance": "random", "release": "dubbo-golang-3.2.0", "timestamp": ts, "serialization": "hessian2",
				"cluster": "failover", "version": "1.0.0", "application": app,
			}),
		},
		"blue/org.dubbogw.interop.GreeterService:dubbo": {
			Name: "org.dubbogw.interop.GreeterService", Group: "blue", Protocol: "dubbo", Port: port,
			Path: "org.dubbogw.interop.GreeterService",
			Params: cluster.NewParams(map[string]string{
				"methods": "Hello,hello", "serialization": "hessian2", "cluster": "failover", "application": app,
				"group": "blue", "loadbalance": "random", "release": "dubbo-golang-3.2.0", "timestamp": ts,
			}),
		},
	}
}

// TestAppdiscMetadataRealHessian decodes the real answer of a dubbo-go
// v3.3.0 provider's MetadataService.getMetadataInfo (kind 4, with
// attachments) with the gateway's decoder, converts it, and builds the
// provider URLs against the real instance node of the same provider.
func TestAppdiscMetadataRealHessian(t *testing.T) {
	resp := appdiscDecodeFrame(t, appdiscReadFile(t, "dubbogo-getMetadataInfo-response.bin"))
	if resp.Status != protocol.StatusOK || resp.Kind != protocol.KindValueWithAttachments {
		t.Fatalf("status %v kind %d", resp.Status, resp.Kind)
	}
	m, err := MetadataFromHessian(resp.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := &MetadataInfo{App: "facts-default", Revision: "59615343583", Services: appdiscGreeterUser("facts-default", "1796039132", 45915)}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
	inst := appdiscInstance(t, "dubbogo-instance-service-local.json")
	if inst.Revision != m.Revision {
		t.Errorf("instance revision %q, metadata revision %q", inst.Revision, m.Revision)
	}
	if addr, err := inst.MetadataServiceAddr(); err != nil || addr != "127.0.0.1:45915" {
		t.Errorf("MetadataServiceAddr = %q, %v", addr, err)
	}
	urls, skipped := m.ProviderURLs(inst)
	if len(skipped) != 0 || len(urls) != 2 {
		t.Fatalf("urls %v, skipped %v", urls, skipped)
	}
	appdiscCheckURL(t, urls[0], "127.0.0.1:45915", ServiceKey{Interface: "org.dubbogw.interop.GreeterService", Group: "blue"})
	appdiscCheckURL(t, urls[1], "127.0.0.1:45915", ServiceKey{Interface: "org.dubbogw.interop.UserService", Version: "1.0.0"})
}

// TestAppdiscMetadataRealHessianGroupVersion is the same for the provider
// with a group and a version on UserService.
func TestAppdiscMetadataRealHessianGroupVersion(t *testing.T) {
	resp := appdiscDecodeFrame(t, appdiscReadFile(t, "dubbogo-getMetadataInfo-group-version-response.bin"))
	m, err := MetadataFromHessian(resp.Value)
	if err != nil {
		t.Fatal(err)
	}
	inst := appdiscInstance(t, "dubbogo-instance-group-version.json")
	urls, skipped := m.ProviderURLs(inst)
	if len(skipped) != 0 || len(urls) != 2 {
		t.Fatalf("urls %v, skipped %v", urls, skipped)
	}
	user := ServiceKey{Interface: "org.dubbogw.interop.UserService", Group: "g1", Version: "2.0.0"}
	appdiscCheckURL(t, urls[1], "127.0.0.1:42287", user)
	for _, k := range []ServiceKey{
		{Interface: user.Interface, Version: "2.0.0"},
		{Interface: user.Interface, Group: "g1", Version: "1.0.0"},
	} {
		if urls[1].Matches(k) {
			t.Errorf("%v matches %v", urls[1], k)
		}
	}
}

// TestAppdiscMetadataRealNoValue: an unknown revision is answered with
// null (kind 5), and a wrong group with an exception.
func TestAppdiscMetadataRealNoValue(t *testing.T) {
	resp := appdiscDecodeFrame(t, appdiscReadFile(t, "dubbogo-getMetadataInfo-unknown-revision-response.bin"))
	if resp.Kind != protocol.KindNullWithAttachments {
		t.Fatalf("kind %d", resp.Kind)
	}
	if m, err := MetadataFromHessian(resp.Value); err == nil || !strings.Contains(err.Error(), "got null") {
		t.Errorf("MetadataFromHessian(null) = %+v, %v", m, err)
	}
	resp = appdiscDecodeFrame(t, appdiscReadFile(t, "dubbogo-getMetadataInfo-wrong-group-response.bin"))
	if !resp.Kind.IsException() {
		t.Fatalf("kind %d", resp.Kind)
	}
	if m, err := MetadataFromHessian(resp.Exception); err == nil || !strings.Contains(err.Error(), `class "java.lang.Throwable"`) {
		t.Errorf("MetadataFromHessian(exception) = %+v, %v", m, err)
	}
}

// TestAppdiscMetadataRealRemote parses the real remote metadata node a
// dubbo-go v3.3.0 provider wrote (/dubbo/facts-remote/59615343583).
func TestAppdiscMetadataRealRemote(t *testing.T) {
	m, err := ParseMetadataJSON(appdiscReadFile(t, "dubbogo-remote-metadata-service-remote.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := &MetadataInfo{App: "facts-remote", Revision: "59615343583", Services: appdiscGreeterUser("facts-remote", "1796039172", 41887)}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
	inst := appdiscInstance(t, "dubbogo-instance-service-remote.json")
	if inst.StorageType != StorageRemote || inst.Revision != m.Revision {
		t.Errorf("instance %+v", inst)
	}
	if inst.MetadataService.Port != 0 || inst.MetadataService.Params != nil {
		t.Errorf("MetadataService %+v: a remote instance publishes no url-params", inst.MetadataService)
	}
	urls, skipped := m.ProviderURLs(inst)
	if len(urls) != 2 || len(skipped) != 0 {
		t.Fatalf("urls %v, skipped %v", urls, skipped)
	}
	appdiscCheckURL(t, urls[0], "127.0.0.1:41887", ServiceKey{Interface: "org.dubbogw.interop.GreeterService", Group: "blue"})
}

// TestAppdiscInstanceReal parses the instance nodes of the real dubbo-go
// v3.3.0 providers.
func TestAppdiscInstanceReal(t *testing.T) {
	for _, tc := range []struct {
		file, app, storage string
		port               int
		urlParams          bool
	}{
		{"dubbogo-instance-service-local.json", "facts-default", StorageLocal, 45915, true},
		{"dubbogo-instance-all-local.json", "facts-all", StorageLocal, 33267, true},
		{"dubbogo-instance-group-version.json", "facts-gv", StorageLocal, 42287, true},
		{"dubbogo-instance-service-remote.json", "facts-remote", StorageRemote, 41887, false},
	} {
		in := appdiscInstance(t, tc.file)
		if in.App != tc.app || in.Host != "127.0.0.1" || in.Port != tc.port || in.ID != fmt.Sprintf("127.0.0.1:%d", tc.port) {
			t.Errorf("%s: %+v", tc.file, in)
		}
		if in.StorageType != tc.storage || in.Revision != "59615343583" || !in.RevisionKnown() {
			t.Errorf("%s: storage %q revision %q", tc.file, in.StorageType, in.Revision)
		}
		if !reflect.DeepEqual(in.Endpoints, []Endpoint{{Port: tc.port, Protocol: "dubbo"}}) {
			t.Errorf("%s: endpoints %v", tc.file, in.Endpoints)
		}
		if in.Metadata["meta-v"] != "2.0.0" {
			t.Errorf("%s: metadata %v", tc.file, in.Metadata)
		}
		if g := in.MetadataServiceGroup(); g != tc.app {
			t.Errorf("%s: MetadataServiceGroup %q", tc.file, g)
		}
		if !tc.urlParams {
			continue
		}
		ms := in.MetadataService
		if ms.Protocol != "dubbo" || ms.Port != tc.port || ms.Group != tc.app || ms.Version != "1.0.0" || ms.Serialization != "hessian2" {
			t.Errorf("%s: MetadataService %+v", tc.file, ms)
		}
	}
}

// appdiscCheckURL checks that u is a dubbo provider at addr for key, and
// that it survives the round trip through a provider URL string.
func appdiscCheckURL(t *testing.T, u *ProviderURL, addr string, key ServiceKey) {
	t.Helper()
	if u.Protocol != "dubbo" && u.Protocol != "tri" || u.Addr != addr || u.Interface != key.Interface || !u.Matches(key) {
		t.Errorf("url %+v does not serve %v at %s", u, key, addr)
	}
	if u.Params.Get("interface") != key.Interface || u.Params.Get("group") != key.Group || u.Params.Get("version") != key.Version {
		t.Errorf("url params %v for %v", u.Params, key)
	}
	back, err := ParseProviderURL(u.Protocol + "://" + u.Addr + "/" + u.Interface + "?" + u.Params.Encode())
	if err != nil || !reflect.DeepEqual(back, u) {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, u)
	}
	if _, err := u.Provider(); err != nil {
		t.Errorf("Provider: %v", err)
	}
}

// TestAppdiscMetadataJava parses the hand-made Java Dubbo 3.2 documents
// (gson's fields, and fastjson's getters too) and checks that the tri
// service is offered at the tri endpoint and the port never comes from
// the instance node.
func TestAppdiscMetadataJava(t *testing.T) {
	inst := appdiscInstance(t, "java-instance.json") // node port 50051 is tri's; dubbo is 20880
	m, err := ParseMetadataJSON(appdiscReadFile(t, "java-metadata-gson.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.App != "demo-provider" || m.Revision != "5b5c6a1fd3a8c8e35bb6f0c4c9d6a2e1" || len(m.Services) != 3 {
		t.Fatalf("metadata %+v", m)
	}
	greet := m.Services["greeting/org.apache.dubbo.demo.GreetingService:1.0.0:dubbo"]
	if greet == nil || greet.Key() != (ServiceKey{"org.apache.dubbo.demo.GreetingService", "greeting", "1.0.0"}) || greet.Port != 20880 || greet.Params.Get("weight") != "50" {
		t.Fatalf("GreetingService %+v", greet)
	}
	urls, skipped := m.ProviderURLs(inst)
	if len(urls) != 3 || len(skipped) != 0 {
		t.Fatalf("urls %v, skipped %q", urls, skipped)
	}
	appdiscCheckURL(t, urls[0], "192.168.1.10:20880", ServiceKey{Interface: "org.apache.dubbo.demo.GreetingService", Group: "greeting", Version: "1.0.0"})
	appdiscCheckURL(t, urls[1], "192.168.1.10:20880", ServiceKey{Interface: "org.apache.dubbo.demo.DemoService"})
	appdiscCheckURL(t, urls[2], "192.168.1.10:50051", ServiceKey{Interface: "org.apache.dubbo.demo.DemoService"})
	if urls[1].Protocol != "dubbo" || urls[2].Protocol != "tri" {
		t.Errorf("protocols %s, %s: want dubbo, tri", urls[1].Protocol, urls[2].Protocol)
	}
	if p, err := urls[0].Provider(); err != nil || p.Weight != 50 {
		t.Errorf("Provider = %+v, %v", p, err)
	}

	m, err = ParseMetadataJSON(appdiscReadFile(t, "java-metadata-fastjson.json"))
	if err != nil {
		t.Fatal(err)
	}
	demo := m.Services["org.apache.dubbo.demo.DemoService:dubbo"]
	if demo == nil || demo.Port != 0 || demo.Params.Get("methods") != "sayHello" {
		t.Fatalf("DemoService %+v (port -1 is Java's unset)", demo)
	}
	urls, skipped = m.ProviderURLs(inst)
	if len(urls) != 1 || len(skipped) != 0 {
		t.Fatalf("urls %v, skipped %v", urls, skipped)
	}
	appdiscCheckURL(t, urls[0], "192.168.1.10:20880", ServiceKey{Interface: "org.apache.dubbo.demo.DemoService"})
}

// appdiscJavaMetadata builds the value hessian-lite writes for a Java Dubbo
// 3.2 MetadataInfo: int ports, ConcurrentHashMap maps.
func appdiscJavaMetadata() *hessian.Object {
	svc := func(name, group, version, proto string, port int32, params ...string) *hessian.Object {
		pm := &hessian.Map{Type: "java.util.HashMap"}
		for i := 0; i+1 < len(params); i += 2 {
			pm.Entries = append(pm.Entries, hessian.Entry{Key: params[i], Value: params[i+1]})
		}
		var g, v any
		if group != "" {
			g = group
		}
		if version != "" {
			v = version
		}
		return &hessian.Object{Class: appdiscServiceInfoClass, Fields: []hessian.Field{
			{Name: "name", Value: name}, {Name: "group", Value: g}, {Name: "version", Value: v},
			{Name: "protocol", Value: proto}, {Name: "port", Value: port}, {Name: "path", Value: name},
			{Name: "params", Value: pm},
		}}
	}
	services := &hessian.Map{Type: "java.util.concurrent.ConcurrentHashMap", Entries: []hessian.Entry{
		{Key: "org.apache.dubbo.demo.DemoService:dubbo", Value: svc("org.apache.dubbo.demo.DemoService", "", "", "dubbo", 20880, "methods", "sayHello", "timeout", "3000")},
		{Key: "org.apache.dubbo.demo.DemoService:tri", Value: svc("org.apache.dubbo.demo.DemoService", "", "", "tri", 50051, "methods", "sayHello")},
		{Key: "g/org.apache.dubbo.demo.Other:2.0:dubbo", Value: svc("org.apache.dubbo.demo.Other", "g", "2.0", "dubbo", -1)},
	}}
	return &hessian.Object{Class: appdiscMetadataInfoClass, Fields: []hessian.Field{
		{Name: "app", Value: "demo-provider"}, {Name: "revision", Value: "5b5c6a1fd3a8c8e35bb6f0c4c9d6a2e1"}, {Name: "services", Value: services},
	}}
}

// TestAppdiscMetadataJavaHessian encodes a Java-shaped (hand-made) answer
// into a response frame and reads it back through the gateway's decoder.
func TestAppdiscMetadataJavaHessian(t *testing.T) {
	frame, err := protocol.AppendResponse(nil, hessian.NewEncoder(nil), &protocol.Response{
		ID: 7, Value: appdiscJavaMetadata(), WithAttachments: true, Attachments: map[string]any{"dubbo": "2.0.2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MetadataFromHessian(appdiscDecodeFrame(t, frame).Value)
	if err != nil {
		t.Fatal(err)
	}
	other := m.Services["g/org.apache.dubbo.demo.Other:2.0:dubbo"]
	if m.App != "demo-provider" || len(m.Services) != 3 || other == nil || other.Port != 0 || other.Group != "g" || other.Params.Len() != 0 {
		t.Fatalf("metadata %+v, Other %+v", m, other)
	}
	inst := appdiscInstance(t, "java-instance.json")
	urls, skipped := m.ProviderURLs(inst)
	if len(urls) != 3 || len(skipped) != 0 {
		t.Fatalf("urls %v, skipped %v", urls, skipped)
	}
	// In key order: "g/..." before "org...".
	appdiscCheckURL(t, urls[0], "192.168.1.10:20880", ServiceKey{Interface: "org.apache.dubbo.demo.Other", Group: "g", Version: "2.0"})
	appdiscCheckURL(t, urls[1], "192.168.1.10:20880", ServiceKey{Interface: "org.apache.dubbo.demo.DemoService"})
	if urls[1].Params.Get("timeout") != "3000" {
		t.Errorf("params %v", urls[1].Params)
	}
}

// TestAppdiscMetadataHessianMaps accepts maps in place of objects, and
// ports as strings.
func TestAppdiscMetadataHessianMaps(t *testing.T) {
	v := &hessian.Map{Entries: []hessian.Entry{
		{Key: "app", Value: "a"}, {Key: "revision", Value: "1"},
		{Key: "services", Value: &hessian.Map{Entries: []hessian.Entry{
			{Key: "S:dubbo", Value: &hessian.Map{Type: "java.util.HashMap", Entries: []hessian.Entry{
				{Key: "name", Value: "S"}, {Key: "protocol", Value: "dubbo"}, {Key: "port", Value: "20880"},
				{Key: "params", Value: &hessian.Map{Entries: []hessian.Entry{{Key: "weight", Value: int32(7)}, {Key: "x", Value: nil}}}},
			}}},
			{Key: "null:dubbo", Value: nil},
		}}},
	}}
	m, err := MetadataFromHessian(v)
	if err != nil {
		t.Fatal(err)
	}
	want := &MetadataInfo{App: "a", Revision: "1", Services: map[string]*ServiceInfo{
		"S:dubbo": {Name: "S", Protocol: "dubbo", Port: 20880, Params: cluster.NewParams(map[string]string{"weight": "7"})},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
}

func TestAppdiscMetadataHessianErrors(t *testing.T) {
	obj := func(class string, fields ...any) *hessian.Object {
		o := &hessian.Object{Class: class}
		for i := 0; i+1 < len(fields); i += 2 {
			o.Fields = append(o.Fields, hessian.Field{Name: fields[i].(string), Value: fields[i+1]})
		}
		return o
	}
	info := func(services any) *hessian.Object {
		return obj(appdiscMetadataInfoClass, "app", "a", "revision", "1", "services", services)
	}
	one := func(svc any) *hessian.Map {
		return &hessian.Map{Entries: []hessian.Entry{{Key: "k", Value: svc}}}
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, "metadata: got null"},
		{"string", "x", "got a string, want org.apache.dubbo.metadata.MetadataInfo"},
		{"other class", obj("java.lang.Object"), `class "java.lang.Object"`},
		{"app not a string", obj(appdiscMetadataInfoClass, "app", int32(1)), "app: got an int"},
		{"no revision", obj(appdiscMetadataInfoClass, "app", "a"), `metadata of "a": no revision`},
		{"revision not a string", obj(appdiscMetadataInfoClass, "app", "a", "revision", int64(5)), "revision: got an int"},
		{"services a list", info(&hessian.List{}), `metadata of "a": services: got a list, want a map`},
		{"key not a string", info(&hessian.Map{Entries: []hessian.Entry{{Key: int32(1), Value: nil}}}), "services: key 0: got an int"},
		{"service a string", info(one("x")), `service "k": got a string`},
		{"service of another class", info(one(obj("x.Y"))), `service "k": got an object of class "x.Y"`},
		{"port too big", info(one(obj(appdiscServiceInfoClass, "port", int64(1<<40)))), "port: 1099511627776 is not a port"},
		{"port negative", info(one(obj(appdiscServiceInfoClass, "port", int32(-7)))), "port: -7 is not a port"},
		{"port not a number", info(one(obj(appdiscServiceInfoClass, "port", "x"))), `port: "x" is not a port`},
		{"port a double", info(one(obj(appdiscServiceInfoClass, "port", 1.5))), "port: got a double"},
		{"name a list", info(one(obj(appdiscServiceInfoClass, "name", &hessian.List{}))), "name: got a list"},
		{"params a list", info(one(obj(appdiscServiceInfoClass, "params", &hessian.List{}))), "params: got a list"},
		{"params key", info(one(obj(appdiscServiceInfoClass, "params", &hessian.Map{Entries: []hessian.Entry{{Key: nil, Value: "v"}}}))), "params: key 0: got null"},
		{"params value", info(one(obj(appdiscServiceInfoClass, "params", &hessian.Map{Entries: []hessian.Entry{{Key: "k", Value: []byte{1}}}}))), `params["k"]: got binary`},
	} {
		m, err := MetadataFromHessian(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %+v, %v; want an error with %q", tc.name, m, err, tc.want)
		}
	}
}

func TestAppdiscMetadataJSONShapes(t *testing.T) {
	m, err := ParseMetadataJSON([]byte(`{"app":"a","revision":12,"services":{"s:dubbo":{"name":"s","protocol":"dubbo","port":"20880","params":{"n":5,"b":false,"z":null}},"gone":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &MetadataInfo{App: "a", Revision: "12", Services: map[string]*ServiceInfo{
		"s:dubbo": {Name: "s", Protocol: "dubbo", Port: 20880, Params: cluster.NewParams(map[string]string{"n": "5", "b": "false"})},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
	m, err = ParseMetadataJSON([]byte(`{"app":"a","revision":"r","services":null}`))
	if err != nil || m.Services == nil || len(m.Services) != 0 {
		t.Errorf("no services: %+v, %v", m, err)
	}
}

func TestAppdiscMetadataJSONErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{``, "metadata: want a JSON object, got nothing"},
		{`"x"`, "want a JSON object, got a string"},
		{`{"app":"a",`, "malformed JSON"},
		{`{"app":1}`, "app: want a string, got a number"},
		{`{"app":"a","services":{}}`, `metadata of "a": no revision`},
		{`{"app":"a","revision":{}}`, `metadata of "a": revision: want a string, got an object`},
		{`{"app":"a","revision":"r","services":[]}`, "services: want a JSON object, got a list"},
		{`{"app":"a","revision":"r","services":{"k":"v"}}`, `service "k": want a JSON object, got a string`},
		{`{"app":"a","revision":"r","services":{"k":{"name":["x"]}}}`, `service "k": name: want a string, got a list`},
		{`{"app":"a","revision":"r","services":{"k":{"port":70000}}}`, `service "k": port: "70000" is not a port`},
		{`{"app":"a","revision":"r","services":{"k":{"port":-2}}}`, `"-2" is not a port`},
		{`{"app":"a","revision":"r","services":{"k":{"port":true}}}`, "port: want a number, got a boolean"},
		{`{"app":"a","revision":"r","services":{"k":{"params":"x"}}}`, "params: want a JSON object, got a string"},
		{`{"app":"a","revision":"r","services":{"k":{"params":{"p":{}}}}}`, `params["p"]: want a string, got an object`},
		{`{"x":"` + strings.Repeat("a", MaxMetadataBytes) + `"}`, "over the limit"},
	} {
		m, err := ParseMetadataJSON([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			short := tc.data
			if len(short) > 120 {
				short = short[:120] + "..."
			}
			t.Errorf("ParseMetadataJSON(%s) = %+v, %v; want an error with %q", short, m, err, tc.want)
		}
	}
}

func TestAppdiscProviderURLs(t *testing.T) {
	inst := &Instance{App: "app", Host: "10.0.0.1", Port: 9999, Endpoints: []Endpoint{{50051, "tri"}, {20880, "dubbo"}}}
	m := &MetadataInfo{Services: map[string]*ServiceInfo{
		"a:dubbo":      {Name: "a", Protocol: "dubbo"},                              // endpoint port
		"b:dubbo":      {Name: "b", Protocol: "dubbo", Port: 20001, Path: "b-path"}, // own port, path
		"c:tri":        {Name: "c", Protocol: "tri", Port: 50052},                   // the tri endpoint
		"i:rest":       {Name: "i", Protocol: "rest", Port: 8080},                   // other protocol
		"d:":           {Name: "d"},                                                 // no protocol
		"e:dubbo":      {Protocol: "dubbo"},                                         // no interface
		"g/f:1:dubbo":  {Name: "f", Group: "g", Version: "1", Protocol: "dubbo", Params: cluster.NewParams(map[string]string{"group": "", "version": "9", "interface": "f"})},
		"nil:dubbo":    nil,
		"h:dubbo:port": {Name: "h", Protocol: "dubbo", Port: 70000},
	}}
	urls, skipped := m.ProviderURLs(inst)
	got := map[string]*ProviderURL{}
	for _, u := range urls {
		got[u.Interface] = u
	}
	if len(urls) != 5 || got["a"] == nil || got["b"] == nil || got["f"] == nil || got["h"] == nil || got["c"] == nil {
		t.Fatalf("urls %v", urls)
	}
	if got["c"].Addr != "10.0.0.1:50051" || got["c"].Protocol != "tri" {
		t.Errorf("c: %s %s, want tri at the tri endpoint's 10.0.0.1:50051", got["c"].Protocol, got["c"].Addr)
	}
	// The instance's own dubbo endpoint wins over the service's port:
	// remote metadata carries the ports of the instance that wrote it.
	for _, name := range []string{"a", "b", "h"} {
		if got[name].Addr != "10.0.0.1:20880" {
			t.Errorf("%s: address %s, want the dubbo endpoint's 10.0.0.1:20880", name, got[name].Addr)
		}
	}
	if got["b"].Params.Get("interface") != "b" {
		t.Errorf("interface param %v", got["b"].Params)
	}
	if f := got["f"].Params; f.Get("group") != "g" || f.Get("version") != "9" {
		t.Errorf("f params %v: an empty group is filled, a given version kept", f)
	}
	wantSkipped := []string{
		`d:: protocol "": only dubbo and tri are spoken`,
		"e:dubbo: no interface: neither path nor name is given",
		`i:rest: protocol "rest": only dubbo and tri are spoken`,
	}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("skipped %q\nwant    %q", skipped, wantSkipped)
	}

	// Without a dubbo endpoint, the service's own port is used, and a
	// service without one (or with one out of range) is skipped: the
	// node's port (9999 here) is never used. The tri endpoint stays.
	inst.Endpoints = inst.Endpoints[:1]
	urls, skipped = m.ProviderURLs(inst)
	if len(urls) != 2 || urls[0].Addr != "10.0.0.1:20001" || urls[1].Addr != "10.0.0.1:50051" || len(skipped) != 6 || !strings.HasPrefix(skipped[0], "a:dubbo: no port") {
		t.Errorf("urls %v, skipped %q", urls, skipped)
	}

	// The URLs own their params.
	urls[0].Params.Set("weight", "1")
	if _, ok := m.Services["b:dubbo"].Params.Lookup("weight"); ok {
		t.Error("ProviderURLs shares params with the metadata")
	}
}

func FuzzAppdiscMetadataJSON(f *testing.F) {
	for _, name := range appdiscGoldens(f, "metadata") {
		f.Add(appdiscReadFile(f, name))
	}
	f.Add([]byte(`{"app":"a","revision":1,"services":{"k":{"name":"s","protocol":"dubbo","port":"1","params":{"x":1}}}}`))
	inst := &Instance{App: "a", Host: "10.0.0.1", Endpoints: []Endpoint{{20880, "dubbo"}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetadataJSON(data)
		if err != nil {
			if m != nil {
				t.Fatal("metadata with an error")
			}
			return
		}
		appdiscCheckMetadata(t, m, inst)
	})
}

func FuzzAppdiscMetadataHessian(f *testing.F) {
	for _, name := range []string{"dubbogo-getMetadataInfo-response.bin", "dubbogo-getMetadataInfo-group-version-response.bin"} {
		frame := appdiscReadFile(f, name)
		f.Add(frame[protocol.HeaderLen:])
	}
	frame, err := protocol.AppendResponse(nil, hessian.NewEncoder(nil), &protocol.Response{Value: appdiscJavaMetadata()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(frame[protocol.HeaderLen:])
	inst := &Instance{App: "a", Host: "10.0.0.1", Endpoints: []Endpoint{{20880, "dubbo"}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := protocol.DecodeResponse(protocol.Header{Status: protocol.StatusOK}, body, hessian.NewDecoder(nil))
		if err != nil {
			return
		}
		for _, v := range []any{resp.Value, resp.Exception} {
			m, err := MetadataFromHessian(v)
			if err != nil {
				if m != nil {
					t.Fatal("metadata with an error")
				}
				continue
			}
			appdiscCheckMetadata(t, m, inst)
		}
	})
}

// appdiscCheckMetadata checks the invariants of a parsed MetadataInfo and
// of the provider URLs built from it.
func appdiscCheckMetadata(t *testing.T, m *MetadataInfo, inst *Instance) {
	if m.Services == nil {
		t.Fatal("nil Services")
	}
	for k, s := range m.Services {
		if s == nil || s.Port < 0 || s.Port > 65535 {
			t.Fatalf("service %q: %+v", k, s)
		}
	}
	urls, skipped := m.ProviderURLs(inst)
	if len(urls)+len(skipped) != len(m.Services) {
		t.Fatalf("%d urls and %d skipped of %d services", len(urls), len(skipped), len(m.Services))
	}
	for _, u := range urls {
		if u.Protocol != "dubbo" && u.Protocol != "tri" || u.Interface == "" {
			t.Fatalf("url %+v", u)
		}
		if _, err := ParseProviderURL(u.Addr); err != nil {
			t.Fatalf("address %q: %v", u.Addr, err)
		}
	}
}

// TestAppdiscRegistryGroup: under a registry group, dubbo-go v3.3.0 writes
// instance nodes and remote metadata nodes under the same parent
// (/<group>/<app>/<ip:port> and /<group>/<app>/<revision>); each parser
// refuses the other's document.
func TestAppdiscRegistryGroup(t *testing.T) {
	instData := appdiscReadFile(t, "dubbogo-instance-registry-group.json")
	metaData := appdiscReadFile(t, "dubbogo-remote-metadata-registry-group.json")
	in, err := ParseInstance(instData)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMetadataJSON(metaData)
	if err != nil {
		t.Fatal(err)
	}
	if in.App != "facts-rgapp" || m.App != in.App || m.Revision != in.Revision || in.StorageType != StorageRemote {
		t.Errorf("instance %+v, metadata %+v", in, m)
	}
	if _, err := ParseMetadataJSON(instData); err == nil || !strings.Contains(err.Error(), "no revision") {
		t.Errorf("ParseMetadataJSON(instance) error = %v", err)
	}
	if _, err := ParseInstance(metaData); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("ParseInstance(metadata) error = %v", err)
	}
}

// TestAppdiscRevisionChange: a dubbo-go provider restarted with one more
// method (Ping) publishes a new revision, locally and remotely; the
// revision does not depend on the application, port, group or version.
func TestAppdiscRevisionChange(t *testing.T) {
	before := appdiscInstance(t, "dubbogo-instance-before-restart.json")
	after := appdiscInstance(t, "dubbogo-instance-extra-method.json")
	if before.ID != after.ID || before.Revision == after.Revision {
		t.Fatalf("revision %q before, %q after", before.Revision, after.Revision)
	}
	if other := appdiscInstance(t, "dubbogo-instance-service-local.json"); other.App == before.App || other.Revision != before.Revision {
		t.Errorf("revisions of %s and %s: %q, %q", other.App, before.App, other.Revision, before.Revision)
	}
	methods := func(m *MetadataInfo) string {
		return m.Services["org.dubbogw.interop.UserService:1.0.0:dubbo"].Params.Get("methods")
	}
	for _, tc := range []struct {
		in   *Instance
		file string
		ping bool
	}{
		{before, "dubbogo-remote-metadata-before-restart.json", false},
		{after, "dubbogo-remote-metadata-extra-method.json", true},
	} {
		m, err := ParseMetadataJSON(appdiscReadFile(t, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if m.Revision != tc.in.Revision || strings.Contains(methods(m), ",Ping,") != tc.ping {
			t.Errorf("%s: revision %q, methods %q", tc.file, m.Revision, methods(m))
		}
	}
	local := appdiscInstance(t, "dubbogo-instance-extra-method-local.json")
	m, err := MetadataFromHessian(appdiscDecodeFrame(t, appdiscReadFile(t, "dubbogo-getMetadataInfo-extra-method-response.bin")).Value)
	if err != nil {
		t.Fatal(err)
	}
	if m.Revision != local.Revision || m.Revision != after.Revision || !strings.Contains(methods(m), ",Ping,") {
		t.Errorf("local: revision %q (instance %q), methods %q", m.Revision, local.Revision, methods(m))
	}
}

// TestParseMetadataFastPath: the one-pass decoding of the usual shapes
// gives what the precise path gives, document or error, on every
// metadata document of testdata and on odd and hostile shapes.
func TestParseMetadataFastPath(t *testing.T) {
	inputs := []string{
		`{"app":"a","revision":"r"}`,
		`{"app":"a","revision":"r","services":null}`,
		`{"app":"a","revision":"r","services":{"s":null}}`,
		`{"app":"a","revision":12345}`,
		`{"app":"a","revision":""}`,
		`{"app":"a","revision":null}`,
		`{"app":7,"revision":"r"}`,
		`{"app":"a","revision":"r","services":{"s:dubbo":{"name":"s","protocol":"dubbo","port":"20880","params":{"a":"1","b":null}}}}`,
		`{"app":"a","revision":"r","services":{"s:dubbo":{"name":"s","port":20880,"params":{"n":5,"b":false}}}}`,
		`{"app":"a","revision":"r","services":{"s:dubbo":{"name":"s","port":70000}}}`,
		`{"app":"a","revision":"r","services":{"s:dubbo":{"name":"s","params":{"o":{}}}}}`,
		`{"app":"a","revision":"r","services":{"s:dubbo":{"NAME":"s","Port":1}}}`,
		`{"app":"a","revision":"r","services":{"s:dubbo":{"name":["s"]}}}`,
		`{"app":"a","revision":"r","services":[]}`,
		`{"app":"a","revision":"r",`, `[]`, ``, `null`,
	}
	files, err := filepath.Glob("testdata/appdisc/*metadata*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("metadata in testdata: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	fastOnes := 0
	for _, data := range inputs {
		fast, fastErr := ParseMetadataJSON([]byte(data))
		slow, slowErr := parseMetadataJSON([]byte(data))
		if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%.80s:\nfast %+v, %v\nslow %+v, %v", data, fast, fastErr, slow, slowErr)
		}
		if _, ok := parseMetadataStrings([]byte(data)); ok {
			fastOnes++
		}
	}
	if fastOnes < len(files) {
		t.Errorf("the one-pass decoding took %d of the inputs, fewer than the %d documents of testdata", fastOnes, len(files))
	}
}

func BenchmarkParseMetadataJSON(b *testing.B) {
	data := appdiscReadFile(b, "java-metadata-gson.json")
	for _, bc := range []struct {
		name  string
		parse func([]byte) (*MetadataInfo, error)
	}{{"one-pass", ParseMetadataJSON}, {"precise", parseMetadataJSON}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := bc.parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
