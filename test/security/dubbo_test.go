package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// dubboAttacks: see index_test.go. Each row starts its own demo provider
// behind a recording proxy and its own gateway, so what reached Dubbo is
// that row's alone.
var dubboAttacks = []attack{
	{id: "2a", name: "array-descriptor-of-40000-dimensions", run: testTypeDescriptorDimensions},
	{id: "2b", name: "source-array-of-60000-dimensions", run: testTypeSourceDimensions},
	{id: "3a", name: "gadget-class-on-a-dto-route", run: testGadgetClassOnDTORoute},
	{id: "3b", name: "client-chosen-classes-on-the-pass-through", run: testPassthroughClasses},
	{id: "3c", name: "gadget-class-on-a-typed-route", run: testGadgetClassOnTypedRoute},
	{id: "5a", name: "forged-and-reserved-attachments", run: testForgedAttachments},
	{id: "5b", name: "dollar-invoke-on-a-typed-pass-through", run: testDollarInvoke},
	{id: "8", name: "twenty-concurrent-8MiB-argument-arrays", run: testConcurrentHugeArguments},
	{id: "14a", name: "provider-error-text-with-addresses", run: testProviderErrorText},
	{id: "14b", name: "transport-error-with-the-provider-address", run: testTransportErrorText},
}

// dubboRoutesYAML is the routes of the Dubbo rows: the demo provider at
// addr behind a DTO route, a typed DTO route and generic and typed
// pass-through routes.
func dubboRoutesYAML(addr, extra string) string {
	return fmt.Sprintf(`
registries:
  demo:
    type: static
    providers:
      com.example.demo.UserService: [%q]
routes:
  - name: create-user
    match: {methods: [POST], path: /api/users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: createUser
      timeout: 5s
      params:
        - {type: com.example.demo.User}
  - name: typed-create-user
    match: {methods: [POST], path: /typed/users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: createUser
      generic: false
      timeout: 5s
      params:
        - {type: java.lang.Object}
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: demo
      timeout: 5s
      passthrough: {allow: [com.example.demo.*]}
  - name: typed-generic
    match: {methods: [POST], path: "/typed/{interface}/{method}"}
    dubbo:
      registry: demo
      generic: false
      timeout: 5s
      passthrough: {allow: [com.example.demo.*]}
%s`, addr, extra)
}

// post sends body to g's url path and returns the status and the body.
func post(t *testing.T, g *gw, path, body string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Post(g.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// errorBody is the gateway's JSON error.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks a JSON error answer: its status, its code, and that its
// message contains each of parts.
func wantError(t *testing.T, what string, status int, body string, wantStatus int, wantCode string, parts ...string) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != wantStatus || e.Error.Code != wantCode {
		t.Errorf("%s: got %d %q, want %d %s", what, status, body, wantStatus, wantCode)
		return
	}
	for _, p := range parts {
		if !strings.Contains(e.Error.Message, p) {
			t.Errorf("%s: message %q does not say %q", what, e.Error.Message, p)
		}
	}
}

func testTypeDescriptorDimensions(t *testing.T) {
	addr, _ := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, ""))
	// 40,000 "[" then "I": a 40 KB body that cost 12 s of CPU and 2.5 GB.
	body := `{"types":["` + strings.Repeat("[", 40000) + `I"],"args":[1]}`
	status, resp := post(t, g, "/dubbo/com.example.demo.UserService/greet", body)
	wantError(t, "40,000 dimensions", status, resp, 400, "BAD_REQUEST", "types[0]", "4096 bytes")
	// Within the length bound, dimensions are bounded as the JVM bounds them.
	body = `{"types":["` + strings.Repeat("[", 256) + `I"],"args":[1]}`
	status, resp = post(t, g, "/dubbo/com.example.demo.UserService/greet", body)
	wantError(t, "256 dimensions", status, resp, 400, "BAD_REQUEST", "types[0]", "255")
}

