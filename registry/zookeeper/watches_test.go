package zookeeper

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// The watches (watches.go): one per node however many keys ask for it,
// re-used while set, and no goroutine for a dropped one; counted by
// ZooKeeper itself.

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
	// Its event comes through the client's event callback (no goroutine
	// per watch): the orphan is forgotten then, leaving one (configurators).
	d.Release()
	other.Release()
	r.waitUntil(t, "the interface is released", func() bool { return r.Status().Watches == 0 })
	if st := r.Status(); st.OrphanWatches != 2 {
		t.Fatalf("%d orphan watches after the release, want 2", st.OrphanWatches)
	}
	e.ensure(providers) // fires the exists watch
	testenv.WaitFor(t, waitLimit, "the dropped providers watch fired on the server", func() bool {
		return slices.Equal(watchedPaths(t, e.addr, session, e.root+"/"+iface+"/"), []string{configurators})
	})
	r.waitUntil(t, "the orphan's event taken", func() bool { return r.Status().OrphanWatches == 1 })
	if p, f := r.armCount(providers), r.fireCount(providers); p != 1 || f != 1 {
		t.Fatalf("a dropped watch was re-armed, or its event not taken once (%d arms, %d fired)", p, f)
	}
	// Subscribing again arms the fired one and re-uses the other.
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

// TestZooKeeperLiveWatchesHoldNoGoroutine: the watches of the interfaces
// in use hold no goroutine either (their events come through the client's
// event callback), however many there are; their nodes are read many at a
// time, never more than maxInFlight; and a change on any of them is seen.
func TestZooKeeperLiveWatchesHoldNoGoroutine(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	var mu sync.Mutex
	most := 0
	r := startRegistryWith(t, Options{Addrs: []string{e.addr}, Root: e.group, WatchGC: -1}, zkHooks{
		started: func(n int) {
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
		},
	})
	probe := r.Subscribe(registry.ServiceKey{Interface: "com.example.Probe"}) // the session and its goroutines are up
	defer probe.Release()
	waitReady(t, probe)
	before := runtime.NumGoroutine()

	const n = 300
	dirs := make([]*registry.Directory, n)
	for i := range n {
		iface := fmt.Sprintf("com.example.Live%d", i)
		e.addProvider(e.admin, iface, fmt.Sprintf("10.9.%d.%d:20880", i/250, i%250+1), "", 0)
		dirs[i] = r.Subscribe(registry.ServiceKey{Interface: iface})
		defer dirs[i].Release()
	}
	for _, d := range dirs {
		waitReady(t, d)
	}
	r.waitUntil(t, "every interface read and watched", func() bool {
		if r.Status().Watches != 2*n+2 {
			return false
		}
		for _, d := range dirs {
			if len(d.Providers()) != 1 {
				return false
			}
		}
		return true
	})
	waitGoroutines(t, before+5)
	mu.Lock()
	m := most
	mu.Unlock()
	if m < 2 || m > maxInFlight {
		t.Fatalf("at most %d operations in flight at once, want 2 to %d", m, maxInFlight)
	}

	if c := r.ProviderCount(); c != n {
		t.Fatalf("ProviderCount %d, want %d", c, n)
	}

	e.addProvider(e.admin, "com.example.Live123", "10.9.9.9:20880", "", 0)
	r.waitUntil(t, "the new provider seen", func() bool { return len(dirs[123].Providers()) == 2 })
	waitGoroutines(t, before+5)
	if c := r.ProviderCount(); c != n+1 {
		t.Fatalf("ProviderCount %d after one more, want %d", c, n+1)
	}
}

// TestZooKeeperDroppedWatchesHoldNoGoroutine: released interfaces' watches
// stay on the server until a session recycle (go-zookeeper cannot remove
// them), but the helpers that waited for their events end at once; an
// interface subscribed again while its old watch is still set is
// followed again through that watch.
func TestZooKeeperDroppedWatchesHoldNoGoroutine(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Grace: -1, WatchGC: -1})
	probe := r.Subscribe(registry.ServiceKey{Interface: "com.example.Probe"}) // the session and its goroutines are up
	waitReady(t, probe)
	defer probe.Release()
	before := runtime.NumGoroutine()

	const n = 200
	for i := range n {
		d := r.Subscribe(registry.ServiceKey{Interface: fmt.Sprintf("com.example.Dropped%d", i)})
		waitReady(t, d)
		d.Release()
	}
	r.waitUntil(t, "every interface dropped", func() bool {
		st := r.Status()
		return st.Watches == 2 && st.OrphanWatches == 2*n
	})
	waitGoroutines(t, before+5)

	// Watched again: its old providers watch (an exists watch, still set)
	// tells when the node appears.
	const again = "com.example.Dropped7"
	d := r.Subscribe(registry.ServiceKey{Interface: again})
	defer d.Release()
	waitReady(t, d)
	r.waitUntil(t, "answered", func() bool { return d.State() == registry.DirOK })
	if n := r.armCount(e.nodePath(again, "providers")); n != 1 {
		t.Fatalf("providers watch armed %d times: want once, the old one re-used", n)
	}
	e.addProvider(e.admin, again, "10.0.0.7:20880", "", 0)
	r.waitUntil(t, "the provider seen through the resumed watch", func() bool { return len(d.Providers()) == 1 })
}

// TestWatchesRecordLifecycle follows one record without ZooKeeper: it
// lives while a state holds it or its watch is set; a dropped node whose
// watch is set is an orphan, re-used if the node is watched again, and
// forgotten once its watch fires.
func TestWatchesRecordLifecycle(t *testing.T) {
	z := &Registry{nudge: make(chan struct{}, 1)}
	ws := newWatches(z, newSession(z, nil))
	const path = "/dubbo/com.example.A/providers"
	pw := ws.watch(path, nodeProviders, "com.example.A", "")
	if !pw.live || !pw.need || pw.read || ws.byPath[path] != pw {
		t.Fatalf("a new record: %+v", pw)
	}
	ws.unwatch(pw)
	if _, ok := ws.byPath[path]; ok {
		t.Fatal("a dropped record with no watch set is kept")
	}

	pw = ws.watch(path, nodeProviders, "com.example.A", "")
	ws.clearNeed(pw) // as a read arming it leaves it
	pw.read = true
	ws.setArmed(pw, true)
	if live, orphans := ws.count(); live != 1 || orphans != 0 {
		t.Fatalf("armed: %d live, %d orphans", live, orphans)
	}
	ws.unwatch(pw)
	if live, orphans := ws.count(); live != 0 || orphans != 1 || ws.byPath[path] != pw {
		t.Fatalf("dropped while armed: %d live, %d orphans, record kept %v", live, orphans, ws.byPath[path] == pw)
	}
	if again := ws.watch(path, nodeProviders, "com.example.A", ""); again != pw || !again.armed || !again.need {
		t.Fatalf("watched again: %+v, want the armed record, to be read", again)
	}
	ws.unwatch(pw)

	ws.onFired("/dubbo/com.example.Other/providers") // another path's event
	if !pw.armed || ws.byPath[path] != pw {
		t.Fatal("an event of another path changed the record")
	}
	ws.onFired(path)
	if _, ok := ws.byPath[path]; ok || pw.armed {
		t.Fatalf("a dropped watch fired: record kept %v, armed %v", ok, pw.armed)
	}
	if live, orphans := ws.count(); live != 0 || orphans != 0 {
		t.Fatalf("after it fired: %d live, %d orphans", live, orphans)
	}
}
