package zookeeper

import (
	"cmp"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/registry"
)

// ifaceState is what the worker knows of one interface with live directories.
type ifaceState struct {
	name string
	dirs dirSet
	// paths are the nodes read for the interface: providers and
	// configurators (interface-level discovery), mapping (application
	// level), as the registry's discovery mode says.
	paths []*pathWatch
	// levels says which discovery levels' nodes are in paths; with both
	// levels, a level's nodes are added once the catalog lists the
	// interface there (catalog.go).
	ifaceLevel, appLevel bool
	failed               bool // the last read of one of paths failed: directories are stale
	published            bool // directories were set once: later changes publish at once
	// hasProviders is true once a listing found the providers node: only
	// then are consumer nodes registered under the interface.
	hasProviders bool
	// apps are the applications the mapping node names, sorted.
	apps []string

	providerNodes map[nodeKey]*providerNode // by child name's key; nil for a skipped child
	nodes         []*providerNode           // the usable ones, by address
	overrideNodes map[string]*override      // by child name; nil for one that does not apply
	overrides     []*override               // the applicable ones, in application order
	reweighted    map[overridden]*cluster.Provider
	// rules are the governance rule nodes held (rules.go), by key; nil
	// without governance.
	rules map[string]*ruleNode
}

// dirSet is the live directories of one interface, one per service key:
// a slice, not a map, because an interface has one or a few, and 5,000
// interfaces would pay for a small map each (~0.5 KB). A dirSet is
// replaced, never changed, once handed to the worker.
type dirSet []*registry.Directory

// get returns key's directory, or nil.
func (ds dirSet) get(key registry.ServiceKey) *registry.Directory {
	for _, d := range ds {
		if d.Key() == key {
			return d
		}
	}
	return nil
}

// with returns ds with d as its key's directory.
func (ds dirSet) with(d *registry.Directory) dirSet {
	key := d.Key()
	out := make(dirSet, 0, len(ds)+1)
	for _, o := range ds {
		if o.Key() != key {
			out = append(out, o)
		}
	}
	return append(out, d)
}

// without returns ds without d.
func (ds dirSet) without(d *registry.Directory) dirSet {
	return slices.DeleteFunc(slices.Clone(ds), func(o *registry.Directory) bool { return o == d })
}

// diffDirs calls gone for each directory of prev not in next, then added
// for each of next not in prev (a directory replaced for its key is
// both). Linear in their sizes: an interface can have thousands of keys,
// as a pass-through's clients choose group and version.
func diffDirs(prev, next dirSet, gone, added func(*registry.Directory)) {
	inNext, inPrev := next.contains(), prev.contains()
	for _, d := range prev {
		if !inNext(d) {
			gone(d)
		}
	}
	for _, d := range next {
		if !inPrev(d) {
			added(d)
		}
	}
}

// contains returns a test of membership in ds: a scan for a few
// directories, a set for more.
func (ds dirSet) contains() func(*registry.Directory) bool {
	if len(ds) <= 8 {
		return func(d *registry.Directory) bool { return slices.Contains(ds, d) }
	}
	set := make(map[*registry.Directory]struct{}, len(ds))
	for _, d := range ds {
		set[d] = struct{}{}
	}
	return func(d *registry.Directory) bool {
		_, ok := set[d]
		return ok
	}
}

func (s *ifaceState) markStale() {
	for _, d := range s.dirs {
		d.MarkStale()
	}
}

// ifaces are the interfaces with live directories: the nodes of each
// (its providers and configurators nodes, and its mapping node, which
// names the applications serving it), and the directories of its service
// keys, built from those nodes and, with application-level discovery,
// from what apps knows of the applications mapped.
type ifaces struct {
	z         *Registry
	session   *session
	watches   *watches
	apps      *apps
	consumers *consumers
	byName    map[string]*ifaceState
	dirty     set[*ifaceState] // interfaces to publish again, once settled
	// touched are the dirty interfaces whose own nodes changed since the
	// last publication scan: only they can have become settled, unless
	// the applications changed (rescan), which any may wait for.
	touched set[*ifaceState]
	rescan  bool
	keys    nodeKeys // of provider children's names
	// catalog gates which levels' nodes are read, with both levels (nil
	// with one: every interface's nodes are read).
	catalog *catalogState
	// bare are the interfaces the gate left without a node to read: no
	// read of their own has them published, each listing read does.
	bare set[*ifaceState]
	// rules are the governance rule nodes (rules.go); nil without
	// Options.Governance.
	rules *ruleNodes
}

