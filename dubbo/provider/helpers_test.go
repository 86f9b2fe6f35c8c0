package provider_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
)

// wait bounds every network wait in these tests.
const wait = 5 * time.Second

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// startServer listens on loopback with the demo services and extra ones,
// and closes the server when the test ends.
func startServer(t *testing.T, configure func(*provider.Server), extra ...provider.Service) (*provider.Server, string) {
	t.Helper()
	s := provider.NewServer(testLogger(t))
	for _, svc := range append(demo.DubboServices(), extra...) {
		s.Register(svc)
	}
	if configure != nil {
		configure(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	addr, err := s.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, addr.String()
}

// client is a minimal consumer built on protocol alone.
type client struct {
	t        *testing.T
	nc       net.Conn
	r        *protocol.Reader
	e        *hessian.Encoder
	d        *hessian.Decoder
	nextID   uint64
	readonly bool // a readonly event arrived
	version  string
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, r: protocol.NewReader(nc, 0), e: hessian.NewEncoder(nil), d: hessian.NewDecoder(nil)}
}

func (c *client) write(frame []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(wait))
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next reads one frame, failing the test on error.
func (c *client) next() (protocol.Header, []byte) {
	c.t.Helper()
	h, body, err := c.nextErr()
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	return h, body
}

func (c *client) nextErr() (protocol.Header, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(wait))
	return c.r.Next()
}

// send writes a request and returns its id.
func (c *client) send(req *protocol.Request) uint64 {
	c.t.Helper()
	c.nextID++
	req.ID = c.nextID
	if req.DubboVersion == "" {
		req.DubboVersion = c.version
	}
	frame, err := protocol.AppendRequest(nil, c.e, req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(frame)
	return req.ID
}

// response reads frames until a response arrives (noting readonly events).
func (c *client) response() *protocol.Response {
	c.t.Helper()
	for {
		h, body := c.next()
		if h.Request {
			req, err := protocol.DecodeRequest(h, body, c.d)
			if err != nil {
				c.t.Fatal(err)
			}
			if req.IsReadonly() {
				c.readonly = true
			}
			continue
		}
		resp, err := protocol.DecodeResponse(h, body, c.d)
		if err != nil {
			c.t.Fatal(err)
		}
		return resp
	}
}

func (c *client) roundTrip(req *protocol.Request) *protocol.Response {
	c.t.Helper()
	id := c.send(req)
	resp := c.response()
	if resp.ID != id {
		c.t.Fatalf("response to %d, want %d", resp.ID, id)
	}
	return resp
}

// call makes a typed call to the demo interface.
func (c *client) call(method string, types []string, args ...any) *protocol.Response {
	c.t.Helper()
	return c.callService(demo.UserInterface, method, types, args...)
}

func (c *client) callService(iface, method string, types []string, args ...any) *protocol.Response {
	c.t.Helper()
	desc, err := protocol.Descriptor(types)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.roundTrip(&protocol.Request{TwoWay: true, Path: iface, Method: method, ParamTypes: desc, Args: args})
}

// generic makes a $invoke call; types nil sends null parameter types.
func (c *client) generic(method string, types []string, args ...any) *protocol.Response {
	c.t.Helper()
	var typeList any
	if types != nil {
		items := make([]any, len(types))
		for i, t := range types {
			items[i] = t
		}
		typeList = &hessian.List{Type: protocol.GenericTypesListType, Items: items}
	}
	return c.roundTrip(&protocol.Request{
		TwoWay: true, Path: demo.UserInterface, Method: protocol.MethodInvoke, ParamTypes: protocol.GenericParamTypes,
		Args:        []any{method, typeList, &hessian.List{Type: protocol.GenericArgsListType, Items: args}},
		Attachments: map[string]string{protocol.AttachmentGeneric: "true"},
	})
}

// expectClosed waits for the server to close the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	for {
		h, _, err := c.nextErr()
		if err == nil {
			c.t.Logf("frame %+v before the close", h)
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatalf("the server did not close the connection: %v", err)
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			c.t.Logf("connection ended with %v", err)
		}
		return
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

func value(t *testing.T, resp *protocol.Response) any {
	t.Helper()
	if resp.Status != protocol.StatusOK {
		t.Fatalf("status %v: %s", resp.Status, resp.ErrorMessage)
	}
	if resp.Exception != nil {
		x, _ := hessian.AsException(resp.Exception)
		t.Fatalf("exception %v", x)
	}
	return resp.Value
}

func exception(t *testing.T, resp *protocol.Response) *hessian.Exception {
	t.Helper()
	if resp.Status != protocol.StatusOK {
		t.Fatalf("status %v: %s", resp.Status, resp.ErrorMessage)
	}
	x, ok := hessian.AsException(resp.Exception)
	if !ok {
		t.Fatalf("no exception in %+v", resp)
	}
	return x
}

func field(t *testing.T, v any, name string) any {
	t.Helper()
	switch x := v.(type) {
	case *hessian.Object:
		f, ok := x.Get(name)
		if !ok {
			t.Fatalf("object %s has no field %q", x.Class, name)
		}
		return f
	case *hessian.Map:
		f, ok := x.Get(name)
		if !ok {
			t.Fatalf("map has no key %q", name)
		}
		return f
	}
	t.Fatalf("%T is neither an object nor a map", v)
	return nil
}

// goroutinesBackTo waits until the goroutine count is back to base.
func goroutinesBackTo(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // goroutines finish exiting after Close's Wait returns
	}
}

func numGoroutine() int { return runtime.NumGoroutine() }
