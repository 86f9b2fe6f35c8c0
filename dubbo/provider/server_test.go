package provider_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
)

var str = []string{"java.lang.String"}

func TestTypedCalls(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dial(t, addr)

	u := value(t, c.call("getUser", str, "7"))
	if !reflect.DeepEqual(u, demo.User("7")) {
		t.Errorf("getUser(7) = %#v", u)
	}
	if got := field(t, u, "email"); got != "7@example.com" {
		t.Errorf("email %v", got)
	}

	l, ok := value(t, c.call("listUsers", []string{"int"}, int32(3))).(*hessian.List)
	if !ok || len(l.Items) != 3 || !reflect.DeepEqual(l.Items[2], demo.User("3")) {
		t.Errorf("listUsers(3) = %#v", l)
	}
	if l, _ := value(t, c.call("listUsers", []string{"int"}, int32(0))).(*hessian.List); l == nil || len(l.Items) != 0 {
		t.Errorf("listUsers(0) = %#v", l)
	}
	if x := exception(t, c.call("listUsers", []string{"int"}, int32(-1))); x.Class != "java.lang.IllegalArgumentException" {
		t.Errorf("listUsers(-1) threw %v", x)
	}

	in := &hessian.Object{Class: demo.UserClass, Fields: []hessian.Field{{Name: "id", Value: "9"}, {Name: "name", Value: "Ada"}, {Name: "age", Value: int32(36)}, {Name: "email", Value: "ada@x"}}}
	if got := value(t, c.call("createUser", []string{demo.UserClass}, in)); !reflect.DeepEqual(got, in) {
		t.Errorf("createUser = %#v", got)
	}

	if got := value(t, c.call("greet", nil)); got != "Hello, world" {
		t.Errorf("greet() = %v", got)
	}
	if got := value(t, c.call("greet", str, "Ada")); got != "Hello, Ada" {
		t.Errorf("greet(Ada) = %v", got)
	}

	x := exception(t, c.call("fail", str, "boom"))
	if x.Class != demo.ExceptionClass || x.Message != "boom" {
		t.Errorf("fail threw %v", x)
	}

	if got := value(t, c.call("slow", []string{"int"}, int32(1))); got != "slept 1ms" {
		t.Errorf("slow(1) = %v", got)
	}

	// A wrong argument type is the method's IllegalArgumentException.
	if x := exception(t, c.call("getUser", str, nil)); x.Class != "java.lang.IllegalArgumentException" {
		t.Errorf("getUser(null) threw %v", x)
	}
}

func TestGenericCalls(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dial(t, addr)

	u, ok := value(t, c.generic("getUser", str, "7")).(*hessian.Map)
	if !ok || u.Type != "" {
		t.Fatalf("generic getUser = %#v, want an untyped map", u)
	}
	want := []hessian.Entry{{Key: "class", Value: demo.UserClass}, {Key: "id", Value: "7"}, {Key: "name", Value: "user 7"}, {Key: "age", Value: int32(30)}, {Key: "email", Value: "7@example.com"}}
	if !reflect.DeepEqual(u.Entries, want) {
		t.Errorf("generic getUser entries %#v", u.Entries)
	}

	l, ok := value(t, c.generic("listUsers", []string{"int"}, int32(2))).(*hessian.List)
	if !ok || len(l.Items) != 2 {
		t.Fatalf("generic listUsers = %#v", l)
	}
	if cls := field(t, l.Items[1], "class"); cls != demo.UserClass {
		t.Errorf("list item class %v", cls)
	}

	// A long (as JSON numbers may arrive) is converted to the int parameter.
	if l, _ := value(t, c.generic("listUsers", []string{"int"}, int64(1))).(*hessian.List); l == nil || len(l.Items) != 1 {
		t.Errorf("listUsers with a long argument = %#v", l)
	}

	// A map with "class" is realized into that class, and comes back generalized.
	arg := &hessian.Map{Entries: []hessian.Entry{{Key: "class", Value: demo.UserClass}, {Key: "id", Value: "5"}, {Key: "name", Value: "Bo"}}}
	got, _ := value(t, c.generic("createUser", []string{demo.UserClass}, arg)).(*hessian.Map)
	if got == nil || !reflect.DeepEqual(got.Entries, arg.Entries) {
		t.Errorf("generic createUser = %#v", got)
	}
	// A map without "class" is realized into the parameter's class.
	arg = &hessian.Map{Entries: []hessian.Entry{{Key: "id", Value: "6"}}}
	got, _ = value(t, c.generic("createUser", []string{demo.UserClass}, arg)).(*hessian.Map)
	if got == nil || field(t, got, "class") != demo.UserClass || field(t, got, "id") != "6" {
		t.Errorf("generic createUser without class = %#v", got)
	}

	x := exception(t, c.generic("fail", str, "bad"))
	if x.Class != demo.ExceptionClass || x.Message != "bad" {
		t.Errorf("generic fail threw %v", x)
	}
	if got := value(t, c.generic("slow", []string{"int"}, int32(0))); got != "slept 0ms" {
		t.Errorf("generic slow = %v", got)
	}

	// $invokeAsync answers the same way.
	resp := c.roundTrip(&protocol.Request{TwoWay: true, Path: demo.UserInterface, Method: protocol.MethodInvokeAsync, ParamTypes: protocol.GenericParamTypes,
		Args: []any{"greet", &hessian.List{Type: "[string"}, &hessian.List{Type: "[object"}}})
	if got := value(t, resp); got != "Hello, world" {
		t.Errorf("$invokeAsync greet() = %v", got)
	}
}

