package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func appdiscReadFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "appdisc", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appdiscInstance(t testing.TB, name string) *Instance {
	t.Helper()
	in, err := ParseInstance(appdiscReadFile(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return in
}

// TestAppdiscInstanceJava parses the hand-made Java Dubbo 3.2 instance: the
// node's port is tri's, the flat url-params name the dubbo MetadataService.
func TestAppdiscInstanceJava(t *testing.T) {
	in := appdiscInstance(t, "java-instance.json")
	want := &Instance{
		App: "demo-provider", ID: "192.168.1.10:50051", Host: "192.168.1.10", Port: 50051,
		Revision: "5b5c6a1fd3a8c8e35bb6f0c4c9d6a2e1", StorageType: StorageLocal,
		Endpoints: []Endpoint{{Port: 50051, Protocol: "tri"}, {Port: 20880, Protocol: "dubbo"}},
		MetadataService: MetadataServiceParams{
			Protocol: "dubbo", Port: 20880, Version: "1.0.0",
			Params: map[string]string{"connections": "1", "version": "1.0.0", "dubbo": "2.0.2", "release": "3.2.10",
				"side": "provider", "port": "20880", "protocol": "dubbo"},
		},
	}
	if in.Metadata["timestamp"] != "1700000000000" || len(in.Metadata) != 5 {
		t.Errorf("Metadata = %v", in.Metadata)
	}
	in.Metadata = nil
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got  %+v\nwant %+v", in, want)
	}
	if !in.RevisionKnown() {
		t.Error("RevisionKnown = false")
	}
	if addr, err := in.MetadataServiceAddr(); err != nil || addr != "192.168.1.10:20880" {
		t.Errorf("MetadataServiceAddr = %q, %v", addr, err)
	}
	if g := in.MetadataServiceGroup(); g != "demo-provider" {
		t.Errorf("MetadataServiceGroup = %q, want the app", g)
	}
	if v := in.MetadataServiceVersion(); v != "1.0.0" {
		t.Errorf("MetadataServiceVersion = %q", v)
	}
	if p := in.EndpointPort("tri"); p != 50051 {
		t.Errorf("EndpointPort(tri) = %d", p)
	}
	if p := in.EndpointPort("rest"); p != 0 {
		t.Errorf("EndpointPort(rest) = %d", p)
	}
}

// TestAppdiscInstanceJava27 parses the hand-made Dubbo 2.7 instance: the
// url-params are nested per protocol and its revision key is 2.7's.
func TestAppdiscInstanceJava27(t *testing.T) {
	in := appdiscInstance(t, "java27-instance.json")
	if in.App != "legacy-provider" || in.ID != "" || in.Host != "10.0.0.7" || in.Port != 20881 {
		t.Errorf("instance = %+v", in)
	}
	if in.StorageType != StorageRemote {
		t.Errorf("StorageType = %q", in.StorageType)
	}
	if in.Revision != "" || in.RevisionKnown() {
		t.Errorf("Revision = %q (2.7 writes dubbo.exported-services.revision)", in.Revision)
	}
	ms := in.MetadataService
	if ms.Protocol != "dubbo" || ms.Port != 20881 || ms.Version != "1.0.0" || ms.Params["release"] != "2.7.8" || ms.Params["dubbo"] != "2.0.2" {
		t.Errorf("MetadataService = %+v", ms)
	}
	if addr, err := in.MetadataServiceAddr(); err != nil || addr != "10.0.0.7:20881" {
		t.Errorf("MetadataServiceAddr = %q, %v", addr, err)
	}
}

func TestAppdiscInstanceShapes(t *testing.T) {
	const head = `{"name":"app","address":"10.1.2.3","port":`
	meta := func(port, md string) string { return head + port + `,"payload":{"metadata":{` + md + `}}}` }
	for _, tc := range []struct {
		name, data string
		check      func(t *testing.T, in *Instance)
	}{
		{"port as a string", meta(`"20880"`, ``), func(t *testing.T, in *Instance) {
			if in.Port != 20880 {
				t.Errorf("Port = %d", in.Port)
			}
		}},
		{"no port, no payload (dubbo-go omits zero values)", `{"name":"app","address":"10.1.2.3"}`, func(t *testing.T, in *Instance) {
			if in.Port != 0 || len(in.Metadata) != 0 || in.Metadata == nil || in.StorageType != StorageLocal || in.RevisionKnown() {
				t.Errorf("instance = %+v", in)
			}
		}},
		{"null payload", head + `1,"payload":null}`, nil},
		{"null metadata value left out", meta(`1`, `"a":null,"b":"x"`), func(t *testing.T, in *Instance) {
			if _, ok := in.Metadata["a"]; ok || in.Metadata["b"] != "x" {
				t.Errorf("Metadata = %v", in.Metadata)
			}
		}},
		{"non-string metadata values as JSON text", meta(`1`, `"n":12,"b":true,"o":{"k": [1, "v"]}`), func(t *testing.T, in *Instance) {
			if in.Metadata["n"] != "12" || in.Metadata["b"] != "true" || in.Metadata["o"] != `{"k":[1,"v"]}` {
				t.Errorf("Metadata = %v", in.Metadata)
			}
		}},
		{"url-params as an object, not a string", meta(`1`, `"dubbo.metadata-service.url-params":{"port":20881,"protocol":"dubbo","group":"g"}`), func(t *testing.T, in *Instance) {
			if in.MetadataService.Port != 20881 || in.MetadataServiceGroup() != "g" {
				t.Errorf("MetadataService = %+v", in.MetadataService)
			}
		}},
		{"endpoints port as a string", meta(`1`, `"dubbo.endpoints":"[{\"port\":\"20000\",\"protocol\":\"dubbo\"}]"`), func(t *testing.T, in *Instance) {
			if in.EndpointPort("dubbo") != 20000 {
				t.Errorf("Endpoints = %v", in.Endpoints)
			}
		}},
		{"empty endpoints (dubbo-go with no service)", meta(`1`, `"dubbo.endpoints":"","dubbo.metadata.revision":"N/A"`), func(t *testing.T, in *Instance) {
			if in.Endpoints != nil || in.RevisionKnown() {
				t.Errorf("instance = %+v", in)
			}
		}},
		{"empty revision", meta(`1`, `"dubbo.metadata.revision":"0"`), func(t *testing.T, in *Instance) {
			if in.RevisionKnown() {
				t.Error("RevisionKnown for Dubbo's empty revision")
			}
		}},
		{"storage type in capitals", meta(`1`, `"dubbo.metadata.storage-type":"REMOTE"`), func(t *testing.T, in *Instance) {
			if in.StorageType != StorageRemote {
				t.Errorf("StorageType = %q", in.StorageType)
			}
		}},
		{"unknown storage type is local", meta(`1`, `"dubbo.metadata.storage-type":"cloud"`), func(t *testing.T, in *Instance) {
			if in.StorageType != StorageLocal {
				t.Errorf("StorageType = %q", in.StorageType)
			}
		}},
		{"nested url-params without dubbo", meta(`1`, `"dubbo.metadata-service.url-params":"{\"tri\":{\"port\":\"50052\"},\"rest\":{\"port\":\"8080\"}}"`), func(t *testing.T, in *Instance) {
			if in.MetadataService.Protocol != "rest" || in.MetadataService.Port != 8080 {
				t.Errorf("MetadataService = %+v, want the first by name", in.MetadataService)
			}
			if _, err := in.MetadataServiceAddr(); err == nil || !strings.Contains(err.Error(), `"rest", not dubbo`) {
				t.Errorf("MetadataServiceAddr error = %v", err)
			}
		}},
		{"nested url-params prefer dubbo", meta(`1`, `"dubbo.metadata-service.url-params":"{\"a\":{\"port\":\"1\"},\"dubbo\":{\"port\":\"2\"},\"z\":{\"port\":\"3\"}}"`), func(t *testing.T, in *Instance) {
			if in.MetadataService.Protocol != "dubbo" || in.MetadataService.Port != 2 {
				t.Errorf("MetadataService = %+v", in.MetadataService)
			}
		}},
		{"IPv6 address", `{"name":"app","address":"2001:db8::1","port":1}`, func(t *testing.T, in *Instance) {
			in.Endpoints = []Endpoint{{Port: 20880, Protocol: "dubbo"}}
			if addr, _ := in.MetadataServiceAddr(); addr != "[2001:db8::1]:20880" {
				t.Errorf("MetadataServiceAddr = %q", addr)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ParseInstance([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, in)
			}
		})
	}
}

func TestAppdiscInstanceErrors(t *testing.T) {
	const head = `{"name":"app","address":"10.1.2.3","port":20880,"payload":{"metadata":{`
	md := func(s string) string { return head + s + `}}}` }
	for _, tc := range []struct{ data, want string }{
		{``, "want a JSON object, got nothing"},
		{`[]`, "want a JSON object, got a list"},
		{`{"name":"app",`, "malformed JSON"},
		{`{"name":"app","address":"h"} trailing`, "malformed JSON"},
		{`{"address":"10.1.2.3"}`, "no name"},
		{`{"name":"app"}`, `"app": no address`},
		{`{"name":7,"address":"h"}`, "name: want a string, got a number"},
		{`{"name":"app","address":["h"]}`, "address: want a string, got a list"},
		{`{"name":"app","address":"h/x"}`, `address "h/x": not a host`},
		{`{"name":"app","address":"::1]"}`, "not a host"},
		{`{"name":"app","address":"fe80::1%eth0"}`, "not a host"},
		{`{"name":"app","address":"[::1]"}`, "not a host"},
		{`{"name":"app","address":"h\n"}`, "not a host"},
		{`{"name":"app","address":"h","port":70000}`, `port: "70000" is not a port`},
		{`{"name":"app","address":"h","port":"x"}`, `port: "x" is not a port`},
		{`{"name":"app","address":"h","port":true}`, "port: want a number, got a boolean"},
		{`{"name":"app","address":"h","port":1.5}`, `"1.5" is not a port`},
		{`{"name":"app","address":"h","port":1e400}`, `is not a port`},
		{`{"name":"app","address":"h","port":"` + strings.Repeat("9", 100) + `"}`, `"99999999999999999999999999999999..." is not a port`},
		{`{"name":"app","address":"h","payload":[]}`, "payload: want a JSON object"},
		{`{"name":"app","address":"h","payload":{"metadata":"x"}}`, "payload.metadata: want a JSON object, got a string"},
		{md(`"dubbo.endpoints":"[{\"port\":20880"`), `payload.metadata["dubbo.endpoints"]: malformed JSON`},
		{md(`"dubbo.endpoints":"{}"`), `"dubbo.endpoints"]: want a JSON list, got an object`},
		{md(`"dubbo.endpoints":"[{\"port\":20880}]"`), "endpoint 0: want a protocol and a port"},
		{md(`"dubbo.endpoints":"[{\"protocol\":\"dubbo\"}]"`), "endpoint 0: want a protocol and a port"},
		{md(`"dubbo.endpoints":"[{\"port\":-5,\"protocol\":\"dubbo\"}]"`), `endpoint 0: port: "-5" is not a port`},
		{md(`"dubbo.endpoints":"[{\"port\":1,\"protocol\":2}]"`), "endpoint 0: protocol: want a string, got a number"},
		{md(`"dubbo.endpoints":"[` + strings.Repeat(`{\"port\":1,\"protocol\":\"p\"},`, 64) + `{\"port\":1,\"protocol\":\"p\"}]"`), "65 endpoints, over the limit of 64"},
		{md(`"dubbo.metadata-service.url-params":"not json"`), `"dubbo.metadata-service.url-params"]: want a JSON object, got something else`},
		{md(`"dubbo.metadata-service.url-params":"{\"port\":\"abc\"}"`), `port: "abc" is not a port`},
		{md(`"dubbo.metadata-service.url-params":"{\"port\":[1]}"`), `"port": want a string or a number`},
		{md(`"dubbo.metadata-service.url-params":"{\"dubbo\":{\"port\":{}}}"`), `"port": want a string or a number`},
		{md(`"dubbo.metadata-service.url-params":"{\"dubbo\":{\"port\":\"1\"}"`), "malformed JSON"},
		{`{"name":"app","address":"h","x":"` + strings.Repeat("a", MaxInstanceBytes) + `"}`, "over the limit"},
	} {
		in, err := ParseInstance([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			short := tc.data
			if len(short) > 120 {
				short = short[:120] + "..."
			}
			t.Errorf("ParseInstance(%s) = %+v, %v; want an error with %q", short, in, err, tc.want)
		}
	}
}

func TestAppdiscMetadataServiceAddr(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      Instance
		want    string
		wantErr string
	}{
		{"url-params port first", Instance{Host: "h", Port: 1, MetadataService: MetadataServiceParams{Protocol: "dubbo", Port: 20881},
			Endpoints: []Endpoint{{20880, "dubbo"}}}, "h:20881", ""},
		{"dubbo endpoint else", Instance{Host: "h", Port: 1, Endpoints: []Endpoint{{50051, "tri"}, {20880, "dubbo"}}}, "h:20880", ""},
		{"no protocol named is dubbo", Instance{Host: "h", MetadataService: MetadataServiceParams{Port: 7}}, "h:7", ""},
		{"never the node's port", Instance{Host: "h", Port: 20880, Endpoints: []Endpoint{{50051, "tri"}}}, "", "no MetadataService port"},
		{"tri MetadataService", Instance{Host: "h", MetadataService: MetadataServiceParams{Protocol: "tri", Port: 50051},
			Endpoints: []Endpoint{{20880, "dubbo"}}}, "", `speaks "tri", not dubbo`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.MetadataServiceAddr()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzAppdiscInstance(f *testing.F) {
	for _, name := range appdiscGoldens(f, "instance") {
		f.Add(appdiscReadFile(f, name))
	}
	f.Add([]byte(`{"name":"a","address":"h","port":"1","payload":{"metadata":{"dubbo.metadata-service.url-params":{"dubbo":{"port":2}},"dubbo.endpoints":[{"port":"3","protocol":"dubbo"}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseInstance(data)
		if err != nil {
			if in != nil {
				t.Fatal("an instance with an error")
			}
			return
		}
		if in.App == "" || in.Host == "" || in.Metadata == nil {
			t.Fatalf("incomplete instance %+v", in)
		}
		if in.StorageType != StorageLocal && in.StorageType != StorageRemote {
			t.Fatalf("StorageType %q", in.StorageType)
		}
		for _, e := range in.Endpoints {
			if e.Port < 1 || e.Port > 65535 || e.Protocol == "" {
				t.Fatalf("endpoint %+v", e)
			}
		}
		if addr, err := in.MetadataServiceAddr(); err == nil {
			if _, err := ParseProviderURL(addr); err != nil {
				t.Fatalf("MetadataServiceAddr %q does not parse: %v", addr, err)
			}
		}
		_ = in.MetadataServiceGroup()
	})
}

// appdiscGoldens lists the files of testdata/appdisc whose names contain
// part.
func appdiscGoldens(t testing.TB, part string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "appdisc"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.Contains(e.Name(), part) && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	return names
}

func BenchmarkParseInstance(b *testing.B) {
	data := appdiscReadFile(b, "java-instance.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseInstance(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppdiscInstanceFastPath: the one-pass decoding of the usual shapes
// gives what the precise path gives, instance or error, on every instance
// of testdata and on odd and hostile shapes.
func TestAppdiscInstanceFastPath(t *testing.T) {
	inputs := []string{
		`{"name":"app","address":"10.1.2.3"}`,
		`{"name":"app","address":"10.1.2.3","port":"20880","payload":null}`,
		`{"name":null,"address":"10.1.2.3","port":1}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":{"metadata":null}}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":{"metadata":{"a":null,"b":"x","c":""}}}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":{"metadata":{"n":12,"b":true}}}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":{"metadata":{"dubbo.endpoints":"[{\"port\":1,\"protocol\":\"dubbo\"}]"}}}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":{"metadata":{"dubbo.endpoints":"[{\"port\":\"x\"}]"}}}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":"x"}`,
		`{"name":"app","address":"10.1.2.3","port":1,"payload":{"metadata":[]}}`,
		`{"NAME":"app","Address":"10.1.2.3","port":1}`,
		`{"name":"a","name":"b","address":"10.1.2.3"}`,
		`{"name":"app\ud800","address":"10.1.2.3"}`,
		`{"name":"app","address":"h","port":70000}`,
		`{"name":7,"address":"h"}`,
		`{"name":"app",`, `[]`, ``, `{"name":"app","address":"h"} trailing`,
	}
	files, err := filepath.Glob("testdata/appdisc/*instance*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("instances in testdata: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	for _, data := range inputs {
		fast, fastErr := parseInstance([]byte(data), true)
		slow, slowErr := parseInstance([]byte(data), false)
		if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%.80s:\nfast %+v, %v\nslow %+v, %v", data, fast, fastErr, slow, slowErr)
		}
	}
}
