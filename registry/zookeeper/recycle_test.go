package zookeeper

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// recycleLog counts the stages session recycles reach, and the orphan
// watches the finished ones cleared.
type recycleLog struct {
	mu      sync.Mutex
	stages  map[string]int
	cleared int
}

func (l *recycleLog) hook(stage string, orphans int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stages == nil {
		l.stages = make(map[string]int)
	}
	l.stages[stage]++
	if stage == recycleDone {
		l.cleared += orphans
	}
}

func (l *recycleLog) count(stage string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stages[stage]
}

func (l *recycleLog) clearedWatches() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cleared
}

// refusal makes the registry's dials fail while it is on.
type refusal struct{ on atomic.Bool }

func (r *refusal) dial() error {
	if r.on.Load() {
		return errors.New("dial refused by the test")
	}
	return nil
}

// TestZooKeeperRecycleClearsOrphanWatches plays a client naming 200 random
// interfaces through the pass-through: none exists, so the exists watches
// of each stay on the server once it is released. They pile up while no
// new session can be had (the old one stays in use); once one can, a
// recycle clears them all, leaving ZooKeeper exactly the live watches.
func TestZooKeeperRecycleClearsOrphanWatches(t *testing.T) {
	server := testenv.StartZooKeeper(t) // alone on it: mntr counts the registry's watches
	e := newZKEnv(t, server.Addr())
	e.ensure(e.root)
	var log recycleLog
	var refuse refusal
	r := startRegistryWith(t, Options{Addrs: []string{e.addr}, Root: e.group, Grace: -1,
		WatchGC: 200 * time.Millisecond, Timeout: time.Second}, zkHooks{recycle: log.hook, dial: refuse.dial})
	live := r.Subscribe(registry.ServiceKey{Interface: "com.example.Live"})
	defer live.Release()
	waitReady(t, live)
	r.waitUntil(t, "the live interface watched", func() bool { return r.Status().Watches == 2 })
	baseline := runtime.NumGoroutine()
	session := r.sessionID()

	refuse.on.Store(true)
	for i := range 200 {
		d := r.Subscribe(registry.ServiceKey{Interface: fmt.Sprintf("com.example.Random%03d", i)})
		waitReady(t, d)
		d.Release()
	}
	r.waitUntil(t, "400 orphan watches", func() bool { return r.Status().OrphanWatches == 400 })
	r.waitUntil(t, "a recycle given up for want of a new session", func() bool { return log.count(recycleAbandoned) > 0 })
	if st := r.Status(); st.Watches != 2 || st.OrphanWatches != 400 || st.SessionRecycles != 0 || st.State != registry.StateConnected {
		t.Fatalf("status with no new session to be had: %+v", st)
	}
	if r.sessionID() != session || live.State() != registry.DirOK {
		t.Fatalf("after a failed recycle: session %#x (was %#x), directory %s", r.sessionID(), session, live.State())
	}
	if n := watchCount(t, e.addr); n != 402 {
		t.Fatalf("ZooKeeper holds %d watches, want 402 (2 live, 400 orphans)", n)
	}

	refuse.on.Store(false)
	r.waitUntil(t, "recycled", func() bool {
		st := r.Status()
		return st.SessionRecycles > 0 && st.OrphanWatches == 0
	})
	if n := log.clearedWatches(); n != 400 {
		t.Errorf("recycles cleared %d orphan watches, want 400", n)
	}
	st := r.Status()
	if st.Watches != 2 || st.State != registry.StateConnected || st.Degraded || st.Reconnects != 0 || st.SessionExpiries != 0 {
		t.Errorf("status after the recycle: %+v", st)
	}
	if r.sessionID() == session {
		t.Error("still the old session")
	}
	testenv.WaitFor(t, waitLimit, "ZooKeeper down to the 2 live watches", func() bool { return watchCount(t, e.addr) == 2 })
	waitGoroutines(t, baseline)
	if live.State() != registry.DirOK {
		t.Errorf("live directory %s", live.State())
	}
}