func newIfaces(z *Registry, s *session, ws *watches, a *apps, cs *consumers) *ifaces {
	return &ifaces{
		z:         z,
		session:   s,
		watches:   ws,
		apps:      a,
		consumers: cs,
		byName:    make(map[string]*ifaceState),
		keys:      newNodeKeys(),
	}
}

// mark has s published again once settled.
func (i *ifaces) mark(s *ifaceState) {
	i.dirty.add(s)
	i.touched.add(s)
}

// appsChanged says that what the applications know changed as a whole (a
// failure, metadata, the session): the next scan looks at every interface
// waiting.
func (i *ifaces) appsChanged() { i.rescan = true }

// reconcile makes interface name's state hold exactly the directories in want.
func (i *ifaces) reconcile(name string, want dirSet) {
	s := i.byName[name]
	if s == nil && len(want) > 0 {
		if !validNodeName(name) {
			i.z.log.Warn("interface name cannot be a ZooKeeper node: it has no providers", "interface", name)
			for _, d := range want {
				d.Set(nil)
			}
			return
		}
		s = i.add(name)
	}
	if s == nil {
		return
	}
	added := false
	diffDirs(s.dirs, want, func(d *registry.Directory) { i.consumers.unregister(d.Key()) }, func(d *registry.Directory) {
		i.consumers.register(d.Key())
		added = true
		if s.failed || !i.session.connected && i.z.unreachable.Load() {
			d.MarkStale()
		}
	})
	s.dirs = want
	if len(s.dirs) == 0 {
		i.drop(s)
		return
	}
	if added && i.session.connected && !s.failed {
		if i.settled(s) {
			i.publish(s) // the new directories answer at once, before any read
		} else {
			i.mark(s)
		}
	}
}

// add starts watching interface name's nodes: those of every level, or
// with the catalog gate, of the levels whose listing names it.
func (i *ifaces) add(name string) *ifaceState {
	s := &ifaceState{name: name} // relist makes the maps of nodes
	i.byName[name] = s
	gate := i.catalog.gating()
	if i.z.interfaceLevel() && (!gate || i.catalog.lists(nodeRoot, name)) {
		i.addInterfaceLevel(s)
	}
	if i.z.applicationLevel() && (!gate || i.catalog.lists(nodeMappingRoot, name)) {
		i.addApplicationLevel(s)
	}
	if len(s.paths) == 0 {
		i.bare.add(s)
	}
	return s
}

// addInterfaceLevel starts watching s's providers and configurators nodes.
func (i *ifaces) addInterfaceLevel(s *ifaceState) {
	s.ifaceLevel = true
	i.bare.remove(s)
	s.paths = append(s.paths,
		i.watches.watch(i.z.root+"/"+s.name+"/providers", nodeProviders, s.name, ""),
		i.watches.watch(i.z.root+"/"+s.name+"/configurators", nodeConfigurators, s.name, ""))
}

// addApplicationLevel starts watching s's mapping node.
func (i *ifaces) addApplicationLevel(s *ifaceState) {
	s.appLevel = true
	i.bare.remove(s)
	s.paths = append(s.paths, i.watches.watch(i.z.root+"/mapping/"+s.name, nodeMapping, s.name, ""))
}

// listed takes the names a catalog listing of kind (nodeRoot or
// nodeMappingRoot) added: the interfaces among them start watching
// that level's nodes. Every interface waiting is looked at again, since
// the listing may have settled those it does not name, and the bare ones
// are published again (after a reconnection, a listing read is what
// brings their directories back from stale).
func (i *ifaces) listed(kind int, names []string) {
	for _, name := range names {
		s := i.byName[name]
		switch {
		case s == nil:
		case kind == nodeRoot && !s.ifaceLevel:
			i.addInterfaceLevel(s)
		case kind == nodeMappingRoot && !s.appLevel:
			i.addApplicationLevel(s)
		}
	}
	for s := range i.bare.all() {
		i.dirty.add(s)
	}
	i.rescan = true
}

