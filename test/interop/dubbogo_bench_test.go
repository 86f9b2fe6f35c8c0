package interop

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "dubbo.apache.org/dubbo-go/v3/cluster/cluster/failover"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	//lint:ignore SA1019 dubbo-go v3.3.0's generic consumer, GenericService, exists only in the config API.
	dgconfig "dubbo.apache.org/dubbo-go/v3/config"
	"dubbo.apache.org/dubbo-go/v3/config/generic"
	_ "dubbo.apache.org/dubbo-go/v3/filter/generic"
	_ "dubbo.apache.org/dubbo-go/v3/filter/graceful_shutdown"
	_ "dubbo.apache.org/dubbo-go/v3/protocol/dubbo"
	_ "dubbo.apache.org/dubbo-go/v3/proxy/proxy_factory"
	dgo "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// BenchmarkGenericCall puts dubbogw's client and dubbo-go's own generic
// consumer (GenericService, the way a Go gateway calls a provider it has
// no classes for) side by side, in one run, against the same dubbo-go
// v3.3.0 provider process: the same generic calls, 1 and 64 goroutines.
// Both clients run with their defaults (one multiplexed connection for
// dubbogw; dubbo-go's getty client pool) and a 5s call timeout.
//
// Besides ns/op (the inverse of throughput) and -benchmem's allocations
// (the consumer's only: the provider is another process), each run
// reports calls/s and the p50 and p99 of the per-call latencies.
//
//	go test -run '^$' -bench GenericCall -benchmem -count 5 .
func BenchmarkGenericCall(b *testing.B) {
	p := startDubboGoProvider(b, providerConfig{})
	ours := dubbo.New(dubbo.Options{Timeout: 5 * time.Second})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ours.Close(ctx)
	})
	theirs, err := dubboGoGenericService(p.Addr)
	if err != nil {
		b.Fatal(err)
	}

	calls := []struct {
		name   string
		method string
		types  []string
		args   []any // as ours and dubbo-go's both hold them: strings and int32
		check  func(v any) error
	}{
		{"getUser", "getUser", []string{"java.lang.String"}, []any{"7"}, func(v any) error { return checkGenericUser(v, "7") }},
		{"listUsers10", "listUsers", []string{"int"}, []any{int32(10)}, func(v any) error { return checkGenericUsers(v, 10) }},
	}
	for _, call := range calls {
		oursInv := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: call.method,
			ParamTypes: call.types, Args: call.args, Generic: true}
		theirArgs := make([]dgo.Object, len(call.args))
		for i, a := range call.args {
			theirArgs[i] = a
		}
		clients := []struct {
			name   string
			invoke func(ctx context.Context) (any, error)
		}{
			{"dubbogw", func(ctx context.Context) (any, error) {
				res, err := ours.Invoke(ctx, p.Addr, oursInv)
				if err != nil {
					return nil, err
				}
				return res.Value, nil
			}},
			{"dubbo-go", func(ctx context.Context) (any, error) {
				return theirs.Invoke(ctx, call.method, call.types, theirArgs)
			}},
		}
		// Both answer right before either is timed.
		for _, c := range clients {
			v, err := c.invoke(context.Background())
			if err == nil {
				err = call.check(v)
			}
			if err != nil {
				b.Fatalf("%s %s: %v", c.name, call.name, err)
			}
		}
		for _, conc := range []int{1, 64} {
			for _, c := range clients {
				b.Run(fmt.Sprintf("%s/conc=%d/%s", call.name, conc, c.name), func(b *testing.B) {
					runConcurrently(b, conc, c.invoke)
				})
			}
		}
		// The floor for one caller: what no client can beat.
		b.Run(call.name+"/conc=1/floor", func(b *testing.B) {
			floor, err := newFloorClient(p.Addr)
			if err != nil {
				b.Fatal(err)
			}
			defer floor.Close()
			invoke := func(context.Context) (any, error) { return floor.call(oursInv) }
			if v, err := invoke(context.Background()); err != nil || call.check(v) != nil {
				b.Fatalf("floor %s: %v, %v", call.name, v, err)
			}
			runConcurrently(b, 1, invoke)
		})
	}
}

// floorClient is the least a client can do for one sequential caller: one
// connection, no multiplexing, no goroutine hand-offs, no deadline; it
// encodes the same request bytes as dubbogw's client, writes them, reads
// the answer and decodes it, all on the calling goroutine. Its throughput
// against the provider is the ceiling of any client's with one caller, so
// it tells how much of a sequential call is the provider's and the
// kernel's rather than the client's.
type floorClient struct {
	nc    net.Conn
	r     *protocol.Reader
	e     *hessian.Encoder
	d     *hessian.Decoder
	frame []byte
	id    uint64
}

func newFloorClient(addr string) (*floorClient, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dialling the provider: %w", err)
	}
	return &floorClient{nc: nc, r: protocol.NewReader(nc, protocol.DefaultMaxPayload),
		e: hessian.NewEncoder(nil), d: hessian.NewDecoder(nil)}, nil
}

