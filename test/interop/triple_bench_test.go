package interop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	dgclient "dubbo.apache.org/dubbo-go/v3/client"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/triple"
	dgo "github.com/apache/dubbo-go-hessian2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/triple"
)

// benchUser is org.dubbogw.interop.User as dubbo-go's consumer decodes it.
type benchUser struct {
	ID    string   `hessian:"id"`
	Name  string   `hessian:"name"`
	Age   int32    `hessian:"age"`
	Email string   `hessian:"email"`
	Tags  []string `hessian:"tags"`
}

func (*benchUser) JavaClassName() string { return userClass }

var registerBenchUser = sync.OnceFunc(func() { dgo.RegisterPOJO(&benchUser{}) })

// BenchmarkTripleCall puts, in one run against one dubbo-go v3.3.0
// provider process serving both protocols, dubbogw's Triple client beside
// dubbo-go's own Triple client (its new client API, hessian2, typed: the
// way a Go consumer without IDL calls a Triple provider) and beside
// dubbogw's dubbo client making the same typed call over the dubbo
// protocol: 1 and 64 goroutines. grpc-go's client sending the Triple
// wrapper by hand (grpc-go-raw) shows what a client without net/http's
// per-stream costs gets from the same provider.
//
// greet() is called by all four. getUser("7") only by dubbogw's two:
// dubbo-go 3.3.0's own Triple client fails every call with arguments to
// this provider ("unmarshal into []interface {}: request params len is 0,
// but has 1 actually"), while dubbogw's calls succeed.
//
//	go test -run '^$' -bench TripleCall -benchmem -count 5 .
func BenchmarkTripleCall(b *testing.B) {
	registerBenchUser()
	p := startDubboGoProvider(b, providerConfig{Tri: true})
	tri := triple.New(triple.Options{Timeout: 5 * time.Second})
	dub := dubbo.New(dubbo.Options{Timeout: 5 * time.Second})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tri.Close(ctx)
		_ = dub.Close(ctx)
	})
	cli, err := dgclient.NewClient(dgclient.WithClientProtocolTriple(), dgclient.WithClientSerialization("hessian2"),
		dgclient.WithClientURL("tri://"+p.TriAddr))
	if err != nil {
		b.Fatal(err)
	}
	conn, err := cli.Dial(userService, dgclient.WithVersion(userVersion))
	if err != nil {
		b.Fatal(err)
	}
	// grpc-go's client (one writer per connection batching every stream's
	// frames) sending the Triple wrapper by hand: what a client with none
	// of net/http's per-stream costs gets from this provider, the ceiling
	// for ours.
	gconn, err := grpc.NewClient(p.TriAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gconn.Close() })
	var greetWrapper []byte
	greetWrapper = protowire.AppendTag(greetWrapper, 1, protowire.BytesType)
	greetWrapper = protowire.AppendString(greetWrapper, "hessian2")
	type client struct {
		name   string
		invoke func(ctx context.Context) (any, error)
	}
	ours := func(inv *dubbo.Invocation) []client {
		return []client{
			{"dubbogw-tri", func(ctx context.Context) (any, error) {
				res, err := tri.Invoke(ctx, dubbo.Target{Addr: p.TriAddr}, inv)
				if err != nil {
					return nil, err
				}
				return res.Value, nil
			}},
			{"dubbogw-dubbo", func(ctx context.Context) (any, error) {
				res, err := dub.Invoke(ctx, p.Addr, inv)
				if err != nil {
					return nil, err
				}
				return res.Value, nil
			}},
		}
	}
	greet := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "greet"}
	getUser := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "getUser",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"7"}}
	calls := []struct {
		name    string
		clients []client
		check   func(any) error
	}{
		{"greet", append(ours(greet), client{"dubbo-go-tri", func(ctx context.Context) (any, error) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var s string
			err := conn.CallUnary(ctx, []any{}, &s, "Greet")
			return s, err
		}}, client{"grpc-go-raw", func(ctx context.Context) (any, error) {
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "tri-service-version", userVersion), 5*time.Second)
			defer cancel()
			req, resp := greetWrapper, []byte(nil)
			if err := gconn.Invoke(ctx, "/"+userService+"/Greet", &req, &resp); err != nil {
				return nil, err
			}
			vals, err := wrapperArgs(resp)
			if err != nil || len(vals) != 1 {
				return nil, fmt.Errorf("bad response wrapper (%d values): %v", len(vals), err)
			}
			return dgo.NewDecoder(vals[0]).Decode()
		}}), func(v any) error {
			if v != "hello from dubbo-go" {
				return fmt.Errorf("got %#v", v)
			}
			return nil
		}},
		{"getUser", ours(getUser), checkUser7},
	}
	for _, call := range calls {
		for _, c := range call.clients {
			v, err := c.invoke(context.Background())
			if err == nil {
				err = call.check(v)
			}
			if err != nil {
				b.Fatalf("%s %s: %v", call.name, c.name, err)
			}
		}
		for _, conc := range []int{1, 64} {
			for _, c := range call.clients {
				b.Run(fmt.Sprintf("%s/conc=%d/%s", call.name, conc, c.name), func(b *testing.B) {
					runConcurrently(b, conc, c.invoke)
				})
			}
		}
	}
}

