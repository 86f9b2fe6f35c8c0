package zookeeper

import (
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/registry"
)

// This file is the worker's application-level discovery (Dubbo 3 "service
// discovery"), next to the interface-level nodes of ifaces.go:
//
//	/<root>/mapping/<interface>      data "app1,app2": the applications serving the interface
//	<services>/<app>/<ip:port>        one instance of the application (Curator's JSON)
//
// and the instance's metadata, which says which services (interface,
// group, version, protocol, port) the instance serves: by calling the
// instance's MetadataService (storage "local", through
// Options.Metadata) or, for storage "remote", from
// /<root>/metadata/<app>/<revision> (Java Dubbo) or /<root>/<app>/<revision>
// (dubbo-go). An interface watches its mapping node; an application
// watched for any interface is watched once, with a data watch on each of
// its instances (an instance's revision changes in place). Metadata is
// fetched at most MetadataConcurrency at a time (a remote node read on the
// worker's session like any other node; a MetadataService call on a
// helper goroutine), each with a deadline, retried with a backoff, and cached per instance and
// revision (a revision alone is not unique: dubbo-go's ignores protocol,
// port, group and version), or per application and revision when it is
// read from ZooKeeper (one node for all instances): metadata.go.

// appState is an application named by the mapping node of a live interface.
type appState struct {
	name      string
	watch     *pathWatch                // <services>/<app>, children
	users     map[string]struct{}       // the interfaces whose mapping names it
	instances map[string]*instanceState // by node name ("ip:port")
}

// instanceState is one instance of an application.
type instanceState struct {
	child string
	watch *pathWatch         // <services>/<app>/<child>, data
	seen  bool               // sum is the key of the node's data last read
	sum   nodeKey            // (not the data: 5,000 instances would keep ~1 KB each)
	inst  *registry.Instance // parsed from that data; nil when unusable or gone
	meta  *metaEntry         // the metadata of inst's revision
	// nodes are the providers the instance offers, from the last metadata
	// known: those of the previous revision until the new one's is known.
	nodes []*providerNode
	// missingSince is when the application's listing first lacked the
	// instance (zero while listed): it is dropped leaveGrace later unless
	// it is listed again.
	missingSince time.Time
}

// leaveGrace is how long an instance missing from its application's
// listing keeps its providers: a provider re-registering (dubbo-go
// deletes its instance node and creates it again when it restarts or
// reconnects to ZooKeeper) is not seen as leaving, and its services are
// never left without providers in between.
const leaveGrace = 500 * time.Millisecond

// awaitingMetadata reports whether the instance's metadata has been
// neither fetched nor given up on once.
func (in *instanceState) awaitingMetadata() bool {
	return in.inst != nil && in.meta != nil && !in.meta.known && in.meta.failures == 0
}

// apps are the applications the mapping nodes of live interfaces name:
// their instances, each instance's metadata, and so the providers each
// offers. A change is published by the interfaces using the application:
// apps has them published again (republish).
type apps struct {
	z         *Registry
	session   *session
	watches   *watches
	republish func(iface string)     // has interface iface published again
	wakeAt    func(time.Time)        // makes the worker step at t at the latest
	byName    map[string]*appState   // applications named by the mapping nodes of live interfaces
	meta      map[metaKey]*metaEntry // instance metadata by instance and revision, bounded
	metaInUse int                    // entries of meta some live instance uses
	metaDone  chan metaResult        // fetches' results
	fetching  int                    // fetches under way
	toFetch   set[*metaEntry]        // entries in use whose metadata is unknown: fetched when due
	missing   set[*appState]         // applications with instances missing from their listing
	usable    int                    // instances parsed (counts)
	scanning  bool                   // in a publication scan: settled answers from scan
	scan      map[*appState]bool     // appSettled within the scan
	sums      nodeKeys               // of instance nodes' data
	// metaFetches counts the fetches done, metaFailures those that failed.
	metaFetches, metaFailures uint64
}

func newApps(z *Registry, s *session, ws *watches, republish func(iface string), wakeAt func(time.Time)) *apps {
	return &apps{
		z:         z,
		session:   s,
		watches:   ws,
		republish: republish,
		wakeAt:    wakeAt,
		byName:    make(map[string]*appState),
		meta:      make(map[metaKey]*metaEntry),
		metaDone:  make(chan metaResult),
		scan:      make(map[*appState]bool),
		sums:      newNodeKeys(),
	}
}

// parseMapping parses a mapping node's data: application names separated
// by commas. Names that cannot be ZooKeeper nodes are left out.
func parseMapping(data []byte) []string {
	var apps []string
	for name := range strings.SplitSeq(string(data), ",") {
		if name = strings.TrimSpace(name); validNodeName(name) {
			apps = append(apps, name)
		}
	}
	slices.Sort(apps)
	return slices.Compact(apps)
}

