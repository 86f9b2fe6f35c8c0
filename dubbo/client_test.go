package dubbo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRequestOnTheWire checks what a provider reads for a typed and a
// generic call: body fields, descriptor, arguments and attachments.
func TestRequestOnTheWire(t *testing.T) {
	checkGoroutines(t)
	got := make(chan *protocol.DecodedRequest, 2)
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		for {
			req, err := fc.next()
			if err != nil {
				return
			}
			if fc.answerHeartbeat(req) {
				continue
			}
			got <- req
			_ = fc.reply(&protocol.Response{ID: req.ID, Value: "ok", WithAttachments: true,
				Attachments: map[string]any{"traceparent": "00-abc"}})
		}
	})
	c := newClient(t, Options{})

	typed := &Invocation{
		Interface: "com.example.UserService", Version: "1.0.0", Group: "g1", Method: "find",
		ParamTypes:  []string{"java.lang.String", "int", "com.example.User[]"},
		Args:        []any{"ann", int32(7), &hessian.List{Type: "[com.example.User"}},
		Attachments: map[string]string{"user": "u1", "path": "spoofed"},
	}
	res, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), typed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != "ok" || res.Attachments["traceparent"] != "00-abc" {
		t.Fatalf("result %+v", res)
	}
	req := waitN(t, got, 1)[0]
	if req.DubboVersion != "2.0.2" || req.Path != typed.Interface || req.Version != "1.0.0" || req.Method != "find" ||
		req.ParamTypes != "Ljava/lang/String;I[Lcom/example/User;" || len(req.Args) != 3 || req.Args[0] != "ann" || req.Args[1] != int32(7) {
		t.Fatalf("typed request %+v", req)
	}
	want := map[string]any{"path": typed.Interface, "interface": typed.Interface, "version": "1.0.0", "group": "g1", "user": "u1"}
	for k, v := range want {
		if req.Attachments[k] != v {
			t.Errorf("attachment %s = %v, want %v", k, req.Attachments[k], v)
		}
	}
	if ms, err := strconv.Atoi(req.Attachments["timeout"].(string)); err != nil || ms < 1 || ms > 3000 {
		t.Errorf("timeout attachment %v", req.Attachments["timeout"])
	}
	if _, ok := req.Attachments["generic"]; ok {
		t.Error("typed call carries generic")
	}

	generic := &Invocation{
		Interface: "com.example.UserService", Method: "create", Generic: true,
		ParamTypes: []string{"com.example.User"},
		Args:       []any{map[string]any{"class": "com.example.User", "name": "ann"}},
	}
	if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), generic); err != nil {
		t.Fatal(err)
	}
	req = waitN(t, got, 1)[0]
	if req.Method != "$invoke" || req.ParamTypes != protocol.GenericParamTypes || len(req.Args) != 3 || req.Args[0] != "create" {
		t.Fatalf("generic request %+v", req)
	}
	types, ok := req.Args[1].(*hessian.List)
	if !ok || types.Type != "[string" || len(types.Items) != 1 || types.Items[0] != "com.example.User" {
		t.Fatalf("generic types %#v", req.Args[1])
	}
	args, ok := req.Args[2].(*hessian.List)
	if !ok || args.Type != "[object" || len(args.Items) != 1 {
		t.Fatalf("generic args %#v", req.Args[2])
	}
	if m, ok := args.Items[0].(*hessian.Map); !ok || m.Entries[0].Key != "class" {
		t.Fatalf("generic arg %#v", args.Items[0])
	}
	if req.Attachments["generic"] != "true" || req.Attachments["version"] != "" {
		t.Fatalf("generic attachments %v", req.Attachments)
	}
	if _, ok := req.Attachments["group"]; ok {
		t.Error("group sent though not set")
	}

	generic.Async = true
	if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), generic); err != nil {
		t.Fatal(err)
	}
	if req = waitN(t, got, 1)[0]; req.Method != "$invokeAsync" || req.ParamTypes != protocol.GenericParamTypes {
		t.Fatalf("async generic request: method %q, types %q", req.Method, req.ParamTypes)
	}
}