// checkUser7 checks a getUser("7") answer in our model.
func checkUser7(v any) error {
	o, ok := v.(*hessian.Object)
	if !ok || o.Class != userClass {
		return fmt.Errorf("result is a %T, want a %s object", v, userClass)
	}
	if id, _ := o.Get("id"); id != "7" {
		return fmt.Errorf("result's id = %#v, want 7", id)
	}
	return nil
}

// BenchmarkGatewayTriple puts HTTP→Triple beside HTTP→dubbo through one
// gateway, against one dubbo-go provider process serving both protocols:
// GET /users/7 on a route with protocol: tri and on one with protocol:
// dubbo (typed, the same argument mapping and result), 64 concurrent
// HTTP/1.1 clients. It reports where each request's CPU went: the
// provider process's (provider-cpu-µs/op) and this one's, the HTTP
// clients and the gateway (gateway+client-cpu-µs/op): with the two cores
// busy, their sum bounds the throughput.
//
//	go test -run '^$' -bench GatewayTriple -benchmem -count 5 .
func BenchmarkGatewayTriple(b *testing.B) {
	p := startDubboGoProvider(b, providerConfig{Tri: true})
	route := func(name, proto, addr string) string {
		return fmt.Sprintf(`  - name: %s
    match: {methods: [GET], path: "/%s/users/{id}"}
    dubbo: {registry: %s, protocol: %s, interface: %s, version: %s, method: getUser, generic: false, timeout: 5s,
            params: [{type: java.lang.String, from: path, name: id}]}
`, name, name, name, proto, userService, userVersion)
	}
	gw := startGateway(b, fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
registries:
  tri: {providers: {%s: ["tri://%s?version=1.0.0"]}}
  dubbo: {providers: {%s: ["dubbo://%s?version=1.0.0"]}}
routes:
%s%s`, userService, p.TriAddr, userService, p.Addr, route("tri", "tri", p.TriAddr), route("dubbo", "dubbo", p.Addr)))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, name := range []string{"dubbo", "tri"} {
		url := gw.base + "/" + name + "/users/7"
		invoke := func(ctx context.Context) (any, error) {
			resp, err := client.Get(url)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"user-7"`))) {
				err = fmt.Errorf("%d %s", resp.StatusCode, body)
			}
			return nil, err
		}
		if _, err := invoke(context.Background()); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Run("getUser/conc=64/"+name, func(b *testing.B) {
			provider, self := processCPU(b, strconv.Itoa(p.pid)), processCPU(b, "self")
			runConcurrently(b, 64, invoke)
			b.ReportMetric(float64(processCPU(b, strconv.Itoa(p.pid))-provider)/float64(b.N)/1e3, "provider-cpu-µs/op")
			b.ReportMetric(float64(processCPU(b, "self")-self)/float64(b.N)/1e3, "gateway+client-cpu-µs/op")
		})
	}
}
