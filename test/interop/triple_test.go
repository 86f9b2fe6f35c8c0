package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/test/peers"
	"github.com/dubbogw/dubbogw/triple"
)

// TestTripleDubboGoProvider drives a real Apache dubbo-go v3.3.0 provider
// over Triple (h2c, non-IDL: hessian2 arguments in Triple's wrapper
// messages) with dubbogw's Triple client: every typed call of
// TestDubboGoProvider, the provider's errors, deadlines, bounds and
// multiplexing.
func TestTripleDubboGoProvider(t *testing.T) {
	p := startDubboGoProvider(t, providerConfig{Tri: true})
	if p.TriAddr == "" {
		t.Fatal("the provider did not say where it serves Triple")
	}
	client := triple.New(triple.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := client.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	target := dubbo.Target{Addr: p.TriAddr}
	call := func(ctx context.Context, inv *dubbo.Invocation) (*dubbo.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return client.Invoke(ctx, target, inv)
	}

	for _, tc := range dubboGoCases() {
		if !strings.HasPrefix(tc.name, "typed/") && !strings.HasPrefix(tc.name, "error/") {
			continue // $invoke: dubbo-go serves no generic calls over Triple
		}
		check := tc.check
		switch tc.name {
		case "typed/exception":
			// dubbo-go sends a method's error as grpc-status UNKNOWN with
			// its message; the exception's class does not travel.
			check = wantStatus(triple.Unknown, "no stock")
		case "typed/go error":
			check = wantStatus(triple.Unknown, "crash: disk")
		case "typed/attachments":
			// dubbo-go does not send attachments back over Triple; that
			// they travel as headers is TestAttachmentHeaders' (triple).
			check = wantValue(peers.String("hello from dubbo-go"))
		case "error/unknown method":
			check = wantStatus(triple.Unimplemented, "HTTP status 404")
		case "error/wrong version":
			check = wantStatus(triple.Unimplemented, "service version 9.9.9")
		case "error/missing group":
			check = wantStatus(triple.Unimplemented, "no implementation found for service group")
		}
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t.Context(), tc.inv)
			check(t, res, err)
		})
	}

	t.Run("deadline", func(t *testing.T) {
		// The provider sleeps 1s; the call gives up after 200ms, and the
		// next call on the same connection is answered.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := client.Invoke(ctx, target, slow(1000, false))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want a deadline error", err)
		}
		if took := time.Since(start); took > 900*time.Millisecond {
			t.Errorf("the call returned after %v, not at its 200ms deadline", took)
		}
		res, err := call(t.Context(), slow(1, false))
		wantValue(peers.String("slept 1ms"))(t, res, err)
	})

	t.Run("large answer", func(t *testing.T) {
		// About 1 MB, ten times what dubbo-go's getty writes over dubbo.
		res, err := call(t.Context(), &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "listUsers",
			ParamTypes: []string{"int"}, Args: []any{int32(20000)}})
		wantUsers(20000)(t, res, err)
	})

	t.Run("max payload", func(t *testing.T) {
		small := triple.New(triple.Options{MaxPayload: 64 << 10})
		defer small.Close(context.Background())
		big := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "listUsers",
			ParamTypes: []string{"int"}, Args: []any{int32(2000)}}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, err := small.Invoke(ctx, target, big); err == nil || !strings.Contains(err.Error(), "exceeds max payload") {
			t.Fatalf("a 94 KiB answer with a 64 KiB limit gave %v", err)
		}
		res, err := small.Invoke(ctx, target, slow(1, false))
		wantValue(peers.String("slept 1ms"))(t, res, err)
		args := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "join",
			ParamTypes: []string{"java.util.List", "java.lang.String"}, Args: []any{nil, strings.Repeat("x", 70<<10)}}
		if _, err := small.Invoke(ctx, target, args); !errors.Is(err, dubbo.ErrPayloadTooLarge) {
			t.Fatalf("70 KiB of arguments with a 64 KiB limit gave %v, want ErrPayloadTooLarge", err)
		}
	})

	t.Run("multiplexed", func(t *testing.T) {
		// 200 calls of 100ms at once over one HTTP/2 connection: all
		// answered, in about the time of one.
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		start := time.Now()
		for range 200 {
			wg.Go(func() {
				res, err := call(t.Context(), slow(100, false))
				if err == nil && res.Value != "slept 100ms" {
					err = errors.New("wrong answer")
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("200 concurrent 100ms calls took %v: not multiplexed", took)
		}
	})

	t.Run("provider gone", func(t *testing.T) {
		p.Stop()
		_, err := call(t.Context(), slow(1, false))
		if !errors.Is(err, dubbo.ErrConnect) && !errors.Is(err, dubbo.ErrConnectionLost) {
			t.Fatalf("after the provider stopped: %v, want ErrConnect or ErrConnectionLost", err)
		}
	})
}

// wantStatus checks the call failed with a *triple.StatusError of code
// whose message contains message.
func wantStatus(code triple.Code, message string) func(*testing.T, *dubbo.Result, error) {
	return func(t *testing.T, res *dubbo.Result, err error) {
		t.Helper()
		var se *triple.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("got (%v, %v), want a *triple.StatusError %s", res, err, code)
		}
		if se.Code != code || !strings.Contains(se.Message, message) {
			t.Errorf("got %s %q, want %s with %q", se.Code, se.Message, code, message)
		}
	}
}

// TestGatewayTriple drives the dubbo-go provider's Triple server through
// the gateway: every route of TestGatewayDubboGo's typed mode with
// protocol: tri, the providers found in ZooKeeper at interface level
// (tri:// URLs beside the dubbo:// ones) and at application level (the
// tri services of the instance's metadata, at its tri endpoint).
func TestGatewayTriple(t *testing.T) {
	zkAddr := zkAddress(t)
	if zkAddr == "" {
		t.Skip("DUBBOGW_TEST_ZK_ADDR is not set (scripts/test.sh starts a ZooKeeper; set CI to make this a failure)")
	}
	startDubboGoProvider(t, providerConfig{ZK: zkAddr, Tri: true})
	gw := startGateway(t, gatewayYAML(zkAddr, "tri", "tri-app", "typed"))

	for _, mode := range []string{"tri", "tri-app"} {
		t.Run(mode, func(t *testing.T) {
			for _, c := range gatewayCases(mode) {
				t.Run(c.name, func(t *testing.T) {
					c.check(t, gw.do(t, c.method, "/"+mode+c.path, c.body, c.header...))
				})
			}
		})
	}
	// The same service keys over dubbo: protocol auto (the typed mode's
	// default) picks the dubbo providers, never the tri ones; the tri
	// routes go through the Triple client only.
	t.Run("clients", func(t *testing.T) {
		dubboBefore, triBefore := okCalls(t, gw)
		wantJSON(`{"id": "7", "name": "user-7", "age": 30, "email": "7@example.org", "tags": ["a", "b"]}`)(t, gw.do(t, "GET", "/typed/users/7", ""))
		if d, tr := okCalls(t, gw); d-dubboBefore != 1 || tr-triBefore != 0 {
			t.Errorf("a call of the auto route made %v dubbo and %v Triple calls, want 1 and 0", d-dubboBefore, tr-triBefore)
		}
		wantJSON(`{"id": "7", "name": "user-7", "age": 30, "email": "7@example.org", "tags": ["a", "b"]}`)(t, gw.do(t, "GET", "/tri/users/7", ""))
		if d, tr := okCalls(t, gw); d-dubboBefore != 1 || tr-triBefore != 1 {
			t.Errorf("then a call of the tri route: %v dubbo and %v Triple calls in all, want 1 and 1", d-dubboBefore, tr-triBefore)
		}
	})
}

// okCalls reads the ok calls of the dubbo and Triple clients from the
// gateway's /metrics.
func okCalls(t *testing.T, gw *gatewayUnderTest) (dubboCalls, tripleCalls float64) {
	t.Helper()
	text := string(gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/metrics", "").body)
	return metricValue(text, "dubbogw_dubbo_calls_total", "result", "ok"), metricValue(text, "dubbogw_triple_calls_total", "result", "ok")
}

// TestTripleChurnUnderLoad: while GET calls run over Triple through the
// gateway (interface-level discovery), a second provider joins, crashes
// (its ZooKeeper node stays until its session expires, its connections
// break with calls in flight), restarts on the same ports, and then the
// first one crashes too: every failed attempt, refused or cut, is retried
// on another provider (the route is a GET: idempotent), so no call fails.
// The breakers open for 300ms: the restarted provider's breaker, opened
// by its crash, has let a probe through and closed again before the first
// provider crashes (with the default 10s, the gateway would still avoid
// it then, and fail calls while the other one was down).
func TestTripleChurnUnderLoad(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, _ := registryGroup(t, zkAddr, "tri-churn")
	cfg := providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "interface", Tri: true}
	pa := startDubboGoProvider(t, cfg)
	route := `  - name: tri-user
    match: {methods: [GET], path: "/users/{id}"}
    dubbo: {registry: zk, protocol: tri, interface: ` + userService + `, version: ` + userVersion + `, method: getUser,
            detailed_errors: true, params: [{type: java.lang.String, from: path, name: id}],
            breaker: {open_for: 300ms}}
`
	gw := startGateway(t, appGW{zk: zkAddr, group: group, discovery: "interface", noUserRoute: true, routes: []string{route}}.yaml())
	key := userService + ":" + userVersion
	listed := func(addr string) func() (bool, string) {
		return func() (bool, string) {
			ps, _ := gw.admin(t).providers(key)
			return slices.Contains(addrs(ps), addr), fmt.Sprint(addrs(ps))
		}
	}
	waitFor(t, appDiscWait, "the first provider's tri URL", listed(pa.TriAddr))

	load := startLoad(gw.base+"/users/", 4, 2*time.Millisecond, 60*time.Second, 100_000)
	defer load.stop()
	time.Sleep(500 * time.Millisecond)

	pb := startDubboGoProvider(t, cfg)
	waitFor(t, appDiscWait, "the second provider's tri URL", listed(pb.TriAddr))
	time.Sleep(time.Second)
	load.mark(time.Now())
	pb.Stop() // a crash: connections reset, the node stays
	time.Sleep(time.Second)

	port := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	restarted := cfg
	restarted.Port, restarted.TriPort = port(pb.Addr), port(pb.TriAddr)
	startDubboGoProvider(t, restarted)
	time.Sleep(time.Second)
	pa.Stop()
	time.Sleep(time.Second)
	res := load.stop()

	text := string(gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/metrics", "").body)
	t.Logf("load: %d calls in %v (%d before the crash), %d errors; Triple attempts: %v ok, %v connect_error, %v connection_lost",
		res.calls, res.elapsed.Round(time.Millisecond), res.callsBefore, len(res.errors),
		metricValue(text, "dubbogw_triple_calls_total", "result", "ok"),
		metricValue(text, "dubbogw_triple_calls_total", "result", "connect_error"),
		metricValue(text, "dubbogw_triple_calls_total", "result", "connection_lost"))
	if res.calls < 500 {
		t.Errorf("only %d calls: the load did not run", res.calls)
	}
	if res.calls-res.callsBefore < 200 {
		t.Errorf("only %d calls after the crash", res.calls-res.callsBefore)
	}
	if len(res.errors) > 0 {
		t.Errorf("%d calls failed, want none: %v", len(res.errors), res.sample())
	}
}

// TestGatewayTripleIDL calls the dubbo-go provider's IDL (protobuf)
// service through routes with an idl section: the JSON body becomes the
// request message by protobuf's JSON mapping, the response message comes
// back as JSON; the provider is found at interface and at application
// level (a tri URL with serialization=protobuf).
func TestGatewayTripleIDL(t *testing.T) {
	zkAddr := zkAddress(t)
	if zkAddr == "" {
		t.Skip("DUBBOGW_TEST_ZK_ADDR is not set (scripts/test.sh starts a ZooKeeper; set CI to make this a failure)")
	}
	descriptors := filepath.Join(t.TempDir(), "greeter.pb")
	startDubboGoProvider(t, providerConfig{ZK: zkAddr, Tri: true, IDLDescriptorOut: descriptors})
	var routes strings.Builder
	for _, mode := range []string{"interface", "application"} {
		for _, m := range []string{"SayHello", "Fail"} {
			fmt.Fprintf(&routes, `  - name: idl-%s-%s
    match: {methods: [POST], path: /%s/%s}
    dubbo: {registry: zk, discovery: %s, interface: org.dubbogw.idl.Greeter, method: %s, idl: {descriptor_set: %q}}
`, mode, m, mode, m, mode, m, descriptors)
		}
	}
	gw := startGateway(t, fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
registries:
  zk: {type: zookeeper, address: %q, startup_wait: 5s}
routes:
%s`, zkAddr, routes.String()))
	for _, mode := range []string{"interface", "application"} {
		t.Run(mode, func(t *testing.T) {
			for _, c := range []gatewayCase{
				{name: "every kind of field", method: "POST", path: "/SayHello",
					body:  `{"name": "Ann", "times": 2, "tags": ["a", "b"], "pet": {"name": "Rex", "legs": 4}, "big": "9007199254740993"}`,
					check: wantJSON(`{"message": "hello Ann hello Ann", "count": "2", "tags": ["a", "b"], "pet": {"name": "Rex", "legs": 4}, "big": "9007199254740993"}`)},
				{name: "empty body", method: "POST", path: "/SayHello", check: wantJSON(`{"message": "hello", "count": "1"}`)},
				{name: "unknown field", method: "POST", path: "/SayHello", body: `{"nmae": "Ann"}`,
					check: wantErrorPrefix(400, "BAD_REQUEST", "idl-"+mode+"-SayHello", "the body is not a org.dubbogw.idl.HelloRequest message: ")},
				{name: "wrong type", method: "POST", path: "/SayHello", body: `{"times": "many"}`,
					check: wantErrorPrefix(400, "BAD_REQUEST", "idl-"+mode+"-SayHello", "the body is not a org.dubbogw.idl.HelloRequest message: ")},
				// dubbo-go answers an IDL method's error with its own status
				// 17 (BIZ_ERROR).
				{name: "method error", method: "POST", path: "/Fail", body: `{"name": "Bo"}`,
					check: wantError(500, "DUBBO_EXCEPTION", "idl-"+mode+"-Fail", "BIZ_ERROR: no greeting for Bo")},
			} {
				t.Run(c.name, func(t *testing.T) {
					c.check(t, gw.do(t, c.method, "/"+mode+c.path, c.body, c.header...))
				})
			}
		})
	}
}

// wantErrorPrefix is wantError for a message that starts with prefix (the
// rest is a library's wording).
func wantErrorPrefix(status int, code, route, prefix string) func(*testing.T, httpAnswer) {
	return func(t *testing.T, a httpAnswer) {
		t.Helper()
		if got := checkError(t, a, status, code, route); !strings.HasPrefix(got, prefix) {
			t.Errorf("message %q, want one starting %q", got, prefix)
		}
	}
}
