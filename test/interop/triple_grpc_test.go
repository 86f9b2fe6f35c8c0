package interop

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/triple"
)

// echoService is the non-IDL service the grpc-go server below serves:
//
//	interface org.dubbogw.tls.Echo { String echo(String s); }  // "echo " + s + " from " + the x-tenant attachment
const echoService = "org.dubbogw.tls.Echo"

// rawCodec hands grpc-go's server the message bytes as they are: the
// Triple wrapper is decoded by hand with protowire below.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = slices.Clone(data)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// startGRPCTripleServer starts grpc-go (google.golang.org/grpc) as a Triple
// provider of echoService over TLS with cfg: an implementation of HTTP/2,
// TLS with ALPN and gRPC framing nobody here wrote, with the wrapper
// message read by protowire and the arguments by dubbo-go-hessian2.
func startGRPCTripleServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handler := func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		if method != "/"+echoService+"/echo" {
			return fmt.Errorf("unknown method %s", method) // grpc-go answers UNKNOWN
		}
		var req []byte
		if err := stream.RecvMsg(&req); err != nil {
			return err
		}
		args, err := wrapperArgs(req)
		if err != nil || len(args) != 1 {
			return fmt.Errorf("bad request wrapper (%d args): %v", len(args), err)
		}
		s, err := hessian.NewDecoder(args[0]).Decode()
		if err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(stream.Context())
		result := fmt.Sprintf("echo %v from %s", s, strings.Join(md.Get("x-tenant"), ","))
		e := hessian.NewEncoder()
		if err := e.Encode(result); err != nil {
			return err
		}
		var resp []byte
		resp = protowire.AppendTag(resp, 1, protowire.BytesType)
		resp = protowire.AppendString(resp, "hessian2")
		resp = protowire.AppendTag(resp, 2, protowire.BytesType)
		resp = protowire.AppendBytes(resp, e.Buffer())
		resp = protowire.AppendTag(resp, 3, protowire.BytesType)
		resp = protowire.AppendString(resp, "java.lang.String")
		return stream.SendMsg(&resp)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)), grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(handler))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// wrapperArgs reads the args of a TripleRequestWrapper.
func wrapperArgs(b []byte) ([][]byte, error) {
	var args [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			return nil, fmt.Errorf("field %d has wire type %d", num, typ)
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 2 {
			args = append(args, v)
		}
	}
	return args, nil
}

