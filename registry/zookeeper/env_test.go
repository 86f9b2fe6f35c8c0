package zookeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// waitLimit bounds every wait of these tests. Generous: a restarted
// ZooKeeper (a JVM) on a loaded 2-core machine has taken over 20 s before
// the test's own admin session could create a node again; a wait that
// never ends still fails.
const waitLimit = 45 * time.Second

// zkEnv is one test's corner of a ZooKeeper server: a root of its own and
// an admin session (direct, never through a proxy) that plays providers
// and operators.
type zkEnv struct {
	t     *testing.T
	addr  string
	group string // the root node's name, the registry's Root
	root  string // "/" + group
	admin *zk.Conn
}

func newZKEnv(t *testing.T, addr string) *zkEnv {
	t.Helper()
	group := fmt.Sprintf("dubbogw-test-%016x", rand.Uint64())
	e := &zkEnv{t: t, addr: addr, group: group, root: "/" + group, admin: connectZK(t, addr)}
	t.Cleanup(func() { e.deleteTree(e.root) })
	return e
}

// connectZK opens a session of its own, closed when the test ends.
func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	// Connect returns before the session is up, its goroutines still
	// starting, and tests that count goroutines take their baseline after
	// this: one round trip has both the send and the receive loop running
	// (a fresh-clone run once counted the admin session's loops as leaked).
	if _, _, err := conn.Exists("/"); err != nil {
		t.Fatalf("first request on the admin ZooKeeper session: %v", err)
	}
	return conn
}

// reconnectAdmin replaces the admin session after the server restarted:
// a go-zookeeper Conn whose session expired while the server was down was
// seen to fail every request for over 45 s after it came back (twice in
// fresh-clone runs under -race), while a new Conn connects at once. The
// nodes these tests create through it are persistent.
func (e *zkEnv) reconnectAdmin() {
	e.t.Helper()
	e.admin.Close()
	e.admin = connectZK(e.t, e.addr)
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// retry runs op until it succeeds (ZooKeeper may be restarting), within waitLimit.
func (e *zkEnv) retry(what string, op func() error) {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		err := op()
		if err == nil {
			return
		}
		if !isConnectionError(err) || time.Now().After(deadline) {
			e.t.Fatalf("%s: %v", what, err)
		}
		// go-zookeeper fails queued requests after each round of failed
		// dials (about a second): the retry is paced by the client itself.
	}
}

func (e *zkEnv) nodePath(iface, kind string) string { return e.root + "/" + iface + "/" + kind }

