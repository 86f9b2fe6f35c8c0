package dubbo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// startDemo starts an in-process provider (dubbo/provider) with the demo services on addr,
// closed when the test ends.
func startDemo(t testing.TB, addr string) (*provider.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveDemo(t, ln)
}

// serveDemo serves the demo services on ln (a TLS listener, say) until
// the test ends.
func serveDemo(t testing.TB, ln net.Listener) (*provider.Server, string) {
	t.Helper()
	s := provider.NewServer(nil)
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	a, err := s.Serve(ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s, a.String()
}

func demoCall(method string, generic bool, types []string, args ...any) *Invocation {
	return &Invocation{Interface: demo.UserInterface, Method: method, Generic: generic, ParamTypes: types, Args: args}
}

var stringType = []string{"java.lang.String"}

// TestDemoProvider calls every demo method, typed and generic, on the
// in-process provider.
func TestDemoProvider(t *testing.T) {
	checkGoroutines(t)
	_, addr := startDemo(t, "127.0.0.1:0")
	c := newClient(t, Options{})
	call := func(inv *Invocation) (*Result, error) {
		return c.Invoke(callCtx(t, 3*time.Second), addr, inv)
	}

	res, err := call(demoCall("getUser", false, stringType, "42"))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := res.Value.(*hessian.Object); !ok || u.Class != demo.UserClass || fieldOf(u, "name") != "user 42" {
		t.Fatalf("typed getUser: %#v", res.Value)
	}
	if res.Attachments == nil {
		t.Error("no response attachments from a provider answering dubbo 2.0.2")
	}

	res, err = call(demoCall("getUser", true, stringType, "42"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := res.Value.(*hessian.Map)
	if !ok {
		t.Fatalf("generic getUser: %#v", res.Value)
	}
	if class, _ := m.Get("class"); class != demo.UserClass {
		t.Fatalf("generic getUser class %v", class)
	}
	if email, _ := m.Get("email"); email != "42@example.com" {
		t.Fatalf("generic getUser email %v", email)
	}

	async := demoCall("getUser", true, stringType, "43")
	async.Async = true
	if res, err = call(async); err != nil {
		t.Fatalf("$invokeAsync: %v", err)
	}
	if m, ok := res.Value.(*hessian.Map); !ok {
		t.Fatalf("$invokeAsync getUser: %#v", res.Value)
	} else if id, _ := m.Get("id"); id != "43" {
		t.Fatalf("$invokeAsync getUser id %v", id)
	}

	for _, generic := range []bool{false, true} {
		res, err = call(demoCall("greet", generic, nil))
		if err != nil || res.Value != "Hello, world" {
			t.Fatalf("greet() generic=%v: %v, %v", generic, res, err)
		}
		res, err = call(demoCall("greet", generic, stringType, "ann"))
		if err != nil || res.Value != "Hello, ann" {
			t.Fatalf("greet(String) generic=%v: %v, %v", generic, res, err)
		}
		res, err = call(demoCall("listUsers", generic, []string{"int"}, int32(3)))
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := res.Value.(*hessian.List); !ok || len(l.Items) != 3 {
			t.Fatalf("listUsers(3) generic=%v: %#v", generic, res.Value)
		}
		_, err = call(demoCall("fail", generic, stringType, "no stock"))
		var be *BusinessError
		if !errors.As(err, &be) || be.Exception == nil || be.Exception.Class != demo.ExceptionClass || be.Exception.Message != "no stock" || be.Addr != addr {
			t.Fatalf("fail generic=%v: %v", generic, err)
		}
	}

	user := map[string]any{"class": demo.UserClass, "id": "7", "name": "ann", "age": int32(41), "email": "a@x"}
	res, err = call(demoCall("createUser", true, []string{demo.UserClass}, user))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := res.Value.(*hessian.Map); !ok {
		t.Fatalf("generic createUser: %#v", res.Value)
	} else if age, _ := m.Get("age"); age != int32(41) {
		t.Fatalf("generic createUser age %v", age)
	}
	res, err = call(demoCall("createUser", false, []string{demo.UserClass}, demo.User("9")))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := res.Value.(*hessian.Object); !ok || fieldOf(u, "id") != "9" {
		t.Fatalf("typed createUser: %#v", res.Value)
	}

	_, err = call(&Invocation{Interface: "com.example.Nope", Method: "x"})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != protocol.StatusServiceNotFound {
		t.Fatalf("unknown service: %v", err)
	}

	_, err = c.Invoke(callCtx(t, 50*time.Millisecond), addr, demoCall("slow", false, []string{"int"}, int32(300)))
	wantErr(t, err, context.DeadlineExceeded, addr)
}

func fieldOf(o *hessian.Object, name string) any {
	v, _ := o.Get(name)
	return v
}

// TestDemoMultiplex runs many concurrent calls of different lengths over
// the one connection, so responses come back out of order.
func TestDemoMultiplex(t *testing.T) {
	checkGoroutines(t)
	s, addr := startDemo(t, "127.0.0.1:0")
	c := newClient(t, Options{})
	const n = 150 // under the provider's 200 calls in flight
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ms := int32((n - i) % 20)
			res, err := c.Invoke(callCtx(t, 5*time.Second), addr, demoCall("slow", i%2 == 0, []string{"int"}, ms))
			if err == nil && res.Value != "slept "+strconv.Itoa(int(ms))+"ms" {
				err = fmt.Errorf("slow(%d) answered %v", ms, res.Value)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := s.Stats(); st.Accepted != 1 || st.Requests != n {
		t.Fatalf("provider stats %+v, want 1 connection and %d requests", st, n)
	}
}

// TestDemoShutdown: the provider's Close sends the readonly event and
// drains the call in flight; the client reconnects to its successor on the
// same port, which clears readonly.
func TestDemoShutdown(t *testing.T) {
	checkGoroutines(t)
	s, addr := startDemo(t, "127.0.0.1:0")
	c := newClient(t, Options{})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, demoCall("greet", false, nil)); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := c.Invoke(callCtx(t, 5*time.Second), addr, demoCall("slow", false, []string{"int"}, int32(200)))
		slow <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "the slow call runs", func() bool { return s.Stats().InFlight == 1 })
	closed := make(chan error, 1)
	go func() { closed <- s.Close(callCtx(t, 5*time.Second)) }()
	testenv.WaitFor(t, 5*time.Second, "the readonly event arrives", func() bool { return c.Readonly(addr) })
	if err := waitN(t, slow, 1)[0]; err != nil {
		t.Fatalf("call in flight during the provider's shutdown: %v", err)
	}
	if err := waitN(t, closed, 1)[0]; err != nil {
		t.Fatal(err)
	}

	startDemo(t, addr)
	testenv.WaitFor(t, 5*time.Second, "calls work on the restarted provider", func() bool {
		_, err := c.Invoke(callCtx(t, 3*time.Second), addr, demoCall("greet", false, nil))
		return err == nil
	})
	if c.Readonly(addr) {
		t.Fatal("readonly after reconnecting to a new provider")
	}
}

// TestDemoGracefulClose: the client's Close lets calls in flight finish.
func TestDemoGracefulClose(t *testing.T) {
	checkGoroutines(t)
	s, addr := startDemo(t, "127.0.0.1:0")
	c := New(Options{})
	const n = 5
	results := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Invoke(callCtx(t, 5*time.Second), addr, demoCall("slow", true, []string{"int"}, int32(100)))
			results <- err
		}()
	}
	testenv.WaitFor(t, 5*time.Second, "the calls run", func() bool { return s.Stats().InFlight == n })
	if err := c.Close(callCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, err := range waitN(t, results, n) {
		if err != nil {
			t.Errorf("call in flight during Close: %v", err)
		}
	}
}

// TestDemoHeartbeat: an idle connection is kept alive by heartbeats the
// provider answers.
func TestDemoHeartbeat(t *testing.T) {
	checkGoroutines(t)
	s, addr := startDemo(t, "127.0.0.1:0")
	c := newClient(t, Options{Heartbeat: 20 * time.Millisecond})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, demoCall("greet", false, nil)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "heartbeats are answered", func() bool { return s.Stats().Heartbeats >= 5 })
	if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, demoCall("greet", false, nil)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Accepted != 1 {
		t.Fatalf("%d connections: an answered heartbeat must keep the connection", st.Accepted)
	}
}
