package peers

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

// Peer is what the checks need to know about a foreign implementation.
type Peer struct {
	Name string
	// Wire turns a description into what the peer's writer puts on the wire
	// for it, when Expect.Wire does not say (Java writes an ArrayList
	// untyped, ...). Nil keeps the description.
	Wire func(*Desc) *Desc
	// Sees turns a description into what the peer reports after reading it;
	// it is applied to both the expectation and the peer's answer. Nil keeps
	// the description.
	Sees func(*Desc) *Desc
}

// Result is what one case produced, before it is checked.
type Result struct {
	// PeerWrote says the peer was asked to encode the case; PeerBytes or
	// PeerWriteErr is its answer.
	PeerWrote    bool
	PeerBytes    []byte
	PeerWriteErr string

	// Ours and OursErr are our encoding of the case.
	Ours    []byte
	OursErr error

	// PeerRead says the peer was asked to decode Ours; PeerSaw or
	// PeerReadErr is its answer.
	PeerRead    bool
	PeerSaw     *Desc
	PeerReadErr string
}

// Encode is our encoding of d.
func Encode(d *Desc) ([]byte, error) {
	v, err := Value(d)
	if err != nil {
		return nil, fmt.Errorf("building the Go value: %w", err)
	}
	e := hessian.NewEncoder(nil)
	if err := e.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return bytes.Clone(e.Bytes()), nil
}

// DecodeOne decodes data with our Decoder and requires that it holds
// exactly one value.
func DecodeOne(data []byte) (any, error) {
	d := hessian.NewDecoder(data)
	v, err := d.Decode()
	if err != nil {
		return nil, err
	}
	if _, err := d.Decode(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("bytes left after the value (next Decode: %v)", err)
	}
	return v, nil
}

// Check runs the three checks of README.md on one case's results:
//
//	(a) the peer's bytes decode with ours to the value it was asked to write;
//	(b) our bytes decode in the peer to the value we wrote;
//	(c) both wrote the same bytes, or the peer wrote its documented Form.
func Check(t *testing.T, p Peer, c Case, e Expect, r Result) {
	t.Helper()
	keep := func(d *Desc) *Desc { return d }
	wireOf, sees := p.Wire, p.Sees
	if wireOf == nil {
		wireOf = keep
	}
	if sees == nil {
		sees = keep
	}

	if r.PeerWrote {
		switch {
		case r.PeerWriteErr != "":
			t.Errorf("%s could not encode the case: %s", p.Name, r.PeerWriteErr)
		default:
			wire := e.Wire
			if wire == nil {
				wire = wireOf(c.Desc)
			}
			v, err := DecodeOne(r.PeerBytes)
			switch {
			case err != nil:
				t.Errorf("(a) decoding %s's bytes: %v\n  %s: %s", p.Name, err, p.Name, HexCut(r.PeerBytes))
			case e.AnyOrder != "":
				if err := matchAnyOrder(wire, v); err != nil {
					t.Errorf("(a) %s's bytes decode with ours to the wrong value (%s): %v\n  %s: %s", p.Name, e.AnyOrder, err, p.Name, HexCut(r.PeerBytes))
				}
			default:
				if err := Match(wire, v); err != nil {
					t.Errorf("(a) %s's bytes decode with ours to the wrong value: %v\n  %s: %s", p.Name, err, p.Name, HexCut(r.PeerBytes))
				}
			}
		}
	}

	if e.PeerWritesOnly == "" {
		switch {
		case r.OursErr != nil:
			t.Errorf("our encoder: %v", r.OursErr)
		case !r.PeerRead:
			t.Errorf("(b) %s was not asked to read our bytes", p.Name)
		case r.PeerReadErr != "":
			t.Errorf("(b) %s could not decode our bytes: %s\n  ours: %s", p.Name, r.PeerReadErr, HexCut(r.Ours))
		case r.PeerSaw == nil:
			t.Errorf("(b) %s answered a decode request without a description", p.Name)
		default:
			want := e.Sees
			if want == nil {
				want = c.Desc
			}
			if d := Diff(Canonical(sees(want)), Canonical(sees(r.PeerSaw))); d != "" {
				t.Errorf("(b) %s reads our bytes as another value: %s\n  ours: %s", p.Name, d, HexCut(r.Ours))
			}
		}
	}

	if r.PeerBytes == nil || r.Ours == nil {
		return
	}
	if f := e.Form; f != nil {
		if !bytes.Equal(r.PeerBytes, f.Bytes) {
			t.Errorf("(c) %s no longer writes its documented form (%s):\n  want %s\n  got  %s", p.Name, f.Why, HexCut(f.Bytes), HexCut(r.PeerBytes))
		}
		if bytes.Equal(r.PeerBytes, r.Ours) {
			t.Errorf("(c) %s's documented form (%s) is now ours too: drop the Form from the table", p.Name, f.Why)
		}
		return
	}
	if e.AnyOrder != "" {
		if !oursInSomeOrder(c.Desc, r.PeerBytes) {
			t.Errorf("(c) %s's bytes are ours for no order of the map's entries (%s): %s", p.Name, e.AnyOrder, BytesDiff(p.Name, r.PeerBytes, r.Ours))
		}
		return
	}
	if !bytes.Equal(r.PeerBytes, r.Ours) {
		t.Errorf("(c) %s and we wrote different bytes for the same form: %s", p.Name, BytesDiff(p.Name, r.PeerBytes, r.Ours))
	}
}

