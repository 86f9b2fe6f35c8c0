package zookeeper

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/go-zookeeper/zk"
)

func TestNewZooKeeperRejectsBadOptions(t *testing.T) {
	for _, addrs := range [][]string{nil, {"nohost"}, {":2181"}, {"h:port"}, {"h:0"}} {
		if _, err := New(Options{Addrs: addrs}); err == nil {
			t.Errorf("addrs %q accepted", addrs)
		}
	}
}

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
	e.addNode(e.admin, e.nodePath(iface, "providers"), url.QueryEscape("tri://10.0.0.4:50051/"+iface+"?version=1.0.0"), 0)
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

// TestZooKeeperWatchesDoNotGrow replays seed incident 000: a service
// nobody provides, asked for over and over. ZooKeeper's own account (wchc)
// of the session's watches stays at the one interface's two paths.
func TestZooKeeperWatchesDoNotGrow(t *testing.T) {
	server := testenv.StartZooKeeper(t) // alone on it, child watches can be counted too
	e := newZKEnv(t, server.Addr())
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Grace: -1})
	const iface = "com.example.NobodyProvidesThis"
	key := registry.ServiceKey{Interface: iface, Version: "1.0.0"}
	providers, configurators := e.nodePath(iface, "providers"), e.nodePath(iface, "configurators")
	want := []string{configurators, providers}

	held := make([]*registry.Directory, 1000)
	for i := range held {
		held[i] = r.Subscribe(key)
	}
	waitReady(t, held[0])
	for _, d := range held[1:] {
		if d != held[0] {
			t.Fatal("a second directory for the same key")
		}
	}
	session := r.sessionID()
	if got := watchedPaths(t, e.addr, session, e.root+"/"+iface+"/"); !slices.Equal(got, want) {
		t.Fatalf("after 1,000 subscriptions ZooKeeper watches %v, want %v", got, want)
	}
	if st, n := r.Status(), childWatchCount(t, e.addr); st.Watches != 2 || st.Subscriptions != 1 || n != 0 {
		t.Fatalf("status %+v, %d child watches", st, n)
	}
	for _, d := range held {
		d.Release()
	}

	// Released at once (Grace < 0) and subscribed again, 1,000 times, the
	// worker dropping the interface each time; then 1,000 times as fast as
	// possible; and another version of the same interface.
	for range 1000 {
		d := r.Subscribe(key)
		waitReady(t, d)
		d.Release()
		r.waitUntil(t, "the interface is dropped", func() bool { return r.Status().Watches == 0 })
	}
	for range 1000 {
		r.Subscribe(key).Release()
	}
	d := r.Subscribe(key)
	other := r.Subscribe(registry.ServiceKey{Interface: iface, Version: "2.0.0"})
	waitReady(t, d)
	waitReady(t, other)
	r.waitUntil(t, "both directories answered", func() bool { return d.State() == registry.DirOK && other.State() == registry.DirOK })
	if got := watchedPaths(t, e.addr, session, e.root+"/"+iface+"/"); !slices.Equal(got, want) {
		t.Fatalf("after 1,000 subscribe/release cycles ZooKeeper watches %v, want %v", got, want)
	}
	// Never armed twice: a watch that has not fired is re-used, not re-set.
	if p, c := r.armCount(providers), r.armCount(configurators); p != 1 || c != 1 {
		t.Fatalf("watches armed %d and %d times, want once each", p, c)
	}
	if st := r.Status(); st.Watches != 2 || st.Subscriptions != 2 {
		t.Fatalf("status %+v", st)
	}

	// Released for good: when the dropped watch fires it is not re-armed.
	// Nothing waits for its event any more (no goroutine per dropped
	// watch), so the registry counts it as an orphan until a recycle.
	d.Release()
	other.Release()
	r.waitUntil(t, "the interface is released", func() bool { return r.Status().Watches == 0 })
	e.ensure(providers) // fires the exists watch
	testenv.WaitFor(t, waitLimit, "the dropped providers watch fired on the server", func() bool {
		return slices.Equal(watchedPaths(t, e.addr, session, e.root+"/"+iface+"/"), []string{configurators})
	})
	// The worker is sequential: once another subscription is answered, what
	// it did with the event, if anything, is done.
	probe := r.Subscribe(registry.ServiceKey{Interface: "com.example.Probe"})
	waitReady(t, probe)
	probe.Release()
	if p, f := r.armCount(providers), r.fireCount(providers); p != 1 || f != 0 {
		t.Fatalf("a dropped watch was re-armed or its event taken (%d arms, %d fired)", p, f)
	}
	// Subscribing again takes the event the dropped watch kept, re-arms the
	// fired one and re-uses the other.
	d = r.Subscribe(key)
	defer d.Release()
	waitReady(t, d)
	r.waitUntil(t, "re-armed", func() bool { return r.armCount(providers) == 2 })
	if c := r.armCount(configurators); c != 1 {
		t.Fatalf("the unfired configurators watch was armed again (%d)", c)
	}
	if got, n := watchedPaths(t, e.addr, session, e.root+"/"+iface+"/"), childWatchCount(t, e.addr); !slices.Equal(got, []string{configurators}) || n != 1 {
		t.Fatalf("ZooKeeper watches %v and %d child watches, want the configurators exists watch and one child watch (providers)", got, n)
	}
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
			out = append(out, n.url.Addr)
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

