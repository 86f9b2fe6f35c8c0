package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/gateway"
)

// TestGatewayDubboGo drives a real Apache dubbo-go v3.3.0 provider through
// the gateway: HTTP requests on loopback, HTTP→Dubbo routes (generic and
// typed) and the generic pass-through, with the provider found through the
// gateway's ZooKeeper registry, where the gateway registers as a consumer.
func TestGatewayDubboGo(t *testing.T) {
	zkAddr := zkAddress(t)
	if zkAddr == "" {
		t.Skip("DUBBOGW_TEST_ZK_ADDR is not set (scripts/test.sh starts a ZooKeeper; set CI to make this a failure)")
	}
	p := startDubboGoProvider(t, providerConfig{ZK: zkAddr})
	gw := startGateway(t, gatewayYAML(zkAddr, "generic", "typed"))

	for _, mode := range []string{"generic", "typed"} {
		t.Run(mode, func(t *testing.T) {
			for _, c := range gatewayCases(mode) {
				t.Run(c.name, func(t *testing.T) {
					c.check(t, gw.do(t, c.method, "/"+mode+c.path, c.body, c.header...))
				})
			}
		})
	}

	t.Run("pass-through", func(t *testing.T) {
		for _, c := range passthroughCases() {
			t.Run(c.name, func(t *testing.T) {
				c.check(t, gw.do(t, c.method, c.path, c.body, c.header...))
			})
		}
	})

	// Last: the subscriptions below are those of every route and of the
	// pass-through calls above.
	t.Run("admin services", func(t *testing.T) { checkAdminServices(t, gw, p.Addr) })
	t.Run("consumer nodes", func(t *testing.T) { checkConsumerNodes(t, zkAddr) })
}

