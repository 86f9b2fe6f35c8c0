package zookeeper

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/registry"
)

// offersMetadata is a revision's metadata with the cases an instance's
// providers are made from: services on the instance's dubbo endpoint or
// their own port, skipped ones (another protocol, no interface, no port,
// a weight that is not a number, consumers, no hessian2), and parameters
// that become provider fields.
func offersMetadata() *registry.MetadataInfo {
	params := func(kv ...string) cluster.Params {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return cluster.NewParams(m)
	}
	return &registry.MetadataInfo{App: "app", Revision: "r1", Services: map[string]*registry.ServiceInfo{
		"a:dubbo":       {Name: "com.example.A", Protocol: "dubbo", Params: params("methods", "get,put", "weight", "50", "timestamp", "1700000000000", "pid", "7")},
		"b:dubbo":       {Name: "com.example.B", Protocol: "dubbo", Port: 20001, Group: "g", Version: "1.0.0", Params: params("warmup", "1000")},
		"c:tri":         {Name: "com.example.C", Protocol: "tri", Port: 50051},
		"d:dubbo":       {Protocol: "dubbo", Port: 20880},
		"e:dubbo":       {Name: "com.example.E", Protocol: "dubbo", Params: params("weight", "heavy")},
		"f:dubbo":       {Name: "com.example.F", Protocol: "dubbo", Params: params("category", "consumers")},
		"g:dubbo":       {Name: "com.example.G", Protocol: "dubbo", Params: params("serialization", "protobuf")},
		"h:dubbo:port":  {Name: "com.example.H", Protocol: "dubbo", Port: 70000},
		"i:dubbo:path":  {Path: "com.example.I", Protocol: "dubbo", Port: 20002, Params: params("disabled", "true")},
		"j:dubbo:nil":   nil,
		"k:dubbo:fixed": {Name: "com.example.K", Protocol: "dubbo", Port: 20003},
	}}
}

// TestOfferNodes checks the providers made from a revision's prepared
// offers against those parsed for each instance from its provider URLs
// (MetadataInfo.ProviderURLs, then newProviderNode: how every instance's
// providers were made before offers), for instances with and without a
// dubbo endpoint.
func TestOfferNodes(t *testing.T) {
	m := offersMetadata()
	offers := nodeOffers(m)
	instances := []*registry.Instance{
		{App: "app", Host: "10.0.0.1", Port: 9999, Revision: "r1", Endpoints: []registry.Endpoint{{Port: 50051, Protocol: "tri"}, {Port: 20880, Protocol: "dubbo"}}},
		{App: "app", Host: "10.0.0.2", Port: 9999, Revision: "r1"},
		{App: "app", Host: "fe80::1", Revision: "r1", Endpoints: []registry.Endpoint{{Port: 20990, Protocol: "dubbo"}}},
	}
	for _, inst := range instances {
		t.Run(inst.Host, func(t *testing.T) {
			origin := &nodeOrigin{app: "app", instance: inst.Host, revision: "r1"}
			var skipped []string
			got := offerNodes(offers, inst, origin, func(service, reason string) { skipped = append(skipped, service+": "+reason) })

			urls, wantSkipped := m.ProviderURLs(inst)
			var want []*providerNode
			for _, u := range urls {
				n, reason := newProviderNode(u)
				if n == nil {
					wantSkipped = append(wantSkipped, u.Interface+": "+reason)
					continue
				}
				want = append(want, n)
			}
			if len(got) != len(want) {
				t.Fatalf("%d providers, want %d: %v", len(got), len(want), got)
			}
			for i, n := range got {
				w := want[i]
				if n.match != w.match || n.origin != origin {
					t.Errorf("provider %d: match %+v origin %p, want %+v %p", i, n.match.Value(), n.origin, w.match.Value(), origin)
				}
				p, q := n.provider, w.provider
				if p.Addr != q.Addr || p.Weight != q.Weight || p.Warmup != q.Warmup || !p.Timestamp.Equal(q.Timestamp) || p.Params != q.Params {
					t.Errorf("provider %d: %+v\nwant        %+v", i, p, q)
				}
			}
			// The same services are skipped (reasons name them by key, or
			// by interface where the URL's parse refused them).
			if len(skipped) != len(wantSkipped) {
				t.Errorf("skipped %q\nwant    %q", skipped, wantSkipped)
			}
		})
	}
	// The instances' providers are their own: changing one changes no other.
	a := offerNodes(offers, instances[0], nil, func(string, string) {})
	b := offerNodes(offers, instances[1], nil, func(string, string) {})
	a[0].provider.Weight = 1
	if b[0].provider.Weight == 1 || offers[0].node.provider.Weight == 1 {
		t.Error("instances share a provider")
	}
}

// BenchmarkInstanceNodes is the work of one instance's change at
// application level (it moved to a revision whose metadata is known):
// 10 services of 15 parameters each. "parse" parses each service's URL for
// the instance (how it was done before offers); "offers" copies the
// revision's prepared nodes.
func BenchmarkInstanceNodes(b *testing.B) {
	m := &registry.MetadataInfo{App: "app", Revision: "r1", Services: map[string]*registry.ServiceInfo{}}
	for s := range 10 {
		kv := map[string]string{"timestamp": "1700000000000", "pid": "4242", "side": "provider", "release": "3.3.0", "dubbo": "2.0.2"}
		for k := range 10 {
			kv["param"+strconv.Itoa(k)] = fmt.Sprintf("value-%d-%d", s, k)
		}
		name := fmt.Sprintf("com.example.bench.Service%d", s)
		m.Services[name+":dubbo"] = &registry.ServiceInfo{Name: name, Protocol: "dubbo", Port: 20880, Params: cluster.NewParams(kv)}
	}
	inst := &registry.Instance{App: "app", Host: "10.0.0.1", Revision: "r1", Endpoints: []registry.Endpoint{{Port: 20880, Protocol: "dubbo"}}}
	origin := &nodeOrigin{app: "app", instance: "10.0.0.1:20880", revision: "r1"}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			urls, _ := m.ProviderURLs(inst)
			for _, u := range urls {
				if n, _ := newProviderNode(u); n == nil {
					b.Fatal("skipped")
				}
			}
		}
	})
	b.Run("offers", func(b *testing.B) {
		offers := nodeOffers(m)
		b.ReportAllocs()
		for b.Loop() {
			if len(offerNodes(offers, inst, origin, func(string, string) { b.Fatal("skipped") })) != 10 {
				b.Fatal("not 10 providers")
			}
		}
	})
}