// ensure creates path and its missing parents as persistent nodes.
func (e *zkEnv) ensure(path string) {
	e.t.Helper()
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		e.retry("creating "+p, func() error {
			_, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
	}
}

// addNode creates parent/child with conn (ephemeral when flags says so).
func (e *zkEnv) addNode(conn *zk.Conn, parent, child string, flags int32) string {
	e.t.Helper()
	e.ensure(parent)
	p := parent + "/" + child
	e.retry("creating "+p, func() error {
		_, err := conn.Create(p, nil, flags, zk.WorldACL(zk.PermAll))
		return err
	})
	return p
}

func (e *zkEnv) addProvider(conn *zk.Conn, iface, addr, query string, flags int32) string {
	e.t.Helper()
	child := url.QueryEscape("dubbo://" + addr + "/" + iface + "?" + query)
	return e.addNode(conn, e.nodePath(iface, "providers"), child, flags)
}

func (e *zkEnv) addOverride(iface, hostport, query string) string {
	e.t.Helper()
	child := url.QueryEscape("override://" + hostport + "/" + iface + "?category=configurators&" + query)
	return e.addNode(e.admin, e.nodePath(iface, "configurators"), child, 0)
}

func (e *zkEnv) remove(path string) {
	e.t.Helper()
	e.retry("deleting "+path, func() error { return e.admin.Delete(path, -1) })
}

func (e *zkEnv) children(path string) []string {
	e.t.Helper()
	var cs []string
	e.retry("listing "+path, func() error {
		var err error
		cs, _, err = e.admin.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return cs
}

// deleteTree removes path and everything below it (best effort: the
// server may be gone at the end of a test).
func (e *zkEnv) deleteTree(path string) {
	children, _, err := e.admin.Children(path)
	if err != nil {
		return
	}
	for _, c := range children {
		e.deleteTree(path + "/" + c)
	}
	_ = e.admin.Delete(path, -1)
}

// watchedPaths asks the server (wchc) which paths starting with prefix the session watches.
func watchedPaths(t *testing.T, addr string, session int64, prefix string) []string {
	t.Helper()
	out, err := testenv.FourLetterWord(addr, "wchc")
	if err != nil {
		t.Fatalf("wchc: %v", err)
	}
	want := fmt.Sprintf("%#x", session)
	var current string
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "0x") {
			current = strings.TrimSpace(line)
			continue
		}
		if p := strings.TrimSpace(line); current == want && strings.HasPrefix(p, prefix) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}

// watchCount is mntr's zk_watch_count: every watch of every kind that
// every session has set on the server.
func watchCount(t *testing.T, addr string) int {
	t.Helper()
	mntr, err := testenv.FourLetterWord(addr, "mntr")
	if err != nil {
		t.Fatalf("mntr: %v", err)
	}
	for _, line := range strings.Split(mntr, "\n") {
		if v, ok := strings.CutPrefix(line, "zk_watch_count\t"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("zk_watch_count %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("no zk_watch_count in mntr:\n%s", mntr)
	return 0
}

// childWatchCount is the number of child watches on the server. wchc
// lists data and exists watches only; child watches show in nothing but
// mntr's zk_watch_count, the total of every kind. So on a private server,
// where only the registry sets child watches, the registry's child watches
// are that total less every session's wchc entries.
func childWatchCount(t *testing.T, addr string) int {
	t.Helper()
	total := watchCount(t, addr)
	wchc, err := testenv.FourLetterWord(addr, "wchc")
	if err != nil {
		t.Fatalf("wchc: %v", err)
	}
	for _, line := range strings.Split(wchc, "\n") {
		if strings.HasPrefix(line, "\t") {
			total--
		}
	}
	return total
}

// waitGone waits until path does not exist, by watching it.
func (e *zkEnv) waitGone(path string) {
	e.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		exists, _, ch, err := e.admin.ExistsW(path)
		if err != nil {
			e.t.Fatalf("watching %s: %v", path, err)
		}
		if !exists {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			e.t.Fatalf("%s still exists after %s", path, waitLimit)
		}
	}
}

// testRegistry is a ZooKeeper registry with the worker's hooks observed.
type testRegistry struct {
	*Registry
	steps chan struct{} // a worker round ended

	mu        sync.Mutex
	arms      map[string]int
	fires     map[string]int
	published []publication
}

type publication struct {
	key   registry.ServiceKey
	addrs []string
}

func startRegistry(t *testing.T, opts Options) *testRegistry {
	t.Helper()
	return startRegistryWith(t, opts, zkHooks{})
}

// startRegistryWith is startRegistry with extra's recycle, dial and
// started hooks.
func startRegistryWith(t *testing.T, opts Options, extra zkHooks) *testRegistry {
	t.Helper()
	r := &testRegistry{steps: make(chan struct{}, 1), arms: make(map[string]int), fires: make(map[string]int)}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.Discovery == "" {
		// The tests written for the interface-level layout count its
		// watches; those of application-level discovery say their mode.
		opts.Discovery = DiscoveryInterface
	}
	z, err := newWithHooks(opts, zkHooks{
		stepped: func() {
			select {
			case r.steps <- struct{}{}:
			default:
			}
		},
		armed: func(path string) {
			r.mu.Lock()
			r.arms[path]++
			r.mu.Unlock()
		},
		fired: func(path string) {
			r.mu.Lock()
			r.fires[path]++
			r.mu.Unlock()
		},
		published: func(key registry.ServiceKey, ps []*cluster.Provider) {
			r.mu.Lock()
			r.published = append(r.published, publication{key, addrsOf(ps)})
			r.mu.Unlock()
		},
		recycle: extra.recycle,
		dial:    extra.dial,
		started: extra.started,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Registry = z
	t.Cleanup(func() { z.Close() })
	return r
}

func (r *testRegistry) armCount(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arms[path]
}

func (r *testRegistry) fireCount(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fires[path]
}

func (r *testRegistry) publications() []publication {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.published)
}

// waitUntil waits, round by round of the worker, until cond holds.
func (r *testRegistry) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-r.steps:
		case <-deadline.C:
			t.Fatalf("not %s after %s; status %+v; directories %+v", what, waitLimit, r.Status(), r.Directories())
		}
	}
}

// testLogger logs at info level into the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func addrsOf(ps []*cluster.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Addr
	}
	return out
}

// waitFor polls cond, which nothing signals (a server's or the runtime's
// count), until it holds, within waitLimit.
// waitGoroutines waits until no more than n goroutines run, and fails with
// every goroutine's stack if they do not come down to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(20 * time.Millisecond) // goroutines that are ending signal nothing
	defer tick.Stop()
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		<-tick.C
	}
}

func waitReady(t *testing.T, d *registry.Directory) {
	t.Helper()
	select {
	case <-d.Ready():
	case <-time.After(waitLimit):
		t.Fatalf("%s not ready after %s", d.Key(), waitLimit)
	}
}
