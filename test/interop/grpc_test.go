package interop

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/dubbogw/dubbogw/internal/testcert"
)

// grpcTestServer is grpc.testing.TestService on grpc-go
// (google.golang.org/grpc): unary, server-streaming, client-streaming and
// full-duplex calls, echoing the metadata and the deadline it saw. A
// server-streaming call with metadata x-wait-ack sends each message only
// after the client said it received the previous one (acks): a proxy
// that held messages back would stall it.
type grpcTestServer struct {
	testgrpc.UnimplementedTestServiceServer
	acks chan struct{}
}

func (grpcTestServer) UnaryCall(ctx context.Context, in *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-echo-initial"); len(v) > 0 {
		_ = grpc.SendHeader(ctx, metadata.Pairs("x-echo-initial", v[0]))
	}
	if v := md.Get("x-echo-trailing"); len(v) > 0 {
		_ = grpc.SetTrailer(ctx, metadata.Pairs("x-echo-trailing", v[0]))
	}
	if st := in.GetResponseStatus(); st != nil && st.Code != 0 {
		return nil, status.Error(codes.Code(st.Code), st.Message)
	}
	user := strings.Join(md.Get("x-user-id"), ",")
	deadline := "none" // else milliseconds left, as the server sees them
	if d, ok := ctx.Deadline(); ok {
		deadline = strconv.FormatInt(time.Until(d).Milliseconds(), 10)
	}
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: make([]byte, in.GetResponseSize())},
		Username: user, OauthScope: deadline}, nil
}

func (s grpcTestServer) StreamingOutputCall(in *testgrpc.StreamingOutputCallRequest, stream testgrpc.TestService_StreamingOutputCallServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	waitAck := len(md.Get("x-wait-ack")) > 0
	for i, p := range in.GetResponseParameters() {
		if waitAck && i > 0 {
			select {
			case <-s.acks:
			case <-time.After(10 * time.Second):
				return status.Error(codes.FailedPrecondition, "message not acknowledged: the stream is held back")
			}
		}
		if us := p.GetIntervalUs(); us > 0 {
			select {
			case <-time.After(time.Duration(us) * time.Microsecond):
			case <-stream.Context().Done():
				return stream.Context().Err()
			}
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
			return err
		}
	}
	return nil
}

func (grpcTestServer) StreamingInputCall(stream testgrpc.TestService_StreamingInputCallServer) error {
	sum := 0
	for {
		in, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: int32(sum)})
		}
		if err != nil {
			return err
		}
		sum += len(in.GetPayload().GetBody())
	}
}

func (grpcTestServer) FullDuplexCall(stream testgrpc.TestService_FullDuplexCallServer) error {
	for {
		in, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for _, p := range in.GetResponseParameters() {
			if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
				return err
			}
		}
	}
}

// deadlineWithin reports whether ms, the milliseconds a server saw left
// of a call's deadline, fit a deadline of d set just before: at most d,
// and not more than 2s less (the call's way there, on a loaded machine).
func deadlineWithin(ms string, d time.Duration) bool {
	n, err := strconv.ParseInt(ms, 10, 64)
	left := time.Duration(n) * time.Millisecond
	return err == nil && left <= d && left > d-2*time.Second
}