// TestWriteArgs streams arguments, typed and generic.
func TestWriteArgs(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", echo)
	c := newClient(t, Options{})
	for _, generic := range []bool{false, true} {
		inv := &Invocation{Interface: "com.example.Echo", Method: "echo", Generic: generic,
			ParamTypes: []string{"java.lang.String"},
			WriteArgs:  func(e *hessian.Encoder) error { e.WriteString("streamed"); return nil }}
		res, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), inv)
		if err != nil || res.Value != "streamed" {
			t.Fatalf("generic=%v: %v, %v", generic, res, err)
		}
	}
	inv := echoCall("x")
	inv.WriteArgs = func(e *hessian.Encoder) error { return errors.New("body too short") }
	_, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), inv)
	wantErr(t, err, nil, "body too short", p.Addr())
	_, err = c.Invoke(callCtx(t, 3*time.Second), p.Addr(), &Invocation{Interface: "I", Method: "m", ParamTypes: []string{"int"}})
	wantErr(t, err, nil, "0 arguments for 1 parameter types")
	_, err = c.Invoke(callCtx(t, 3*time.Second), p.Addr(), &Invocation{Interface: "I", Method: "m", ParamTypes: []string{"not a type"}, Args: []any{1}})
	wantErr(t, err, nil, "parameter type 0")
}

// TestMultiplexOutOfOrder sends many concurrent calls over one connection
// and answers them in reverse order: each call gets its own answer.
func TestMultiplexOutOfOrder(t *testing.T) {
	checkGoroutines(t)
	const n = 200
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		var reqs []*protocol.DecodedRequest
		for len(reqs) < n {
			req, err := fc.next()
			if err != nil {
				return
			}
			if !fc.answerHeartbeat(req) {
				reqs = append(reqs, req)
			}
		}
		var out []byte
		e := hessian.NewEncoder(nil)
		for i := len(reqs) - 1; i >= 0; i-- {
			var err error
			out, err = protocol.AppendResponse(out, e, &protocol.Response{ID: reqs[i].ID, Value: firstArg(reqs[i])})
			if err != nil {
				panic(err)
			}
		}
		_ = fc.write(out)
		echo(fc)
	})
	reg := prometheus.NewRegistry()
	c := newClient(t, Options{Registerer: reg})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			want := "call-" + strconv.Itoa(i)
			res, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall(want))
			switch {
			case err != nil:
				errs <- err
			case res.Value != want:
				errs <- fmt.Errorf("call %d got %v", i, res.Value)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(p.Conns()); got != 1 {
		t.Fatalf("%d connections, want 1", got)
	}
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).calls[outcomeOK]); got != n {
		t.Fatalf("calls_total ok = %v", got)
	}
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).pending); got != 0 {
		t.Fatalf("pending gauge %v after all calls", got)
	}
	frames := histogramSum(t, reg, "dubbogw_dubbo_write_batch_frames")
	if frames != n {
		t.Fatalf("write batches carried %v frames, want %d", frames, n)
	}
}

// metricValue reads one counter or gauge series.
func metricValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathering one series: %v", err)
	}
	m := mfs[0].GetMetric()[0]
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}

func histogramSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetHistogram().GetSampleSum()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestDeadline: a call whose context ends fails at once with the context's
// error and leaves nothing pending; its late response is dropped and the
// connection carries on.
func TestDeadline(t *testing.T) {
	checkGoroutines(t)
	h := newHolder()
	p := startProvider(t, "127.0.0.1:0", h.handle)
	c := newClient(t, Options{})
	start := time.Now()
	_, err := c.Invoke(callCtx(t, 50*time.Millisecond), p.Addr(), echoCall("late"))
	wantErr(t, err, context.DeadlineExceeded, p.Addr(), "waiting for the response", "com.example.Echo.echo")
	if time.Since(start) > 2*time.Second {
		t.Fatalf("deadline of 50ms returned after %v", time.Since(start))
	}
	if n := pendingCalls(c, p.Addr()); n != 0 {
		t.Fatalf("%d calls pending after the deadline", n)
	}
	waitN(t, h.got, 1)
	h.release() // the late response goes out, ahead of the next call's
	res, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("next"))
	if err != nil || res.Value != "next" {
		t.Fatalf("call after a late response: %v, %v", res, err)
	}
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).late); got != 1 {
		t.Fatalf("late responses %v, want 1", got)
	}
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).calls[outcomeTimeout]); got != 1 {
		t.Fatalf("timeouts %v, want 1", got)
	}

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Invoke(canceled, p.Addr(), echoCall("x"))
	wantErr(t, err, context.Canceled, p.Addr())
}

