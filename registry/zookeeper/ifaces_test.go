package zookeeper

import (
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// Interface-level discovery (ifaces.go): directories built from the
// providers and configurators nodes of a real ZooKeeper, and the cost of
// a provider list update.

func TestZooKeeperProvidersFromNodes(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.Users"
	e.addProvider(e.admin, iface, "10.0.0.2:20880", "version=1.0.0&weight=50", 0)
	e.addProvider(e.admin, iface, "10.0.0.1:20880", "version=1.0.0&serialization=hessian2", 0)
	e.addProvider(e.admin, iface, "10.0.0.1:20880", "version=1.0.0&application=same-address", 0)
	e.addProvider(e.admin, iface, "10.0.0.3:20880", "version=1.0.0&group=g1", 0)
	e.addProvider(e.admin, iface, "10.0.0.6:20880", "version=1.0.0&serialization=fastjson2&prefer.serialization=fastjson2,hessian2", 0)
	e.addProvider(e.admin, iface, "10.0.0.8:20880", "version=1.0.0&disabled=true", 0)
	e.addProvider(e.admin, iface, "10.0.0.9:20880", "version=2.0.0", 0)
	// Skipped, and counted: another protocol, serialization or category.
	e.addNode(e.admin, e.nodePath(iface, "providers"), url.QueryEscape("rest://10.0.0.4:50051/"+iface+"?version=1.0.0"), 0)
	e.addProvider(e.admin, iface, "10.0.0.5:20880", "version=1.0.0&serialization=kryo", 0)
	e.addProvider(e.admin, iface, "10.0.0.7:20880", "version=1.0.0&category=routers", 0)
	// Ignored without a word: Dubbo's "no provider" marker.
	e.addNode(e.admin, e.nodePath(iface, "providers"), url.QueryEscape("empty://10.0.0.1/"+iface+"?category=providers"), 0)

	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group})
	v1 := r.Subscribe(registry.ServiceKey{Interface: iface, Version: "1.0.0"})
	defer v1.Release()
	any := r.Subscribe(registry.ServiceKey{Interface: iface, Group: "*", Version: "*"})
	defer any.Release()
	waitReady(t, v1)
	waitReady(t, any)

	if got, want := addrsOf(v1.Providers()), []string{"10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.6:20880"}; !slices.Equal(got, want) {
		t.Errorf("version 1.0.0: %v, want %v", got, want)
	}
	if w := v1.Providers()[1].Weight; w != 50 {
		t.Errorf("weight of 10.0.0.2: %d, want 50", w)
	}
	if got, want := addrsOf(any.Providers()), []string{"10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880", "10.0.0.6:20880", "10.0.0.9:20880"}; !slices.Equal(got, want) {
		t.Errorf("*/*: %v, want %v", got, want)
	}
	if n := r.SkippedURLs(); n != 3 {
		t.Errorf("skipped %d URLs, want 3", n)
	}

	// A key subscribed later is served from the interface's watches.
	g1 := r.Subscribe(registry.ServiceKey{Interface: iface, Group: "g1", Version: "1.0.0"})
	defer g1.Release()
	waitReady(t, g1)
	if got := addrsOf(g1.Providers()); !slices.Equal(got, []string{"10.0.0.3:20880"}) {
		t.Errorf("g1: %v", got)
	}
	st := r.Status()
	if st.Type != "zookeeper" || st.State != registry.StateConnected || st.Degraded || st.Subscriptions != 3 || st.Watches != 2 {
		t.Errorf("status %+v", st)
	}
	for _, kind := range []string{"providers", "configurators"} {
		if n := r.armCount(e.nodePath(iface, kind)); n != 1 {
			t.Errorf("%s armed %d times, want 1", kind, n)
		}
	}

	// A new provider: an update keeps the unchanged providers' pointers.
	before := v1.Providers()
	e.addProvider(e.admin, iface, "10.0.0.10:20880", "version=1.0.0", 0)
	r.waitUntil(t, "the new provider is seen", func() bool { return len(v1.Providers()) == 4 })
	after := v1.Providers()
	if got := addrsOf(after); !slices.Equal(got, []string{"10.0.0.10:20880", "10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.6:20880"}) {
		t.Errorf("after the update: %v", got)
	}
	if after[1] != before[0] || after[2] != before[1] || after[3] != before[2] {
		t.Error("unchanged provider URLs got new *cluster.Provider values")
	}
	if got := r.SkippedURLs(); got != 3 {
		t.Errorf("skipped URLs re-counted on update: %d", got)
	}
	if st := r.Status(); st.Watches != 2 {
		t.Errorf("watches after an update: %d", st.Watches)
	}

	// A key nobody serves (no version, where every provider has one):
	// empty, and it says which keys of the interface do have providers
	// (enabled ones; not the skipped URLs). A key with providers says
	// nothing.
	none := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer none.Release()
	waitReady(t, none)
	want := []registry.ServiceKey{{Interface: iface, Version: "1.0.0"}, {Interface: iface, Version: "2.0.0"}, {Interface: iface, Group: "g1", Version: "1.0.0"}}
	if got := none.Offered(); len(none.Providers()) != 0 || !slices.Equal(got, want) {
		t.Errorf("a key without providers offers %v (providers %v), want %v", got, addrsOf(none.Providers()), want)
	}
	if got := v1.Offered(); got != nil {
		t.Errorf("a key with providers offers %v", got)
	}
}