// startGRPCTestServer serves grpcTestServer on loopback: h2c, or TLS with
// cfg; acks may be nil when no call waits for acknowledgements.
func startGRPCTestServer(t *testing.T, cfg *tls.Config, acks chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if cfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	s := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(s, grpcTestServer{acks: acks})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// grpcClient is a grpc-go client of the TestService through addr (the
// gateway, over h2c), with authority (the Host the gateway routes by) when
// not empty.
func grpcClient(t *testing.T, addr, authority string) testgrpc.TestServiceClient {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if authority != "" {
		opts = append(opts, grpc.WithAuthority(authority))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return testgrpc.NewTestServiceClient(conn)
}

// TestGRPCThroughGateway proxies grpc-go's client to grpc-go's server
// through the gateway (h2c in, HTTP/2 out: h2c, and TLS to a second
// server): unary calls with metadata and trailers both ways, server,
// client and bidirectional streaming, the server's statuses, the client's
// deadline, and the gateway's own refusals as gRPC statuses (no route,
// no token, rate limit, target down).
func TestGRPCThroughGateway(t *testing.T) {
	acks := make(chan struct{})
	plain := startGRPCTestServer(t, nil, acks)
	ca := testcert.NewCA(t, "grpc backends")
	secure := startGRPCTestServer(t, &tls.Config{Certificates: []tls.Certificate{ca.Server(t, time.Time{}, "127.0.0.1").Pair(t)}}, nil)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	caFile := testcert.Write(t, t.TempDir(), "ca.pem", ca.PEM)
	gw := startGateway(t, fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
upstreams:
  plain: {protocol: http2, targets: [{url: "http://%s"}]}
  secure: {protocol: http2, timeout: 2s, targets: [{url: "https://%s"}], tls: {ca_file: %q}}
  dead: {protocol: http2, targets: [{url: "http://%s"}], retry: {retries: 0}}
routes:
  - name: unary
    match: {methods: [POST], path: /grpc.testing.TestService/UnaryCall}
    upstream: plain
    filters:
      - auth: {store: memory, tokens: {t-1: '{"userId":"u-1"}'}, headers: {userId: X-User-Id}}
      - rate_limit: {key: user, rate: 1000, burst: 1000}
  - name: streams
    match: {methods: [POST], prefix: /grpc.testing.TestService}
    upstream: plain
  - name: secure
    match: {host: secure.test, methods: [POST], prefix: /grpc.testing.TestService}
    upstream: secure
  - name: dead
    match: {host: dead.test, methods: [POST], prefix: /grpc.testing.TestService}
    upstream: dead
`, plain, secure, caFile, deadAddr))
	c := grpcClient(t, gw.Addr(), "")
	authed := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer t-1")
	}
	ctx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("unary with metadata", func(t *testing.T) {
		var header, trailer metadata.MD
		c2 := metadata.AppendToOutgoingContext(authed(ctx(t)), "x-echo-initial", "hi", "x-echo-trailing", "bye",
			"x-user-id", "forged")
		res, err := c.UnaryCall(c2, &testgrpc.SimpleRequest{ResponseSize: 70000}, grpc.Header(&header), grpc.Trailer(&trailer))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.GetPayload().GetBody()) != 70000 {
			t.Errorf("payload of %d bytes, want 70000", len(res.GetPayload().GetBody()))
		}
		if res.GetUsername() != "u-1" {
			t.Errorf("the server saw x-user-id %q, want the auth filter's u-1 (never the client's)", res.GetUsername())
		}
		if !deadlineWithin(res.GetOauthScope(), 10*time.Second) {
			t.Errorf("the server's deadline was %sms away, want the client's 10s less the time on the way", res.GetOauthScope())
		}
		if header.Get("x-echo-initial")[0] != "hi" || len(trailer.Get("x-echo-trailing")) != 1 || trailer.Get("x-echo-trailing")[0] != "bye" {
			t.Errorf("header %v, trailer %v", header, trailer)
		}
	})
	t.Run("server status", func(t *testing.T) {
		_, err := c.UnaryCall(authed(ctx(t)), &testgrpc.SimpleRequest{ResponseStatus: &testgrpc.EchoStatus{Code: 9, Message: "not now: é"}})
		if st := status.Convert(err); st.Code() != codes.FailedPrecondition || st.Message() != "not now: é" {
			t.Errorf("got %v", err)
		}
	})
	t.Run("server streaming", func(t *testing.T) {
		var params []*testgrpc.ResponseParameters
		for _, n := range []int32{31415, 9, 2653, 58979} {
			params = append(params, &testgrpc.ResponseParameters{Size: n})
		}
		// The server sends each message once the previous one arrived
		// here: the gateway must pass each on as it comes.
		stream, err := c.StreamingOutputCall(metadata.AppendToOutgoingContext(ctx(t), "x-wait-ack", "1"),
			&testgrpc.StreamingOutputCallRequest{ResponseParameters: params})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for {
			res, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, len(res.GetPayload().GetBody()))
			if len(got) < len(params) {
				acks <- struct{}{}
			}
		}
		if fmt.Sprint(got) != "[31415 9 2653 58979]" {
			t.Errorf("got messages of %v bytes", got)
		}
	})
	t.Run("client streaming", func(t *testing.T) {
		stream, err := c.StreamingInputCall(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{27182, 8, 1828, 45904} {
			if err := stream.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: make([]byte, n)}}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := stream.CloseAndRecv()
		if err != nil || res.GetAggregatedPayloadSize() != 74922 {
			t.Fatalf("got %v, %v", res, err)
		}
	})
	t.Run("bidirectional", func(t *testing.T) {
		// Ping-pong: each answer is read before the next request is sent,
		// so nothing may wait for the end of either stream.
		stream, err := c.FullDuplexCall(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int32{31415, 9, 2653, 58979} {
			if err := stream.Send(&testgrpc.StreamingOutputCallRequest{ResponseParameters: []*testgrpc.ResponseParameters{{Size: n}}}); err != nil {
				t.Fatal(err)
			}
			res, err := stream.Recv()
			if err != nil || len(res.GetPayload().GetBody()) != int(n) {
				t.Fatalf("ping %d: %v, %v", n, res, err)
			}
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != io.EOF {
			t.Fatalf("after the last pong: %v, want EOF", err)
		}
	})
	t.Run("client deadline", func(t *testing.T) {
		c2, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		stream, err := c.StreamingOutputCall(c2, &testgrpc.StreamingOutputCallRequest{
			ResponseParameters: []*testgrpc.ResponseParameters{{Size: 1, IntervalUs: 5_000_000}}})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v, want DEADLINE_EXCEEDED", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the call ended after %v, not at its 300ms deadline", took)
		}
	})
	t.Run("TLS upstream", func(t *testing.T) {
		stream, err := grpcClient(t, gw.Addr(), "secure.test").StreamingInputCall(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: make([]byte, 1234)}}); err != nil {
			t.Fatal(err)
		}
		res, err := stream.CloseAndRecv()
		if err != nil || res.GetAggregatedPayloadSize() != 1234 {
			t.Fatalf("got %v, %v", res, err)
		}
		// The route's 2s timeout is shorter than the client's 10s: the
		// target is told the gateway's deadline.
		unary, err := grpcClient(t, gw.Addr(), "secure.test").UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		if err != nil || !deadlineWithin(unary.GetOauthScope(), 2*time.Second) {
			t.Fatalf("got %v, %v: want the server to see a 2s deadline", unary, err)
		}
	})
	t.Run("metrics by method", func(t *testing.T) {
		text := string(gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/metrics", "").body)
		for _, c := range []struct {
			method, status string
			atLeast        float64
		}{
			{"/grpc.testing.TestService/UnaryCall", "OK", 1},
			{"/grpc.testing.TestService/UnaryCall", "FAILED_PRECONDITION", 1},
			{"/grpc.testing.TestService/StreamingInputCall", "OK", 1},
			{"/grpc.testing.TestService/FullDuplexCall", "OK", 1},
		} {
			if n := metricValue(text, "dubbogw_upstream_grpc_calls_total", "upstream", "plain", "method", c.method, "status", c.status); n < c.atLeast {
				t.Errorf("%s %s: %v calls counted", c.method, c.status, n)
			}
		}
	})
	// The gateway's own refusals reach a gRPC client as gRPC statuses.
	for _, tc := range []struct {
		name   string
		call   func(ctx context.Context) error
		code   codes.Code
		substr string // the message's start
	}{
		{"no token", func(ctx context.Context) error {
			_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
			return err
		}, codes.Unauthenticated, "missing token"},
		{"no route", func(ctx context.Context) error {
			conn, _ := grpc.NewClient(gw.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			defer conn.Close()
			return conn.Invoke(ctx, "/grpc.health.v1.Health/Check", &testgrpc.Empty{}, &testgrpc.Empty{})
		}, codes.Unimplemented, "no route for POST /grpc.health.v1.Health/Check"},
		{"target down", func(ctx context.Context) error {
			_, err := grpcClient(t, gw.Addr(), "dead.test").EmptyCall(ctx, &testgrpc.Empty{})
			return err
		}, codes.Unavailable, "upstream dead target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctx(t))
			st := status.Convert(err)
			// A real gRPC status, the gateway's message first: not grpc-go's
			// reading of an HTTP error ("unexpected HTTP status code...").
			if st.Code() != tc.code || !strings.HasPrefix(st.Message(), tc.substr) {
				t.Errorf("got %v (%s: %q), want %s with %q", err, st.Code(), st.Message(), tc.code, tc.substr)
			}
		})
	}
}

// BenchmarkGRPCProxy puts grpc-go's client calling grpc-go's server
// directly beside the same calls through the gateway (h2c in, an http2
// upstream out), in one run: unary calls with a 1 KiB answer, 64
// goroutines on one client connection. A third path, through a TCP
// forwarder that copies bytes both ways and reads nothing (tcp-forward),
// is the least any proxy can do: the ceiling of a proxy's throughput on
// this machine. A fourth, through nginx's gRPC proxy (grpc_pass, when
// nginx is installed), is what a proxy that terminates HTTP/2 on both
// sides, as the gateway must to route and filter each call, gets here.
//
//	go test -run '^$' -bench GRPCProxy -benchmem -count 5 .
func BenchmarkGRPCProxy(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(s, grpcTestServer{})
	go func() { _ = s.Serve(ln) }()
	b.Cleanup(s.Stop)
	server := ln.Addr().String()
	gw := startGateway(b, fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
upstreams:
  grpc: {protocol: http2, targets: [{url: "http://%s"}]}
routes:
  - name: grpc
    match: {methods: [POST], prefix: /grpc.testing.TestService}
    upstream: grpc
`, server))
	forward := startTCPForwarder(b, server)
	paths := []struct{ name, addr string }{{"direct", server}, {"tcp-forward", forward}, {"gateway", gw.Addr()}}
	if nginx := startNginxGRPC(b, server); nginx != "" {
		paths = append(paths, struct{ name, addr string }{"nginx", nginx})
	}
	for _, c := range paths {
		conn, err := grpc.NewClient(c.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		client := testgrpc.NewTestServiceClient(conn)
		invoke := func(ctx context.Context) (any, error) {
			res, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: 1024})
			if err == nil && len(res.GetPayload().GetBody()) != 1024 {
				err = fmt.Errorf("payload of %d bytes", len(res.GetPayload().GetBody()))
			}
			return nil, err
		}
		if _, err := invoke(context.Background()); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Run("unary/conc=64/"+c.name, func(b *testing.B) { runConcurrently(b, 64, invoke) })
		conn.Close()
	}
}