// TestConnectionBreaks: a provider that closes mid-frame or sends garbage
// fails the pending call at once with an error naming the address and what
// broke; the client then reconnects.
func TestConnectionBreaks(t *testing.T) {
	cases := []struct {
		name   string
		answer func(fc *fakeConn, req *protocol.DecodedRequest)
		want   string
	}{
		{"closed mid-frame", func(fc *fakeConn, req *protocol.DecodedRequest) {
			frame, _ := protocol.AppendResponse(nil, hessian.NewEncoder(nil), &protocol.Response{ID: req.ID, Value: strings.Repeat("x", 100)})
			_ = fc.write(frame[:len(frame)/2])
		}, "unexpected EOF"},
		{"garbage", func(fc *fakeConn, req *protocol.DecodedRequest) {
			_ = fc.write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
		}, "bad magic"},
		{"closed", func(fc *fakeConn, req *protocol.DecodedRequest) {}, "the provider closed the connection"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			var mu sync.Mutex
			broken := false
			p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
				mu.Lock()
				first := !broken
				broken = true
				mu.Unlock()
				if !first {
					echo(fc)
					return
				}
				for {
					req, err := fc.next()
					if err != nil {
						return
					}
					if !fc.answerHeartbeat(req) {
						tc.answer(fc, req)
						return // closes the connection
					}
				}
			})
			c := newClient(t, Options{})
			_, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("x"))
			wantErr(t, err, ErrConnectionLost, p.Addr(), tc.want)
			testenv.WaitFor(t, 5*time.Second, "a call succeeds after the reconnect", func() bool {
				res, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("again"))
				return err == nil && res.Value == "again"
			})
		})
	}
}

// TestBadResponseBody: a well-framed response whose body does not decode
// fails that call only, naming the address; the connection carries on.
func TestBadResponseBody(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		for {
			req, err := fc.next()
			if err != nil {
				return
			}
			if fc.answerHeartbeat(req) {
				continue
			}
			if firstArg(req) == "bad" {
				frame := protocol.AppendHeader(nil, protocol.Header{Status: protocol.StatusOK, ID: req.ID, BodyLen: 2})
				_ = fc.write(append(frame, 0x91, 0xff)) // kind 1, then a reserved tag
				continue
			}
			_ = fc.reply(&protocol.Response{ID: req.ID, Value: firstArg(req)})
		}
	})
	c := newClient(t, Options{})
	_, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("bad"))
	wantErr(t, err, nil, p.Addr(), "decoding the response", "reading value")
	if res, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("good")); err != nil || res.Value != "good" {
		t.Fatalf("next call: %v, %v", res, err)
	}
	if n := len(p.Conns()); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).calls[outcomeDecodeError]); got != 1 {
		t.Fatalf("decode errors %v", got)
	}
}

// TestErrorResponses maps error statuses and exceptions.
func TestErrorResponses(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		for {
			req, err := fc.next()
			if err != nil {
				return
			}
			if fc.answerHeartbeat(req) {
				continue
			}
			switch req.Method {
			case "missing":
				_ = fc.reply(&protocol.Response{ID: req.ID, Status: protocol.StatusServiceNotFound, ErrorMessage: "no provider for com.example.Nope"})
			case "fail":
				_ = fc.reply(&protocol.Response{ID: req.ID, Exception: &hessian.Exception{Class: "com.example.DemoException", Message: "boom"}})
			case "void":
				_ = fc.reply(&protocol.Response{ID: req.ID})
			}
		}
	})
	c := newClient(t, Options{})
	inv := &Invocation{Interface: "com.example.Nope", Method: "missing"}
	_, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), inv)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != protocol.StatusServiceNotFound || se.Message != "no provider for com.example.Nope" || se.Addr != p.Addr() {
		t.Fatalf("got %v, want a SERVICE_NOT_FOUND StatusError", err)
	}
	wantErr(t, err, nil, "SERVICE_NOT_FOUND", p.Addr())

	inv.Method = "fail"
	_, err = c.Invoke(callCtx(t, 3*time.Second), p.Addr(), inv)
	var be *BusinessError
	if !errors.As(err, &be) || be.Exception == nil || be.Exception.Class != "com.example.DemoException" || be.Exception.Message != "boom" || be.Raw == nil {
		t.Fatalf("got %v, want a BusinessError", err)
	}
	var x *hessian.Exception
	if !errors.As(err, &x) || x.Message != "boom" {
		t.Fatalf("errors.As *hessian.Exception: %v", err)
	}
	wantErr(t, err, nil, "com.example.DemoException: boom", p.Addr())

	inv.Method = "void"
	res, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), inv)
	if err != nil || res.Value != nil {
		t.Fatalf("void call: %v, %v", res, err)
	}
}

