package zookeeper

import "github.com/dubbogw/dubbogw/registry"

// This file is the registry's catalog: which interfaces are registered at
// all, known from one child watch on the registry root (interface level:
// /<root> lists the interfaces) and one on /<root>/mapping (application
// level: a mapping node per interface), rather than from watches per
// interface. The generic pass-through asks it before subscribing, so a
// name nobody registered is answered from memory and costs no watch.
//
// With one discovery level the catalog is read only once somebody asks
// (the first Lookup), and kept for the registry's life: a gateway without
// pass-through traffic for unknown keys never sets these two watches.
//
// With both levels (auto), it is read at start, and it also gates the
// subscriptions' reads: an interface's nodes of one level (providers and
// configurators, or its mapping) are read and watched only once that
// level's listing names it. Most registries register an interface at one
// level, so without the gate every subscription would cost an existence
// check and a watch at the other: 10,000 of the 20,500 reads and watches
// of a gateway with 5,000 routes on an application-level registry. A
// listing that cannot be read (a failure other than the connection's)
// turns the gate off: every level's nodes are then read, as without it.

// zkCatalog is one published state of the catalog; Lookup reads it
// without a lock. It is replaced, never changed.
type zkCatalog struct {
	// known: the listings the discovery mode needs were read on the
	// current connection. Unknown answers PresenceUnknown.
	known  bool
	ifaces map[string]struct{} // children of /<root> (interface level)
	mapped map[string]struct{} // children of /<root>/mapping (application level)
	// changed is closed when a newer catalog replaces this one.
	changed chan struct{}
}

func newZKCatalog() *zkCatalog { return &zkCatalog{changed: make(chan struct{})} }

func (c *zkCatalog) has(iface string) bool {
	if _, ok := c.ifaces[iface]; ok {
		return true
	}
	_, ok := c.mapped[iface]
	return ok
}

// Lookup says whether iface is registered: it has a node under the
// registry root (interface-level discovery) or a mapping node
// (application level). The first call starts reading the two listings;
// until they are read on the current connection, and while ZooKeeper is
// unreachable, the answer is PresenceUnknown (with a channel to wait on
// while the listings are being read, nil while unreachable).
func (z *Registry) Lookup(iface string) (registry.Presence, <-chan struct{}) {
	if !z.catalogWanted.Load() && z.catalogWanted.CompareAndSwap(false, true) {
		z.poke()
	}
	c := z.catalog.Load()
	switch {
	case c.known && c.has(iface):
		return registry.PresencePresent, nil
	case c.known:
		return registry.PresenceAbsent, nil
	case z.unreachable.Load() || z.closed.Load():
		return registry.PresenceUnknown, nil
	}
	return registry.PresenceUnknown, c.changed
}

// catalogState is the worker's side of the catalog.
type catalogState struct {
	z       *Registry
	root    *pathWatch // children of /<root>; nil without interface-level discovery
	mapping *pathWatch // children of /<root>/mapping; nil without application level
	ifaces  map[string]struct{}
	mapped  map[string]struct{}
	changed bool // a listing changed since the last publication
	// published is what was published last: known, and whether the
	// registry was unreachable then.
	published struct{ known, unreachable bool }
	// gate says the listings gate the subscriptions' reads (both levels);
	// off, that a listing could not be read, so they no longer do.
	gate, off bool
}

// newCatalogState starts watching the listings, once the catalog is
// wanted.
func newCatalogState(z *Registry, ws *watches) *catalogState {
	c := &catalogState{z: z}
	if z.interfaceLevel() {
		c.root = ws.watch(z.root, nodeRoot, "", "")
	}
	if z.applicationLevel() {
		c.mapping = ws.watch(z.root+"/mapping", nodeMappingRoot, "", "")
	}
	return c
}

// take takes a listing of the registry root or of the mapping node, and
// returns the names it lists that the one before did not.
func (c *catalogState) take(pw *pathWatch, children []string) (added []string) {
	prev := c.mapped
	if pw == c.root {
		prev = c.ifaces
	}
	names := make(map[string]struct{}, len(children))
	for _, child := range children {
		names[child] = struct{}{}
		if _, ok := prev[child]; !ok {
			added = append(added, child)
		}
	}
	if pw == c.root {
		c.ifaces = names
	} else {
		c.mapped = names
	}
	c.changed = true
	return added
}

// gating reports whether the listings gate the subscriptions' reads.
func (c *catalogState) gating() bool { return c != nil && c.gate && !c.off }

// lists reports whether the listing of kind (nodeRoot: interface level,
// nodeMappingRoot: application level) names iface, as last read.
func (c *catalogState) lists(kind int, iface string) bool {
	listing := c.mapped
	if kind == nodeRoot {
		listing = c.ifaces
	}
	_, ok := listing[iface]
	return ok
}

// answered reports whether both listings were read on the current
// session: until then an interface the last listings did not name may
// still be registered.
func (c *catalogState) answered() bool { return c.root.read && c.mapping.read }

// publish publishes the catalog when a listing changed, or when it
// became known or unknown (a connection lost, the registry found
// unreachable), waking the lookups waiting for it.
func (c *catalogState) publish(connected bool) {
	known := connected
	for _, pw := range []*pathWatch{c.root, c.mapping} {
		if pw != nil && !pw.read {
			known = false
		}
	}
	unreachable := c.z.unreachable.Load()
	if !c.changed && c.published.known == known && c.published.unreachable == unreachable {
		return
	}
	c.changed = false
	c.published.known, c.published.unreachable = known, unreachable
	next := newZKCatalog()
	next.known, next.ifaces, next.mapped = known, c.ifaces, c.mapped
	prev := c.z.catalog.Swap(next)
	close(prev.changed)
}