// gatewayYAML is the gateway's configuration: the ZooKeeper registry (root
// "dubbo", where the provider registers) and, for each of generic and
// typed invocation, a route per feature under /generic and /typed; then the
// pass-through, generic on /dubbo and typed on /dubbo-typed. The modes
// tri and tri-app are typed calls over Triple, with the providers read at
// interface and application level.
func gatewayYAML(zkAddr string, modes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
registries:
  zk: {type: zookeeper, address: %q, startup_wait: 5s}
dubbo:
  types:
    %s: {age: int, tags: "java.util.List<java.lang.String>"}
routes:
`, zkAddr, userClass)
	for _, mode := range modes {
		typed := "" // generic is the default
		switch mode {
		case "typed":
			typed = "generic: false, "
		case "tri":
			typed = "protocol: tri, discovery: interface, " // typed: the default over Triple
		case "tri-app":
			typed = "protocol: tri, discovery: application, "
		}
		route := func(name, match, dubbo string, extra ...string) {
			fmt.Fprintf(&b, "  - name: %s-%s\n    match: %s\n    dubbo: {registry: zk, %s%s}\n", mode, name, match, typed, dubbo)
			for _, e := range extra {
				fmt.Fprintf(&b, "    %s\n", e)
			}
		}
		users := "interface: " + userService + ", version: " + userVersion + ", "
		get := func(path string) string { return `{methods: [GET], path: "/` + mode + path + `"}` }
		post := func(path string) string { return `{methods: [POST], path: "/` + mode + path + `"}` }

		route("get-user", get("/users/{id}"), users+`method: getUser, params: [{type: java.lang.String, from: path, name: id}]`)
		route("list-users", get("/users"), users+`method: listUsers, params: [{type: int, from: query, name: count, value: "2"}]`)
		route("list-users-path", get("/users/count/{count}"), users+`method: listUsers, params: [{type: int, from: path, name: count}]`)
		route("create-user", post("/users"), users+`method: createUser, params: [{type: `+userClass+`}]`)
		route("join", post("/join"), users+`method: join, params: [{type: java.util.List, from: body, name: parts}, {type: java.lang.String, from: header, name: X-Separator}]`)
		route("join-pointer", post("/join/pointer"), users+`method: join, params: [{type: java.util.List, from: body, pointer: /data/parts}, {type: java.lang.String, from: body, pointer: "/data/sep~1char"}]`)
		route("add-bonus", post("/bonus"), users+`method: addBonus, params: [{type: "java.util.Map<java.lang.String,java.lang.Integer>", from: body, pointer: /team/scores}, {type: int, from: constant, value: "10"}]`)
		route("add", get("/add"), users+`method: add, params: [{type: long, from: query, name: a}, {type: long, from: query, name: b, value: "1"}]`)
		route("add-number", get("/add/number"), users+`method: add, result: {long_as_number: true}, params: [{type: long, from: query, name: a}, {type: long, from: query, name: b}]`)
		route("greet", get("/greet"), users+`method: greet`)
		route("hello", get("/hello/{name}"), "interface: "+greeterService+", group: "+greeterGroup+", method: hello, params: [{type: java.lang.String, from: path, name: name}]")
		route("fail", get("/fail"), users+`method: fail, params: [{type: java.lang.String, from: query, name: message}]`)
		route("fail-422", get("/fail/422"), users+`method: fail, exception_status: 422, params: [{type: java.lang.String, from: query, name: message}]`)
		route("crash", get("/crash"), users+`method: crash, params: [{type: java.lang.String, from: query, name: message}]`)
		route("slow", get("/slow"), users+`method: slow, params: [{type: int, from: query, name: ms}]`, "timeout: 300ms")
		route("unknown-method", get("/nosuch"), users+`method: nosuch, params: [{type: java.lang.String, from: constant, value: x}]`)
		// No provider has these: answered at once, long before their 30s
		// timeout (a request that waited would meet the client's 5s deadline).
		route("no-version", get("/version/9"), "interface: "+userService+", version: 9.9.9, timeout: 30s, method: greet")
		route("no-group", get("/group/red"), "interface: "+greeterService+", group: red, timeout: 30s, method: hello, params: [{type: java.lang.String, from: constant, value: x}]")
	}
	b.WriteString(`  - name: passthrough
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: zk, passthrough: {allow: [` + userService + `, ` + greeterService + `], attachments: [tenant]}}
  - name: passthrough-typed
    match: {methods: [POST], path: "/dubbo-typed/{interface}/{method}"}
    dubbo: {registry: zk, generic: false, passthrough: {allow: [` + userService + `]}}