// TestHeartbeat: an idle connection gets heartbeats; when the provider
// stops answering, the connection is closed after three intervals and the
// call waiting on it fails at once.
func TestHeartbeat(t *testing.T) {
	checkGoroutines(t)
	const hb = 30 * time.Millisecond
	heartbeats := make(chan struct{}, 100)
	eof := make(chan struct{})
	var mu sync.Mutex
	first := true
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		mu.Lock()
		isFirst := first
		first = false
		mu.Unlock()
		if !isFirst {
			echo(fc)
			return
		}
		answered := 0
		for {
			req, err := fc.next()
			if err != nil {
				close(eof)
				return
			}
			switch {
			case req.IsHeartbeat():
				heartbeats <- struct{}{}
				if answered < 2 { // then fall silent
					answered++
					_ = fc.write(protocol.AppendHeartbeat(nil, req.ID, false))
				}
			case !req.Event:
				if firstArg(req) == "first" {
					_ = fc.reply(&protocol.Response{ID: req.ID, Value: "first"})
				} // others get no answer
			}
		}
	})
	c := newClient(t, Options{Heartbeat: hb})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("first")); err != nil {
		t.Fatal(err)
	}
	waitN(t, heartbeats, 3) // two answered, then one unanswered
	start := time.Now()
	_, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("never answered"))
	wantErr(t, err, ErrConnectionLost, p.Addr(), "nothing received for", "3 heartbeat intervals")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("missed heartbeats noticed after %v", d)
	}
	waitN(t, eof, 1)
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).idleCloses); got != 1 {
		t.Fatalf("heartbeat timeouts %v, want 1", got)
	}
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).heartbeats); got < 3 {
		t.Fatalf("heartbeats sent %v, want at least 3", got)
	}
}

// TestProviderHeartbeat: the client answers a provider's heartbeat.
func TestProviderHeartbeat(t *testing.T) {
	checkGoroutines(t)
	answered := make(chan protocol.Header, 1)
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		_ = fc.write(protocol.AppendHeartbeat(nil, 4242, true))
		for {
			h, _, err := fc.r.Next()
			if err != nil {
				return
			}
			if !h.Request {
				select {
				case answered <- h:
				default:
				}
			}
		}
	})
	c := newClient(t, Options{})
	// A call makes the connection; it gets no answer and times out.
	_, _ = c.Invoke(callCtx(t, 100*time.Millisecond), p.Addr(), echoCall("x"))
	h := waitN(t, answered, 1)[0]
	if !h.Event || h.ID != 4242 || h.Status != protocol.StatusOK {
		t.Fatalf("heartbeat answer %+v", h)
	}
}

// TestReconnect: when the provider goes away, calls fail fast with
// ErrConnect; when it comes back on the same port, calls work again.
func TestReconnect(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", echo)
	addr := p.Addr()
	c := newClient(t, Options{})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x")); err != nil {
		t.Fatal(err)
	}
	p.Close()
	testenv.WaitFor(t, 5*time.Second, "calls fail with ErrConnect", func() bool {
		start := time.Now()
		_, err := c.Invoke(callCtx(t, 5*time.Second), addr, echoCall("x"))
		if err == nil {
			t.Fatal("call succeeded with the provider down")
		}
		if time.Since(start) > time.Second {
			t.Fatalf("call with the provider down took %v: %v", time.Since(start), err)
		}
		return errors.Is(err, ErrConnect)
	})
	// The reason comes with the error once a redial has failed: right
	// after the close none may have been tried yet ("not connected").
	var err error
	testenv.WaitFor(t, 5*time.Second, "ErrConnect with the last dial error", func() bool {
		_, err = c.Invoke(callCtx(t, 5*time.Second), addr, echoCall("x"))
		return strings.Contains(fmt.Sprint(err), "(reconnecting; last error: ")
	})
	wantErr(t, err, ErrConnect, addr, "not connected (reconnecting; last error: ")

	startProvider(t, addr, echo)
	testenv.WaitFor(t, 5*time.Second, "a call succeeds after the provider restarted", func() bool {
		_, err := c.Invoke(callCtx(t, 5*time.Second), addr, echoCall("x"))
		return err == nil
	})
	if got := metricValue(t, c.metrics.forAddr(addr).reconnects); got != 1 {
		t.Fatalf("reconnects %v, want 1", got)
	}
	if got := metricValue(t, c.metrics.forAddr(addr).connections); got != 1 {
		t.Fatalf("connections gauge %v, want 1", got)
	}
}

