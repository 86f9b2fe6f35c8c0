package cluster

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"strings"
	"unique"
)

// Params are a provider's URL parameters other than weight, warmup and
// timestamp, as routing rules read them. A large registry keeps them for
// every provider it lists (half a million of them at 50,000 providers)
// and reads them rarely, so they are compact rather than fast: one list,
// sorted by key, of interned key-value pairs. Interning (package unique)
// stores once what providers share (application=..., release=...,
// side=provider...), a pointer each, and copies the strings out of the URL
// they were parsed from, so that a provider does not keep its whole decoded
// URL alive. The zero Params is empty.
type Params struct {
	kv []unique.Handle[param] // sorted by key
}

type param struct{ key, value string }

// NewParams makes Params of m.
func NewParams(m map[string]string) Params {
	if len(m) == 0 {
		return Params{}
	}
	kv := make([]unique.Handle[param], 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, unique.Make(param{key: k, value: m[k]}))
	}
	return Params{kv: kv}
}

// Len is the number of parameters.
func (p Params) Len() int { return len(p.kv) }

// Lookup returns the value of key, and whether p has it.
func (p Params) Lookup(key string) (string, bool) {
	lo, hi := 0, len(p.kv)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch kv := p.kv[m].Value(); {
		case kv.key == key:
			return kv.value, true
		case kv.key < key:
			lo = m + 1
		default:
			hi = m
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
		for _, h := range p.kv {
			if kv := h.Value(); !yield(kv.key, kv.value) {
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
	for i := 0; i < len(p.kv) && i < len(q.kv); i++ {
		if p.kv[i] == q.kv[i] {
			continue
		}
		a, b := p.kv[i].Value(), q.kv[i].Value()
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.value, b.value))
	}
	return cmp.Compare(len(p.kv), len(q.kv))
}

// Shares reports whether p and q are one list, not only equal ones: a
// registry shares the parameters of providers that have the same.
func (p Params) Shares(q Params) bool {
	return len(p.kv) == len(q.kv) && (len(p.kv) == 0 || &p.kv[0] == &q.kv[0])
}