func TestOverloadResolution(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dial(t, addr)
	if got := value(t, c.generic("greet", []string{})); got != "Hello, world" {
		t.Errorf("generic greet() = %v", got)
	}
	if got := value(t, c.generic("greet", str, "Cy")); got != "Hello, Cy" {
		t.Errorf("generic greet(String) = %v", got)
	}
	// Null types: found by name and argument count, as Java does.
	if got := value(t, c.generic("greet", nil, "Di")); got != "Hello, Di" {
		t.Errorf("generic greet with null types = %v", got)
	}
	if got := value(t, c.generic("getUser", nil, "1")); field(t, got, "id") != "1" {
		t.Errorf("generic getUser with null types = %v", got)
	}
	// JVM array names and source names are the same type.
	svc := provider.Service{Interface: "com.example.Arrays", Methods: map[string][]provider.Method{
		"size": {
			{ParamTypes: []string{"java.lang.String[]"}, Func: func(_ context.Context, args []any) (any, error) { return "strings", nil }},
			{ParamTypes: []string{"int[]"}, Func: func(_ context.Context, args []any) (any, error) { return "ints", nil }},
		},
	}}
	_, addr2 := startServer(t, nil, svc)
	c2 := dial(t, addr2)
	if got := value(t, c2.callService("com.example.Arrays", "size", []string{"[I"}, &hessian.List{Type: "[int"})); got != "ints" {
		t.Errorf("size(int[]) = %v", got)
	}
	if got := value(t, c2.callService("com.example.Arrays", "size", []string{"[Ljava.lang.String;"}, &hessian.List{Type: "[string"})); got != "strings" {
		t.Errorf("size(String[]) = %v", got)
	}
}

