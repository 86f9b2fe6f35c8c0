package dubboroute

import (
	"sync/atomic"

	"github.com/dubbogw/dubbogw/cluster"
)

// protocolChoice keeps the providers of a directory snapshot that a route
// calls: those of its protocol, or with auto those of dubbo when there
// are any, else those of tri. The choice is made once per snapshot (the
// last one is kept): a snapshot of one protocol, the usual case, is used
// as it is, a mixed one filtered into a slice that stays the same for
// the snapshot's life, as the cluster's per-snapshot state wants.
type protocolChoice struct {
	mode string // ProtocolDubbo, ProtocolTriple or ProtocolAuto
	last atomic.Pointer[chosenProviders]
}

// chosenProviders is the choice made for one snapshot.
type chosenProviders struct {
	src, out []*cluster.Provider
}

// of returns the providers of snapshot the route calls.
func (pc *protocolChoice) of(snapshot []*cluster.Provider) []*cluster.Provider {
	if len(snapshot) == 0 {
		return snapshot
	}
	if c := pc.last.Load(); c != nil && len(c.src) == len(snapshot) && &c.src[0] == &snapshot[0] {
		return c.out
	}
	want, mixed := pc.want(snapshot)
	out := snapshot
	switch {
	case mixed:
		out = make([]*cluster.Provider, 0, len(snapshot))
		for _, p := range snapshot {
			if p.Protocol == want {
				out = append(out, p)
			}
		}
	case snapshot[0].Protocol != want:
		out = nil
	}
	pc.last.Store(&chosenProviders{src: snapshot, out: out})
	return out
}

// want is the protocol called among snapshot's providers, and whether
// they speak more than one.
func (pc *protocolChoice) want(snapshot []*cluster.Provider) (cluster.Protocol, bool) {
	first := snapshot[0].Protocol
	mixed := false
	hasDubbo := first == cluster.ProtocolDubbo
	for _, p := range snapshot[1:] {
		if p.Protocol != first {
			mixed = true
		}
		if p.Protocol == cluster.ProtocolDubbo {
			hasDubbo = true
		}
	}
	switch {
	case pc.mode == ProtocolTriple:
		return cluster.ProtocolTriple, mixed
	case pc.mode == ProtocolDubbo || hasDubbo:
		return cluster.ProtocolDubbo, mixed
	}
	return cluster.ProtocolTriple, mixed
}