// ungate has every interface watch the nodes of every level: the
// catalog could not be read.
func (i *ifaces) ungate() {
	for _, s := range i.byName {
		if i.z.interfaceLevel() && !s.ifaceLevel {
			i.addInterfaceLevel(s)
		}
		if i.z.applicationLevel() && !s.appLevel {
			i.addApplicationLevel(s)
		}
	}
	i.rescan = true
}

// drop stops watching a released interface.
func (i *ifaces) drop(s *ifaceState) {
	for _, pw := range s.paths {
		i.watches.unwatch(pw)
	}
	i.setApps(s, nil)
	i.dropRules(s)
	i.dirty.remove(s)
	i.touched.remove(s)
	i.bare.remove(s)
	delete(i.byName, s.name)
}

// take takes what a read of one of an interface's nodes found.
func (i *ifaces) take(pw *pathWatch, r opResult) {
	s := i.byName[pw.owner]
	if s == nil {
		return
	}
	switch pw.kind {
	case nodeProviders:
		s.hasProviders = r.exists
		if r.exists {
			i.consumers.providersAppeared(s.name)
		}
		i.setProviders(s, r.children)
	case nodeConfigurators:
		i.setOverrides(s, r.children)
	case nodeMapping:
		i.setApps(s, parseMapping(r.data))
	}
	i.mark(s)
}

// readFailed marks the directories that depend on a node that could not be
// read stale. Nodes of applications are not read for one interface alone:
// their directories keep what they have while the read is retried.
func (i *ifaces) readFailed(pw *pathWatch) {
	if s := i.byName[pw.owner]; s != nil && pw.kind <= nodeMapping {
		s.failed = true
		s.markStale()
		i.touched.add(s)
	}
}

// touchUsers has the next publication scan look again at the interfaces
// users (an application's), waiting to be published: what they wait for
// changed. Unlike appsChanged, the scan then costs what changed.
func (i *ifaces) touchUsers(users map[string]struct{}) {
	for name := range users {
		if s := i.byName[name]; s != nil {
			i.touched.add(s)
		}
	}
}

// setProviders takes a new listing of s's providers node. Children seen
// before keep their parsed node (and so their *cluster.Provider).
func (i *ifaces) setProviders(s *ifaceState, children []string) {
	s.providerNodes, s.nodes = relist(s.providerNodes, children, i.keys.of, parseProviderNode,
		func(name, reason string) { i.skip(s.name, "provider", name, reason) })
	sortProviderNodes(s.nodes)
}

// setOverrides takes a new listing of s's configurators node.
func (i *ifaces) setOverrides(s *ifaceState, children []string) {
	s.overrideNodes, s.overrides = relist(s.overrideNodes, children, func(name string) string { return name },
		func(name string) (*override, string) { return parseOverrideNode(s.name, name) },
		func(name, reason string) { i.skip(s.name, "override", name, reason) })
	sortOverrides(s.overrides)
}

// relist takes a new listing of a node's children: a child seen before
// (in prev, by its name's key) keeps what it was parsed into, a new one is parsed,
// and one that does not parse is skipped (said once: it stays in the
// returned map as nil). It returns the map of the listing and the parsed
// children, in listing order.
func relist[K comparable, T any](prev map[K]*T, children []string, key func(name string) K, parse func(name string) (*T, string), skip func(name, reason string)) (map[K]*T, []*T) {
	byName := make(map[K]*T, len(children))
	list := make([]*T, 0, len(children))
	for _, name := range children {
		k := key(name)
		v, seen := prev[k]
		if !seen {
			var reason string
			if v, reason = parse(name); reason != "" {
				skip(name, reason)
			}
		}
		byName[k] = v
		if v != nil {
			list = append(list, v)
		}
	}
	return byName, list
}