func TestZooKeeperMissingOrEmptyProvidersNode(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group})

	// No node at all: an answer (no providers), not a pending directory.
	const missing = "com.example.Missing"
	d := r.Subscribe(registry.ServiceKey{Interface: missing})
	defer d.Release()
	waitReady(t, d)
	if d.State() != registry.DirOK || len(d.Providers()) != 0 {
		t.Fatalf("missing node: state %s, %d providers", d.State(), len(d.Providers()))
	}
	// Its creation is watched (ExistsW), and so is the next change.
	e.ensure(e.nodePath(missing, "providers"))
	e.addProvider(e.admin, missing, "10.0.0.1:20880", "", 0)
	r.waitUntil(t, "the provider under the created node is seen", func() bool { return len(d.Providers()) == 1 })

	// Only Dubbo's empty:// marker: no providers, answered.
	const empty = "com.example.Empty"
	e.addNode(e.admin, e.nodePath(empty, "providers"), url.QueryEscape("empty://10.0.0.1/"+empty+"?category=providers"), 0)
	d2 := r.Subscribe(registry.ServiceKey{Interface: empty})
	defer d2.Release()
	waitReady(t, d2)
	if d2.State() != registry.DirOK || len(d2.Providers()) != 0 || r.SkippedURLs() != 0 {
		t.Fatalf("empty marker: state %s, %d providers, %d skipped", d2.State(), len(d2.Providers()), r.SkippedURLs())
	}
}

func TestZooKeeperConfigurators(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.Orders"
	for _, addr := range []string{"10.0.0.1:20880", "10.0.0.1:20881", "10.0.0.2:20880"} {
		e.addProvider(e.admin, iface, addr, "version=1.0.0", 0)
	}
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group})
	d := r.Subscribe(registry.ServiceKey{Interface: iface, Version: "1.0.0"})
	defer d.Release()
	waitReady(t, d)

	expect := func(what, want string) {
		t.Helper()
		r.waitUntil(t, what+" ("+want+")", func() bool { return weights(d.Providers()) == want })
	}
	expect("no configurators node", "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=100")

	everyHost := e.addOverride(iface, "0.0.0.0", "weight=10") // creates the configurators node: seen through ExistsW
	expect("weight for every host", "10.0.0.1:20880=10 10.0.0.1:20881=10 10.0.0.2:20880=10")
	disabled := e.addOverride(iface, "10.0.0.1:20881", "disabled=true")
	expect("one port disabled", "10.0.0.1:20880=10 10.0.0.2:20880=10")
	e.addOverride(iface, "10.0.0.2", "weight=300")
	expect("a host's weight beats every host's", "10.0.0.1:20880=10 10.0.0.2:20880=300")
	// Overrides that must be skipped, each of which would change the next
	// expectation if applied (they sort after the ones they would beat).
	e.addOverride(iface, "10.0.0.2:20880", "weight=1&enabled=false")
	e.addOverride(iface, "10.0.0.1:20880", "weight=7&version=9.9.9")
	e.addOverride(iface, "10.0.0.1:20880", "weight=8&group=other")
	// A listing that shows this one shows the three created before it.
	portWeight := e.addOverride(iface, "10.0.0.1:20880", "weight=11")
	expect("non-matching overrides skipped", "10.0.0.1:20880=11 10.0.0.2:20880=300")
	e.remove(portWeight)
	expect("a deleted override is undone", "10.0.0.1:20880=10 10.0.0.2:20880=300")

	e.remove(everyHost)
	expect("every-host weight deleted: re-applied from the original URLs", "10.0.0.1:20880=100 10.0.0.2:20880=300")
	e.remove(disabled)
	expect("disabling deleted", "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=300")
}

