package provider_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/triplewire"
	"github.com/dubbogw/dubbogw/triple"
)

// startTriple serves the demo services over Triple (and nothing else).
func startTriple(t *testing.T, configure func(*provider.Server), extra ...provider.Service) (*provider.Server, string) {
	t.Helper()
	s := provider.NewServer(testLogger(t))
	for _, svc := range append(demo.DubboServices(), extra...) {
		s.Register(svc)
	}
	if configure != nil {
		configure(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.ServeTriple(ln)
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

func tripleClient(t *testing.T) *triple.Client {
	t.Helper()
	c := triple.New(triple.Options{Timeout: wait})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// TestTripleCalls: the Triple client calls the demo service as it calls a
// Java provider: overloads told apart by their types, a POJO result and
// argument, a list, and the failures as gRPC statuses.
func TestTripleCalls(t *testing.T) {
	_, addr := startTriple(t, nil)
	c := tripleClient(t)
	call := func(method string, types []string, args ...any) (any, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		res, err := c.Invoke(ctx, dubbo.Target{Addr: addr}, &dubbo.Invocation{Interface: demo.UserInterface, Method: method, ParamTypes: types, Args: args})
		if err != nil {
			return nil, err
		}
		return res.Value, nil
	}
	str := []string{"java.lang.String"}
	if v, err := call("greet", nil); err != nil || v != "Hello, world" {
		t.Errorf("greet(): %#v, %v", v, err)
	}
	if v, err := call("greet", str, "Ann"); err != nil || v != "Hello, Ann" {
		t.Errorf("greet(Ann): %#v, %v", v, err)
	}
	v, err := call("getUser", str, "7")
	if o, ok := v.(*hessian.Object); err != nil || !ok || o.Class != demo.UserClass {
		t.Fatalf("getUser(7): %#v, %v", v, err)
	} else if id, _ := o.Get("id"); id != "7" {
		t.Errorf("getUser(7).id = %#v", id)
	}
	if v, err := call("createUser", []string{demo.UserClass}, demo.User("9")); err != nil {
		t.Errorf("createUser: %v", err)
	} else if o, _ := v.(*hessian.Object); o == nil || o.Class != demo.UserClass {
		t.Errorf("createUser: %#v", v)
	}
	if v, err := call("listUsers", []string{"int"}, int32(3)); err != nil {
		t.Errorf("listUsers(3): %v", err)
	} else if l, ok := v.(*hessian.List); !ok || len(l.Items) != 3 {
		t.Errorf("listUsers(3): %#v", v)
	}

	status := func(err error) *triple.StatusError {
		t.Helper()
		var se *triple.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("not a gRPC status: %v", err)
		}
		return se
	}
	_, err = call("fail", str, "boom")
	if se := status(err); se.Code != triple.Unknown || se.Message != demo.ExceptionClass+": boom" {
		t.Errorf("fail(boom): %v", err)
	}
	_, err = call("nosuch", nil)
	if se := status(err); se.Code != triple.Unimplemented || !strings.Contains(se.Message, "not found method nosuch()") {
		t.Errorf("an unknown method: %v", err)
	}
	_, err = call("greet", []string{"int"}, int32(1))
	if se := status(err); se.Code != triple.Unimplemented {
		t.Errorf("greet(int): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err = c.Invoke(ctx, dubbo.Target{Addr: addr}, &dubbo.Invocation{Interface: "com.example.Nobody", Method: "m"})
	if se := status(err); se.Code != triple.Unimplemented || !strings.Contains(se.Message, "not found service com.example.Nobody") {
		t.Errorf("an unknown service: %v", err)
	}
}

// TestTripleTimeout: a call's grpc-timeout is its deadline on the
// provider, even when the client keeps waiting: slow(60000) sent with
// grpc-timeout 300m is answered DEADLINE_EXCEEDED in about that time, and
// its slot is free again.
func TestTripleTimeout(t *testing.T) {
	s, addr := startTriple(t, nil)
	e := hessian.NewEncoder(nil)
	_ = e.Encode(int32(60000))
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/"+demo.UserInterface+"/slow",
		bytes.NewReader(triplewire.AppendRequestFrame(nil, [][]byte{e.Bytes()}, []string{"int"})))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc+proto")
	req.Header.Set("grpc-timeout", "300m")
	start := time.Now()
	resp, err := h2cClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got, d := resp.Trailer.Get("grpc-status"), time.Since(start); got != "4" || d > wait {
		t.Fatalf("grpc-status %q (%s) after %s, want 4 (DEADLINE_EXCEEDED)", got, resp.Trailer.Get("grpc-message"), d)
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("the slow call still runs on the provider: %+v", st)
	}
}

// h2cClient speaks HTTP/2 without TLS (prior knowledge), as Triple does.
func h2cClient(t *testing.T) *http.Client {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: protocols}, Timeout: 2 * wait}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// TestTripleBusy: calls beyond SetMaxInFlight are RESOURCE_EXHAUSTED, at
// once, and counted.
func TestTripleBusy(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	block := provider.Service{Interface: "com.example.Block", Methods: map[string][]provider.Method{
		"block": {{Func: func(ctx context.Context, _ []any) (any, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "done", nil
		}}},
	}}
	s, addr := startTriple(t, func(s *provider.Server) { s.SetMaxInFlight(2) }, block)
	c := tripleClient(t)
	inv := &dubbo.Invocation{Interface: "com.example.Block", Method: "block"}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if _, err := c.Invoke(ctx, dubbo.Target{Addr: addr}, inv); err != nil {
				t.Errorf("a call within the limit: %v", err)
			}
		})
	}
	<-started
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := c.Invoke(ctx, dubbo.Target{Addr: addr}, inv)
	var se *triple.StatusError
	if !errors.As(err, &se) || se.Code != triple.ResourceExhausted {
		t.Errorf("a third call: %v", err)
	}
	close(release)
	wg.Wait()
	if st := s.Stats(); st.Rejected != 1 {
		t.Errorf("stats %+v, want 1 rejected", st)
	}
}