// matchAnyOrder compares a decoded value with a description, every map's
// entries taken in any order.
func matchAnyOrder(want *Desc, v any) error {
	got, err := Describe(v)
	if err != nil {
		return err
	}
	sorted := func(d *Desc) string {
		return Canonical(Rewrite(d, func(n *Desc) *Desc {
			if n.T == "map" {
				n = SortEntries(n, n.Type)
			}
			return n
		}))
	}
	if d := Diff(sorted(want), sorted(got)); d != "" {
		return fmt.Errorf("%s", d)
	}
	return nil
}

// oursInSomeOrder reports whether peer is our encoding of d with its
// top-level map's entries in some order.
func oursInSomeOrder(d *Desc, peer []byte) bool {
	if d.T != "map" || len(d.Entries) > 6 {
		return false
	}
	found := false
	permute(d.Entries, 0, func(entries []Pair) {
		c := *d
		c.Entries = entries
		if b, err := Encode(&c); err == nil && bytes.Equal(b, peer) {
			found = true
		}
	})
	return found
}

func permute(p []Pair, k int, visit func([]Pair)) {
	if k == len(p) {
		visit(append([]Pair(nil), p...))
		return
	}
	for i := k; i < len(p); i++ {
		p[k], p[i] = p[i], p[k]
		permute(p, k+1, visit)
		p[k], p[i] = p[i], p[k]
	}
}

// HexCut prints bytes as hex, cut for long values.
func HexCut(b []byte) string {
	const most = 96
	if len(b) <= most {
		return hex.EncodeToString(b)
	}
	return fmt.Sprintf("%s… (%d bytes)", hex.EncodeToString(b[:most]), len(b))
}

// BytesDiff shows two encodings around their first difference.
func BytesDiff(peer string, theirs, ours []byte) string {
	i := 0
	for i < len(theirs) && i < len(ours) && theirs[i] == ours[i] {
		i++
	}
	if len(theirs) <= 96 && len(ours) <= 96 {
		return fmt.Sprintf("first difference at byte %d\n  %s: %x\n  ours: %x", i, peer, theirs, ours)
	}
	lo := max(i-16, 0)
	return fmt.Sprintf("first difference at byte %d of %d/%d\n  %s[%d:]: %x\n  ours[%d:]: %x",
		i, len(theirs), len(ours), peer, lo, theirs[lo:min(i+32, len(theirs))], lo, ours[lo:min(i+32, len(ours))])
}