func testTypeSourceDimensions(t *testing.T) {
	addr, _ := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, ""))
	body := `{"types":["int` + strings.Repeat("[]", 60000) + `"],"args":[1]}`
	status, resp := post(t, g, "/dubbo/com.example.demo.UserService/greet", body)
	wantError(t, "60,000 dimensions", status, resp, 400, "BAD_REQUEST", "types[0]", "4096 bytes")
	body = `{"types":["int` + strings.Repeat("[]", 256) + `"],"args":[1]}`
	status, resp = post(t, g, "/dubbo/com.example.demo.UserService/greet", body)
	wantError(t, "256 dimensions", status, resp, 400, "BAD_REQUEST", "types[0]", "255")
	// Deep type arguments are bounded too.
	body = `{"types":["` + strings.Repeat("java.util.List<", 5000) + "int" + strings.Repeat(">", 5000) + `"],"args":[1]}`
	status, resp = post(t, g, "/dubbo/com.example.demo.UserService/greet", body)
	wantError(t, "5,000 nested type arguments", status, resp, 400, "BAD_REQUEST", "types[0]")
}

func testGadgetClassOnDTORoute(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, ""))
	status, resp := post(t, g, "/api/users",
		`{"class":"com.sun.rowset.JdbcRowSetImpl","dataSourceName":"ldap://127.0.0.1:1/x","autoCommit":true}`)
	wantError(t, "JdbcRowSetImpl", status, resp, 400, "BAD_REQUEST", "class")
	// A class the route does not declare, however harmless its name.
	status, resp = post(t, g, "/api/users", `{"class":"com.example.demo.Admin","id":"7"}`)
	wantError(t, "undeclared class", status, resp, 400, "BAD_REQUEST", "class")
	// Nested, under a field the schema does not type.
	status, resp = post(t, g, "/api/users", `{"id":"7","extra":{"class":"javax.script.ScriptEngineManager"}}`)
	wantError(t, "nested gadget", status, resp, 400, "BAD_REQUEST", "class")
	for _, s := range []string{"JdbcRowSetImpl", "com.example.demo.Admin", "ScriptEngineManager"} {
		if rec.contains(s) {
			t.Errorf("%s reached the provider", s)
		}
	}
	// The declared class itself is fine.
	if status, resp := post(t, g, "/api/users", `{"class":"com.example.demo.User","id":"7","name":"Ada"}`); status != 200 || !strings.Contains(resp, `"Ada"`) {
		t.Errorf("the declared class: %d %s", status, resp)
	}
}

func testPassthroughClasses(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, ""))
	cases := []struct{ what, body, field string }{
		{"gadget parameter type", `{"types":["com.sun.rowset.JdbcRowSetImpl"],"args":[{}]}`, "types[0]"},
		{"gadget type argument", `{"types":["java.util.List<org.apache.commons.collections.functors.InvokerTransformer>"],"args":[[]]}`, "types[0]"},
		{"class outside the allow-list", `{"types":["org.other.Thing"],"args":[{}]}`, "types[0]"},
		{"gadget class key under Object", `{"types":["java.lang.Object"],"args":[{"class":"javax.naming.InitialContext"}]}`, "class"},
		{"gadget class key in a Map", `{"types":["java.util.Map"],"args":[{"class":"com.mchange.v2.c3p0.WrapperConnectionPoolDataSource","k":1}]}`, "class"},
		{"class key outside the allow-list", `{"types":["java.lang.Object"],"args":[{"class":"org.other.Thing"}]}`, "class"},
	}
	for _, c := range cases {
		status, resp := post(t, g, "/dubbo/com.example.demo.UserService/createUser", c.body)
		wantError(t, c.what, status, resp, 400, "BAD_REQUEST", c.field)
	}
	for _, s := range []string{"JdbcRowSetImpl", "InvokerTransformer", "org.other.Thing", "javax.naming", "c3p0"} {
		if rec.contains(s) {
			t.Errorf("%s reached the provider", s)
		}
	}
	// A DTO of the allowed interface's package is fine.
	if status, resp := post(t, g, "/dubbo/com.example.demo.UserService/createUser",
		`{"types":["com.example.demo.User"],"args":[{"id":"7","name":"Ada"}]}`); status != 200 || !strings.Contains(resp, `"Ada"`) {
		t.Errorf("a DTO of the allowed package: %d %s", status, resp)
	}
}