// setApps makes s use exactly the applications names (sorted), as its
// mapping node says.
func (i *ifaces) setApps(s *ifaceState, names []string) {
	if slices.Equal(s.apps, names) {
		return
	}
	i.apps.use(s.name, s.apps, names)
	s.apps = names
}

func (i *ifaces) skip(iface, what, name, reason string) {
	i.z.skipped.Add(1)
	decoded, err := url.QueryUnescape(name)
	if err != nil {
		decoded = name
	}
	// Redacted: a provider URL's parameters may hold its token.
	i.z.log.Warn("skipping a "+what+" URL", "interface", iface, "url", config.RedactURL(decoded), "reason", reason)
}

// markStale marks every directory stale: ZooKeeper cannot be reached.
func (i *ifaces) markStale() {
	for _, s := range i.byName {
		s.markStale()
	}
}

// markDirty has interface name published again (apps changed what it
// offers).
func (i *ifaces) markDirty(name string) {
	if s := i.byName[name]; s != nil {
		i.mark(s)
	}
}

// markAllDirty has every interface published again: the publication sets
// only the directories whose providers changed, or not current.
func (i *ifaces) markAllDirty() {
	for _, s := range i.byName {
		i.dirty.add(s)
	}
	i.rescan = true
}

// hasProviders reports whether interface name's providers node exists:
// consumer nodes are registered under it only then.
func (i *ifaces) hasProviders(name string) bool {
	s := i.byName[name]
	return s != nil && s.hasProviders
}

// publishDirty publishes the interfaces whose nodes changed, once what
// they depend on has been read.
func (i *ifaces) publishDirty() {
	if !i.session.connected {
		return
	}
	i.apps.startScan()
	defer i.apps.endScan()
	scan := i.touched.all()
	if i.rescan {
		scan = i.dirty.all()
	}
	for s := range scan {
		if i.dirty.has(s) && i.settled(s) {
			i.dirty.remove(s)
			s.failed = false
			i.publish(s)
		}
	}
	i.touched.clear()
	i.rescan = false
}

// settled reports whether s can be published: with the catalog gate, the
// listings were read, unless s watches both levels already; every node of
// its own has been read since the session was (re)established and, before its first
// publication, its applications are settled (apps.settled) — so that a
// gateway starting does not answer "no provider" for a service about to
// be known. Later, a new instance is left out until its metadata is known.
func (i *ifaces) settled(s *ifaceState) bool {
	if i.catalog.gating() && !(s.ifaceLevel && s.appLevel) && !i.catalog.answered() {
		return false // a level not watched may yet list it
	}
	for _, pw := range s.paths {
		if !pw.read {
			return false
		}
	}
	return (s.published || i.apps.settled(s.apps)) && i.rulesSettled(s)
}

// publish sets the directories of s whose providers changed, and those
// not current (pending or stale).
func (i *ifaces) publish(s *ifaceState) {
	s.published = true
	nodes := s.nodes
	if i.z.applicationLevel() {
		nodes = i.mergedNodes(s)
	}
	var next map[overridden]*cluster.Provider // only overrides and configurators reweight (buildSnapshot)
	if len(s.overrides) > 0 || i.rules != nil {
		next = make(map[overridden]*cluster.Provider, len(s.reweighted))
	}
	for _, d := range s.dirs {
		key := d.Key()
		rules := i.rulesFor(s, key, nodes)
		snap := buildSnapshot(key, nodes, s.overrides, rules, s.reweighted, next)
		gov := rules.governance(d.Governance(), snap)
		var origins map[string]registry.ProviderOrigin
		var others registry.ProviderOrigin
		if i.z.applicationLevel() {
			origins, others = providerOrigins(key, nodes)
		}
		var offered []registry.ServiceKey
		if len(snap) == 0 {
			offered = offeredKeys(key, nodes)
		}
		if was, wasOthers := d.Origins(); d.State() == registry.DirOK && slices.Equal(d.Providers(), snap) && maps.Equal(was, origins) && wasOthers == others &&
			slices.Equal(d.Offered(), offered) && gov == d.Governance() {
			continue
		}
		d.SetGovernance(gov) // before the snapshot: a call never sees the new providers under the old rules
		prev := d.Providers()
		d.SetOffered(offered)
		d.SetWithOrigins(snap, origins, others)
		if i.z.hooks.published != nil {
			i.z.hooks.published(key, snap)
		}
		i.redialNew(prev, snap)
	}
	s.reweighted = next
}

