package peers

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Canonical is d as a string two equal values share: ids no ref points at
// are dropped and the others renamed in order of first appearance, so two
// descriptions that differ only in how they named their shared nodes compare
// equal.
func Canonical(d *Desc) string {
	used := map[string]bool{}
	walk(d, func(n *Desc) {
		if n.T == "ref" {
			used[n.ID] = true
		}
	})
	names := map[string]string{}
	c := clone(d, func(n *Desc) {
		switch {
		case n.T == "ref":
			if name, ok := names[n.ID]; ok {
				n.ID = name
			} else {
				n.ID = "dangling:" + n.ID
			}
		case n.ID != "" && used[n.ID]:
			name := fmt.Sprintf("r%d", len(names)+1)
			names[n.ID] = name
			n.ID = name
		default:
			n.ID = ""
		}
	})
	b, err := json.Marshal(c)
	if err != nil {
		return "unmarshalable: " + err.Error()
	}
	return string(b)
}

// walk calls f on every node of d, parents before children, in wire order.
func walk(d *Desc, f func(*Desc)) {
	if d == nil {
		return
	}
	f(d)
	for _, it := range d.Items {
		walk(it, f)
	}
	for _, e := range d.Entries {
		walk(e.Key, f)
		walk(e.Value, f)
	}
	for _, fd := range d.Fields {
		walk(fd.Value, f)
	}
	walk(d.Cause, f)
}

// clone copies d deeply, calling f on each copy (parents first, wire order)
// before its children are copied.
func clone(d *Desc, f func(*Desc)) *Desc {
	if d == nil {
		return nil
	}
	c := *d
	f(&c)
	c.Bin = append([]byte(nil), d.Bin...)
	c.Items = nil
	for _, it := range d.Items {
		c.Items = append(c.Items, clone(it, f))
	}
	c.Entries = nil
	for _, e := range d.Entries {
		k := clone(e.Key, f)
		c.Entries = append(c.Entries, Pair{k, clone(e.Value, f)})
	}
	c.Fields = nil
	for _, fd := range d.Fields {
		c.Fields = append(c.Fields, NamedDesc{fd.Name, clone(fd.Value, f)})
	}
	c.Cause = clone(d.Cause, f)
	return &c
}

// Rewrite returns a deep copy of d in which f has replaced every node it
// wants to (f returns the node itself to keep it). Children of a replaced
// node are visited in the replacement.
func Rewrite(d *Desc, f func(*Desc) *Desc) *Desc {
	if d == nil {
		return nil
	}
	c := clone(d, func(*Desc) {})
	return rewrite(c, f)
}

func rewrite(d *Desc, f func(*Desc) *Desc) *Desc {
	if d == nil {
		return nil
	}
	d = f(d)
	for i := range d.Items {
		d.Items[i] = rewrite(d.Items[i], f)
	}
	for i := range d.Entries {
		d.Entries[i].Key = rewrite(d.Entries[i].Key, f)
		d.Entries[i].Value = rewrite(d.Entries[i].Value, f)
	}
	for i := range d.Fields {
		d.Fields[i].Value = rewrite(d.Fields[i].Value, f)
	}
	d.Cause = rewrite(d.Cause, f)
	return d
}

// InlineRefs replaces each ref to a node for which target returns true by a
// copy of that node (without its id), for peers whose value model makes such
// values plain values: a Java enum constant is a singleton, so a reader
// cannot tell a reference to it from a second copy.
func InlineRefs(d *Desc, target func(*Desc) bool) *Desc {
	byID := map[string]*Desc{}
	walk(d, func(n *Desc) {
		if n.ID != "" && n.T != "ref" {
			byID[n.ID] = n
		}
	})
	return Rewrite(d, func(n *Desc) *Desc {
		if n.T == "ref" {
			if t, ok := byID[n.ID]; ok && target(t) {
				c := clone(t, func(*Desc) {})
				c.ID = ""
				return c
			}
		}
		if n.ID != "" && target(n) {
			c := *n
			c.ID = ""
			return &c
		}
		return n
	})
}

// SortEntries orders the entries of every map of type mapType by their
// keys' canonical form, for peers that hold such maps in hash order.
func SortEntries(d *Desc, mapType string) *Desc {
	return Rewrite(d, func(n *Desc) *Desc {
		if n.T == "map" && n.Type == mapType {
			sort.SliceStable(n.Entries, func(i, j int) bool {
				return Canonical(n.Entries[i].Key) < Canonical(n.Entries[j].Key)
			})
		}
		return n
	})
}

// Diff explains where two canonical strings first differ, with some context,
// or returns "" when they are equal. Long values (64 KiB strings) stay
// readable.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("first difference at byte %d of %d/%d:\n  want …%s…\n  got  …%s…", i, len(want), len(got), window(want, i), window(got, i))
}

func window(s string, i int) string {
	lo, hi := max(i-120, 0), min(i+120, len(s))
	return s[lo:hi]
}