func testGadgetClassOnTypedRoute(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, ""))
	status, resp := post(t, g, "/typed/users", `{"class":"java.lang.ProcessBuilder","command":["sh","-c","id"]}`)
	wantError(t, "ProcessBuilder", status, resp, 400, "BAD_REQUEST", "class")
	status, resp = post(t, g, "/typed/com.example.demo.UserService/createUser",
		`{"types":["java.lang.Object"],"args":[{"class":"java.lang.Runtime"}]}`)
	wantError(t, "Runtime", status, resp, 400, "BAD_REQUEST", "class")
	for _, s := range []string{"ProcessBuilder", "java.lang.Runtime"} {
		if rec.contains(s) {
			t.Errorf("%s reached the provider", s)
		}
	}
}

func testForgedAttachments(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, `
  - name: tenant-generic
    match: {methods: [POST], path: "/tenant/{interface}/{method}"}
    dubbo:
      registry: demo
      timeout: 5s
      passthrough: {allow: [com.example.demo.*], attachments: [x-tenant]}
`))
	for _, c := range []struct{ path, att, key string }{
		{"/dubbo/", `{"userId":"forged-7f3a"}`, "userId"},
		{"/dubbo/", `{"x-tenant":"acme-7f3a"}`, "x-tenant"},       // not on this route's allow-list
		{"/tenant/", `{"group":"internal-7f3a"}`, "group"},        // reserved
		{"/tenant/", `{"token":"tok-7f3a"}`, "token"},             // reserved
		{"/tenant/", `{"generic":"bean-7f3a"}`, "generic"},        // reserved
		{"/tenant/", `{"userId":"forged-7f3a"}`, "userId"},        // identity
		{"/tenant/", `{"dubbo.tag":"gray-7f3a"}`, "dubbo.tag"},    // routing
		{"/tenant/", `{"x-tenant":"ok","path":"p-7f3a"}`, "path"}, // one bad key spoils the call
	} {
		body := `{"types":["java.lang.String"],"args":["x"],"attachments":` + c.att + `}`
		status, resp := post(t, g, c.path+"com.example.demo.UserService/greet", body)
		wantError(t, c.path+" "+c.att, status, resp, 400, "BAD_REQUEST", "attachments", c.key)
	}
	if rec.contains("7f3a") {
		t.Error("a refused attachment reached the provider")
	}
	// An allowed key goes through.
	body := `{"types":["java.lang.String"],"args":["x"],"attachments":{"x-tenant":"acme-9c1e"}}`
	if status, resp := post(t, g, "/tenant/com.example.demo.UserService/greet", body); status != 200 {
		t.Errorf("allowed attachment: %d %s", status, resp)
	}
	if !rec.contains("acme-9c1e") {
		t.Error("the allowed attachment did not reach the provider")
	}
}

func testDollarInvoke(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, dubboRoutesYAML(addr, ""))
	body := `{"types":["java.lang.String","java.lang.String[]","java.lang.Object[]"],"args":["getUser",["java.lang.String"],["1"]]}`
	for _, p := range []string{"/typed/", "/dubbo/"} {
		for _, m := range []string{"$invoke", "$invokeAsync", "$echo"} {
			status, resp := post(t, g, p+"com.example.demo.UserService/"+m, body)
			wantError(t, p+m, status, resp, 400, "BAD_REQUEST", m)
		}
	}
	if rec.contains("$invokeAsync") || rec.contains("$echo") || rec.contains("getUser") {
		t.Error("a $-method reached the provider")
	}
}

