package zookeeper

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// lookupNow asks r about iface, waiting while the catalog is being read,
// as registry.References.OnDemand does (registry.Catalog's contract).
func lookupNow(t *testing.T, r *testRegistry, iface string) registry.Presence {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for {
		p, wait := r.Lookup(iface)
		if p != registry.PresenceUnknown || wait == nil {
			return p
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return registry.PresenceUnknown
		}
	}
}

// TestZooKeeperCatalog: the registry knows which interfaces exist from one
// child watch on the root (interface level) and one on the mapping node
// (application level): 10,000 names nobody registered are answered
// "absent" from memory without a subscription or another watch; an
// interface registered afterwards, at either level, is "present" as soon
// as its listing changes; while ZooKeeper is down the answer is "unknown"
// at once (callers then subscribe, as without a catalog), and known again
// after it is back.
func TestZooKeeperCatalog(t *testing.T) {
	server := testenv.StartZooKeeper(t) // alone on it: every watch is the registry's
	e := newZKEnv(t, server.Addr())
	r := startRegistry(t, Options{Addrs: []string{server.Addr()}, Root: e.group, Discovery: DiscoveryAuto,
		SessionTimeout: 4 * time.Second, Timeout: time.Second})

	// Neither /<root> nor /<root>/mapping exists yet: exists watches.
	if p := lookupNow(t, r, "com.example.Nobody"); p != registry.PresenceAbsent {
		t.Fatalf("before anything is registered: %v", p)
	}
	for i := range 10_000 {
		if p, _ := r.Lookup(fmt.Sprintf("com.example.Nobody%d", i)); p != registry.PresenceAbsent {
			t.Fatalf("name %d: %v", i, p)
		}
	}
	if st, n := r.Status(), watchCount(t, server.Addr()); st.Subscriptions != 0 || st.Watches != 2 || n != 2 {
		t.Fatalf("after 10,000 lookups: status %+v, ZooKeeper holds %d watches; want none but the 2 of the catalog", st, n)
	}

	// Interface level: the interface's node appears under the root.
	e.addProvider(e.admin, "com.example.A", "10.0.0.1:20880", "", 0)
	r.waitUntil(t, "com.example.A present", func() bool { p, _ := r.Lookup("com.example.A"); return p == registry.PresencePresent })
	// Application level: a mapping node appears.
	e.ensure(e.root + "/mapping")
	if _, err := e.admin.Create(e.root+"/mapping/com.example.B", []byte("app-b"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	r.waitUntil(t, "com.example.B present", func() bool { p, _ := r.Lookup("com.example.B"); return p == registry.PresencePresent })
	if p, _ := r.Lookup("com.example.Nobody"); p != registry.PresenceAbsent {
		t.Fatalf("still nobody: %v", p)
	}
	// The event that showed B re-arms the mapping watch; the server holds
	// it once that request is through: eventually exactly the 2.
	r.waitUntil(t, "the catalog's 2 child watches, and only those", func() bool {
		return r.Status().Watches == 2 && watchCount(t, server.Addr()) == 2
	})

	// ZooKeeper down: unknown, and nothing to wait for.
	server.Stop()
	r.waitUntil(t, "unknown while ZooKeeper is down", func() bool {
		p, wait := r.Lookup("com.example.Nobody")
		return p == registry.PresenceUnknown && wait == nil
	})
	server.Start()
	r.waitUntil(t, "known again", func() bool { p, _ := r.Lookup("com.example.A"); return p == registry.PresencePresent })
	if p, _ := r.Lookup("com.example.Nobody"); p != registry.PresenceAbsent {
		t.Fatalf("nobody after ZooKeeper came back: %v", p)
	}
}

// TestZooKeeperCatalogModes: each discovery mode reads the listing of its
// layout only: one watch each, and an interface registered at the other
// level alone is absent.
func TestZooKeeperCatalogModes(t *testing.T) {
	server := testenv.StartZooKeeper(t)
	e := newZKEnv(t, server.Addr())
	e.addProvider(e.admin, "com.example.Iface", "10.0.0.1:20880", "", 0)
	e.ensure(e.root + "/mapping/com.example.App")
	for _, tc := range []struct {
		mode             string
		iface, mappedApp registry.Presence
	}{
		{DiscoveryInterface, registry.PresencePresent, registry.PresenceAbsent},
		{DiscoveryApplication, registry.PresenceAbsent, registry.PresencePresent},
	} {
		r := startRegistry(t, Options{Addrs: []string{server.Addr()}, Root: e.group, Discovery: tc.mode})
		if p := lookupNow(t, r, "com.example.Iface"); p != tc.iface {
			t.Errorf("%s: an interface-level interface is %v", tc.mode, p)
		}
		if p := lookupNow(t, r, "com.example.App"); p != tc.mappedApp {
			t.Errorf("%s: an application-level interface is %v", tc.mode, p)
		}
		if n := watchCount(t, server.Addr()); n != 1 {
			t.Errorf("%s: ZooKeeper holds %d watches, want 1", tc.mode, n)
		}
		r.Close()
		testenv.WaitFor(t, waitLimit, "the closed session's watches gone", func() bool { return watchCount(t, server.Addr()) == 0 })
	}
}