// TestZooKeeperRecycleKeepsDirectories samples a live directory all
// through a recycle (and at each of its stages): it never loses its
// providers nor leaves ok, and is not even re-published; its consumer
// node moves to the new session; and a provider added right after the
// recycle is seen through the new session's watch.
func TestZooKeeperRecycleKeepsDirectories(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.KeptAcrossRecycles"
	providers := e.nodePath(iface, "providers")
	e.addProvider(e.admin, iface, "10.6.0.1:20880", "", 0)
	e.addProvider(e.admin, iface, "10.6.0.2:20880", "", 0)

	probe := make(chan chan struct{})   // a recycle stage asks the sampler for a sample
	stopSampling := make(chan struct{}) // closed when the test is done sampling
	var log recycleLog
	hook := func(stage string, orphans int) {
		log.hook(stage, orphans)
		if stage == recycleStarted || stage == recycleAbandoned {
			return
		}
		ack := make(chan struct{})
		select {
		case probe <- ack:
			<-ack
		case <-stopSampling:
		}
	}
	r := startRegistryWith(t, Options{Addrs: []string{e.addr}, Root: e.group, Grace: -1, Register: true,
		WatchGC: 100 * time.Millisecond}, zkHooks{recycle: hook})
	key := registry.ServiceKey{Interface: iface}
	d := r.Subscribe(key)
	defer d.Release()
	waitReady(t, d)
	r.waitUntil(t, "registered", func() bool { return r.Status().Registered == 1 })
	oldSession := r.sessionID()
	consumers := e.nodePath(iface, "consumers")
	nodes := e.children(consumers)
	if len(nodes) != 1 {
		t.Fatalf("consumer nodes %v", nodes)
	}
	updated := d.Updated()
	publishedOf := func(key registry.ServiceKey) (n int) {
		for _, p := range r.publications() {
			if p.key == key {
				n++
			}
		}
		return n
	}
	published := publishedOf(key)

	var samples, midway atomic.Int64
	var badMu sync.Mutex
	var bad []string
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		for {
			var ack chan struct{}
			select {
			case <-stopSampling:
				return
			case ack = <-probe:
			default:
			}
			ps, state := d.Providers(), d.State()
			if len(ps) != 2 || state != registry.DirOK {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("%s %v", state, addrsOf(ps)))
				badMu.Unlock()
			}
			samples.Add(1)
			if ack != nil {
				midway.Add(1)
				close(ack)
			}
			runtime.Gosched()
		}
	}()

	orphaned := r.Subscribe(registry.ServiceKey{Interface: "com.example.Released"})
	waitReady(t, orphaned)
	orphaned.Release()
	r.waitUntil(t, "recycled", func() bool { return r.Status().SessionRecycles == 1 })
	close(stopSampling)
	<-samplerDone
	if len(bad) > 0 || samples.Load() == 0 || midway.Load() != 3 {
		t.Fatalf("%d samples (%d at recycle stages, want 3); bad ones: %v", samples.Load(), midway.Load(), bad)
	}
	if d.Updated() != updated || publishedOf(key) != published {
		t.Errorf("the recycle re-published the directory: %v", r.publications())
	}

	newSession := r.sessionID()
	if newSession == oldSession {
		t.Fatal("same session after the recycle")
	}
	after := e.children(consumers)
	if len(after) != 1 || after[0] != nodes[0] {
		t.Fatalf("consumer nodes after the recycle %v, want %v", after, nodes)
	}
	if _, st, err := e.admin.Get(consumers + "/" + after[0]); err != nil || st.EphemeralOwner != newSession {
		t.Fatalf("consumer node: %v, owner %#x, want the new session %#x", err, st.EphemeralOwner, newSession)
	}
	if st := r.Status(); st.Watches != 2 || st.OrphanWatches != 0 || st.Registered != 1 || st.Reconnects != 0 || st.SessionExpiries != 0 {
		t.Errorf("status after the recycle: %+v", st)
	}

	// The watches were re-armed on the new session: a change is seen, by
	// its providers watch firing (the old session's events are not counted).
	e.addProvider(e.admin, iface, "10.6.0.3:20880", "", 0)
	r.waitUntil(t, "the provider added after the recycle is seen", func() bool { return len(d.Providers()) == 3 })
	if f, a := r.fireCount(providers), r.armCount(providers); f != 1 || a != 3 {
		t.Errorf("providers watch fired %d times (want 1) and was armed %d times (want 3: first session, recycle, after firing)", f, a)
	}
}

// TestZooKeeperCloseDuringRecycle closes the registry in the middle of a
// recycle: nothing of either client is left running.
func TestZooKeeperCloseDuringRecycle(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	// start starts a registry with a live interface and an orphaned one;
	// refuse, when set, refuses dials once the registry is connected.
	start := func(t *testing.T, hooks zkHooks, refuse *refusal) (*testRegistry, int) {
		e := newZKEnv(t, addr)
		e.ensure(e.nodePath("com.example.Live", "providers"))
		baseline := runtime.NumGoroutine() // the admin session's included
		r := startRegistryWith(t, Options{Addrs: []string{addr}, Root: e.group, Grace: -1, Register: true,
			WatchGC: 50 * time.Millisecond}, hooks)
		live := r.Subscribe(registry.ServiceKey{Interface: "com.example.Live"})
		t.Cleanup(live.Release)
		waitReady(t, live)
		if refuse != nil {
			refuse.on.Store(true)
		}
		orphaned := r.Subscribe(registry.ServiceKey{Interface: "com.example.Released"})
		waitReady(t, orphaned)
		orphaned.Release()
		return r, baseline
	}
	closed := func(t *testing.T, r *testRegistry, baseline int) {
		t.Helper()
		if st := r.Status(); st.State != registry.StateClosed || st.SessionRecycles != 0 {
			t.Errorf("status after Close: %+v", st)
		}
		waitGoroutines(t, baseline)
	}

	t.Run("waiting for the new session", func(t *testing.T) {
		var log recycleLog
		var refuse refusal
		r, baseline := start(t, zkHooks{recycle: log.hook, dial: refuse.dial}, &refuse)
		r.waitUntil(t, "a recycle started", func() bool { return log.count(recycleStarted) > 0 })
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		closed(t, r, baseline)
	})

	t.Run("moving to the new session", func(t *testing.T) {
		inRecycle, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		r, baseline := start(t, zkHooks{recycle: func(stage string, _ int) {
			if stage == recycleSession {
				once.Do(func() { close(inRecycle) })
				<-release
			}
		}}, nil)
		select {
		case <-inRecycle:
		case <-time.After(waitLimit):
			t.Fatalf("no recycle after %s; status %+v", waitLimit, r.Status())
		}
		done := make(chan error, 1)
		go func() { done <- r.Close() }()
		<-r.quit // Close has begun: the worker now stops
		close(release)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitLimit):
			t.Fatalf("Close still running after %s", waitLimit)
		}
		closed(t, r, baseline)
	})
}
