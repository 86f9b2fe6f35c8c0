package triple

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/triplewire"
)

// h2cServer serves handler over h2c on loopback, as a Triple provider
// does; it is the fake of these unit tests (test/interop calls a real
// dubbo-go provider).
func h2cServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: handler, Protocols: &p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// answer writes a unary gRPC answer carrying value as a response wrapper.
func answer(w http.ResponseWriter, value any) {
	e := hessian.NewEncoder(nil)
	if err := e.Encode(value); err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/grpc+proto")
	w.Header().Set("Trailer", "Grpc-Status")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(triplewire.AppendRequestFrame(nil, [][]byte{e.Bytes()}, []string{"java.lang.String"}))
	w.Header().Set("Grpc-Status", "0")
}

// readArgs reads the request frame and returns its hessian arguments
// decoded, and its types.
func readArgs(t *testing.T, r *http.Request) ([]any, []string) {
	body, err := io.ReadAll(r.Body)
	if err != nil || len(body) < triplewire.FrameHeaderLen || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
		t.Errorf("bad request frame (%d bytes, %v)", len(body), err)
		return nil, nil
	}
	msg := body[5:]
	var args []any
	var types []string
	for len(msg) > 0 {
		key, n := binary.Uvarint(msg)
		msg = msg[n:]
		l, n := binary.Uvarint(msg)
		v := msg[n : n+int(l)]
		msg = msg[n+int(l):]
		switch key >> 3 {
		case triplewire.FieldSerializeType:
			if string(v) != "hessian2" {
				t.Errorf("serialize type %q", v)
			}
		case triplewire.FieldArgs:
			a, err := hessian.NewDecoder(v).Decode()
			if err != nil {
				t.Errorf("argument %d: %v", len(args), err)
			}
			args = append(args, a)
		case triplewire.FieldArgTypes:
			types = append(types, string(v))
		}
	}
	return args, types
}

func invocation(method string, args ...any) *dubbo.Invocation {
	types := make([]string, len(args))
	for i := range types {
		types[i] = "java.lang.String"
	}
	return &dubbo.Invocation{Interface: "org.example.Svc", Version: "1.0.0", Group: "g", Method: method, ParamTypes: types, Args: args}
}

func call(t *testing.T, c *Client, addr string, inv *dubbo.Invocation) (*dubbo.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Invoke(ctx, dubbo.Target{Addr: addr}, inv)
}

func TestRequestShape(t *testing.T) {
	var got struct {
		sync.Mutex
		h    http.Header
		path string
		args []any
		typs []string
	}
	addr := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		args, types := readArgs(t, r)
		got.Lock()
		got.h, got.path, got.args, got.typs = r.Header.Clone(), r.URL.Path, args, types
		got.Unlock()
		answer(w, "ok")
	})
	c := New(Options{})
	defer c.Close(context.Background())
	inv := invocation("echo", "a", "b")
	inv.Attachments = map[string]string{
		"trace-id": "t-1", "X-Tenant": "acme",
		// Never from attachments: the client's own and connection headers.
		"tri-service-version": "6.6.6", "grpc-timeout": "1H", "content-type": "text/plain", "te": "gzip",
		"connection": "close", "user-agent": "evil", "host": "evil", "interface": "x", "bad header": "v", "ok": "bad\nvalue",
	}
	res, err := call(t, c, addr, inv)
	if err != nil || res.Value != "ok" {
		t.Fatalf("got %v, %v", res, err)
	}
	got.Lock()
	defer got.Unlock()
	if got.path != "/org.example.Svc/echo" {
		t.Errorf("path %q", got.path)
	}
	if len(got.args) != 2 || got.args[0] != "a" || got.args[1] != "b" || strings.Join(got.typs, ",") != "java.lang.String,java.lang.String" {
		t.Errorf("arguments %v types %v", got.args, got.typs)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/grpc+proto", "Te": "trailers", "User-Agent": "dubbogw-triple",
		"Tri-Service-Version": "1.0.0", "Tri-Service-Group": "g", "Trace-Id": "t-1", "X-Tenant": "acme",
		"Interface": "", "Connection": "", "Ok": "", "Host": "",
	} {
		if v := got.h.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if v := got.h.Values("Grpc-Timeout"); len(v) != 1 || !strings.HasSuffix(v[0], "m") {
		t.Errorf("grpc-timeout %q, want one value in milliseconds", v)
	}
	if v := got.h.Values("Tri-Service-Version"); len(v) != 1 {
		t.Errorf("tri-service-version %q: an attachment added a value", v)
	}
}