// TestConnectFailure: a call to an address nobody listens on fails with
// ErrConnect after the first dial, and the next fails without waiting.
func TestConnectFailure(t *testing.T) {
	checkGoroutines(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, Options{})
	for range 2 {
		_, err := c.Invoke(callCtx(t, 5*time.Second), addr, echoCall("x"))
		wantErr(t, err, ErrConnect, addr, "com.example.Echo.echo")
	}
	_, err = c.Invoke(callCtx(t, time.Second), "no-port", echoCall("x"))
	wantErr(t, err, nil, "bad provider address")
}

// TestReadonly: a readonly event marks the address; calls still work; a
// new connection after the provider restarts clears the mark.
func TestReadonly(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", echo)
	addr := p.Addr()
	reg := prometheus.NewRegistry()
	c := newClient(t, Options{Registerer: reg})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x")); err != nil {
		t.Fatal(err)
	}
	if c.Readonly(addr) {
		t.Fatal("readonly before the event")
	}
	if err := p.Conns()[0].write(protocol.AppendReadonlyEvent(nil, 1)); err != nil {
		t.Fatal(err)
	}
	// The event is read before this call's response, on the same connection.
	if res, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("still")); err != nil || res.Value != "still" {
		t.Fatalf("call to a readonly provider: %v, %v", res, err)
	}
	if !c.Readonly(addr) {
		t.Fatal("not readonly after the event")
	}
	if got := metricValue(t, c.metrics.forAddr(addr).readonly); got != 1 {
		t.Fatalf("readonly events %v", got)
	}
	p.Close()
	testenv.WaitFor(t, 5*time.Second, "the connection is lost", func() bool {
		_, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x"))
		return errors.Is(err, ErrConnect)
	})
	if !c.Readonly(addr) {
		t.Fatal("readonly mark lost with the connection: a provider going away stays readonly")
	}
	startProvider(t, addr, echo)
	testenv.WaitFor(t, 5*time.Second, "a call succeeds after the restart", func() bool {
		_, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x"))
		return err == nil
	})
	if c.Readonly(addr) {
		t.Fatal("still readonly after reconnecting to a restarted provider")
	}
}

// TestWritableEvent: Dubbo 3's writable event undoes readonly.
func TestWritableEvent(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", echo)
	c := newClient(t, Options{})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("x")); err != nil {
		t.Fatal(err)
	}
	fc := p.Conns()[0]
	for _, ev := range []struct {
		data string
		want bool
	}{{"R", true}, {"W", false}} {
		e := hessian.NewEncoder(protocol.AppendHeader(nil, protocol.Header{Request: true, Event: true, ID: 9, BodyLen: 2}))
		e.WriteString(ev.data)
		if err := fc.write(e.Bytes()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("x")); err != nil {
			t.Fatal(err)
		}
		if got := c.Readonly(p.Addr()); got != ev.want {
			t.Fatalf("after %q: readonly %v", ev.data, got)
		}
	}
}