// TestIDLRouteWithReflection calls grpc-go's TestService, registered as
// an IDL Triple provider, through a route whose descriptors come from the
// provider's gRPC server reflection (grpc-go's, v1): JSON in and out by
// protobuf's JSON mapping. A provider without reflection, and a streaming
// method, are a 502 saying why.
func TestIDLRouteWithReflection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(s, grpcTestServer{})
	reflection.Register(s)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	withReflection := ln.Addr().String()
	without := startGRPCTestServer(t, nil, nil)
	route := func(name, registry, method string) string {
		return fmt.Sprintf(`  - name: %s
    match: {methods: [POST], path: /%s}
    dubbo: {registry: %s, interface: grpc.testing.TestService, method: %s, timeout: 3s, idl: {reflection: true}}
`, name, name, registry, method)
	}
	gw := startGateway(t, fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
registries:
  refl: {providers: {grpc.testing.TestService: ["tri://%s?serialization=protobuf"]}}
  plain: {providers: {grpc.testing.TestService: ["tri://%s?serialization=protobuf"]}}
routes:
%s%s%s`, withReflection, without, route("unary", "refl", "UnaryCall"), route("stream", "refl", "StreamingOutputCall"),
		route("norefl", "plain", "UnaryCall")))

	for range 2 { // the second call uses the descriptors read by the first
		a := gw.do(t, "POST", "/unary", `{"responseSize": 3}`)
		var res struct {
			Payload    struct{ Body string }
			OauthScope string
		}
		if a.status != 200 || json.Unmarshal(a.body, &res) != nil || res.Payload.Body != "AAAA" || !deadlineWithin(res.OauthScope, 3*time.Second) {
			t.Fatalf("got %d %s: want the payload AAAA and the route's 3s deadline", a.status, a.body)
		}
	}
	wantErrorPrefix(400, "BAD_REQUEST", "unary", "the body is not a grpc.testing.SimpleRequest message: ")(t,
		gw.do(t, "POST", "/unary", `{"responseSise": 3}`))
	a := gw.do(t, "POST", "/stream", `{}`)
	if msg := checkError(t, a, 502, "BAD_GATEWAY", "stream"); !strings.Contains(msg, "could not be read through its provider's gRPC reflection") {
		t.Errorf("a streaming method: %q", msg)
	}
	a = gw.do(t, "POST", "/norefl", `{}`)
	if msg := checkError(t, a, 502, "BAD_GATEWAY", "norefl"); !strings.Contains(msg, "could not be read through its provider's gRPC reflection") {
		t.Errorf("a provider without reflection: %q", msg)
	}
}

// startTCPForwarder listens on loopback and copies each connection's
// bytes to and from a new connection to target, both ways, until either
// side closes: a proxy that reads nothing of what it forwards.
func startTCPForwarder(tb testing.TB, target string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn // closed by the clean-up, so that its wait ends even if a client's conn was left open
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			wg.Go(func() { pipe(out, in) })
			wg.Go(func() { pipe(in, out) })
		}
	})
	return ln.Addr().String()
}