// TestTripleOverTLS calls a Triple provider over TLS with a client
// certificate (mTLS), directly and through the gateway (a static tri://
// URL saying ssl-enabled=true, dubbo.tls giving the CA and the client
// pair); without the client certificate, or trusting another CA, the call
// fails as a connection failure naming TLS, not a hang.
func TestTripleOverTLS(t *testing.T) {
	ca := testcert.NewCA(t, "triple providers")
	addr := startGRPCTripleServer(t, ca.MTLSServerConfig(t, "127.0.0.1"))
	clientPair := ca.Client(t, "dubbogw")
	inv := func() *dubbo.Invocation {
		return &dubbo.Invocation{Interface: echoService, Method: "echo", ParamTypes: []string{"java.lang.String"},
			Args: []any{"hi"}, Attachments: map[string]string{"x-tenant": "acme"}}
	}
	call := func(t *testing.T, cfg *tls.Config) (*dubbo.Result, error) {
		c := triple.New(triple.Options{TLS: cfg})
		defer c.Close(context.Background())
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		return c.Invoke(ctx, dubbo.Target{Addr: addr, TLS: true}, inv())
	}

	t.Run("mTLS", func(t *testing.T) {
		cfg := ca.ClientConfig()
		cfg.Certificates = []tls.Certificate{clientPair.Pair(t)}
		res, err := call(t, cfg)
		if err != nil || res.Value != "echo hi from acme" {
			t.Fatalf("got %v, %v", res, err)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		_, err := call(t, ca.ClientConfig())
		if !errors.Is(err, dubbo.ErrConnect) && !errors.Is(err, dubbo.ErrConnectionLost) {
			t.Fatalf("got %v, want a connection failure", err)
		}
	})
	t.Run("another CA", func(t *testing.T) {
		other := testcert.NewCA(t, "someone else")
		cfg := other.ClientConfig()
		cfg.Certificates = []tls.Certificate{clientPair.Pair(t)}
		_, err := call(t, cfg)
		if !errors.Is(err, dubbo.ErrConnect) || !strings.Contains(err.Error(), "TLS") {
			t.Fatalf("got %v, want ErrConnect naming TLS", err)
		}
	})
	t.Run("through the gateway", func(t *testing.T) {
		dir := t.TempDir()
		file := func(name string, data []byte) string { return testcert.Write(t, dir, name, data) }
		gw := startGateway(t, fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
dubbo: {tls: {ca_file: %q, cert_file: %q, key_file: %q}}
registries:
  local: {providers: {%s: ["tri://%s/%s?ssl-enabled=true"]}}
routes:
  - name: echo
    match: {methods: [GET], path: "/echo/{s}"}
    dubbo: {registry: local, protocol: tri, interface: %s, method: echo, attachments: {x-tenant: gw},
            params: [{type: java.lang.String, from: path, name: s}]}
`, file("ca.pem", ca.PEM), file("client.pem", clientPair.CertPEM), file("client-key.pem", clientPair.KeyPEM),
			echoService, addr, echoService, echoService))
		wantJSON(`"echo there from gw"`)(t, gw.do(t, "GET", "/echo/there", ""))
	})
}

// TestGRPCClientToTripleThroughGateway: a plain gRPC client (grpc-go, the
// Triple wrapper built by hand with protowire and dubbo-go-hessian2) calls
// a dubbo-go Triple provider through a gateway route to an http2
// upstream: Triple is gRPC on the wire, and the gateway passes it
// through, metadata (tri-service-version) and trailers included.
func TestGRPCClientToTripleThroughGateway(t *testing.T) {
	registerBenchUser()
	p := startDubboGoProvider(t, providerConfig{Tri: true})
	gw := startGateway(t, fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
upstreams:
  tri: {protocol: http2, targets: [{url: "http://%s"}]}
routes:
  - name: tri
    match: {methods: [POST], prefix: /%s}
    upstream: tri
`, p.TriAddr, userService))
	conn, err := grpc.NewClient(gw.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call := func(t *testing.T, version, method string, arg any) ([]byte, error) {
		t.Helper()
		e := hessian.NewEncoder()
		if err := e.Encode(arg); err != nil {
			t.Fatal(err)
		}
		var req []byte
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendString(req, "hessian2")
		req = protowire.AppendTag(req, 2, protowire.BytesType)
		req = protowire.AppendBytes(req, e.Buffer())
		req = protowire.AppendTag(req, 3, protowire.BytesType)
		req = protowire.AppendString(req, "java.lang.String")
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "tri-service-version", version), 5*time.Second)
		defer cancel()
		var resp []byte
		err := conn.Invoke(ctx, "/"+userService+"/"+method, &req, &resp, grpc.ForceCodec(rawCodec{}))
		return resp, err
	}
	resp, err := call(t, userVersion, "GetUser", "7")
	if err != nil {
		t.Fatal(err)
	}
	data, err := wrapperArgs(resp)
	if err != nil || len(data) != 1 {
		t.Fatalf("response wrapper: %d results, %v", len(data), err)
	}
	v, err := hessian.NewDecoder(data[0]).Decode()
	if u, ok := v.(*benchUser); err != nil || !ok || u.ID != "7" || u.Name != "user-7" {
		t.Fatalf("got %#v, %v", v, err)
	}
	// The provider's own refusal passes through as its gRPC status.
	_, err = call(t, "9.9.9", "GetUser", "7")
	if st := status.Convert(err); st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "9.9.9") {
		t.Fatalf("a version the provider does not serve: %v", err)
	}
}