// TestGracefulClose: Close refuses new calls, waits for the calls in
// flight to get their responses, and only then returns.
func TestGracefulClose(t *testing.T) {
	checkGoroutines(t)
	h := newHolder()
	p := startProvider(t, "127.0.0.1:0", h.handle)
	c := New(Options{})
	const n = 3
	results := make(chan error, n)
	for i := range n {
		go func() {
			want := strconv.Itoa(i)
			res, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall(want))
			if err == nil && res.Value != want {
				err = fmt.Errorf("got %v, want %s", res.Value, want)
			}
			results <- err
		}()
	}
	waitN(t, h.got, n)
	closed := make(chan error, 1)
	go func() { closed <- c.Close(callCtx(t, 5*time.Second)) }()
	testenv.WaitFor(t, 5*time.Second, "Close starts", c.closed.Load)
	_, err := c.Invoke(callCtx(t, time.Second), p.Addr(), echoCall("late"))
	wantErr(t, err, ErrClosed, p.Addr())
	select {
	case err := <-closed:
		t.Fatalf("Close returned with calls in flight: %v", err)
	default:
	}
	h.release()
	for _, err := range waitN(t, results, n) {
		if err != nil {
			t.Errorf("call in flight during Close: %v", err)
		}
	}
	if err := waitN(t, closed, 1)[0]; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(callCtx(t, time.Second)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseDeadline: calls still in flight when Close's context ends fail
// with ErrClosed, and Close reports the context's error.
func TestCloseDeadline(t *testing.T) {
	checkGoroutines(t)
	h := newHolder()
	p := startProvider(t, "127.0.0.1:0", h.handle)
	defer h.release()
	c := New(Options{})
	results := make(chan error, 1)
	go func() {
		_, err := c.Invoke(callCtx(t, 10*time.Second), p.Addr(), echoCall("x"))
		results <- err
	}()
	waitN(t, h.got, 1)
	err := c.Close(callCtx(t, 50*time.Millisecond))
	wantErr(t, err, context.DeadlineExceeded, "1 calls in flight")
	wantErr(t, waitN(t, results, 1)[0], ErrClosed, p.Addr())
}

// TestMaxPending: beyond MaxPending calls waiting on a connection, a call
// fails at once with ErrOverloaded.
func TestMaxPending(t *testing.T) {
	checkGoroutines(t)
	h := newHolder()
	p := startProvider(t, "127.0.0.1:0", h.handle)
	c := newClient(t, Options{MaxPending: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("x")); err != nil {
				t.Error(err)
			}
		})
	}
	waitN(t, h.got, 2)
	_, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("x"))
	wantErr(t, err, ErrOverloaded, p.Addr())
	h.release()
	wg.Wait()
	if got := metricValue(t, c.metrics.forAddr(p.Addr()).calls[outcomeOverloaded]); got != 1 {
		t.Fatalf("overloaded calls %v", got)
	}
}

// TestPayloadLimit: a request over MaxPayload is not sent; a response over
// it closes the connection, failing every call pending on it.
func TestPayloadLimit(t *testing.T) {
	checkGoroutines(t)
	got := make(chan string, 10)
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		for {
			req, err := fc.next()
			if err != nil {
				return
			}
			if fc.answerHeartbeat(req) {
				continue
			}
			arg, _ := firstArg(req).(string)
			got <- arg
			switch arg {
			case "big":
				_ = fc.reply(&protocol.Response{ID: req.ID, Value: strings.Repeat("x", 4096)})
			case "hold":
			default:
				_ = fc.reply(&protocol.Response{ID: req.ID, Value: arg})
			}
		}
	})
	c := newClient(t, Options{MaxPayload: 1024})

	_, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall(strings.Repeat("y", 2048)))
	wantErr(t, err, ErrPayloadTooLarge, p.Addr(), "over the limit of 1024 bytes")
	if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("small")); err != nil {
		t.Fatal(err)
	}
	if arg := waitN(t, got, 1)[0]; arg != "small" {
		t.Fatalf("provider received %.20q first: the oversized request was sent", arg)
	}

	held := make(chan error, 1)
	go func() {
		_, err := c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("hold"))
		held <- err
	}()
	waitN(t, got, 1)
	_, err = c.Invoke(callCtx(t, 5*time.Second), p.Addr(), echoCall("big"))
	wantErr(t, err, ErrConnectionLost, p.Addr(), "over the payload limit of 1024 bytes")
	wantErr(t, waitN(t, held, 1)[0], ErrConnectionLost, p.Addr(), "over the payload limit")
}

// TestConnsPerAddr spreads calls over ConnsPerAddr connections.
func TestConnsPerAddr(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	served := map[*fakeConn]int{}
	p := startProvider(t, "127.0.0.1:0", func(fc *fakeConn) {
		for {
			req, err := fc.next()
			if err != nil {
				return
			}
			if fc.answerHeartbeat(req) {
				continue
			}
			mu.Lock()
			served[fc]++
			mu.Unlock()
			_ = fc.reply(&protocol.Response{ID: req.ID, Value: firstArg(req)})
		}
	})
	c := newClient(t, Options{ConnsPerAddr: 2})
	testenv.WaitFor(t, 5*time.Second, "both connections carry calls", func() bool {
		if _, err := c.Invoke(callCtx(t, 3*time.Second), p.Addr(), echoCall("x")); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return len(served) == 2
	})
	if n := len(p.Conns()); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestClosedClient: calls after Close fail with ErrClosed.
func TestClosedClient(t *testing.T) {
	checkGoroutines(t)
	c := New(Options{})
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := c.Invoke(context.Background(), "127.0.0.1:1", echoCall("x"))
	wantErr(t, err, ErrClosed, "127.0.0.1:1")
}

// TestMetricsShared: two Clients on one registry share the series.
func TestMetricsShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := New(Options{Registerer: reg}), New(Options{Registerer: reg})
	if a.metrics.calls != b.metrics.calls {
		t.Fatal("second client did not reuse the registered collectors")
	}
	_ = a.Close(context.Background())
	_ = b.Close(context.Background())
}