func TestZooKeeperConsumerRegistration(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.Registered"
	e.ensure(e.nodePath(iface, "providers")) // consumers register under interfaces that have one
	goroutines := runtime.NumGoroutine()
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Register: true, Grace: -1, Application: "gw-test"})
	withGroup := r.Subscribe(registry.ServiceKey{Interface: iface, Group: "g", Version: "1.0.0"})
	plain := r.Subscribe(registry.ServiceKey{Interface: iface})
	plain2 := r.Subscribe(registry.ServiceKey{Interface: iface}) // the same key: still one node
	r.waitUntil(t, "two consumers registered", func() bool { return r.Status().Registered == 2 })

	consumers := e.nodePath(iface, "consumers")
	nodes := e.children(consumers)
	if len(nodes) != 2 {
		t.Fatalf("consumer nodes %v, want 2", nodes)
	}
	byGroup := make(map[string]string) // group → node path
	for _, n := range nodes {
		raw, err := url.QueryUnescape(n)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Scheme != "consumer" || u.Host != "127.0.0.1" || u.Path != "/"+iface ||
			q.Get("application") != "gw-test" || q.Get("category") != "consumers" || q.Get("check") != "false" ||
			q.Get("dubbo") != "2.0.2" || q.Get("interface") != iface || q.Get("side") != "consumer" ||
			q.Get("pid") != strconv.Itoa(os.Getpid()) || q.Get("timestamp") == "" {
			t.Errorf("consumer URL %s", raw)
		}
		if q.Get("group") == "g" && q.Get("version") != "1.0.0" || q.Get("group") == "" && q.Has("version") {
			t.Errorf("consumer URL %s: version/group", raw)
		}
		_, st, err := e.admin.Get(consumers + "/" + n)
		if err != nil || st.EphemeralOwner != r.sessionID() {
			t.Errorf("%s: owner %#x, want the registry's session %#x (%v)", raw, st.EphemeralOwner, r.sessionID(), err)
		}
		byGroup[q.Get("group")] = consumers + "/" + n
	}

	plain.Release()
	plain2.Release() // the key's directory is released: its node goes
	e.waitGone(byGroup[""])
	r.waitUntil(t, "one consumer registered", func() bool { return r.Status().Registered == 1 })
	if _, _, err := e.admin.Get(byGroup["g"]); err != nil {
		t.Fatalf("the other key's node: %v", err)
	}

	// Close ends the session: ZooKeeper removes the remaining node.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	e.waitGone(byGroup["g"])
	if st := r.Status(); st.State != registry.StateClosed || st.Registered != 0 || st.Watches != 0 {
		t.Errorf("status after Close: %+v", st)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before the registry:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
	late := r.Subscribe(registry.ServiceKey{Interface: iface})
	select {
	case <-late.Ready():
	default:
		t.Error("a directory asked for after Close waits for a registry that is gone")
	}
	withGroup.Release()
}