// use follows interface iface's mapping from the applications from to
// those in to.
func (ap *apps) use(iface string, from, to []string) {
	for _, name := range from {
		if !slices.Contains(to, name) {
			ap.leave(iface, name)
		}
	}
	for _, name := range to {
		if !slices.Contains(from, name) {
			ap.join(iface, name)
		}
	}
}

func (ap *apps) join(iface, name string) {
	a := ap.byName[name]
	if a == nil {
		a = &appState{
			name:      name,
			watch:     ap.watches.watch(ap.z.servicesRoot+"/"+name, nodeApp, name, ""),
			users:     make(map[string]struct{}),
			instances: make(map[string]*instanceState),
		}
		ap.byName[name] = a
	}
	a.users[iface] = struct{}{}
}

// usersOf are the interfaces whose mapping names application name (nil
// for an application not in use).
func (ap *apps) usersOf(name string) map[string]struct{} {
	if a := ap.byName[name]; a != nil {
		return a.users
	}
	return nil
}

// leave says iface no longer uses application name; an application nobody
// uses is no longer watched.
func (ap *apps) leave(iface, name string) {
	a := ap.byName[name]
	if a == nil {
		return
	}
	delete(a.users, iface)
	if len(a.users) > 0 {
		return
	}
	ap.watches.unwatch(a.watch)
	for _, in := range a.instances {
		ap.dropInstance(a, in)
	}
	delete(ap.byName, name)
	ap.missing.remove(a)
}

// take takes what a read of an application's node or an instance's found.
func (ap *apps) take(pw *pathWatch, r opResult) {
	a := ap.byName[pw.owner]
	if a == nil {
		return
	}
	switch pw.kind {
	case nodeApp:
		ap.setInstances(a, r.children)
	case nodeInstance:
		if in := a.instances[pw.child]; in != nil {
			ap.setInstance(a, in, r.data, r.exists)
		}
	}
}

// setInstances takes a listing of a's instances: new ones are read, gone
// ones dropped.
func (ap *apps) setInstances(a *appState, children []string) {
	seen := make(map[string]bool, len(children))
	for _, c := range children {
		if !strings.Contains(c, ":") {
			// Not an instance ("ip:port"): under a registry group the
			// application's remote metadata nodes (named by revision)
			// share its node.
			continue
		}
		seen[c] = true
		if in := a.instances[c]; in != nil {
			in.missingSince = time.Time{}
		}
		switch in := a.instances[c]; {
		case in == nil:
			a.instances[c] = &instanceState{child: c, watch: ap.watches.watch(a.watch.path+"/"+c, nodeInstance, a.name, c)}
		case !in.watch.armed && !in.watch.busy && !in.watch.need:
			// Read while it was gone (no watch is set then), and back:
			// a restart on the same address.
			ap.watches.markNeed(in.watch)
			ap.z.poke()
		}
	}
	now := time.Now()
	if len(seen) < len(a.instances) {
		for c, in := range a.instances {
			if !seen[c] && in.missingSince.IsZero() {
				in.missingSince = now
				ap.wakeAt(now.Add(leaveGrace))
			}
		}
	}
	ap.dropMissing(a, now)
	if len(children) > 0 {
		ap.dirtyUsers(a) // their first publication waits for the new instances (settled)
	}
}

// dropAllMissing drops the instances missing from their application's
// listing for leaveGrace or longer (of the applications that have any).
func (ap *apps) dropAllMissing(now time.Time) {
	for a := range ap.missing.all() {
		ap.dropMissing(a, now)
	}
}

// dropMissing drops the instances of a missing from its listing for
// leaveGrace or longer, and keeps a in ap.missing while others are
// missing still.
func (ap *apps) dropMissing(a *appState, now time.Time) {
	missing := false
	for c, in := range a.instances {
		if in.missingSince.IsZero() {
			continue
		}
		if due := in.missingSince.Add(leaveGrace); now.Before(due) {
			missing = true
			ap.wakeAt(due)
			continue
		}
		ap.dropInstance(a, in)
		delete(a.instances, c)
		ap.dirtyUsers(a)
	}
	if missing {
		ap.missing.add(a)
	} else {
		ap.missing.remove(a)
	}
}

// dropInstance stops watching an instance and lets go of its metadata.
func (ap *apps) dropInstance(a *appState, in *instanceState) {
	ap.watches.unwatch(in.watch)
	ap.useMeta(a, in, nil)
	ap.setInst(in, nil)
}

// setInst sets in's parsed instance, keeping the count of usable ones.
func (ap *apps) setInst(in *instanceState, inst *registry.Instance) {
	if in.inst != nil {
		ap.usable--
	}
	if in.inst = inst; inst != nil {
		ap.usable++
	}
}

