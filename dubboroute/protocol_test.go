package dubboroute

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dubbogw/dubbogw/cluster"
)

// TestProtocolChoice checks the choice against its definition, written
// naively: the providers of the route's protocol; with auto, dubbo's when
// there are any, else tri's. A snapshot is filtered once: the same
// snapshot gives the same slice back.
func TestProtocolChoice(t *testing.T) {
	naive := func(mode string, ps []*cluster.Provider) []*cluster.Provider {
		want := cluster.ProtocolDubbo
		switch mode {
		case ProtocolTriple:
			want = cluster.ProtocolTriple
		case ProtocolAuto:
			if !slices.ContainsFunc(ps, func(p *cluster.Provider) bool { return p.Protocol == cluster.ProtocolDubbo }) {
				want = cluster.ProtocolTriple
			}
		}
		var out []*cluster.Provider
		for _, p := range ps {
			if p.Protocol == want {
				out = append(out, p)
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mode := range []string{ProtocolDubbo, ProtocolTriple, ProtocolAuto} {
		pc := &protocolChoice{mode: mode}
		for range 500 {
			ps := make([]*cluster.Provider, rng.IntN(6))
			for i := range ps {
				ps[i] = &cluster.Provider{Addr: "a", Protocol: cluster.Protocol(rng.IntN(2))}
			}
			got := pc.of(ps)
			if want := naive(mode, ps); !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
				t.Fatalf("%s of %v: got %v, want %v", mode, ps, got, want)
			}
			if again := pc.of(ps); len(again) > 0 && &again[0] != &got[0] {
				t.Fatalf("%s: the same snapshot gave another slice", mode)
			}
			if len(got) == len(ps) && len(ps) > 0 && &got[0] != &ps[0] {
				t.Fatalf("%s: a snapshot of one protocol was copied", mode)
			}
		}
	}
}

func BenchmarkProtocolChoice(b *testing.B) {
	ps := make([]*cluster.Provider, 10)
	for i := range ps {
		ps[i] = &cluster.Provider{Addr: "a", Protocol: cluster.Protocol(i % 2)}
	}
	pc := &protocolChoice{mode: ProtocolAuto}
	b.ReportAllocs()
	for b.Loop() {
		if len(pc.of(ps)) != 5 {
			b.Fatal("wrong choice")
		}
	}
}