func TestUnknownServiceAndMethod(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dial(t, addr)

	resp := c.callService("com.example.Nope", "x", nil)
	if resp.Status != protocol.StatusServiceNotFound || !strings.HasPrefix(resp.ErrorMessage, "Not found exported service: com.example.Nope:") {
		t.Errorf("unknown service: %v %q", resp.Status, resp.ErrorMessage)
	}
	if !strings.Contains(resp.ErrorMessage, "may be version or group mismatch") || !strings.Contains(resp.ErrorMessage, demo.UserInterface) {
		t.Errorf("message %q", resp.ErrorMessage)
	}
	// Version and group are part of the service's identity.
	resp = c.roundTrip(&protocol.Request{TwoWay: true, Path: demo.UserInterface, Version: "2.0.0", Method: "greet"})
	if resp.Status != protocol.StatusServiceNotFound || !strings.Contains(resp.ErrorMessage, demo.UserInterface+":2.0.0") {
		t.Errorf("wrong version: %v %q", resp.Status, resp.ErrorMessage)
	}
	resp = c.roundTrip(&protocol.Request{TwoWay: true, Path: demo.UserInterface, Method: "greet", Attachments: map[string]string{"group": "blue"}})
	if resp.Status != protocol.StatusServiceNotFound || !strings.Contains(resp.ErrorMessage, "blue/"+demo.UserInterface) {
		t.Errorf("wrong group: %v %q", resp.Status, resp.ErrorMessage)
	}
	// Java's "0.0.0" is no version.
	if got := value(t, c.roundTrip(&protocol.Request{TwoWay: true, Path: demo.UserInterface, Version: "0.0.0", Method: "greet"})); got != "Hello, world" {
		t.Errorf("version 0.0.0: %v", got)
	}

	for name, resp := range map[string]*protocol.Response{
		"typed unknown method":    c.call("nope", nil),
		"typed wrong overload":    c.call("greet", []string{"int"}, int32(1)),
		"generic unknown method":  c.generic("nope", nil),
		"generic wrong overload":  c.generic("greet", []string{"long"}, int64(1)),
		"generic unknown by name": c.generic("nope", []string{}),
	} {
		x := exception(t, resp)
		if x.Class != "java.lang.NoSuchMethodException" || !strings.Contains(x.Message, demo.UserInterface) {
			t.Errorf("%s: %v", name, x)
		}
	}
	x := exception(t, c.generic("greet", str))
	if x.Class != "org.apache.dubbo.rpc.RpcException" || !strings.Contains(x.Message, "args.length != types.length") {
		t.Errorf("generic with a type and no argument: %v", x)
	}
}

func TestMethodErrors(t *testing.T) {
	svc := provider.Service{Interface: "com.example.Errors", Methods: map[string][]provider.Method{
		"plain": {{Func: func(context.Context, []any) (any, error) { return nil, errors.New("disk full") }}},
		"wrapped": {{Func: func(context.Context, []any) (any, error) {
			return nil, errors.Join(errors.New("context"), provider.Exception("com.example.Oops", "wrapped"))
		}}},
		"panics": {{Func: func(context.Context, []any) (any, error) { panic("kaboom") }}},
		"null":   {{Func: func(context.Context, []any) (any, error) { return nil, nil }}},
	}}
	_, addr := startServer(t, nil, svc)
	c := dial(t, addr)
	for method, want := range map[string]hessian.Exception{
		"plain":   {Class: "java.lang.RuntimeException", Message: "disk full"},
		"wrapped": {Class: "com.example.Oops", Message: "wrapped"},
		"panics":  {Class: "java.lang.RuntimeException", Message: "panic in panics(): kaboom"},
	} {
		x := exception(t, c.callService("com.example.Errors", method, nil))
		if x.Class != want.Class || x.Message != want.Message {
			t.Errorf("%s threw %v, want %v", method, x, &want)
		}
	}
	resp := c.callService("com.example.Errors", "null", nil)
	if value(t, resp) != nil || resp.Kind != protocol.KindNullWithAttachments {
		t.Errorf("null result: %+v", resp)
	}
}

func TestResponseAttachmentsFollowDubboVersion(t *testing.T) {
	_, addr := startServer(t, nil)
	for version, kind := range map[string]protocol.ResponseKind{
		"2.0.2":  protocol.KindValueWithAttachments,
		"2.0.10": protocol.KindValueWithAttachments,
		"2.0.0":  protocol.KindValue,
		"2.6.5":  protocol.KindValue,
	} {
		c := dial(t, addr)
		c.version = version
		resp := c.call("greet", nil)
		if resp.Kind != kind {
			t.Errorf("dubbo version %s: kind %d, want %d", version, resp.Kind, kind)
		}
		if kind.HasAttachments() && resp.Attachments[protocol.AttachmentDubbo] != "2.0.2" {
			t.Errorf("dubbo version %s: attachments %v", version, resp.Attachments)
		}
		x := c.call("fail", str, "e")
		if want := kind - 1; x.Kind != want { // exception kinds sit one below value kinds
			t.Errorf("dubbo version %s: exception kind %d, want %d", version, x.Kind, want)
		}
	}
}

