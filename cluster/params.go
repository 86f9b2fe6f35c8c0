package cluster

import (
	"cmp"
	"encoding/binary"
	"iter"
	"maps"
	"slices"
	"strings"
	"unique"
)

// Params are a provider's URL parameters other than weight, warmup,
// timestamp and pid, as routing rules read them. A large registry keeps
// them for every provider it lists (half a million of them at 50,000
// providers) and reads them rarely, so they are compact rather than fast:
// the sorted list of pairs is encoded in one string and interned (package
// unique), so providers with the same parameters (the providers of one
// service usually differ only in their process: pid, timestamp) hold one
// pointer to one copy. The copy is made from the strings given, so a
// provider does not keep the decoded URL they were sliced from alive. The
// zero Params is empty.
type Params struct {
	h unique.Handle[string] // pairs in key order, each key and value length-prefixed; zero: none
}

// NewParams makes Params of m.
func NewParams(m map[string]string) Params {
	if len(m) == 0 {
		return Params{}
	}
	pairs := make([]Pair, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, Pair{k, m[k]})
	}
	return NewParamsSorted(pairs)
}

// Pair is one parameter.
type Pair struct{ Key, Value string }

// NewParamsSorted makes Params of pairs, which must be sorted by key with
// no key twice: what NewParams makes of a map, without the map (a
// registry parsing 50,000 provider URLs at start).
func NewParamsSorted(pairs []Pair) Params {
	if len(pairs) == 0 {
		return Params{}
	}
	n := 0
	for _, p := range pairs {
		n += len(p.Key) + len(p.Value) + 2*binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	for _, p := range pairs {
		b = binary.AppendUvarint(b, uint64(len(p.Key)))
		b = append(b, p.Key...)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	return Params{h: unique.Make(string(b))}
}

// encoded is the encoding of p's pairs; "" when p is empty.
func (p Params) encoded() string {
	if p.h == (unique.Handle[string]{}) {
		return ""
	}
	return p.h.Value()
}

// next splits the first pair off an encoding made by NewParams.
func next(s string) (key, value, rest string) {
	n, s := uvarint(s)
	key, s = s[:n], s[n:]
	n, s = uvarint(s)
	return key, s[:n], s[n:]
}

// uvarint reads the length that starts s (binary.AppendUvarint's format).
func uvarint(s string) (n int, rest string) {
	var shift uint
	for i := 0; i < len(s); i++ {
		b := s[i]
		n |= int(b&0x7f) << shift
		if b < 0x80 {
			return n, s[i+1:]
		}
		shift += 7
	}
	panic("cluster: Params encoding cut short") // NewParams made it whole
}

// Len is the number of parameters.
func (p Params) Len() int {
	n := 0
	for s := p.encoded(); s != ""; n++ {
		_, _, s = next(s)
	}
	return n
}

// Lookup returns the value of key, and whether p has it.
func (p Params) Lookup(key string) (string, bool) {
	for s := p.encoded(); s != ""; {
		var k, v string
		k, v, s = next(s)
		switch c := strings.Compare(k, key); {
		case c == 0:
			return v, true
		case c > 0:
			return "", false
		}
	}
	return "", false
}

// Get returns the value of key, or "".
func (p Params) Get(key string) string {
	v, _ := p.Lookup(key)
	return v
}

// All yields the parameters in key order.
func (p Params) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for s := p.encoded(); s != ""; {
			var k, v string
			k, v, s = next(s)
			if !yield(k, v) {
				return
			}
		}
	}
}

// Map returns the parameters as a new map.
func (p Params) Map() map[string]string {
	return maps.Collect(p.All())
}

// Compare orders p and q by their parameters in key order, each by key
// then value, as strings.Compare does (a shorter list first when it is a
// prefix of the other): a choice between providers made by it is the same
// in every process.
func (p Params) Compare(q Params) int {
	if p.h == q.h {
		return 0
	}
	s, t := p.encoded(), q.encoded()
	for s != "" && t != "" {
		var a, av, b, bv string
		a, av, s = next(s)
		b, bv, t = next(t)
		if c := cmp.Or(strings.Compare(a, b), strings.Compare(av, bv)); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(s), len(t))
}