// TestBackoff keeps the jittered delays within their bounds.
func TestBackoff(t *testing.T) {
	for failures := 1; failures < 40; failures++ {
		want := min(backoffBase<<min(failures-1, 20), backoffMax)
		if failures > longAfter {
			want = backoffLong // a long-dead address: minutes, not seconds
		}
		for range 20 {
			if d := backoff(failures); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", failures, d, want/2, want)
			}
		}
	}
}

// TestWriteQueueFull: frames of calls that gave up stay queued behind a
// writer the provider does not read from; once the queue is full a call
// fails with ErrOverloaded even below MaxPending.
func TestWriteQueueFull(t *testing.T) {
	checkGoroutines(t)
	c := newClient(t, Options{MaxPending: 2})
	p := newPool(c, "pipe:0", false)
	clientSide, providerSide := net.Pipe() // nobody reads providerSide: writes block
	writing := make(chan int, 1)
	cn := newConn(p, writeSignal{clientSide, writing})
	served := make(chan error, 1)
	go func() { served <- cn.serve() }()
	frame := func() *buffer { return &buffer{b: []byte("a frame")} }

	a := c.getCall()
	if err := cn.send(1, a, frame()); err != nil {
		t.Fatal(err)
	}
	// Only once the writer is inside the socket write does the queue stay
	// as filled: before that it would batch the next frames with the first.
	if n := waitN(t, writing, 1)[0]; n != len("a frame") {
		t.Fatalf("the writer wrote %d bytes, want the first frame alone", n)
	}
	for id := uint64(2); id <= 3; id++ { // queued, then given up
		if err := cn.send(id, c.getCall(), frame()); err != nil {
			t.Fatal(err)
		}
		cn.mu.Lock()
		cl := cn.pending[id]
		cn.mu.Unlock()
		if !cn.remove(id, cl) {
			t.Fatal("remove failed")
		}
	}
	err := cn.send(4, c.getCall(), frame())
	wantErr(t, err, ErrOverloaded, "write queue full")
	cn.mu.Lock()
	n := len(cn.pending)
	cn.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d calls pending, want the first one only", n)
	}

	providerSide.Close()
	wantErr(t, waitN(t, served, 1)[0], ErrConnectionLost)
	waitN(t, a.done, 1)
	wantErr(t, a.err, ErrConnectionLost)
}

// writeSignal is a net.Conn that reports each write's size before making it.
type writeSignal struct {
	net.Conn
	writing chan<- int
}

func (w writeSignal) Write(b []byte) (int, error) {
	select {
	case w.writing <- len(b):
	default:
	}
	return w.Conn.Write(b)
}

// TestRedial: a provider restarted on the same address after the client's
// reconnect backoff has grown past a second is reached at once after
// Redial, not after the backoff.
func TestRedial(t *testing.T) {
	checkGoroutines(t)
	p := startProvider(t, "127.0.0.1:0", echo)
	addr := p.Addr()
	c := newClient(t, Options{})
	if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x")); err != nil {
		t.Fatal(err)
	}
	p.Close()
	// Six failed dials in a row: the next wait is 1.6 s to 3.2 s. The five
	// waits before take 1.55 s to 3.1 s, more on a loaded machine (the
	// race detector, other packages' tests): allow 15 s.
	testenv.WaitFor(t, 15*time.Second, "six failed dials", func() bool {
		return metricValue(t, c.metrics.forAddr(addr).dialErrors) >= 6
	})
	startProvider(t, addr, echo)
	start := time.Now()
	c.Redial(addr)
	testenv.WaitFor(t, 5*time.Second, "a call succeeds after the redial", func() bool {
		_, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x"))
		return err == nil
	})
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("connected %v after Redial; the backoff alone waits at least 1.6s", d)
	}
	c.Redial("127.0.0.1:1") // an address the client holds nothing for: nothing happens
}
