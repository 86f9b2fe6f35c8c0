package interop

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	dgclient "dubbo.apache.org/dubbo-go/v3/client"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/triple"

	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
)

// TestDubboGoClientToOurTripleProvider: dubbo-go v3.3.0's own Triple
// client (hessian2, no IDL: the way a Go consumer calls a Java interface)
// calls the in-process provider's Triple side, which the quickstart and
// the bench harness serve: an HTTP/2, gRPC framing and wrapper
// implementation nobody here wrote reads our answers, and ours reads its
// requests: a string, a POJO (decoded into dubbo-go's registered type),
// a method's exception (an error naming its class) and an unknown
// method. Only methods without parameters: dubbo-go 3.3.0's client sends
// an empty argument list whatever it is given (seen here as a wrapper
// with no args; its own provider then refuses the call, see
// BenchmarkTripleCall).
func TestDubboGoClientToOurTripleProvider(t *testing.T) {
	registerBenchUser()
	s := provider.NewServer(nil)
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	const extra = "org.dubbogw.interop.NoArgs"
	s.Register(provider.Service{Interface: extra, Methods: map[string][]provider.Method{
		"me": {{Func: func(context.Context, []any) (any, error) {
			return &hessian.Object{Class: userClass, Fields: []hessian.Field{
				{Name: "id", Value: "0"}, {Name: "name", Value: "nobody"}, {Name: "age", Value: int32(41)},
				{Name: "email", Value: "0@example.com"}, {Name: "tags", Value: &hessian.List{Items: []any{"a", "b"}}},
			}}, nil
		}}},
		"fail": {{Func: func(context.Context, []any) (any, error) {
			return nil, provider.Exception(demo.ExceptionClass, "boom")
		}}},
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.ServeTriple(ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	cli, err := dgclient.NewClient(dgclient.WithClientProtocolTriple(), dgclient.WithClientSerialization("hessian2"),
		dgclient.WithClientURL("tri://"+addr.String()))
	if err != nil {
		t.Fatal(err)
	}
	dial := func(iface string) *dgclient.Connection {
		conn, err := cli.Dial(iface)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	users, noArgs := dial(demo.UserInterface), dial(extra)
	call := func(conn *dgclient.Connection, method string, out any) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return conn.CallUnary(ctx, []any{}, out, method)
	}
	var greeting string
	if err := call(users, "greet", &greeting); err != nil || greeting != "Hello, world" {
		t.Errorf("greet(): %q, %v", greeting, err)
	}
	var me benchUser
	if err := call(noArgs, "me", &me); err != nil || me.ID != "0" || me.Name != "nobody" || me.Age != 41 || strings.Join(me.Tags, ",") != "a,b" {
		t.Errorf("me(): %+v, %v", me, err)
	}
	if err := call(noArgs, "fail", &greeting); err == nil || !strings.Contains(err.Error(), demo.ExceptionClass+": boom") {
		t.Errorf("fail(): %v", err)
	}
	if err := call(users, "nosuch", &greeting); err == nil || !strings.Contains(err.Error(), "not found method nosuch") {
		t.Errorf("an unknown method: %v", err)
	}
}