// TestZooKeeperSessionExpiry cuts the registry off (a paused proxy) until
// ZooKeeper expires its session: the last providers keep serving, marked
// stale; then every watch is re-armed exactly once, the consumer nodes come
// back, and a change made meanwhile is seen.
func TestZooKeeperSessionExpiry(t *testing.T) {
	server := testenv.StartZooKeeper(t) // short ticks: sessions expire fast; alone on it: child watches counted
	addr := server.Addr()
	e := newZKEnv(t, addr)
	proxy := testenv.StartProxy(t, addr)
	ifaces := []string{"com.example.A", "com.example.B"}
	for _, iface := range ifaces {
		e.addProvider(e.admin, iface, "10.2.0.1:20880", "", 0)
		e.addProvider(e.admin, iface, "10.2.0.2:20880", "", 0)
	}
	r := startRegistry(t, Options{Addrs: []string{proxy.Addr()}, Root: e.group,
		SessionTimeout: 2 * time.Second, Timeout: time.Second, Register: true})
	var dirs []*registry.Directory
	for _, iface := range ifaces {
		d := r.Subscribe(registry.ServiceKey{Interface: iface})
		defer d.Release()
		dirs = append(dirs, d)
	}
	allOK := func() bool {
		for _, d := range dirs {
			if d.State() != registry.DirOK {
				return false
			}
		}
		return true
	}
	r.waitUntil(t, "subscribed and registered", func() bool { return allOK() && r.Status().Registered == 2 })
	oldSession := r.sessionID()
	var consumerNodes []string
	for _, iface := range ifaces {
		for _, n := range e.children(e.nodePath(iface, "consumers")) {
			consumerNodes = append(consumerNodes, e.nodePath(iface, "consumers")+"/"+n)
		}
	}
	published := len(r.publications())

	proxy.Pause()
	r.waitUntil(t, "degraded", func() bool {
		st := r.Status()
		return st.Degraded && st.State == registry.StateDisconnected && dirs[0].State() == registry.DirStale && dirs[1].State() == registry.DirStale
	})
	for _, d := range dirs {
		if len(d.Providers()) != 2 {
			t.Fatalf("%s lost its providers while disconnected: %v", d.Key(), addrsOf(d.Providers()))
		}
	}
	e.addProvider(e.admin, ifaces[0], "10.2.0.3:20880", "", 0) // a change the registry cannot see now
	for _, n := range consumerNodes {
		e.waitGone(n) // ZooKeeper expired the session and removed its ephemeral nodes
	}

	proxy.Resume()
	r.waitUntil(t, "back on a new session", func() bool {
		st := r.Status()
		return st.SessionExpiries == 1 && st.State == registry.StateConnected && !st.Degraded && st.Registered == 2 &&
			allOK() && len(dirs[0].Providers()) == 3
	})
	newSession := r.sessionID()
	if newSession == oldSession {
		t.Fatal("same session after expiry")
	}
	for _, iface := range ifaces {
		for _, kind := range []string{"providers", "configurators"} {
			if n := r.armCount(e.nodePath(iface, kind)); n != 2 {
				t.Errorf("%s/%s armed %d times, want 2 (once per session)", iface, kind, n)
			}
		}
	}
	if got, n := watchedPaths(t, addr, newSession, e.root+"/"), childWatchCount(t, addr); len(got) != 2 || n != 2 {
		t.Errorf("the new session watches %v and %d child watches, want 2 of each (exists: configurators, child: providers)", got, n)
	}
	if st := r.Status(); st.Watches != 4 || st.Reconnects < 1 {
		t.Errorf("status %+v", st)
	}
	for _, n := range consumerNodes { // re-created with the same URL, by the new session
		_, st, err := e.admin.Get(n)
		if err != nil || st.EphemeralOwner != newSession {
			t.Errorf("%s: %v, owner %#x, want %#x", n, err, st.EphemeralOwner, newSession)
		}
	}
	if len(dirs[1].Providers()) != 2 {
		t.Errorf("%s: %v", dirs[1].Key(), addrsOf(dirs[1].Providers()))
	}
	for _, pub := range r.publications()[published:] {
		if len(pub.addrs) == 0 {
			t.Errorf("%s was published with no providers during the expiry", pub.key)
		}
	}
}

// TestZooKeeperRestart restarts ZooKeeper itself: while it is down the
// last providers serve (stale), a new directory answers at once, and once it
// is back everything is current again.
func TestZooKeeperRestart(t *testing.T) {
	server := testenv.StartZooKeeper(t)
	e := newZKEnv(t, server.Addr())
	const iface = "com.example.Restarted"
	e.addProvider(e.admin, iface, "10.3.0.1:20880", "", 0)
	e.addProvider(e.admin, iface, "10.3.0.2:20880", "", 0)
	r := startRegistry(t, Options{Addrs: []string{server.Addr()}, Root: e.group,
		SessionTimeout: 4 * time.Second, Timeout: time.Second})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	if len(d.Providers()) != 2 {
		t.Fatalf("providers %v", addrsOf(d.Providers()))
	}

	server.Stop()
	r.waitUntil(t, "degraded", func() bool {
		st := r.Status()
		return st.Degraded && st.State == registry.StateDisconnected && d.State() == registry.DirStale
	})
	if len(d.Providers()) != 2 {
		t.Fatalf("providers while ZooKeeper is down: %v", addrsOf(d.Providers()))
	}
	late := r.Subscribe(registry.ServiceKey{Interface: "com.example.AskedWhileDown"})
	defer late.Release()
	select {
	case <-late.Ready():
	default:
		t.Fatal("a directory created while ZooKeeper is down is not ready at once")
	}
	if len(late.Providers()) != 0 {
		t.Fatalf("directory created while down: %v", addrsOf(late.Providers()))
	}

	server.Start()
	e.reconnectAdmin()
	e.addProvider(e.admin, iface, "10.3.0.3:20880", "", 0)
	r.waitUntil(t, "current again", func() bool {
		st := r.Status()
		return st.State == registry.StateConnected && !st.Degraded && d.State() == registry.DirOK && len(d.Providers()) == 3 && late.State() == registry.DirOK
	})
	// ZooKeeper restored the session from its data directory: the client
	// re-sent its watches, so nothing was armed again but what fired.
	if st := r.Status(); st.Reconnects < 1 || st.SessionExpiries != 0 || st.Watches != 4 {
		t.Errorf("status %+v", st)
	}
	if n := r.armCount(e.nodePath(iface, "configurators")); n != 1 {
		t.Errorf("configurators watch armed %d times across a same-session reconnect, want 1", n)
	}
}