func TestAttachmentsReachTheMethod(t *testing.T) {
	svc := provider.Service{Interface: "com.example.Echo", Methods: map[string][]provider.Method{
		"trace": {{Func: func(ctx context.Context, _ []any) (any, error) { return provider.Attachments(ctx)["trace"], nil }}},
	}}
	_, addr := startServer(t, nil, svc)
	c := dial(t, addr)
	resp := c.roundTrip(&protocol.Request{TwoWay: true, Path: "com.example.Echo", Method: "trace", Attachments: map[string]string{"trace": "t-1"}})
	if got := value(t, resp); got != "t-1" {
		t.Errorf("trace attachment seen as %v", got)
	}
}

func TestHeartbeat(t *testing.T) {
	s, addr := startServer(t, nil)
	c := dial(t, addr)
	c.write(protocol.AppendHeartbeat(nil, 77, true))
	h, body := c.next()
	if h.Request || !h.Event || h.ID != 77 || h.Status != protocol.StatusOK || string(body) != "N" {
		t.Errorf("heartbeat answered with %+v % x", h, body)
	}
	// A heartbeat response (to a heartbeat of ours) is not answered; the
	// next frame is the call's.
	c.write(protocol.AppendHeartbeat(nil, 78, false))
	if got := value(t, c.call("greet", nil)); got != "Hello, world" {
		t.Errorf("greet after heartbeats: %v", got)
	}
	if st := s.Stats(); st.Heartbeats != 1 || st.Requests != 1 || st.Connections != 1 {
		t.Errorf("stats %+v", st)
	}
}

// blocker is a service whose calls block until released, and report when
// they have started.
type blocker struct {
	started  chan string
	release  chan struct{}
	finished chan string
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 100), release: make(chan struct{}), finished: make(chan string, 100)}
}

