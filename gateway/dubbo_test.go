package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
)

// startProvider runs the demo Dubbo provider on loopback for one test.
func startProvider(t testing.TB) string {
	t.Helper()
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return addr.String()
}

// dubboGW starts a gateway whose registry "demo" lists providers for the
// demo interface, with the given routes.
func dubboGW(t *testing.T, providers []string, routes string) *testGW {
	t.Helper()
	quoted := make([]string, len(providers))
	for i, p := range providers {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return startGW(t, fmt.Sprintf(`
registries:
  demo:
    providers:
      com.example.demo.UserService: [%s]
      com.example.demo.NobodyService: []
routes:
%s`, strings.Join(quoted, ", "), routes))
}

const demoRoutes = `
  - name: get-user
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: getUser
      params: [{type: java.lang.String, from: path, name: id}]
  - name: get-user-async
    match: {methods: [GET], path: "/async/users/{id}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: getUser
      async: true
      params: [{type: java.lang.String, from: path, name: id}]
  - name: get-user-typed
    match: {methods: [GET], path: "/typed/users/{id}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: getUser
      generic: false
      params: [{type: java.lang.String, from: path, name: id}]
  - name: list-users
    match: {methods: [GET], path: /api/users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: listUsers
      params: [{type: int, from: query, name: limit, value: "3"}]
  - name: create-user
    match: {methods: [POST], path: /api/users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: createUser
      params: [{type: com.example.demo.User}]
      types: {com.example.demo.User: {age: int}}
  - name: greet-body-field
    match: {methods: [POST], path: /greet/field}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, name: who}]
  - name: greet-pointer
    match: {methods: [POST], path: /greet/pointer}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, pointer: /person/name, value: nobody}]
  - name: greet-header
    match: {methods: [GET], path: /greet/header}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, from: header, name: X-Name, required: true}]
  - name: greet-constant
    match: {methods: [GET], path: /greet/constant}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, from: constant, value: "constant"}]
  - name: greet-zero
    match: {methods: [GET], path: /greet}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
  - name: fail
    match: {methods: [GET], path: "/fail/{msg}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: fail
      exception_status: 422
      params: [{type: java.lang.String, from: path, name: msg}]
  - name: slow
    match: {methods: [GET], path: "/slow/{ms}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: slow
      timeout: 200ms
      retries: 0
      params: [{type: int, from: path, name: ms}]
  - name: nobody
    match: {methods: [GET], path: /nobody}
    dubbo:
      registry: demo
      interface: com.example.demo.NobodyService
      method: anything
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: demo
      passthrough: {allow: [com.example.demo.*]}
`

func TestDubboRoutes(t *testing.T) {
	tg := dubboGW(t, []string{startProvider(t)}, demoRoutes)
	okJSON := func(method, path, body, want string, hdr ...string) {
		t.Helper()
		var r answer
		if body != "" {
			r = do(t, method, tg.base+path, strings.NewReader(body), hdr...)
		} else {
			r = do(t, method, tg.base+path, nil, hdr...)
		}
		if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s", method, path, r.status, r.body)
			return
		}
		if got := strings.TrimSpace(r.body); got != want {
			t.Errorf("%s %s:\n got %s\nwant %s", method, path, got, want)
		}
	}
	user42 := `{"id":"42","name":"user 42","age":30,"email":"42@example.com"}`
	okJSON("GET", "/api/users/42", "", user42)
	okJSON("GET", "/typed/users/42", "", user42)
	okJSON("GET", "/async/users/42", "", user42)
	okJSON("GET", "/api/users", "", `[{"id":"1","name":"user 1","age":30,"email":"1@example.com"},{"id":"2","name":"user 2","age":30,"email":"2@example.com"},{"id":"3","name":"user 3","age":30,"email":"3@example.com"}]`)
	okJSON("GET", "/api/users?limit=1", "", `[{"id":"1","name":"user 1","age":30,"email":"1@example.com"}]`)
	okJSON("GET", "/api/users?limit=0", "", `[]`)
	okJSON("POST", "/api/users", `{"id":"7","name":"Ada","age":36,"email":"ada@example.com"}`, `{"id":"7","name":"Ada","age":36,"email":"ada@example.com"}`)
	okJSON("POST", "/greet/field", `{"who":"field","other":1}`, `"Hello, field"`)
	okJSON("POST", "/greet/pointer", `{"person":{"name":"pointer"}}`, `"Hello, pointer"`)
	okJSON("GET", "/greet/header", "", `"Hello, header"`, "X-Name", "header")
	okJSON("GET", "/greet/constant", "", `"Hello, constant"`)
	okJSON("GET", "/greet", "", `"Hello, world"`) // zero-argument method
	okJSON("POST", "/dubbo/com.example.demo.UserService/greet", `{"types":["java.lang.String"],"args":["pass"]}`, `"Hello, pass"`)
	okJSON("POST", "/dubbo/com.example.demo.UserService/greet", ``, `"Hello, world"`)
	okJSON("POST", "/dubbo/com.example.demo.UserService/getUser", `{"types":["java.lang.String"],"args":["9"]}`,
		`{"id":"9","name":"user 9","age":30,"email":"9@example.com"}`)

	fails := []struct {
		method, path, body string
		hdr                []string
		status             int
		code, msg          string
	}{
		{"GET", "/api/users?limit=abc", "", nil, 400, "BAD_REQUEST", `parameter 0 (int from query "limit"): cannot use string "abc" as int`},
		{"POST", "/api/users", `{"id": 7,`, nil, 400, "BAD_REQUEST", "parameter 0"},
		{"POST", "/api/users", ``, nil, 400, "BAD_REQUEST", "the request body is empty"},
		{"POST", "/api/users", `{"age":"old"}`, nil, 400, "BAD_REQUEST", "$.age"}, // typed by the route's types
		{"POST", "/greet/pointer", `{"person":{}}`, nil, 200, "", ""},             // absent: the default
		{"GET", "/greet/header", "", nil, 400, "BAD_REQUEST", `parameter 0 (java.lang.String from header "X-Name"): missing`},
		{"GET", "/fail/boom", "", nil, 422, "DUBBO_EXCEPTION", "com.example.demo.DemoException: boom"},
		{"GET", "/slow/2000", "", nil, 504, "TIMEOUT", "200ms"},
		{"GET", "/nobody", "", nil, 503, "NO_PROVIDER", "com.example.demo.NobodyService"},
		{"POST", "/dubbo/com.evil.Service/x", `{}`, nil, 403, "FORBIDDEN", "not allowed"},
		{"POST", "/dubbo/com.example.demo.UserService/greet", `{"typez":[]}`, nil, 400, "BAD_REQUEST", `unknown field "typez"`},
		{"POST", "/dubbo/com.example.demo.UserService/listUsers", `{"types":["int"],"args":["many"]}`, nil, 400, "BAD_REQUEST", "args: $[0]"},
		{"POST", "/dubbo/com.example.demo.UserService/noSuchMethod", `{}`, nil, 500, "DUBBO_EXCEPTION", "NoSuchMethodException"},
		{"POST", "/dubbo/com.example.demo.UserService/greet", `{"version":"9.9"}`, nil, 503, "NO_PROVIDER", "com.example.demo.UserService:9.9"},
	}
	for _, f := range fails {
		var body *strings.Reader
		if f.body != "" {
			body = strings.NewReader(f.body)
		}
		var r answer
		if body != nil {
			r = do(t, f.method, tg.base+f.path, body, f.hdr...)
		} else {
			r = do(t, f.method, tg.base+f.path, nil, f.hdr...)
		}
		if r.status != f.status {
			t.Errorf("%s %s %s: status %d, want %d: %s", f.method, f.path, f.body, r.status, f.status, r.body)
			continue
		}
		if f.code == "" {
			continue
		}
		code, msg, _, _ := errorBody(t, r)
		if code != f.code || !strings.Contains(msg, f.msg) {
			t.Errorf("%s %s %s: %s %q, want %s containing %q", f.method, f.path, f.body, code, msg, f.code, f.msg)
		}
	}
	if rs := do(t, "GET", tg.admin+"/admin/routes", nil).body; !strings.Contains(rs, `"dubbo":"demo: com.example.demo.UserService.getUser"`) ||
		!strings.Contains(rs, `"dubbo":"demo: pass-through to com.example.demo.*"`) || strings.Count(rs, "\n") != 1 {
		t.Errorf("admin/routes does not show Dubbo targets in compact JSON: %s", rs)
	}
	if rs := do(t, "GET", tg.admin+"/admin/routes?pretty", nil).body; !strings.Contains(rs, "\n      \"dubbo\": \"demo: com.example.demo.UserService.getUser\"") {
		t.Errorf("admin/routes?pretty is not indented: %s", rs)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_errors_total{code="NO_PROVIDER"}`, `dubbogw_errors_total{code="DUBBO_EXCEPTION"}`,
		`dubbogw_http_requests_total{code="200",route="get-user"} 1`, `dubbogw_dubbo_`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestNoProviderKeepsOneSubscription is seed incident 000 through the
// gateway: requests to a service with no provider answer 503 at once and
// never create more than one directory, whatever their number; pass-through
// clients cannot grow the set past its bound either.
func TestNoProviderKeepsOneSubscription(t *testing.T) {
	tg := dubboGW(t, []string{startProvider(t)}, demoRoutes+"dubbo: {references: {max: 100}}\n")
	start := time.Now()
	for i := 0; i < 200; i++ {
		r := do(t, "GET", tg.base+"/nobody", nil)
		if r.status != 503 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("200 NO_PROVIDER answers took %v: they must not wait", d)
	}
	for i := 0; i < 300; i++ { // 300 distinct versions through the pass-through
		do(t, "POST", tg.base+"/dubbo/com.example.demo.UserService/greet", strings.NewReader(fmt.Sprintf(`{"version":"v%d"}`, i)))
	}
	var services struct {
		Services []struct {
			Registry, Service string
			References        int
			Providers         []struct{ Address string }
		}
		Total int
	}
	if err := json.Unmarshal([]byte(do(t, "GET", tg.admin+"/admin/services?limit=5000", nil).body), &services); err != nil {
		t.Fatal(err)
	}
	if services.Total != len(services.Services) {
		t.Fatalf("listed %d of %d services: the check below needs them all", len(services.Services), services.Total)
	}
	count := map[string]int{}
	for _, s := range services.Services {
		count[s.Service]++
		if s.Service == "com.example.demo.NobodyService" && (s.References != 1 || len(s.Providers) != 0) {
			t.Errorf("no-provider service: %+v", s)
		}
	}
	if count["com.example.demo.NobodyService"] != 1 {
		t.Errorf("directories for the no-provider service: %d", count["com.example.demo.NobodyService"])
	}
	if n := len(services.Services); n > 100+3 {
		t.Errorf("%d directories after 300 distinct pass-through versions: the cache is not bounded", n)
	}
}

func TestDubboFailoverAndBreaker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	live := startProvider(t)
	tg := dubboGW(t, []string{dead, live}, `
  - name: get-user
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: getUser
      loadbalance: roundrobin
      params: [{type: java.lang.String, from: path, name: id}]
`)
	for i := 0; i < 10; i++ {
		if r := do(t, "GET", tg.base+fmt.Sprintf("/api/users/%d", i), nil); r.status != 200 {
			t.Fatalf("call %d with one dead provider: %d %s", i, r.status, r.body)
		}
	}

	// Only dead providers: connect failures open the route's breaker, and
	// then calls fail fast without dialing.
	tg2 := dubboGW(t, []string{dead}, `
  - name: dead
    match: {methods: [GET], path: "/dead"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      breaker: {max_failures: 3, open_for: 1m}
`)
	var codes []string
	for i := 0; i < 8; i++ {
		r := do(t, "GET", tg2.base+"/dead", nil)
		code, _, _, _ := errorBody(t, r)
		codes = append(codes, fmt.Sprintf("%d %s", r.status, code))
	}
	if codes[0] != "502 BAD_GATEWAY" || codes[len(codes)-1] != "503 BREAKER_OPEN" {
		t.Errorf("dead provider answers: %v", codes)
	}
}

// TestDubboAttachmentsAndNoLeak checks what a provider receives besides the
// arguments (trace context, request id, route constants, the service's
// identity) and that a gateway which served Dubbo calls leaves no goroutine
// behind once shut down.
func TestDubboAttachmentsAndNoLeak(t *testing.T) {
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	got := make(chan map[string]any, 1)
	s.Register(provider.Service{Interface: "com.example.Echo", Version: "1.0.0", Group: "g", Methods: map[string][]provider.Method{
		"ping": {{ParamTypes: nil, Func: func(ctx context.Context, _ []any) (any, error) {
			got <- provider.Attachments(ctx)
			return "pong", nil
		}}},
	}})
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	before := goroutines()
	tg := startGWNoCleanup(t, fmt.Sprintf(`
registries:
  r: {providers: {com.example.Echo: ["%s?version=1.0.0&group=g"]}}
routes:
  - name: ping
    match: {path: /ping}
    dubbo:
      registry: r
      interface: com.example.Echo
      version: 1.0.0
      group: g
      method: ping
      attachments: {tenant: blue}
`, addr))
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := do(t, "GET", tg.base+"/ping", nil, "traceparent", tp, "tracestate", "k=v", "X-Request-Id", "rid-9")
	if r.status != 200 || strings.TrimSpace(r.body) != `"pong"` {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	a := <-got
	for k, want := range map[string]string{"traceparent": tp, "tracestate": "k=v", "request-id": "rid-9", "tenant": "blue",
		"interface": "com.example.Echo", "version": "1.0.0", "group": "g", "generic": "true"} {
		if fmt.Sprint(a[k]) != want {
			t.Errorf("attachment %s = %v, want %s (all: %v)", k, a[k], want, a)
		}
	}
	if a["timeout"] == nil {
		t.Errorf("no timeout attachment: %v", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

func startGWNoCleanup(t *testing.T, yamlText string) *testGW {
	t.Helper()
	path := t.TempDir() + "/gw.yaml"
	if err := writeFile(path, baseYAML+yamlText); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &testGW{Gateway: g, path: path, base: "http://" + g.Addr(), admin: "http://" + g.AdminAddr()}
}

func goroutines() int { return runtime.NumGoroutine() }

// waitGoroutines waits (bounded) for the goroutine count to fall back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	client.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, was %d\n%s", goroutines(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// TestDubboResultShapes: whatever a method returns — null, a primitive, a
// map, a list, a nested POJO, a long beyond 2^53, a date — the answer is a
// 200 with a JSON body, never an empty one.
func TestDubboResultShapes(t *testing.T) {
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	results := map[string]any{
		"nothing": nil,
		"number":  int32(7),
		"big":     int64(1) << 60,
		"flag":    true,
		"when":    time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC),
		"dict":    map[string]any{"a": int32(1)},
		"items":   []any{"x", int32(2)},
		"nested": &hessian.Object{Class: "com.example.Order", Fields: []hessian.Field{
			{Name: "id", Value: int64(5)},
			// Two fields: an object whose only field is "name" reads as an enum (see hessian.EnumName).
			{Name: "owner", Value: &hessian.Object{Class: "com.example.User", Fields: []hessian.Field{{Name: "name", Value: "ann"}, {Name: "age", Value: int32(40)}}}},
		}},
	}
	methods := map[string][]provider.Method{}
	var routes strings.Builder
	for name, v := range results {
		v := v
		methods[name] = []provider.Method{{Func: func(context.Context, []any) (any, error) { return v, nil }}}
		fmt.Fprintf(&routes, "  - {name: %s, match: {path: /%s}, dubbo: {registry: r, interface: com.example.Shapes, method: %s}}\n", name, name, name)
	}
	s.Register(provider.Service{Interface: "com.example.Shapes", Methods: methods})
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	tg := startGW(t, fmt.Sprintf("registries:\n  r: {providers: {com.example.Shapes: [%q]}}\nroutes:\n%s", addr.String(), routes.String()))
	want := map[string]string{
		"nothing": `null`,
		"number":  `7`,
		"big":     `"1152921504606846976"`,
		"flag":    `true`,
		"when":    `"2024-05-01T12:30:00.000Z"`,
		"dict":    `{"a":1}`,
		"items":   `["x",2]`,
		"nested":  `{"id":5,"owner":{"name":"ann","age":40}}`,
	}
	for name, w := range want {
		r := do(t, "GET", tg.base+"/"+name, nil)
		if r.status != 200 || strings.TrimSpace(r.body) != w {
			t.Errorf("%s: %d %q, want %s", name, r.status, r.body, w)
		}
	}
}

// TestHostileProvider: a provider answering garbage, closing in the middle
// of a frame, or sending an oversized response gets a precise 502 (counted),
// and the gateway keeps serving.
func TestHostileProvider(t *testing.T) {
	serve := func(answer func(c net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					buf := make([]byte, 16)
					_ = c.SetDeadline(time.Now().Add(5 * time.Second))
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					answer(c)
				}()
			}
		}()
		return ln.Addr().String()
	}
	garbage := serve(func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\nnot dubbo at all")) })
	midFrame := serve(func(c net.Conn) {
		// A valid response header promising 100 bytes, then 3 and a close.
		hdr := []byte{0xda, 0xbb, 0x02, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100}
		_, _ = c.Write(append(hdr, 0x91, 0x05, 'h'))
	})
	huge := serve(func(c net.Conn) {
		hdr := []byte{0xda, 0xbb, 0x02, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0, 0, 0}
		_, _ = c.Write(hdr)
	})
	tg := startGW(t, fmt.Sprintf(`
registries:
  r:
    providers:
      com.example.Garbage: [%q]
      com.example.MidFrame: [%q]
      com.example.Huge: [%q]
routes:
  - {name: garbage, match: {path: /garbage}, dubbo: {registry: r, interface: com.example.Garbage, method: m, retries: 0, timeout: 3s}}
  - {name: midframe, match: {path: /midframe}, dubbo: {registry: r, interface: com.example.MidFrame, method: m, retries: 0, timeout: 3s}}
  - {name: huge, match: {path: /huge}, dubbo: {registry: r, interface: com.example.Huge, method: m, retries: 0, timeout: 3s}}
`, garbage, midFrame, huge))
	for _, path := range []string{"/garbage", "/midframe", "/huge"} {
		r := do(t, "GET", tg.base+path, nil)
		code, msg, _, _ := errorBody(t, r)
		if r.status != 502 || code != "BAD_GATEWAY" {
			t.Errorf("%s: %d %s %q", path, r.status, code, msg)
		}
	}
	if !strings.Contains(do(t, "GET", tg.admin+"/metrics", nil).body, `dubbogw_errors_total{code="BAD_GATEWAY"} 3`) {
		t.Errorf("hostile answers not counted")
	}
	if r := do(t, "GET", tg.admin+"/livez", nil); r.status != 200 {
		t.Errorf("gateway not serving after hostile providers")
	}
}

// TestDubboArgumentsOverPayload: arguments that encode to more than
// dubbo.max_payload are the request's fault: 413, never sent, never
// retried elsewhere, and never counted against the provider (a breaker
// opening on the first failure stays closed).
func TestDubboArgumentsOverPayload(t *testing.T) {
	provider := startProvider(t)
	tg := startGW(t, fmt.Sprintf(`
dubbo: {max_payload: 1KiB}
registries:
  demo:
    providers:
      com.example.demo.UserService: [%q]
routes:
  - name: greet
    match: {methods: [POST], path: /greet}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      breaker: {max_failures: 1, open_for: 1m}
      params: [{type: java.lang.String, name: who}]
`, provider))
	big := `{"who":"` + strings.Repeat("x", 4096) + `"}`
	for i := range 5 {
		r := do(t, "POST", tg.base+"/greet", strings.NewReader(big))
		if code, _, _, _ := errorBody(t, r); r.status != 413 || code != "PAYLOAD_TOO_LARGE" {
			t.Fatalf("call %d over max_payload: %d %s", i, r.status, r.body)
		}
	}
	if r := do(t, "POST", tg.base+"/greet", strings.NewReader(`{"who":"small"}`)); r.status != 200 || strings.TrimSpace(r.body) != `"Hello, small"` {
		t.Errorf("a call within max_payload after the refused ones: %d %s", r.status, r.body)
	}
}

// TestAdminServicesPages: /admin/services lists a large registry a page at
// a time, in service-key order, filtered by registry, service or prefix;
// following "next" lists every service exactly once (issue 19: one 10 MB
// answer at 5,000 services).
func TestAdminServicesPages(t *testing.T) {
	tg := dubboGW(t, []string{startProvider(t)}, demoRoutes)
	for i := range 10 { // ten more service keys, through the pass-through
		do(t, "POST", tg.base+"/dubbo/com.example.demo.UserService/greet", strings.NewReader(fmt.Sprintf(`{"version":"v%d"}`, i)))
	}
	type page struct {
		Services []struct{ Registry, Service string }
		Total    int
		Next     string
	}
	get := func(query string) page {
		t.Helper()
		a := do(t, "GET", tg.admin+"/admin/services"+query, nil)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", query, a.status, a.body)
		}
		var p page
		if err := json.Unmarshal([]byte(a.body), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := get("?limit=5000")
	if all.Total < 12 || len(all.Services) != all.Total || all.Next != "" {
		t.Fatalf("everything: %d listed, total %d, next %q", len(all.Services), all.Total, all.Next)
	}
	var paged []string
	for q := "?limit=4"; ; {
		p := get(q)
		if p.Total != all.Total || len(p.Services) > 4 || len(p.Services) == 0 {
			t.Fatalf("%s: %d services, total %d (an empty page: the previous one's next led nowhere)", q, len(p.Services), p.Total)
		}
		for _, s := range p.Services {
			paged = append(paged, s.Registry+"/"+s.Service)
		}
		if p.Next == "" {
			break
		}
		q = "?limit=4&after=" + url.QueryEscape(p.Next)
	}
	var want []string
	for _, s := range all.Services {
		want = append(want, s.Registry+"/"+s.Service)
	}
	if !slices.Equal(paged, want) || !slices.IsSorted(want) {
		t.Errorf("pages:\n%v\nwant, in order:\n%v", paged, want)
	}
	if p := get(fmt.Sprintf("?limit=1&after=%s", url.QueryEscape(want[len(want)-2]))); len(p.Services) != 1 || p.Next != "" {
		t.Errorf("the last page: %+v, want its one service and no next", p)
	}
	if p := get("?prefix=" + url.QueryEscape("com.example.demo.UserService:v")); p.Total != 10 || len(p.Services) != 10 {
		t.Errorf("prefix: %d listed, total %d; want the 10 versions", len(p.Services), p.Total)
	}
	if p := get("?service=com.example.demo.NobodyService&registry=demo"); p.Total != 1 || len(p.Services) != 1 {
		t.Errorf("one service: %+v", p)
	}
	for _, bad := range []string{"?limit=0", "?limit=x", "?after=nocursor"} {
		if a := do(t, "GET", tg.admin+"/admin/services"+bad, nil); a.status != 400 {
			t.Errorf("%s: %d, want 400", bad, a.status)
		}
	}
}

// TestAdminServicesPagesAcrossRegistries: pages run from one registry
// into the next; every page has the same total, none is empty, the last
// has no next.
func TestAdminServicesPagesAcrossRegistries(t *testing.T) {
	tg := startGW(t, `
registries:
  a: {providers: {com.example.A1: [], com.example.A2: [], com.example.A3: []}}
  b: {providers: {com.example.B1: [], com.example.B2: []}}
  c: {providers: {com.example.C1: []}}
routes:
  - {name: a1, match: {path: /a1}, dubbo: {registry: a, interface: com.example.A1, method: m}}
  - {name: a2, match: {path: /a2}, dubbo: {registry: a, interface: com.example.A2, method: m}}
  - {name: a3, match: {path: /a3}, dubbo: {registry: a, interface: com.example.A3, method: m}}
  - {name: b1, match: {path: /b1}, dubbo: {registry: b, interface: com.example.B1, method: m}}
  - {name: b2, match: {path: /b2}, dubbo: {registry: b, interface: com.example.B2, method: m}}
`)
	want := []string{"a/com.example.A1", "a/com.example.A2", "a/com.example.A3", "b/com.example.B1", "b/com.example.B2"}
	for _, limit := range []int{1, 2, 3, 5, 6} {
		var listed []string
		pages := 0
		for q := fmt.Sprintf("?limit=%d", limit); ; pages++ {
			var p struct {
				Services []struct{ Registry, Service string }
				Total    int
				Next     string
			}
			getJSON(t, tg.admin+"/admin/services"+q, &p)
			if p.Total != len(want) || len(p.Services) == 0 || len(p.Services) > limit || pages > len(want) {
				t.Fatalf("limit %d, %s: %+v", limit, q, p)
			}
			for _, s := range p.Services {
				listed = append(listed, s.Registry+"/"+s.Service)
			}
			if p.Next == "" {
				break
			}
			q = fmt.Sprintf("?limit=%d&after=%s", limit, url.QueryEscape(p.Next))
		}
		if !slices.Equal(listed, want) {
			t.Errorf("limit %d: pages list %v, want %v", limit, listed, want)
		}
	}
}