func TestStreamedArgsSplit(t *testing.T) {
	// WriteArgs writes both arguments into one hessian stream, the second
	// object referring to the first one's class definition; each must
	// arrive as a stream that decodes on its own.
	var got []any
	addr := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = readArgs(t, r)
		answer(w, "ok")
	})
	c := New(Options{})
	defer c.Close(context.Background())
	inv := &dubbo.Invocation{Interface: "org.example.Svc", Method: "pair", ParamTypes: []string{"org.example.P", "org.example.P"},
		WriteArgs: func(e *hessian.Encoder) error {
			for _, name := range []string{"x", "y"} {
				e.WriteObjectStart("org.example.P", []string{"name"})
				e.WriteString(name)
			}
			return nil
		}}
	if _, err := call(t, c, addr, inv); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d arguments", len(got))
	}
	for i, name := range []string{"x", "y"} {
		o, ok := got[i].(*hessian.Object)
		if !ok || o.Class != "org.example.P" || len(o.Fields) != 1 || o.Fields[0].Value != name {
			t.Errorf("argument %d = %#v", i, got[i])
		}
	}
}

func TestHostileAnswers(t *testing.T) {
	huge := []byte{0, 0x40, 0, 0, 0} // a 1 GiB message announced
	cases := []struct {
		name    string
		handler http.HandlerFunc
		check   func(error) bool
	}{
		{"huge length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			_, _ = w.Write(huge)
		}, func(err error) bool { return strings.Contains(err.Error(), "exceeds max payload") }},
		{"compressed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			_, _ = w.Write([]byte{1, 0, 0, 0, 1, 0})
		}, func(err error) bool { return strings.Contains(err.Error(), "compressed") }},
		{"two messages", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			_, _ = w.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		}, func(err error) bool { return strings.Contains(err.Error(), "more than one message") }},
		{"truncated", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			_, _ = w.Write([]byte{0, 0, 0, 0, 9, 1, 2})
		}, func(err error) bool { return errors.Is(err, dubbo.ErrConnectionLost) }},
		{"no status", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			_, _ = w.Write([]byte{0, 0, 0, 0, 0})
		}, func(err error) bool { return errors.Is(err, dubbo.ErrConnectionLost) }},
		{"not grpc", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>"))
		}, func(err error) bool { return strings.Contains(err.Error(), "not gRPC") }},
		{"bad wrapper", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status")
			_, _ = w.Write([]byte{0, 0, 0, 0, 2, 0x12, 0x7f})
			w.Header().Set("Grpc-Status", "0")
		}, func(err error) bool { return strings.Contains(err.Error(), "malformed protobuf") }},
		{"bad hessian", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status")
			_, _ = w.Write(triplewire.AppendRequestFrame(nil, [][]byte{{0x55, 0xff, 0xff}}, nil))
			w.Header().Set("Grpc-Status", "0")
		}, func(err error) bool { return strings.Contains(err.Error(), "decoding the result") }},
		{"trailers-only error", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "8")
			w.Header().Set("Grpc-Message", "too%20busy")
		}, func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Code == ResourceExhausted && se.Message == "too busy" && se.NotExecuted()
		}},
		{"http 503", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Code == Unavailable
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := h2cServer(t, tc.handler)
			c := New(Options{})
			defer c.Close(context.Background())
			_, err := call(t, c, addr, invocation("m", "x"))
			if err == nil || !tc.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestMethodCaseSwap(t *testing.T) {
	// A dubbo-go provider serves GetUser for Java's getUser: the first
	// call finds it on the second try, later calls at once.
	var hits atomic.Int32
	var javaNames atomic.Bool
	addr := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		want := "/org.example.Svc/GetUser"
		if javaNames.Load() {
			want = "/org.example.Svc/getUser"
		}
		if r.URL.Path != want {
			http.NotFound(w, r)
			return
		}
		answer(w, "u")
	})
	c := New(Options{})
	defer c.Close(context.Background())
	for i, want := range []int32{2, 3, 4} {
		if res, err := call(t, c, addr, invocation("getUser", "1")); err != nil || res.Value != "u" {
			t.Fatalf("call %d: %v, %v", i, res, err)
		}
		if hits.Load() != want {
			t.Fatalf("after call %d the provider saw %d requests, want %d", i, hits.Load(), want)
		}
	}
	// The provider at the address is replaced by one serving the Java
	// spelling: the remembered one fails once, the other is used and
	// remembered from then on.
	javaNames.Store(true)
	for i, want := range []int32{6, 7} {
		if res, err := call(t, c, addr, invocation("getUser", "1")); err != nil || res.Value != "u" {
			t.Fatalf("call %d after the switch: %v, %v", i, res, err)
		}
		if hits.Load() != want {
			t.Fatalf("after call %d after the switch the provider saw %d requests, want %d", i, hits.Load(), want)
		}
	}
	// A method neither spelling serves is UNIMPLEMENTED.
	_, err := call(t, c, addr, invocation("nosuch"))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != Unimplemented {
		t.Fatalf("got %v", err)
	}
}