func (b *blocker) service() provider.Service {
	return provider.Service{Interface: "com.example.Block", Methods: map[string][]provider.Method{
		"block": {{ParamTypes: str, Func: func(ctx context.Context, args []any) (any, error) {
			b.started <- args[0].(string)
			defer func() { b.finished <- args[0].(string) }()
			select {
			case <-b.release:
				return "released " + args[0].(string), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}},
	}}
}

func (b *blocker) waitStarted(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(wait)
	for range n {
		select {
		case <-b.started:
		case <-timeout:
			t.Fatal("calls did not start")
		}
	}
}

func blockRequest(name string) *protocol.Request {
	return &protocol.Request{TwoWay: true, Path: "com.example.Block", Method: "block", ParamTypes: "Ljava/lang/String;", Args: []any{name}}
}

func TestConcurrencyLimit(t *testing.T) {
	b := newBlocker()
	s, addr := startServer(t, func(s *provider.Server) { s.SetMaxInFlight(2) }, b.service())
	c := dial(t, addr)
	id1 := c.send(blockRequest("a"))
	id2 := c.send(blockRequest("b"))
	b.waitStarted(t, 2)
	id3 := c.send(blockRequest("c"))
	resp := c.response()
	if resp.ID != id3 || resp.Status != protocol.StatusThreadpoolExhausted || !strings.Contains(resp.ErrorMessage, "thread pool is exhausted") {
		t.Fatalf("third call: %+v", resp)
	}
	if st := s.Stats(); st.Rejected != 1 || st.InFlight != 2 {
		t.Errorf("stats %+v", st)
	}
	close(b.release)
	got := map[uint64]any{}
	for range 2 {
		r := c.response()
		got[r.ID] = value(t, r)
	}
	if got[id1] != "released a" || got[id2] != "released b" {
		t.Errorf("responses %v", got)
	}
	// Slots are free again.
	if v := value(t, c.roundTrip(blockRequest("d"))); v != "released d" {
		t.Errorf("after the limit: %v", v)
	}
}

// TestCallsRunConcurrently proves calls on one connection run at once: each
// waits until all have started.
func TestCallsRunConcurrently(t *testing.T) {
	const n = 50
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	svc := provider.Service{Interface: "com.example.Barrier", Methods: map[string][]provider.Method{
		"meet": {{ParamTypes: []string{"int"}, Func: func(ctx context.Context, args []any) (any, error) {
			started.Done()
			select {
			case <-all:
				return args[0], nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}},
	}}
	_, addr := startServer(t, nil, svc)
	c := dial(t, addr)
	var frames []byte
	for i := range n {
		f, _ := protocol.AppendRequest(nil, c.e, &protocol.Request{ID: uint64(i + 1), TwoWay: true, Path: "com.example.Barrier", Method: "meet", ParamTypes: "I", Args: []any{int32(i + 1)}})
		frames = append(frames, f...)
	}
	c.write(frames)
	seen := map[uint64]bool{}
	for range n {
		r := c.response()
		if v := value(t, r); v != int32(r.ID) {
			t.Errorf("response %d carries %v", r.ID, v)
		}
		seen[r.ID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct responses", len(seen))
	}
}

func TestOneWayCallRunsWithoutAnswer(t *testing.T) {
	b := newBlocker()
	close(b.release)
	_, addr := startServer(t, nil, b.service())
	c := dial(t, addr)
	req := blockRequest("quiet")
	req.TwoWay = false
	c.send(req)
	b.waitStarted(t, 1)
	// The next frame is the answer to the next call, not to the one-way one.
	if got := value(t, c.call("greet", nil)); got != "Hello, world" {
		t.Errorf("got %v", got)
	}
}

func TestGarbageClientIsDisconnectedOthersServed(t *testing.T) {
	s, addr := startServer(t, nil)
	good := dial(t, addr)
	value(t, good.call("greet", nil))

	bad := dial(t, addr)
	bad.write([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))
	bad.expectClosed()

	if got := value(t, good.call("getUser", str, "2")); field(t, got, "id") != "2" {
		t.Errorf("good client after the bad one: %v", got)
	}
	// The client sees the close before the server's connection goroutine
	// has finished its bookkeeping: wait for it, bounded.
	deadline := time.Now().Add(5 * time.Second)
	for st := s.Stats(); st.Accepted != 2 || st.Connections != 1; st = s.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want 2 accepted and 1 still open", st)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUndecodableBodyIsBadRequest(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dial(t, addr)
	garbage := []byte{0xff, 0xfe, 0xfd}
	c.write(append(protocol.AppendHeader(nil, protocol.Header{Request: true, TwoWay: true, ID: 5, BodyLen: len(garbage)}), garbage...))
	resp := c.response()
	if resp.ID != 5 || resp.Status != protocol.StatusBadRequest || !strings.Contains(resp.ErrorMessage, "Fail to decode request") {
		t.Errorf("garbage body: %+v", resp)
	}
	// The stream is still in step.
	if got := value(t, c.call("greet", nil)); got != "Hello, world" {
		t.Errorf("after a bad body: %v", got)
	}
}

func TestOversizedRequestIsRefusedAndDisconnected(t *testing.T) {
	_, addr := startServer(t, func(s *provider.Server) { s.SetMaxPayload(1024) })
	c := dial(t, addr)
	c.send(&protocol.Request{TwoWay: true, Path: demo.UserInterface, Method: "greet", ParamTypes: "Ljava/lang/String;", Args: []any{strings.Repeat("x", 2000)}})
	resp := c.response()
	if resp.Status != protocol.StatusBadRequest || !strings.Contains(resp.ErrorMessage, "max payload: 1024") {
		t.Errorf("oversized request: %+v", resp)
	}
	c.expectClosed()
}

func TestOversizedResponseIsBadResponse(t *testing.T) {
	_, addr := startServer(t, func(s *provider.Server) { s.SetMaxPayload(2048) })
	c := dial(t, addr)
	resp := c.call("listUsers", []string{"int"}, int32(100))
	if resp.Status != protocol.StatusBadResponse || !strings.Contains(resp.ErrorMessage, "Data length too large") {
		t.Errorf("oversized response: %v %q", resp.Status, resp.ErrorMessage)
	}
	if got := value(t, c.call("greet", nil)); got != "Hello, world" {
		t.Errorf("after an oversized response: %v", got)
	}
}

func TestCloseSendsReadonlyAndDrains(t *testing.T) {
	base := numGoroutine()
	b := newBlocker()
	s := provider.NewServer(testLogger(t))
	s.Register(b.service())
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr.String())
	id := c.send(blockRequest("inflight"))
	b.waitStarted(t, 1)

	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		closed <- s.Close(ctx)
	}()
	h, body := c.next()
	req, err := protocol.DecodeRequest(h, body, c.d)
	if err != nil || !req.IsReadonly() || h.TwoWay {
		t.Fatalf("first frame after Close: %+v %v", h, err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a call was running", err)
	default:
	}
	close(b.release)
	resp := c.response()
	if resp.ID != id || value(t, resp) != "released inflight" {
		t.Errorf("in-flight call: %+v", resp)
	}
	c.expectClosed()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Close did not return")
	}
	c.nc.Close()
	goroutinesBackTo(t, base)
	if _, err := s.Listen(context.Background(), "127.0.0.1:0"); err == nil {
		t.Error("Listen after Close succeeded")
	}
}

func TestCloseGivesUpWhenContextEnds(t *testing.T) {
	base := numGoroutine()
	b := newBlocker() // never released: the call ends when Close cancels it
	s := provider.NewServer(testLogger(t))
	s.Register(b.service())
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr.String())
	c.send(blockRequest("stuck"))
	b.waitStarted(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = s.Close(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 calls still running") {
		t.Errorf("Close: %v", err)
	}
	select { // Close cancelled the call and waited for it
	case <-b.finished:
	default:
		t.Error("Close returned before the running call ended")
	}
	c.nc.Close()
	goroutinesBackTo(t, base)
}

func TestGoroutinesEndWithClose(t *testing.T) {
	base := numGoroutine()
	s := provider.NewServer(nil)
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Listen(context.Background(), "127.0.0.1:0"); err != nil { // a second listener
		t.Fatal(err)
	}
	var clients []*client
	for range 5 {
		c := dial(t, addr.String())
		value(t, c.call("getUser", str, "1"))
		value(t, c.generic("listUsers", []string{"int"}, int32(3)))
		clients = append(clients, c)
	}
	if st := s.Stats(); st.Connections != 5 || st.Requests != 10 {
		t.Errorf("stats %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		c.expectClosed()
		c.nc.Close()
	}
	goroutinesBackTo(t, base)
	if err := s.Close(ctx); err != nil { // idempotent
		t.Errorf("second Close: %v", err)
	}
}

func TestRegisterRejectsBadTypes(t *testing.T) {
	for name, svc := range map[string]provider.Service{
		"bad type":  {Interface: "x.Y", Methods: map[string][]provider.Method{"m": {{ParamTypes: []string{"not a type"}, Func: func(context.Context, []any) (any, error) { return nil, nil }}}}},
		"no func":   {Interface: "x.Y", Methods: map[string][]provider.Method{"m": {{}}}},
		"twice":     {Interface: "x.Y", Methods: map[string][]provider.Method{"m": {{Func: func(context.Context, []any) (any, error) { return nil, nil }}, {Func: func(context.Context, []any) (any, error) { return nil, nil }}}}},
		"interface": {},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			provider.NewServer(nil).Register(svc)
		}()
	}
}

// TestCloseCutsOffConsumersThatDoNotRead: a consumer that stops reading
// cannot hold Close up past its ctx.
func TestCloseCutsOffConsumersThatDoNotRead(t *testing.T) {
	base := numGoroutine()
	s := provider.NewServer(testLogger(t))
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr.String())
	var frames []byte
	for i := range 300 { // about 15 MB of answers, more than socket buffers hold
		f, _ := protocol.AppendRequest(nil, c.e, &protocol.Request{ID: uint64(i), TwoWay: true, Path: demo.UserInterface, Method: "listUsers", ParamTypes: "I", Args: []any{int32(demo.MaxListUsers)}})
		frames = append(frames, f...)
	}
	c.write(frames)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	select {
	case <-closed:
	case <-time.After(wait):
		t.Fatal("Close did not return")
	}
	c.nc.Close()
	goroutinesBackTo(t, base)
}