func testConcurrentHugeArguments(t *testing.T) {
	addr, _ := demoProvider(t)
	g := startGateway(t, `
server:
  max_body_bytes: 9MiB
`+dubboRoutesYAML(addr, ""))
	// An 8 MiB array of small integers: 4 M JSON values.
	var b bytes.Buffer
	b.WriteString(`{"types":["int[]"],"args":[[1`)
	for b.Len() < 8<<20-4 {
		b.WriteString(",1")
	}
	b.WriteString("]]}")
	body := b.Bytes()

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	const clients = 20
	type answer struct {
		status int
		code   string
		took   time.Duration
		err    error
	}
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Post(g.base+"/dubbo/com.example.demo.UserService/listUsers", "application/json", bytes.NewReader(body))
			if err != nil {
				answers[i] = answer{err: err, took: time.Since(t0)}
				return
			}
			var e errorBody
			_ = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			answers[i] = answer{status: resp.StatusCode, code: e.Error.Code, took: time.Since(t0)}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	sampler.Wait()

	shed, cut := 0, 0
	for i, a := range answers {
		switch {
		case a.err != nil && (strings.Contains(a.err.Error(), "connection reset") || strings.Contains(a.err.Error(), "broken pipe")):
			// Shed while it was still sending: the gateway answered and
			// closed without reading 8 MiB it had no room for.
			cut++
		case a.err != nil:
			t.Errorf("client %d: %v after %s", i, a.err, a.took)
		case a.status == 503 && a.code == "SHED":
			shed++
		case a.status == 400 || a.status == 413 || a.status == 504:
		default:
			t.Errorf("client %d: %d %s", i, a.status, a.code)
		}
		// The route's timeout is 5s; sending 8 MiB over loopback takes far
		// less than the margin.
		if a.took > 30*time.Second {
			t.Errorf("client %d answered after %s, well past the route's 5s timeout", i, a.took)
		}
	}
	// Every client cut short was shed: the gateway counted it.
	if got := g.metric(t, "dubbogw_errors_total", map[string]string{"code": "SHED"}); shed+cut == 0 || got < float64(shed+cut) {
		t.Errorf("%d answered SHED, %d cut while sending, %v counted SHED: 160 MiB of bodies must not be taken at once", shed, cut, got)
	}
	// Bodies in flight are bounded by the route's budget; what each costs
	// to decode is bounded by the body. 20 bodies of the test itself are
	// 160 MiB of the heap already.
	if grew := int64(peak.Load()) - int64(base.HeapAlloc); grew > 512<<20 {
		t.Errorf("the heap grew by %d MiB", grew>>20)
	}
	t.Logf("peak heap growth %d MiB; of %d clients %d answered SHED, %d cut while sending", (int64(peak.Load())-int64(base.HeapAlloc))>>20, clients, shed, cut)
}

func testProviderErrorText(t *testing.T) {
	addr, _ := demoProvider(t)
	g := startGateway(t, fmt.Sprintf(`
registries:
  demo:
    type: static
    providers:
      com.example.demo.Nope: [%q]
routes:
  - name: nope
    match: {methods: [GET], path: /nope}
    dubbo:
      registry: demo
      interface: com.example.demo.Nope
      method: x
      timeout: 5s
  - name: nope-detailed
    match: {methods: [GET], path: /nope-detailed}
    dubbo:
      registry: demo
      interface: com.example.demo.Nope
      method: x
      timeout: 5s
      detailed_errors: true
`, addr))
	get := func(path string) (int, string) {
		c := &http.Client{Timeout: time.Minute}
		resp, err := c.Get(g.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get("/nope")
	wantError(t, "service not found", status, body, 502, "BAD_GATEWAY", "SERVICE_NOT_FOUND")
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, "consumer") || strings.Contains(body, "provider: /") {
		t.Errorf("the answer shows internal addresses: %s", body)
	}
	waitLog(t, g, "127.0.0.1")
	// The route switch shows the operator everything.
	status, body = get("/nope-detailed")
	wantError(t, "detailed errors", status, body, 502, "BAD_GATEWAY", "SERVICE_NOT_FOUND", "consumer: /127.0.0.1:")
}

func testTransportErrorText(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	g := startGateway(t, fmt.Sprintf(`
registries:
  demo:
    type: static
    providers:
      com.example.demo.UserService: [%q]
routes:
  - name: dead
    match: {methods: [GET], path: /dead}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      timeout: 5s
      breaker: {enabled: false}
`, dead))
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(g.base + "/dead")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e errorBody
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode < 500 || e.Error.Code == "" {
		t.Fatalf("got %d %s, want a JSON 5xx", resp.StatusCode, b)
	}
	if strings.Contains(string(b), dead) || strings.Contains(string(b), "127.0.0.1") {
		t.Errorf("the answer shows the provider's address: %s", b)
	}
	waitLog(t, g, dead)
}

// waitLog waits until the gateway's log mentions s: what the client no
// longer sees is still there for the operator.
func waitLog(t *testing.T, g *gw, s string) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, "a log line naming "+s, func() bool { return g.logs.count(s) > 0 })
}