func (f *floorClient) Close() error { return f.nc.Close() }

func (f *floorClient) call(inv *dubbo.Invocation) (any, error) {
	f.id++
	req := protocol.Request{ID: f.id, TwoWay: true, Path: inv.Interface, Version: inv.Version,
		Method: protocol.MethodInvoke, ParamTypes: protocol.GenericParamTypes,
		Attachments: map[string]string{"path": inv.Interface, "interface": inv.Interface,
			"version": inv.Version, "timeout": "5000", "generic": "true"},
		Args: []any{inv.Method, &hessian.List{Type: protocol.GenericTypesListType, Items: toAny(inv.ParamTypes)},
			&hessian.List{Type: protocol.GenericArgsListType, Items: inv.Args}}}
	var err error
	if f.frame, err = protocol.AppendRequest(f.frame[:0], f.e, &req); err != nil {
		return nil, err
	}
	if _, err := f.nc.Write(f.frame); err != nil {
		return nil, err
	}
	h, body, err := f.r.Next()
	if err != nil {
		return nil, err
	}
	resp, err := protocol.DecodeResponse(h, body, f.d)
	if err != nil {
		return nil, err
	}
	if resp.Kind == protocol.KindException {
		return nil, fmt.Errorf("provider threw %v", resp.Value)
	}
	return resp.Value, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// runConcurrently makes b.N calls from conc goroutines and reports calls/s
// and the p50 and p99 latencies.
func runConcurrently(b *testing.B, conc int, invoke func(context.Context) (any, error)) {
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var failures atomic.Int64
	var firstErr atomic.Pointer[error]
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(latencies) {
					return
				}
				t0 := time.Now()
				_, err := invoke(ctx)
				latencies[i] = time.Since(t0)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failures.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed, the first with: %v", n, b.N, *firstErr.Load())
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(percentile(latencies, 0.50))/1e3, "p50-µs")
	b.ReportMetric(float64(percentile(latencies, 0.99))/1e3, "p99-µs")
}

// percentile of sorted latencies (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// dubboGoConfig loads dubbo-go's consumer configuration, which it keeps in
// package state and starts once per process; references are made per
// benchmark run.
var dubboGoConfig = sync.OnceValue(func() error {
	root := dgconfig.NewRootConfigBuilder().
		SetApplication(dgconfig.NewApplicationConfigBuilder().
			SetName("dubbogw-bench-consumer").
			SetMetadataType("remote"). // no MetadataService listener
			Build()).
		// dubbo-go logs to stdout; at "fatal" it keeps quiet.
		SetLogger(&dgconfig.LoggerConfig{Level: "fatal", File: &dgconfig.File{}}).
		Build()
	if err := dgconfig.Load(dgconfig.WithRootConfig(root)); err != nil {
		return fmt.Errorf("loading dubbo-go's consumer config: %w", err)
	}
	return nil
})

// dubboGoGenericService is dubbo-go's generic consumer of the provider's
// UserService at addr, connected directly (no registry).
func dubboGoGenericService(addr string) (*generic.GenericService, error) {
	if err := dubboGoConfig(); err != nil {
		return nil, err
	}
	ref := &dgconfig.ReferenceConfig{
		InterfaceName:  userService,
		Version:        userVersion,
		URL:            "dubbo://" + addr,
		Protocol:       "dubbo",
		Serialization:  "hessian2",
		Generic:        "true",
		Retries:        "0",
		RequestTimeout: "5s",
	}
	if err := ref.Init(dgconfig.GetRootConfig()); err != nil {
		return nil, fmt.Errorf("initialising dubbo-go's reference: %w", err)
	}
	ref.GenericLoad("bench-" + addr)
	gs, ok := ref.GetRPCService().(*generic.GenericService)
	if !ok {
		return nil, fmt.Errorf("dubbo-go's reference is a %T, not a *generic.GenericService", ref.GetRPCService())
	}
	return gs, nil
}

// checkGenericUser checks v is the generic form of getUser(id), as either
// client holds it: our *hessian.Map or dubbo-go-hessian2's map[any]any.
func checkGenericUser(v any, id string) error {
	var got any
	switch m := v.(type) {
	case *hessian.Map:
		got, _ = m.Get("iD")
	case map[any]any:
		got = m["iD"]
	default:
		return fmt.Errorf("result is a %T, want a map", v)
	}
	if got != id {
		return fmt.Errorf("result's iD = %#v, want %q", got, id)
	}
	return nil
}

// checkGenericUsers checks v is the generic form of listUsers(n).
func checkGenericUsers(v any, n int) error {
	var items []any
	switch l := v.(type) {
	case *hessian.List:
		items = l.Items
	case []any:
		items = l
	default:
		return fmt.Errorf("result is a %T, want a list", v)
	}
	if len(items) != n {
		return fmt.Errorf("%d users, want %d", len(items), n)
	}
	for i, it := range items {
		if err := checkGenericUser(it, fmt.Sprint(i)); err != nil {
			return fmt.Errorf("user %d: %w", i, err)
		}
	}
	return nil
}
