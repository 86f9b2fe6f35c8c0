package zookeeper

import (
	"slices"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// gateLayout registers, under e's root: com.example.A at interface level
// only, com.example.B at application level only (application app-b, one
// instance, remote metadata), and nothing for com.example.C.
func gateLayout(e *zkEnv) {
	e.addProvider(e.admin, "com.example.A", "10.0.0.1:20880", "version=1.0.0", 0)
	const rev = "g1"
	e.addInstance(e.admin, instanceSpec{app: "app-b", host: "10.0.0.2", port: 20880, revision: rev, storage: registry.StorageRemote}, 0)
	e.addRemoteMetadata(metadataInfo("app-b", rev, serviceSpec{iface: "com.example.B", version: "1.0.0", port: 20880}))
	e.setMapping("com.example.B", "app-b")
}

// subscribeGated subscribes A, B and C (version 1.0.0), waits for their
// first answers and checks them: A and B one provider each, C none.
func subscribeGated(t *testing.T, r *testRegistry) map[string]*registry.Directory {
	t.Helper()
	dirs := map[string]*registry.Directory{}
	for _, name := range []string{"A", "B", "C"} {
		d := r.Subscribe(registry.ServiceKey{Interface: "com.example." + name, Version: "1.0.0"})
		t.Cleanup(d.Release)
		dirs[name] = d
	}
	for name, want := range map[string]string{"A": "10.0.0.1:20880", "B": "10.0.0.2:20880", "C": ""} {
		d := dirs[name]
		waitReady(t, d)
		if got := strings.Join(addrsOf(d.Providers()), " "); got != want || d.State() != registry.DirOK {
			t.Fatalf("%s: first answer %q (%v), want %q", name, got, d.State(), want)
		}
	}
	return dirs
}

// TestZooKeeperAutoCatalogGate: with both discovery levels, an interface's
// nodes of one level are read and watched only once that level's listing
// (the catalog: children of the root and of mapping/) names it. A gateway
// on a registry whose interfaces are each at one level pays no existence
// check or watch at the other, yet answers every route's service at once,
// including one registered nowhere, and picks up a level an interface
// gains later.
func TestZooKeeperAutoCatalogGate(t *testing.T) {
	server := testenv.StartZooKeeper(t) // alone on it: every watch is the registry's
	e := newZKEnv(t, server.Addr())
	gateLayout(e)
	r := startRegistry(t, Options{Addrs: []string{server.Addr()}, Root: e.group, Discovery: DiscoveryAuto})
	dirs := subscribeGated(t, r)

	// The catalog's two listings; A's providers and configurators; B's
	// mapping, its application and the instance. Without the gate: 13
	// (A's mapping, B's providers and configurators, and all three of C).
	r.waitUntil(t, "7 watches", func() bool { return r.Status().Watches == 7 })
	watched := watchedPaths(t, server.Addr(), r.sessionID(), e.root)
	for _, p := range watched {
		if strings.Contains(p, "com.example.C") || p == e.mappingPath("com.example.A") || strings.HasPrefix(p, e.root+"/com.example.B/") {
			t.Errorf("%s is watched: its level does not list the interface", p)
		}
	}

	// C registered at interface level: the root's listing names it, and
	// its providers are read.
	e.addProvider(e.admin, "com.example.C", "10.0.0.3:20880", "version=1.0.0", 0)
	r.waitUntil(t, "C's provider", func() bool { return slices.Equal(addrsOf(dirs["C"].Providers()), []string{"10.0.0.3:20880"}) })
	// A mapped to an application too: its mapping node is read and watched.
	e.setMapping("com.example.A", "app-b")
	r.waitUntil(t, "A's mapping watched", func() bool {
		return slices.Contains(watchedPaths(t, server.Addr(), r.sessionID(), e.root), e.mappingPath("com.example.A"))
	})
	if got := addrsOf(dirs["A"].Providers()); !slices.Equal(got, []string{"10.0.0.1:20880"}) {
		t.Errorf("A's providers %v after its mapping appeared (app-b does not offer it)", got)
	}
}

// TestZooKeeperAutoCatalogGateOff: a registry root whose children may not
// be listed (its ACL gives no READ) has no catalog: the gate is off and
// every interface's nodes are read at both levels, so every service is
// still found.
func TestZooKeeperAutoCatalogGateOff(t *testing.T) {
	server := testenv.StartZooKeeper(t)
	e := newZKEnv(t, server.Addr())
	gateLayout(e)
	if _, err := e.admin.SetACL(e.root, zk.WorldACL(zk.PermAll&^zk.PermRead), -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.admin.SetACL(e.root, zk.WorldACL(zk.PermAll), -1) }) // so the clean-up can list it
	r := startRegistry(t, Options{Addrs: []string{server.Addr()}, Root: e.group, Discovery: DiscoveryAuto})
	subscribeGated(t, r)
	r.waitUntil(t, "C watched at both levels", func() bool {
		watched := watchedPaths(t, server.Addr(), r.sessionID(), e.root)
		return slices.Contains(watched, e.nodePath("com.example.C", "providers")) && slices.Contains(watched, e.mappingPath("com.example.C"))
	})
}
