package interop

import (
	"fmt"
	"testing"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbogw/dubbogw/test/peers"
)

// TestDubboGoHessian2 runs the value table of test/peers against Apache
// dubbo-go-hessian2, both directions, with the checks of
// test/peers/README.md.
func TestDubboGoHessian2(t *testing.T) {
	p := peers.Peer{Name: peers.DubboGo, Wire: dubboWire, Sees: dubboSees}
	for _, c := range peers.Cases() {
		e := c.Peers[peers.DubboGo]
		if x, ok := dubboExpect[c.Name]; ok {
			e = x
		}
		t.Run(c.Name, func(t *testing.T) {
			if e.Skip != "" {
				t.Skip(e.Skip)
			}
			var r peers.Result
			if e.PeerReadsOnly == "" {
				r.PeerWrote = true
				r.PeerBytes, r.PeerWriteErr = dubboEncode(c.Desc)
			}
			if e.PeerWritesOnly == "" {
				r.Ours, r.OursErr = peers.Encode(c.Desc)
				if r.OursErr == nil {
					r.PeerRead = true
					r.PeerSaw, r.PeerReadErr = dubboDecode(r.Ours)
				}
			}
			peers.Check(t, p, c, e, r)
		})
	}
}

// TestDubboExpectNamesCases keeps dubboExpect from drifting: every entry must
// name a case of the table.
func TestDubboExpectNamesCases(t *testing.T) {
	names := map[string]bool{}
	for _, c := range peers.Cases() {
		names[c.Name] = true
	}
	for name := range dubboExpect {
		if !names[name] {
			t.Errorf("dubboExpect has %q, which is not a case of the table", name)
		}
	}
}

func dubboEncode(d *peers.Desc) (b []byte, errText string) {
	v, err := toDubbo(d)
	if err != nil {
		return nil, err.Error()
	}
	defer func() {
		if p := recover(); p != nil {
			b, errText = nil, fmt.Sprintf("panic: %v", p)
		}
	}()
	e := hessian.NewEncoder()
	if err := e.Encode(v); err != nil {
		return nil, err.Error()
	}
	return append([]byte(nil), e.Buffer()...), ""
}

func dubboDecode(data []byte) (d *peers.Desc, errText string) {
	defer func() {
		if p := recover(); p != nil {
			d, errText = nil, fmt.Sprintf("panic: %v", p)
		}
	}()
	v, err := hessian.NewDecoder(data).Decode()
	if err != nil {
		return nil, err.Error()
	}
	d, err = fromDubbo(v)
	if err != nil {
		return nil, err.Error()
	}
	return d, ""
}

// dubboWire is what dubbo-go-hessian2's bytes hold for a description.
func dubboWire(d *peers.Desc) *peers.Desc {
	// A Go enum is a value: a repeated constant is written twice, never as
	// a reference.
	return peers.InlineRefs(d, func(n *peers.Desc) bool { return n.T == "enum" })
}

// dubboSees is how dubbo-go-hessian2's Go values show a value.
func dubboSees(d *peers.Desc) *peers.Desc {
	d = peers.Rewrite(d, func(n *peers.Desc) *peers.Desc {
		switch {
		case n.T == "list":
			// Only the primitive arrays have a Go slice type of their own;
			// any other list reads into []interface{}.
			switch n.Type {
			case "[int", "[long", "[double", "[boolean", "[string":
			default:
				n.Type = ""
			}
		case n.T == "map":
			// Every map reads into map[interface{}]interface{}.
			n.Type = ""
		}
		return n
	})
	// A Go map has no order.
	d = peers.SortEntries(d, "")
	return peers.InlineRefs(d, func(n *peers.Desc) bool { return n.T == "enum" })
}