// TestZooKeeperProviderChurn: 50 providers, ephemeral nodes of other
// sessions, come and go; after each change the directory shows exactly what
// ZooKeeper holds, unchanged providers keep their pointers, and the watches
// stay two.
func TestZooKeeperProviderChurn(t *testing.T) {
	server := testenv.StartZooKeeper(t) // alone on it, child watches can be counted
	e := newZKEnv(t, server.Addr())
	const iface = "com.example.Churn"
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)

	sessions := make([]*zk.Conn, 5)
	for i := range sessions {
		sessions[i] = connectZK(t, e.addr)
	}
	paths := make(map[string]string) // address → node
	sessionOf := func(addr string) int {
		var i int
		fmt.Sscanf(addr, "10.1.0.%d:20880", &i)
		return i % len(sessions)
	}
	add := func(i, generation int) {
		addr := fmt.Sprintf("10.1.0.%d:20880", i)
		query := "timestamp=" + strconv.Itoa(1700000000000+i) + "&generation=" + strconv.Itoa(generation)
		paths[addr] = e.addProvider(sessions[sessionOf(addr)], iface, addr, query, zk.FlagEphemeral)
	}
	inZooKeeper := func() []string {
		var out []string
		for _, c := range e.children(e.nodePath(iface, "providers")) {
			n, _ := parseProviderNode(c)
			out = append(out, n.addr())
		}
		slices.Sort(out)
		return out
	}
	session := r.sessionID()
	settle := func(what string) {
		t.Helper()
		want := inZooKeeper()
		r.waitUntil(t, what+fmt.Sprintf(" (%d providers)", len(want)), func() bool { return slices.Equal(addrsOf(d.Providers()), want) })
		if st := r.Status(); st.Watches != 2 {
			t.Fatalf("%s: %d watches", what, st.Watches)
		}
		if got, n := watchedPaths(t, e.addr, session, e.root+"/"), childWatchCount(t, e.addr); len(got) != 1 || n != 1 {
			t.Fatalf("%s: ZooKeeper watches %v and %d child watches, want configurators' exists watch and providers' child watch", what, got, n)
		}
	}

	for i := range 50 {
		add(i, 1)
	}
	settle("50 providers appeared")
	first := make(map[string]any)  // address → *cluster.Provider
	firstNode := maps.Clone(paths) // address → node
	for _, p := range d.Providers() {
		first[p.Addr] = p
	}

	for i := 0; i < 50; i += 5 {
		addr := fmt.Sprintf("10.1.0.%d:20880", i)
		e.remove(paths[addr])
		delete(paths, addr)
	}
	settle("10 providers deleted one by one")

	sessions[1].Close() // its ephemeral providers vanish together
	for addr := range paths {
		if sessionOf(addr) == 1 {
			delete(paths, addr)
		}
	}
	settle("a provider session closed")

	for _, i := range []int{0, 10, 20, 60, 65} { // session 0: deleted addresses come back, new ones appear
		add(i, 2)
	}
	settle("providers re-appeared")

	for _, p := range d.Providers() {
		if paths[p.Addr] == firstNode[p.Addr] && first[p.Addr] != any(p) {
			t.Errorf("%s: its node never changed, but it has a new *cluster.Provider", p.Addr)
		}
	}
	for _, pub := range r.publications() {
		if !slices.IsSorted(pub.addrs) || len(slices.Compact(slices.Clone(pub.addrs))) != len(pub.addrs) {
			t.Fatalf("a published snapshot is not sorted and unique: %v", pub.addrs)
		}
	}
}