// TestZooKeeperUnreachableAtStart: New does not wait for
// ZooKeeper, directories stop waiting after Timeout, and everything fills
// in when it answers.
func TestZooKeeperUnreachableAtStart(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	e := newZKEnv(t, addr)
	const iface = "com.example.Later"
	e.addProvider(e.admin, iface, "10.4.0.1:20880", "", 0)
	proxy := testenv.StartProxy(t, addr)
	proxy.Pause()

	r := startRegistry(t, Options{Addrs: []string{proxy.Addr()}, Root: e.group, Timeout: 300 * time.Millisecond})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d) // after Timeout without a session
	r.waitUntil(t, "reported unreachable", func() bool { return r.Status().Degraded })
	if st := r.Status(); len(d.Providers()) != 0 || st.State != registry.StateConnecting || st.Error == "" {
		t.Fatalf("unreachable: directory %v, status %+v", addrsOf(d.Providers()), st)
	}
	d2 := r.Subscribe(registry.ServiceKey{Interface: iface, Version: "2.0.0"})
	defer d2.Release()
	select {
	case <-d2.Ready():
	default:
		t.Fatal("a directory created while ZooKeeper is known unreachable is not ready at once")
	}

	proxy.Resume()
	r.waitUntil(t, "connected and answered", func() bool {
		st := r.Status()
		return st.State == registry.StateConnected && !st.Degraded && st.Error == "" && d.State() == registry.DirOK && len(d.Providers()) == 1 && d2.State() == registry.DirOK
	})
}

func TestZooKeeperDigestAuth(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.Secret"
	if err := e.admin.AddAuth("digest", []byte("gw:secret")); err != nil {
		t.Fatal(err)
	}
	e.ensure(e.root + "/" + iface)
	providers := e.nodePath(iface, "providers")
	if _, err := e.admin.Create(providers, nil, 0, zk.DigestACL(zk.PermAll, "gw", "secret")); err != nil {
		t.Fatal(err)
	}
	e.addProvider(e.admin, iface, "10.5.0.1:20880", "", 0)

	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Username: "gw", Password: "secret",
		Grace: -1, WatchGC: 50 * time.Millisecond})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	if d.State() != registry.DirOK || len(d.Providers()) != 1 {
		t.Fatalf("with credentials: %s %v", d.State(), addrsOf(d.Providers()))
	}
	// A recycled session authenticates too: the protected node is
	// listed and watched on it.
	orphaned := r.Subscribe(registry.ServiceKey{Interface: "com.example.Released"})
	waitReady(t, orphaned)
	orphaned.Release()
	r.waitUntil(t, "recycled", func() bool { return r.Status().SessionRecycles == 1 })
	e.addProvider(e.admin, iface, "10.5.0.2:20880", "", 0)
	r.waitUntil(t, "a provider added after the recycle seen", func() bool { return len(d.Providers()) == 2 })
	if st := r.Status(); d.State() != registry.DirOK || st.Error != "" || st.Watches != 2 {
		t.Fatalf("after the recycle: directory %s, status %+v", d.State(), st)
	}

	anonymous := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group})
	d2 := anonymous.Subscribe(registry.ServiceKey{Interface: iface})
	defer d2.Release()
	waitReady(t, d2) // a failed listing stops the wait
	anonymous.waitUntil(t, "the failure is reported", func() bool { return strings.Contains(anonymous.Status().Error, "not authenticated") })
	if len(d2.Providers()) != 0 {
		t.Fatalf("without credentials: %v", addrsOf(d2.Providers()))
	}
}