// TestTripleHostileRequests: what a client sends that the provider
// cannot take is answered with a gRPC status before anything is
// allocated for it: a length over the payload limit, a compressed
// message, a malformed wrapper, a truncated message, arguments without
// their types; and a request that is not gRPC at all gets HTTP's answer.
func TestTripleHostileRequests(t *testing.T) {
	_, addr := startTriple(t, func(s *provider.Server) { s.SetMaxPayload(1 << 16) })
	hc := h2cClient(t)
	frame := func(flag byte, n uint32, msg []byte) []byte {
		b := []byte{flag, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], n)
		return append(b, msg...)
	}
	e := hessian.NewEncoder(nil)
	_ = e.Encode("Ann")
	good := triplewire.AppendRequestFrame(nil, [][]byte{e.Bytes()}, []string{"java.lang.String"})
	for _, c := range []struct {
		name, ct string
		body     []byte
		status   int    // HTTP status
		grpc     string // grpc-status
	}{
		{"well formed", "application/grpc+proto", good, 200, "0"},
		{"over the payload limit", "application/grpc+proto", frame(0, 1<<30, nil), 200, "8"},
		{"compressed", "application/grpc+proto", frame(1, 3, []byte{1, 2, 3}), 200, "12"},
		{"malformed wrapper", "application/grpc+proto", frame(0, 2, []byte{0x12, 0x09}), 200, "3"},
		{"truncated", "application/grpc+proto", good[:len(good)-2], 200, "3"},
		{"arguments without types", "application/grpc+proto", triplewire.AppendRequestFrame(nil, [][]byte{e.Bytes()}, nil), 200, "3"},
		{"not gRPC", "application/json", []byte(`{}`), 415, ""},
	} {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/"+demo.UserInterface+"/greet", bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", c.ct)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Trailer.Get("grpc-status"); resp.StatusCode != c.status || got != c.grpc {
			t.Errorf("%s: HTTP %d, grpc-status %q (%s); want %d, %q", c.name, resp.StatusCode, got, resp.Trailer.Get("grpc-message"), c.status, c.grpc)
		}
	}
}