// BenchmarkProviderListUpdate is the worker's cost of one change to an
// interface of 1,000 providers (one child replaced), listing to snapshot:
// children seen before keep their parsed node, against parsing every child
// again.
func BenchmarkProviderListUpdate(b *testing.B) {
	const n = 1000
	listings := [2][]string{make([]string, n), make([]string, n)}
	for i := range n {
		c := providerChild("10.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+":20880", "version=1.0.0&methods=a,b,c&timestamp=1700000000000&warmup=60000")
		listings[0][i], listings[1][i] = c, c
	}
	listings[1][n/2] = providerChild("10.9.9.9:20880", "version=1.0.0")
	key := registry.ServiceKey{Interface: testIface, Version: "1.0.0"}
	interfaces := &ifaces{z: &Registry{log: slog.New(slog.DiscardHandler)}, keys: newNodeKeys()}
	newState := func() *ifaceState {
		return &ifaceState{name: testIface, providerNodes: map[nodeKey]*providerNode{}, overrideNodes: map[string]*override{}}
	}
	run := func(b *testing.B, fresh bool) {
		s := newState()
		interfaces.setProviders(s, listings[0])
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if fresh {
				s = newState()
			}
			interfaces.setProviders(s, listings[i%2])
			if got := buildSnapshot(key, s.nodes, nil, nil, nil, nil); len(got) != n {
				b.Fatalf("%d providers", len(got))
			}
		}
	}
	b.Run("parsed once", func(b *testing.B) { run(b, false) })
	b.Run("parsed every time", func(b *testing.B) { run(b, true) })
}

// TestDiffDirs: the directories gone and added between two sets of an
// interface, a directory replaced for its key being both, for a few
// directories and for many (the pass-through's clients choose group and
// version, so one interface can have thousands of keys).
func TestDiffDirs(t *testing.T) {
	for _, n := range []int{3, 2000} {
		ds := &registry.Directories{}
		dirs := make(dirSet, n)
		for i := range dirs {
			dirs[i] = ds.Acquire(registry.ServiceKey{Interface: testIface, Version: strconv.Itoa(i)})
		}
		replaced := (&registry.Directories{}).Acquire(dirs[1].Key()) // another directory for key 1
		added := ds.Acquire(registry.ServiceKey{Interface: testIface, Group: "new"})
		prev := dirs
		next := append(slices.Clone(dirs[1:]), added)
		next[0] = replaced
		var gone, made []*registry.Directory
		diffDirs(prev, next, func(d *registry.Directory) { gone = append(gone, d) }, func(d *registry.Directory) { made = append(made, d) })
		if !slices.Equal(gone, []*registry.Directory{dirs[0], dirs[1]}) || !slices.Equal(made, []*registry.Directory{replaced, added}) {
			t.Errorf("%d directories: gone %v, added %v; want keys 0 and 1 gone, 1 (replaced) and the new one added", n, keysOf(gone), keysOf(made))
		}
	}
}

func keysOf(ds []*registry.Directory) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Key().String())
	}
	return out
}

// BenchmarkDiffDirs: one subscription added to an interface with 2,048
// live keys (the on-demand cap), what reconcile compares.
func BenchmarkDiffDirs(b *testing.B) {
	ds := &registry.Directories{}
	prev := make(dirSet, 2048)
	for i := range prev {
		prev[i] = ds.Acquire(registry.ServiceKey{Interface: testIface, Version: strconv.Itoa(i)})
	}
	next := prev.with(ds.Acquire(registry.ServiceKey{Interface: testIface, Group: "new"}))
	b.ReportAllocs()
	for b.Loop() {
		diffDirs(prev, next, func(*registry.Directory) {}, func(*registry.Directory) {})
	}
}