// offeredKeys are the other service keys of key's interface that nodes
// (all of the interface's) serve, enabled, sorted, at most
// registry.MaxOffered: what a directory without providers tells a client
// that named a version or group nobody serves. Computed only for such a
// directory.
func offeredKeys(key registry.ServiceKey, nodes []*providerNode) []registry.ServiceKey {
	var out []registry.ServiceKey
	for _, n := range nodes {
		m := n.match.Value()
		k := registry.ServiceKey{Interface: key.Interface, Group: m.group, Version: m.version}
		if m.disabled || m.iface != key.Interface || k == key || slices.Contains(out, k) {
			continue
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b registry.ServiceKey) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Version, b.Version))
	})
	return out[:min(len(out), registry.MaxOffered)]
}

// mergedNodes are s's interface-level nodes and the nodes its
// applications' instances offer for it, sorted (application-level first
// for an address both have).
func (i *ifaces) mergedNodes(s *ifaceState) []*providerNode {
	nodes := slices.Clone(s.nodes)
	nodes = append(nodes, i.apps.nodesFor(s.name, s.apps)...)
	sortProviderNodes(nodes)
	return nodes
}

// providerOrigins says where each address among nodes (sorted) that
// serves key was found: others for most of them (the most common origin),
// and a map of the exceptions, nil when there is none, so that a service
// whose providers were found alike keeps no map.
func providerOrigins(key registry.ServiceKey, nodes []*providerNode) (exceptions map[string]registry.ProviderOrigin, others registry.ProviderOrigin) {
	votes := 0 // Boyer-Moore majority vote: others is the majority if there is one
	eachOrigin(key, nodes, func(_ string, o registry.ProviderOrigin) {
		switch {
		case votes == 0:
			others, votes = o, 1
		case o == others:
			votes++
		default:
			votes--
		}
	})
	eachOrigin(key, nodes, func(addr string, o registry.ProviderOrigin) {
		if o != others {
			if exceptions == nil {
				exceptions = make(map[string]registry.ProviderOrigin)
			}
			exceptions[addr] = o
		}
	})
	return exceptions, others
}

// eachOrigin calls f with each address among nodes (sorted by address,
// application-level nodes first) that serves key, and where it was found.
func eachOrigin(key registry.ServiceKey, nodes []*providerNode, f func(addr string, o registry.ProviderOrigin)) {
	var addr string
	var o registry.ProviderOrigin
	for _, n := range nodes {
		if !n.matches(key) {
			continue
		}
		if o.Source != "" && n.addr() == addr {
			if o.Source == registry.SourceApplication && n.origin == nil {
				o.Source = registry.SourceBoth
			}
			continue
		}
		if o.Source != "" {
			f(addr, o)
		}
		addr, o = n.addr(), registry.ProviderOrigin{Source: registry.SourceInterface}
		if n.origin != nil {
			o = registry.ProviderOrigin{Source: registry.SourceApplication, App: n.origin.app, Revision: n.origin.revision}
		}
	}
	if o.Source != "" {
		f(addr, o)
	}
}

// redialNew hands Options.Redial the address of every provider
// in snap that prev did not have: one that registered (again), perhaps a
// process restarted on an address the client is still backing off from.
func (i *ifaces) redialNew(prev, snap []*cluster.Provider) {
	if i.z.opts.Redial == nil {
		return
	}
	if len(prev)*len(snap) <= 256 { // a service's few providers: no map
		for _, p := range snap {
			if !slices.Contains(prev, p) {
				i.z.opts.Redial(p.Addr)
			}
		}
		return
	}
	old := make(map[*cluster.Provider]bool, len(prev))
	for _, p := range prev {
		old[p] = true
	}
	for _, p := range snap {
		if !old[p] {
			i.z.opts.Redial(p.Addr)
		}
	}
}