func TestRefusedBeforeSending(t *testing.T) {
	var hits atomic.Int32
	release := make(chan struct{})
	addr := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-release
		answer(w, "late")
	})
	c := New(Options{MaxPending: 2, MaxPayload: 1 << 10})
	for _, m := range []string{"a/b", "../x", "m?q", "", "m n", "m\x00"} {
		if _, err := call(t, c, addr, invocation(m)); err == nil || !strings.Contains(err.Error(), "method") {
			t.Errorf("method %q: %v", m, err)
		}
	}
	if _, err := call(t, c, addr, invocation("m", strings.Repeat("x", 2<<10))); !errors.Is(err, dubbo.ErrPayloadTooLarge) {
		t.Errorf("2 KiB of arguments under a 1 KiB limit: %v", err)
	}
	if _, err := call(t, c, addr, &dubbo.Invocation{Interface: "org.example.Svc", Method: "m", Generic: true}); err == nil {
		t.Error("a generic call was accepted")
	}
	if hits.Load() != 0 {
		t.Fatalf("%d refused calls reached the provider", hits.Load())
	}
	// Two calls in flight fill MaxPending: the third is refused at once.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = call(t, c, addr, invocation("m")) })
	}
	for hits.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if _, err := call(t, c, addr, invocation("m")); !errors.Is(err, dubbo.ErrOverloaded) {
		t.Errorf("a third call with MaxPending 2: %v", err)
	}
	// Close waits for the calls in flight, and refuses new ones.
	closed := make(chan error, 1)
	go func() { closed <- c.Close(context.Background()) }()
	time.Sleep(10 * time.Millisecond)
	if _, err := call(t, c, addr, invocation("m")); !errors.Is(err, dubbo.ErrClosed) {
		t.Errorf("a call after Close: %v", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with calls in flight", err)
	default:
	}
	close(release)
	wg.Wait()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestGracefulGoaway: a provider shutting down gracefully (GOAWAY, then
// waiting for its streams) finishes the call in flight; the next call
// finds nothing listening and fails at once as a connect error, and once
// a provider listens again on the address, calls go to a new connection.
func TestGracefulGoaway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	started := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/org.example.Svc/slow" {
			started <- struct{}{}
			time.Sleep(300 * time.Millisecond)
		}
		answer(w, "ok")
	})
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: handler, Protocols: &p}
	go srv.Serve(ln)
	c := New(Options{})
	defer c.Close(context.Background())
	if _, err := call(t, c, addr, invocation("m")); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		res, err := call(t, c, addr, invocation("slow"))
		if err == nil && res.Value != "ok" {
			err = errors.New("wrong answer")
		}
		slow <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the call in flight during the GOAWAY: %v", err)
	}
	start := time.Now()
	if _, err := call(t, c, addr, invocation("m")); !errors.Is(err, dubbo.ErrConnect) {
		t.Fatalf("a call after the provider stopped: %v, want ErrConnect", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the refused call took %v", took)
	}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the address was taken meanwhile: %v", err)
	}
	srv2 := &http.Server{Handler: handler, Protocols: &p}
	go srv2.Serve(ln2)
	defer srv2.Close()
	if res, err := call(t, c, addr, invocation("m")); err != nil || res.Value != "ok" {
		t.Fatalf("a call to the provider back on the address: %v, %v", res, err)
	}
}

// TestSilentProviderHeartbeat: a provider that completes the HTTP/2
// handshake and then answers nothing, not even PINGs, is given up after
// the heartbeat and its unanswered PING, long before the call's deadline.
func TestSilentProviderHeartbeat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				fr := http2.NewFramer(nc, nc)
				_ = fr.WriteSettings()
				_ = fr.WriteSettingsAck()
				_, _ = io.Copy(io.Discard, nc) // then silence
			}()
		}
	}()
	c := New(Options{Heartbeat: 200 * time.Millisecond})
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Invoke(ctx, dubbo.Target{Addr: ln.Addr().String()}, invocation("m"))
	if !errors.Is(err, dubbo.ErrConnectionLost) {
		t.Fatalf("got %v, want ErrConnectionLost", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %v, with a 200ms heartbeat and a 10s deadline", took)
	}
}
