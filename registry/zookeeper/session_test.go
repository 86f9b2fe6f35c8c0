package zookeeper

import (
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// The session (session.go): ZooKeeper unreachable at start, restarted,
// expiring the session, and credentials, against a real ZooKeeper.

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
		return st.State == registry.StateConnected && !st.Degraded && d.State() == registry.DirOK && len(d.Providers()) == 3 && late.State() == registry.DirOK &&
			st.Watches == 4 // the providers watch, fired, is armed again by a read that may still be in the client when the directory has its answer
	})
	// ZooKeeper restored the session from its data directory: the client
	// re-sent its watches, so nothing was armed again but what fired.
	if st := r.Status(); st.Reconnects < 1 || st.SessionExpiries != 0 {
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