// setInstance takes a read of one instance's node.
func (ap *apps) setInstance(a *appState, in *instanceState, data []byte, exists bool) {
	if !exists {
		// Deleted. The application's listing, whose watch fired too, is
		// the authority on membership: it drops the instance if it is
		// gone, or keeps it and reads it again if it is back (a provider
		// re-registering, as dubbo-go does on a restart or a reconnection:
		// delete, then create). Until then its providers stay, so a
		// re-registration never leaves a service without providers.
		return
	}
	sum := ap.sums.ofData(data)
	if in.seen && sum == in.sum {
		return // unchanged (re-read after a reconnection or a recycle): nothing to count or log again
	}
	in.seen, in.sum = true, sum
	inst, err := registry.ParseInstance(data)
	if err != nil {
		ap.z.skipped.Add(1)
		ap.z.log.Warn("skipping an application instance", "app", a.name, "instance", in.child, "err", err)
		ap.useMeta(a, in, nil)
		ap.setInst(in, nil)
		in.nodes = nil
		ap.dirtyUsers(a)
		return
	}
	if inst.App == "" {
		inst.App = a.name
	}
	// What selection and metadata fetches read was parsed out of these
	// maps: 5,000 instances would keep ~1 KB of them each.
	inst.Metadata, inst.MetadataService.Params = nil, nil
	ap.setInst(in, inst)
	if !inst.RevisionKnown() {
		// Revision "0" or "N/A": the instance exports nothing (a pure
		// consumer, or metadata not computed): nothing to fetch or select.
		ap.useMeta(a, in, nil)
		in.nodes = nil
		ap.dirtyUsers(a)
		return
	}
	key := metaKey{app: a.name, instance: in.child, revision: inst.Revision}
	if storageType(inst) == "remote" {
		// One node per application and revision, whichever instance
		// reads it: fetched and parsed once for all of them.
		key.instance = ""
	}
	if in.meta == nil || in.meta.key != key {
		ap.useMeta(a, in, ap.metaEntry(key))
		ap.evictMetadata()
	}
	ap.applyMetadata(a, in)
}

// applyMetadata derives in's providers from its metadata, when known.
// While the metadata of a new revision is fetched, the providers of the
// previous one stay; once a fetch has failed, the instance has none.
func (ap *apps) applyMetadata(a *appState, in *instanceState) {
	switch e := in.meta; {
	case e == nil || in.inst == nil:
		return
	case e.known:
		in.nodes = ap.instanceNodes(a, in, e.offers)
	case e.failures > 0:
		in.nodes = nil
	default:
		return // fetching: fetchDue starts it, onMetadata applies it
	}
	ap.dirtyUsers(a)
}

// instanceNodes are the providers in offers, its metadata's services.
func (ap *apps) instanceNodes(a *appState, in *instanceState, offers []nodeOffer) []*providerNode {
	origin := &nodeOrigin{app: a.name, instance: in.child, revision: in.inst.Revision}
	return offerNodes(offers, in.inst, origin, func(service, reason string) {
		ap.z.skipped.Add(1)
		ap.z.log.Warn("skipping a service of an application instance", "app", a.name, "instance", in.child,
			"revision", in.inst.Revision, "service", service, "reason", reason)
	})
}

// dirtyUsers has the interfaces using a published again.
func (ap *apps) dirtyUsers(a *appState) {
	for iface := range a.users {
		ap.republish(iface)
	}
}

// settled reports whether the applications names are known well enough
// for an interface's first publication: every instance of each has been
// read and its metadata fetched or given up on once. A node whose read
// failed (it is retried with a backoff) does not hold the others' first
// answer back. Within a scan (publishDirty), each application is looked
// at once however many interfaces wait for it.
func (ap *apps) settled(names []string) bool {
	for _, name := range names {
		a := ap.byName[name]
		if a == nil || !ap.appSettled(a) {
			return false
		}
	}
	return true
}

func (ap *apps) appSettled(a *appState) bool {
	if ap.scanning {
		if v, ok := ap.scan[a]; ok {
			return v
		}
	}
	v := a.watch.read || a.watch.failed
	for _, in := range a.instances {
		if !v {
			break
		}
		v = (in.watch.read || in.watch.failed) && !in.awaitingMetadata()
	}
	if ap.scanning {
		ap.scan[a] = v
	}
	return v
}

// startScan and endScan bracket the settled checks of one publication
// scan: nothing changes the applications in between.
func (ap *apps) startScan() { ap.scanning = true }

func (ap *apps) endScan() {
	ap.scanning = false
	clear(ap.scan)
}

// nodesFor are the providers of interface iface the instances of the
// applications names offer.
func (ap *apps) nodesFor(iface string, names []string) []*providerNode {
	var nodes []*providerNode
	for _, name := range names {
		a := ap.byName[name]
		if a == nil {
			continue
		}
		for _, in := range a.instances {
			for _, n := range in.nodes {
				if n.match.Value().iface == iface {
					nodes = append(nodes, n)
				}
			}
		}
	}
	return nodes
}

// counts counts the applications watched and their usable instances.
func (ap *apps) counts() (applications, instances int) { return len(ap.byName), ap.usable }