`)
	return b.String()
}

// gatewayCase is one HTTP request and what the gateway must answer.
type gatewayCase struct {
	name   string
	method string
	path   string
	body   string
	header []string // name, value, ...
	check  func(t *testing.T, a httpAnswer)
}

// gatewayCases are the requests to the routes of one mode (generic or
// typed) and their answers, which differ only where dubbo-go's generic
// results do: a POJO comes back keyed by Go field names, first letter
// lowered (ID → iD).
func gatewayCases(mode string) []gatewayCase {
	// dubbo-go answers an unknown method with an exception, not a status;
	// its generic filter and its typed path word it differently.
	idKey, unknownMethod := "id", "java.lang.Throwable: cannot find method [nosuch] of service ["+userService+"] in dubbo"
	if mode == "generic" {
		idKey, unknownMethod = "iD", `java.lang.Throwable: "nosuch" method is not found, service key: `+userService+":"+userVersion
	}
	// Over Triple, dubbo-go sends a method's error as grpc-status UNKNOWN
	// with its message (no exception class), and an unknown method is
	// UNIMPLEMENTED: the provider did not run it.
	tri := strings.HasPrefix(mode, "tri")
	exception := func(class, message string) string {
		if tri {
			return "UNKNOWN: " + message
		}
		return class + ": " + message
	}
	user := func(id, name string, age int, email string, tags ...string) string {
		t, _ := json.Marshal(tags)
		return fmt.Sprintf(`{%q: %q, "name": %q, "age": %d, "email": %q, "tags": %s}`, idKey, id, name, age, email, t)
	}
	route := func(name string) string { return mode + "-" + name }
	const beyond53 = "9007199254740993" // 2^53 + 1: a float64 cannot hold it
	return []gatewayCase{
		{name: "path param", method: "GET", path: "/users/7",
			check: wantJSON(user("7", "user-7", 30, "7@example.org", "a", "b"))},
		{name: "null result", method: "GET", path: "/users/missing", check: wantJSON("null")},
		{name: "query int", method: "GET", path: "/users?count=3", check: wantJSON("[" +
			user("0", "user-0", 30, "0@example.org", "a", "b") + "," +
			user("1", "user-1", 30, "1@example.org", "a", "b") + "," +
			user("2", "user-2", 30, "2@example.org", "a", "b") + "]")},
		{name: "query default", method: "GET", path: "/users", check: wantJSON("[" +
			user("0", "user-0", 30, "0@example.org", "a", "b") + "," +
			user("1", "user-1", 30, "1@example.org", "a", "b") + "]")},
		{name: "body DTO", method: "POST", path: "/users",
			body:  `{"name": "Ann", "age": 41, "email": "ann@example.org", "tags": ["x", "y"]}`,
			check: wantJSON(user("new-Ann", "Ann", 41, "ann@example.org", "x", "y"))},
		{name: "body field and header", method: "POST", path: "/join",
			body: `{"parts": ["a", "b", "c"], "ignored": true}`, header: []string{"X-Separator", "::"},
			check: wantJSON(`"a::b::c"`)},
		{name: "body pointers", method: "POST", path: "/join/pointer",
			body: `{"data": {"parts": ["x", "y"], "sep/char": " & "}}`, check: wantJSON(`"x & y"`)},
		{name: "map in and out, constant", method: "POST", path: "/bonus",
			body: `{"team": {"scores": {"ann": 1, "bob": 2}}}`, check: wantJSON(`{"ann": 11, "bob": 12}`)},
		{name: "zero args", method: "GET", path: "/greet", check: wantJSON(`"hello from dubbo-go"`)},
		{name: "group", method: "GET", path: "/hello/Bo", check: wantJSON(`"hello Bo from group blue"`)},
		{name: "long", method: "GET", path: "/add?a=40&b=2", check: wantJSON(`42`)},
		{name: "long default", method: "GET", path: "/add?a=-5", check: wantJSON(`-4`)},
		// Beyond ±2^53 a long is a JSON string by default (JavaScript reads
		// it exactly), a number with result.long_as_number.
		{name: "long beyond 2^53", method: "GET", path: "/add?a=" + beyond53 + "&b=2", check: wantJSON(`"9007199254740995"`)},
		{name: "long beyond 2^53 as number", method: "GET", path: "/add/number?a=" + beyond53 + "&b=2", check: wantJSON(`9007199254740995`)},
		{name: "negative long beyond 2^53", method: "GET", path: "/add?a=-" + beyond53 + "&b=-2", check: wantJSON(`"-9007199254740995"`)},

		{name: "exception", method: "GET", path: "/fail?message=no+stock",
			check: wantError(500, "DUBBO_EXCEPTION", route("fail"), exception(bizException, "no stock"))},
		{name: "exception status", method: "GET", path: "/fail/422?message=out+of+range",
			check: wantError(422, "DUBBO_EXCEPTION", route("fail-422"), exception(bizException, "out of range"))},
		// A Go error, which dubbo-go sends as a java.lang.Throwable.
		{name: "crash", method: "GET", path: "/crash?message=disk",
			check: wantError(500, "DUBBO_EXCEPTION", route("crash"), exception("java.lang.Throwable", "crash: disk"))},
		{name: "timeout", method: "GET", path: "/slow?ms=3000",
			check: wantError(504, "TIMEOUT", route("slow"), "no answer from "+userService+":"+userVersion+".slow within 300ms")},
		{name: "within timeout", method: "GET", path: "/slow?ms=10", check: wantJSON(`"slept 10ms"`)},
		unknownMethodCase(mode, unknownMethod),
		{name: "wrong argument type", method: "GET", path: "/users/count/abc",
			check: wantError(400, "BAD_REQUEST", route("list-users-path"), `parameter 0 (int from path "count"): cannot use string "abc" as int: not a number`)},
		{name: "missing primitive", method: "GET", path: "/add",
			check: wantError(400, "BAD_REQUEST", route("add"), `parameter 0 (long from query "a"): missing`)},
		{name: "no provider of version", method: "GET", path: "/version/9",
			check: wantError(503, "NO_PROVIDER", route("no-version"), "no provider for "+userService+":9.9.9; the registry has providers of "+userService+" for version 1.0.0")},
		{name: "no provider of group", method: "GET", path: "/group/red",
			check: wantError(503, "NO_PROVIDER", route("no-group"), "no provider for red/"+greeterService+"; the registry has providers of "+greeterService+" for group blue")},
	}
}

// unknownMethodCase calls a method the provider does not have: an
// exception over dubbo, UNIMPLEMENTED over Triple.
func unknownMethodCase(mode, message string) gatewayCase {
	c := gatewayCase{name: "unknown method", method: "GET", path: "/nosuch",
		check: wantError(500, "DUBBO_EXCEPTION", mode+"-unknown-method", message)}
	if strings.HasPrefix(mode, "tri") {
		c.check = wantError(502, "BAD_GATEWAY", mode+"-unknown-method", userService+":"+userVersion+".nosuch answered UNIMPLEMENTED")
	}
	return c
}

// passthroughCases call the pass-through endpoint, generic (/dubbo) and
// typed (/dubbo-typed).
func passthroughCases() []gatewayCase {
	post := func(name, path, body string, check func(*testing.T, httpAnswer)) gatewayCase {
		return gatewayCase{name: name, method: "POST", path: path, body: body, check: check}
	}
	return []gatewayCase{
		post("version", "/dubbo/"+userService+"/getUser",
			`{"types": ["java.lang.String"], "args": ["8"], "version": "1.0.0"}`,
			wantJSON(`{"iD": "8", "name": "user-8", "age": 30, "email": "8@example.org", "tags": ["a", "b"]}`)),
		post("typed", "/dubbo-typed/"+userService+"/getUser",
			`{"types": ["java.lang.String"], "args": ["8"], "version": "1.0.0"}`,
			wantJSON(`{"id": "8", "name": "user-8", "age": 30, "email": "8@example.org", "tags": ["a", "b"]}`)),
		post("group", "/dubbo/"+greeterService+"/hello",
			`{"types": ["java.lang.String"], "args": ["Cy"], "group": "blue"}`,
			wantJSON(`"hello Cy from group blue"`)),
		post("attachments", "/dubbo/"+userService+"/add",
			`{"types": ["long", "long"], "args": [1099511627776, 2], "version": "1.0.0", "attachments": {"tenant": "t-1"}}`,
			wantJSON(`1099511627778`)),
		// dubbo-go-hessian2 decodes an empty list into a nil slice, which
		// it writes back as null.
		post("typed DTO", "/dubbo-typed/"+userService+"/createUser",
			`{"types": ["`+userClass+`"], "args": [{"name": "Di", "age": 7, "email": "di@example.org", "tags": []}], "version": "1.0.0"}`,
			wantJSON(`{"id": "new-Di", "name": "Di", "age": 7, "email": "di@example.org", "tags": null}`)),
		post("exception", "/dubbo/"+userService+"/fail",
			`{"types": ["java.lang.String"], "args": ["gone"], "version": "1.0.0"}`,
			wantError(500, "DUBBO_EXCEPTION", "passthrough", bizException+": gone")),
		// The provider exports UserService with version 1.0.0 only.
		post("no version", "/dubbo/"+userService+"/greet", `{}`,
			wantError(503, "NO_PROVIDER", "passthrough", "no provider for "+userService+"; the registry has providers of "+userService+" for version 1.0.0")),
		post("not allowed", "/dubbo/org.dubbogw.interop.AdminService/greet", `{}`,
			wantError(403, "FORBIDDEN", "passthrough", "interface org.dubbogw.interop.AdminService is not allowed on this route")),
		post("not allowed typed", "/dubbo-typed/"+greeterService+"/hello", `{"types": ["java.lang.String"], "args": ["x"], "group": "blue"}`,
			wantError(403, "FORBIDDEN", "passthrough-typed", "interface "+greeterService+" is not allowed on this route")),
	}
}

// checkAdminServices checks /admin/services: the registry is connected
// with, per interface, one providers, one configurators and one mapping
// watch (the default discovery, auto, reads both layouts), plus one for
// the provider's application and one per instance of it; each service key
// called lists the provider, found at both levels (the provider registers
// both ways), the application-level data preferred.
func checkAdminServices(t *testing.T, gw *gatewayUnderTest, providerAddr string) {
	type adminServices struct {
		Registries []struct {
			Name, Type, State string
			Subscriptions     int
			Watches           int
			References        int
			Instances         int
		}
		Services []struct {
			Registry, Service, State string
			Providers                []struct {
				Address     string
				Weight      int
				Source, App string
				Revision    string
				Breakers    map[string]string // route → state
			}
		}
	}
	// A directory made by the last pass-through call answers
	// asynchronously, and the provider's instance node is written after
	// its interface-level nodes: wait, bounded, until every service has
	// had its answer and our provider is known at both levels.
	var services adminServices
	var a httpAnswer
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		a = gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/admin/services", "")
		if a.status != http.StatusOK {
			t.Fatalf("/admin/services: %d %s", a.status, a.body)
		}
		services = adminServices{}
		if err := json.Unmarshal(a.body, &services); err != nil {
			t.Fatalf("/admin/services: %v\n%s", err, a.body)
		}
		settled := true
		for _, s := range services.Services {
			if s.State == "pending" {
				settled = false
			}
			for _, pr := range s.Providers {
				if pr.Address == providerAddr && pr.Source != "both" {
					settled = false
				}
			}
		}
		if settled || time.Now().After(deadline) {
			break
		}
	}
	// Service keys: UserService 1.0.0 and 9.9.9, GreeterService in blue
	// and red (the routes), UserService without version (a pass-through
	// call); the refused AdminService subscribes nothing. Watches: three
	// per interface, the application and its instances (another
	// dubbogoprovider may share the test ZooKeeper). References: one
	// per (service key, timeout), so UserService 1.0.0 has two (1s, and
	// the slow routes' 300ms) and the pass-through shares the routes'.
	// The pass-through's catalog of registered interfaces adds two
	// watches (the root's children and mapping/'s), however many names
	// clients try.
	if r := services.Registries; len(r) != 1 || r[0].Name != "zk" || r[0].Type != "zookeeper" || r[0].State != "connected" ||
		r[0].Subscriptions != 5 || r[0].Instances < 1 || r[0].Watches != 2*3+1+r[0].Instances+2 || r[0].References != 6 {
		t.Errorf("registries: %+v; want zk, zookeeper, connected, 5 subscriptions, 9 watches + 1 per instance, 6 references", r)
	}
	want := map[string]bool{ // service key → whether the provider serves it
		userService + ":" + userVersion:     true,
		greeterGroup + "/" + greeterService: true,
		userService + ":9.9.9":              false,
		"red/" + greeterService:             false,
		userService:                         false,
	}
	for _, s := range services.Services {
		served, ok := want[s.Service]
		if !ok {
			t.Errorf("unexpected service %s", s.Service)
			continue
		}
		delete(want, s.Service)
		if s.Registry != "zk" || s.State != "ok" {
			t.Errorf("service %s: registry %q, state %q; want zk, ok", s.Service, s.Registry, s.State)
		}
		found := false
		for _, pr := range s.Providers {
			if pr.Address == providerAddr {
				found = true
				if pr.Weight != 100 {
					t.Errorf("service %s: provider %s has weight %d, want 100", s.Service, pr.Address, pr.Weight)
				}
				if pr.Source != "both" || pr.App != "dubbogw-interop-provider" || pr.Revision == "" {
					t.Errorf("service %s: provider %s found as %q (app %q, revision %q); want both, dubbogw-interop-provider",
						s.Service, pr.Address, pr.Source, pr.App, pr.Revision)
				}
				// The provider serves both interfaces at one address: each
				// service lists the breakers of its own routes and of the
				// pass-through routes that called it, never the other's.
				greeter := strings.Contains(s.Service, greeterService)
				for route := range pr.Breakers {
					if strings.HasPrefix(route, "passthrough") {
						continue
					}
					if strings.HasSuffix(route, "-hello") != greeter {
						t.Errorf("service %s lists route %s's breaker", s.Service, route)
					}
				}
				if strings.Contains(s.Service, greeterService) && pr.Breakers["generic-hello"] != "closed" {
					t.Errorf("service %s: breakers %v lack generic-hello", s.Service, pr.Breakers)
				}
			}
		}
		// Another dubbogoprovider may share the test ZooKeeper, so other
		// addresses are allowed beside ours; none where ours does not serve.
		switch {
		case served && !found:
			t.Errorf("service %s: providers %+v lack %s", s.Service, s.Providers, providerAddr)
		case !served && len(s.Providers) > 0:
			t.Errorf("service %s: providers %+v, want none", s.Service, s.Providers)
		}
	}
	for key := range want {
		t.Errorf("service %s is missing from /admin/services:\n%s", key, a.body)
	}
}

// checkConsumerNodes checks the gateway (this process) registered as a
// consumer of each service key it subscribed to, as a Java consumer would:
// /dubbo/<interface>/consumers/<URL-encoded consumer URL>. Registration
// runs in the background, so each listing is awaited through a watch.
func checkConsumerNodes(t *testing.T, zkAddr string) {
	conn := connectZK(t, zkAddr)
	pid := strconv.Itoa(os.Getpid())
	for iface, want := range map[string][]string{
		userService:    {"version=" + userVersion, "version=9.9.9", "no version"},
		greeterService: {"group=" + greeterGroup, "group=red"},
	} {
		slices.Sort(want)
		dir := "/dubbo/" + iface + "/consumers"
		deadline := time.After(5 * time.Second)
		for {
			children, _, changed, err := conn.ChildrenW(dir)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Fatalf("listing %s: %v", dir, err)
			}
			got, problems := ourConsumers(children, iface, pid)
			if slices.Equal(got, want) && len(problems) == 0 {
				break
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("consumer nodes of this process (pid %s) under %s: %v, want %v; problems: %v", pid, dir, got, want, problems)
			}
		}
	}
}

// ourConsumers picks the consumer URLs of process pid among children and
// names each by its version or group; problems lists those malformed.
func ourConsumers(children []string, iface, pid string) (keys, problems []string) {
	for _, child := range children {
		raw, err := url.QueryUnescape(child)
		if err != nil {
			problems = append(problems, child+": not URL-encoded")
			continue
		}
		u, err := url.Parse(raw)
		if err != nil {
			problems = append(problems, raw+": "+err.Error())
			continue
		}
		q := u.Query()
		if q.Get("pid") != pid {
			continue // another process's
		}
		if u.Scheme != "consumer" || u.Path != "/"+iface || q.Get("interface") != iface || q.Get("application") != "dubbogw" ||
			q.Get("category") != "consumers" || q.Get("side") != "consumer" {
			problems = append(problems, raw)
			continue
		}
		switch {
		case q.Has("version"):
			keys = append(keys, "version="+q.Get("version"))
		case q.Has("group"):
			keys = append(keys, "group="+q.Get("group"))
		default:
			keys = append(keys, "no version")
		}
	}
	slices.Sort(keys)
	return keys, problems
}

func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(silentLogger{}))
	if err != nil {
		t.Fatalf("connecting to ZooKeeper at %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %s after 10s", addr)
		}
	}
}

// gatewayUnderTest is a gateway started in this process on loopback.
type gatewayUnderTest struct {
	*gateway.Gateway
	base   string // http://127.0.0.1:port
	client *http.Client
}

// startGateway starts a gateway from yamlText; the test's cleanup shuts it
// down, and a failed test shows its logs.
func startGateway(t testing.TB, yamlText string) *gatewayUnderTest {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	g, err := gateway.New(gateway.Options{
		Load:   func() (*config.Config, error) { return config.Load(path) },
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("building the gateway: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("starting the gateway: %v", err)
	}
	gw := &gatewayUnderTest{Gateway: g, base: "http://" + g.Addr(), client: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(func() {
		gw.client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			t.Errorf("shutting the gateway down: %v", err)
		}
		if t.Failed() {
			t.Logf("gateway logs:\n%s", logs.String())
		}
	})
	return gw
}

// httpAnswer is a whole HTTP response.
type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request to the gateway's data plane; header holds name, value pairs.
func (gw *gatewayUnderTest) do(t *testing.T, method, path, body string, header ...string) httpAnswer {
	t.Helper()
	return gw.doURL(t, method, gw.base+path, body, header...)
}

func (gw *gatewayUnderTest) doURL(t *testing.T, method, url, body string, header ...string) httpAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return httpAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// wantJSON checks a 200 whose JSON body equals want: same values, same
// kinds (a long written as a string differs from one written as a
// number), object keys in any order (dubbo-go writes Go maps in random
// order).
func wantJSON(want string) func(*testing.T, httpAnswer) {
	return func(t *testing.T, a httpAnswer) {
		t.Helper()
		if a.status != http.StatusOK {
			t.Fatalf("status %d, want 200; body %s", a.status, a.body)
		}
		if ct := a.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		got, err := decodeJSON(a.body)
		if err != nil {
			t.Fatalf("the body is not JSON: %v\n%s", err, a.body)
		}
		w, err := decodeJSON([]byte(want))
		if err != nil {
			t.Fatalf("bad expectation %s: %v", want, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("body %s\nwant %s", bytes.TrimSpace(a.body), want)
		}
	}
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// wantError checks the gateway's JSON error: status, code, route and the
// whole message.
func wantError(status int, code, route, message string) func(*testing.T, httpAnswer) {
	return func(t *testing.T, a httpAnswer) {
		t.Helper()
		if got := checkError(t, a, status, code, route); got != message {
			t.Errorf("message %q, want %q", got, message)
		}
	}
}

// checkError checks status, code and route of the gateway's JSON error
// and returns its message.
func checkError(t *testing.T, a httpAnswer, status int, code, route string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code, Message, Route string
			RequestID            string `json:"request_id"`
		}
	}
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("status %d, body %s: not the gateway's JSON error: %v", a.status, a.body, err)
	}
	if a.status != status || e.Error.Code != code || e.Error.Route != route {
		t.Errorf("answer %d %s/%s; want %d %s/%s (body %s)", a.status, e.Error.Code, e.Error.Route, status, code, route, bytes.TrimSpace(a.body))
	}
	if e.Error.RequestID == "" || e.Error.RequestID != a.header.Get("X-Request-Id") {
		t.Errorf("request_id %q, X-Request-Id %q: want the same, non-empty", e.Error.RequestID, a.header.Get("X-Request-Id"))
	}
	return e.Error.Message
}
