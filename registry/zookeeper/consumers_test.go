package zookeeper

import (
	"net/url"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// The gateway's consumer nodes (consumers.go), against a real ZooKeeper.

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

// TestZooKeeperConsumerWaitsForProvidersNode: a consumer node is
// registered only under an interface that has a providers node, so a
// client naming interfaces nobody provides makes the gateway write nothing.
func TestZooKeeperConsumerWaitsForProvidersNode(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const ghost, known = "com.example.NobodyProvidesThis", "com.example.Known"
	e.ensure(e.nodePath(known, "providers"))
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Register: true, Grace: -1})
	g := r.Subscribe(registry.ServiceKey{Interface: ghost})
	defer g.Release()
	waitReady(t, g)
	// The worker lists an interface and registers its consumers in one
	// round: once a later subscription is registered, the ghost's turn has
	// passed.
	k := r.Subscribe(registry.ServiceKey{Interface: known})
	defer k.Release()
	r.waitUntil(t, "the known interface's consumer registered", func() bool { return r.Status().Registered == 1 })
	if exists, _, err := e.admin.Exists(e.root + "/" + ghost); err != nil || exists {
		t.Fatalf("the gateway created %s/%s (%v)", e.root, ghost, err)
	}

	e.ensure(e.nodePath(ghost, "providers"))
	r.waitUntil(t, "registered once its providers node appeared", func() bool { return r.Status().Registered == 2 })
	if nodes := e.children(e.nodePath(ghost, "consumers")); len(nodes) != 1 {
		t.Fatalf("consumer nodes %v", nodes)
	}
}

// TestConsumersWaitingCostNothing checks the bookkeeping without
// ZooKeeper: nodes whose interface has no providers node leave the nodes
// due after one look (application-level discovery has none: 5,000 of
// them were scanned at every step, 60% of a core under churn), and come
// back when it appears.
func TestConsumersWaitingCostNothing(t *testing.T) {
	z := &Registry{opts: Options{Register: true}}
	cs := newConsumers(z, newSession(z, nil))
	for i := range 1000 {
		cs.register(registry.ServiceKey{Interface: "com.example.NoProviders" + strconv.Itoa(i)})
	}
	if cs.due.len() != 1000 {
		t.Fatalf("%d nodes due, want 1000", cs.due.len())
	}
	cs.sync(&round{now: time.Now()}, func(string) bool { return false })
	if cs.due.len() != 0 || len(cs.waiting) != 1000 {
		t.Fatalf("after a look: %d due, %d interfaces waiting; want 0 and 1000", cs.due.len(), len(cs.waiting))
	}
	cs.providersAppeared("com.example.NoProviders7")
	if !cs.due.has(cs.byKey[registry.ServiceKey{Interface: "com.example.NoProviders7"}]) || cs.due.len() != 1 || len(cs.waiting) != 999 {
		t.Fatalf("after its providers node appeared: %d due, %d waiting; want NoProviders7 due", cs.due.len(), len(cs.waiting))
	}
	// A second key of a waiting interface waits beside the first, once
	// however often it is looked at; unwanted, each is forgotten, and the
	// interface with its last. (These looks find no providers node
	// anywhere, so NoProviders7 waits again.)
	grouped := registry.ServiceKey{Interface: "com.example.NoProviders8", Group: "g"}
	cs.register(grouped)
	cs.sync(&round{now: time.Now()}, func(string) bool { return false })
	cs.check(cs.byKey[grouped])
	cs.sync(&round{now: time.Now()}, func(string) bool { return false })
	if w := cs.waiting["com.example.NoProviders8"]; len(w) != 2 {
		t.Fatalf("NoProviders8 waits with %d nodes, want 2", len(w))
	}
	for _, k := range []registry.ServiceKey{grouped, {Interface: "com.example.NoProviders8"}} {
		cs.unregister(k)
	}
	cs.sync(&round{now: time.Now()}, func(string) bool { return false })
	if _, ok := cs.waiting["com.example.NoProviders8"]; ok || len(cs.waiting) != 999 || len(cs.byKey) != 999 {
		t.Fatalf("after unregistering NoProviders8's keys: %d interfaces waiting, %d nodes; want 999 and 999", len(cs.waiting), len(cs.byKey))
	}
}
