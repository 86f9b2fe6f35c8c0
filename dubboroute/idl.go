package dubboroute

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/idl"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/dubbogw/dubbogw/triple"
)

// IDL makes a route call a protobuf (IDL) method over Triple: the
// request's JSON body is the request message (protobuf's JSON mapping),
// and the response message is answered as JSON.
type IDL struct {
	// DescriptorSet is a FileDescriptorSet file holding the service and
	// every type it uses (protoc --include_imports --descriptor_set_out).
	// Read when the configuration is loaded or reloaded.
	DescriptorSet string `yaml:"descriptor_set"`
	// Reflection reads the service's descriptors from a provider's gRPC
	// server reflection (v1, else v1alpha) at the route's first call, and
	// again after its providers change (keeping the last good ones when a
	// read fails). Instead of descriptor_set.
	Reflection bool `yaml:"reflection"`
}

// reflectedMethod keeps an IDL route's method as read through its
// providers' reflection, with the provider snapshot it was read under.
type reflectedMethod struct {
	reading chan struct{} // holds one token: one read at a time
	last    atomic.Pointer[reflected]
}

func newReflectedMethod() *reflectedMethod {
	rm := &reflectedMethod{reading: make(chan struct{}, 1)}
	rm.reading <- struct{}{}
	return rm
}

type reflected struct {
	m        *idl.Method
	snapshot []*cluster.Provider
}

// method returns the method for the providers of snapshot: the one read
// under the same snapshot, else a new read from one of them (the last
// good one when that fails).
func (rm *reflectedMethod) method(ctx context.Context, client *triple.Client, snapshot []*cluster.Provider, service, method string) (*idl.Method, error) {
	same := func(r *reflected) bool {
		return r != nil && len(r.snapshot) == len(snapshot) && (len(snapshot) == 0 || &r.snapshot[0] == &snapshot[0])
	}
	if r := rm.last.Load(); same(r) || r != nil && len(snapshot) == 0 {
		return r.m, nil
	}
	// Wait for another call's read within this call's own deadline.
	select {
	case <-rm.reading:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the descriptors of %s: %w", service, ctx.Err())
	}
	defer func() { rm.reading <- struct{}{} }()
	r := rm.last.Load()
	if same(r) {
		return r.m, nil
	}
	if len(snapshot) == 0 || client == nil {
		return nil, fmt.Errorf("no provider of %s to read its descriptors from", service)
	}
	p := snapshot[rand.IntN(len(snapshot))]
	fetch := func(ctx context.Context, symbol, filename string) ([][]byte, error) {
		return client.Reflect(ctx, dubbo.Target{Addr: p.Addr, TLS: p.TLS}, triple.ReflectionQuery{Symbol: symbol, Filename: filename})
	}
	m, err := idl.LoadFromReflection(ctx, fetch, service, method)
	if err != nil {
		if r != nil {
			// Keep serving with what was read before; try again when the
			// providers change next.
			rm.last.Store(&reflected{m: r.m, snapshot: snapshot})
			return r.m, nil
		}
		return nil, fmt.Errorf("reading the descriptors of %s through the gRPC reflection of %s: %w", service, p.Addr, err)
	}
	rm.last.Store(&reflected{m: m, snapshot: snapshot})
	return m, nil
}

// waitProviders returns dir's providers, waiting (within ctx) for the
// registry's first answer when it has not given one yet.
func waitProviders(ctx context.Context, dir *registry.Directory) []*cluster.Provider {
	providers := dir.Providers()
	if len(providers) == 0 && dir.State() == registry.DirPending {
		select {
		case <-dir.Ready():
			providers = dir.Providers()
		case <-ctx.Done():
		}
	}
	return providers
}
