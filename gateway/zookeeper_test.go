package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// zkFixture is a test's own corner of the test ZooKeeper: a unique root,
// and a session of the test's (standing in for providers) that creates
// nodes under it.
type zkFixture struct {
	addr string
	root string
	conn *zk.Conn
}

func newZKFixture(t *testing.T) *zkFixture {
	t.Helper()
	return zkFixtureAt(t, testenv.ZooKeeperAddr(t))
}

// newPrivateZKFixture runs the fixture on a private ZooKeeper server, whose
// watch count is the gateway's alone.
func newPrivateZKFixture(t *testing.T) (*zkFixture, *testenv.ZooKeeperServer) {
	t.Helper()
	srv := testenv.StartZooKeeper(t)
	return zkFixtureAt(t, srv.Addr()), srv
}

func zkFixtureAt(t *testing.T, addr string) *zkFixture {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
		select {
		case <-deadline:
			t.Fatal("no ZooKeeper session in 10s")
		default:
		}
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	f := &zkFixture{addr: addr, root: "dubbogw-gw-" + hex.EncodeToString(b), conn: conn}
	t.Cleanup(func() { f.deleteTree("/" + f.root) })
	return f
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// ensure creates path and its parents as persistent nodes.
func (f *zkFixture) ensure(t *testing.T, path string) {
	t.Helper()
	cur := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur += "/" + part
		if _, err := f.conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("creating %s: %v", cur, err)
		}
	}
}

// provide registers addr as a provider of iface (an ephemeral node of the
// fixture's session) and returns the node's path.
func (f *zkFixture) provide(t *testing.T, iface, addr, params string) string {
	t.Helper()
	return f.provideNode(t, iface, addr, params, zk.FlagEphemeral)
}

// provideNode registers a provider node with flags (0: persistent, for a
// test whose ZooKeeper restarts may outlast the fixture's own session).
func (f *zkFixture) provideNode(t *testing.T, iface, addr, params string, flags int32) string {
	t.Helper()
	dir := "/" + f.root + "/" + iface + "/providers"
	f.ensure(t, dir)
	u := "dubbo://" + addr + "/" + iface + "?anyhost=true&interface=" + iface + "&side=provider&timestamp=1" + params
	path := dir + "/" + url.QueryEscape(u)
	if _, err := f.conn.Create(path, nil, flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("registering %s: %v", u, err)
	}
	return path
}

func (f *zkFixture) deleteTree(path string) {
	children, _, err := f.conn.Children(path)
	if err != nil {
		return
	}
	for _, c := range children {
		f.deleteTree(path + "/" + c)
	}
	_ = f.conn.Delete(path, -1)
}

// watchesPerInterface is what the default discovery (auto) watches for an
// interface registered at interface level: its providers and
// configurators nodes (its mapping node only once the mapping listing
// names it, which these tests' interfaces it never does).
const watchesPerInterface = 2

// catalogWatches are auto discovery's two listings, the root's and
// mapping/'s children, which gate the reads of each interface's nodes:
// set at start, whatever the number of interfaces.
const catalogWatches = 2

// serverWatches is the private server's count of watches (mntr's
// zk_watch_count: data, exists and child watches of every session; the
// wchc/wchp listings leave child watches out).
// waitWatches waits, up to 10 s, until reg counts want watches and
// ZooKeeper holds as many. Neither is immediate: a watch that fired is
// armed again by a read that may still be in the client when the
// directory already has its answer, and the client re-sends the watches
// of a resumed session (SetWatches) after it reports the session.
func (f *zkFixture) waitWatches(t *testing.T, reg registry.Registry, want int, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, n := reg.Status(), f.serverWatches(t)
		if st.Watches == want && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: the registry counts %d watches (status %+v) and ZooKeeper holds %d; want %d", when, st.Watches, st, n, want)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *zkFixture) serverWatches(t *testing.T) int {
	t.Helper()
	out, err := testenv.FourLetterWord(f.addr, "mntr")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "zk_watch_count"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("mntr line %q", line)
			}
			return n
		}
	}
	t.Fatalf("mntr has no zk_watch_count:\n%s", out)
	return 0
}

// zkGatewayYAML is a gateway on the fixture's root with a getUser route
// and the pass-through, both on the demo interface.
func (f *zkFixture) gatewayYAML(extra string) string {
	return f.gatewayYAMLWith("", extra)
}

// gatewayYAMLWith is gatewayYAML with extra settings of the registry
// (indented four spaces).
func (f *zkFixture) gatewayYAMLWith(registryExtra, extra string) string {
	return fmt.Sprintf(`
registries:
  zk:
    type: zookeeper
    address: %q
    root: %s
    session_timeout: 10s
    release_after: 500ms
    startup_wait: 2s
%s
routes:
  - name: get-user
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo:
      registry: zk
      interface: com.example.demo.UserService
      method: getUser
      params: [{type: java.lang.String, from: path, name: id}]
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: zk, passthrough: {allow: [com.example.demo.*]}}
%s`, f.addr, f.root, registryExtra, extra)
}

// provideApp registers addr as an instance of application app serving
// iface (version and group from params' "version" and "group"), as Dubbo
// 3's application-level discovery does with remote metadata: the mapping
// node of iface names app, the instance node (ephemeral, of the fixture's
// session) under the fixture's services root (/<root>/<app>, as with a
// registry group) carries revision rev, and /<root>/<app>/<rev> holds the
// metadata. It returns the instance node's path.
func (f *zkFixture) provideApp(t *testing.T, app, iface, addr, rev string, params map[string]string) string {
	t.Helper()
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	svc := map[string]any{"name": iface, "protocol": "dubbo", "port": port, "path": iface, "params": params,
		"group": params["group"], "version": params["version"]}
	key := iface + ":dubbo"
	if v := params["version"]; v != "" {
		key = iface + ":" + v + ":dubbo"
	}
	if g := params["group"]; g != "" {
		key = g + "/" + key
	}
	meta, _ := json.Marshal(map[string]any{"app": app, "revision": rev, "services": map[string]any{key: svc}})
	endpoints, _ := json.Marshal([]map[string]any{{"port": port, "protocol": "dubbo"}})
	inst, _ := json.Marshal(map[string]any{"name": app, "id": addr, "address": host, "port": port,
		"payload": map[string]any{"metadata": map[string]string{
			"dubbo.endpoints": string(endpoints), "dubbo.metadata.revision": rev, "dubbo.metadata.storage-type": "remote"}}})
	f.ensure(t, "/"+f.root+"/"+app)
	if _, err := f.conn.Create("/"+f.root+"/"+app+"/"+rev, meta, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	mapping := "/" + f.root + "/mapping/" + iface
	f.ensure(t, "/"+f.root+"/mapping")
	if _, err := f.conn.Create(mapping, []byte(app), 0, zk.WorldACL(zk.PermAll)); errors.Is(err, zk.ErrNodeExists) {
		old, st, err := f.conn.Get(mapping)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(old), ","), app) {
			if _, err := f.conn.Set(mapping, []byte(string(old)+","+app), st.Version); err != nil {
				t.Fatal(err)
			}
		}
	} else if err != nil {
		t.Fatal(err)
	}
	path := "/" + f.root + "/" + app + "/" + addr
	if _, err := f.conn.Create(path, inst, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSeedIncidentZooKeeper is seed incident 000 against a real
// ZooKeeper, for the default discovery (interface and application level)
// and application level alone: 100,000 requests, concurrent, to routes
// whose service has no provider (nor mapping node) leave exactly one
// subscription, one reference and the watches of one interface, with the
// heap and the goroutine count flat; when a provider registers (at
// interface level for auto, application level for application), the same
// route answers 200 within 2 s, and the watches are those of one
// interface (and, at application level, one application and its one
// instance).
func TestSeedIncidentZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests")
	}
	for _, tc := range []struct {
		discovery              string
		watches, watchesServed int
		what                   string
	}{
		{"auto", catalogWatches, catalogWatches + watchesPerInterface, "the catalog's two listings: an interface registered nowhere has none of its own"},
		{"application", 1, 3, "mapping; then the application and its instance"},
	} {
		t.Run(tc.discovery, func(t *testing.T) {
			f, _ := newPrivateZKFixture(t)
			tg := startGW(t, f.gatewayYAMLWith("    discovery: "+tc.discovery, ""))
			seedIncident000(t, f, tg, tc.watches, tc.what)

			// A provider registers: the same route answers without a restart.
			provider := startProvider(t)
			if tc.discovery == "application" {
				f.provideApp(t, "demo-app", "com.example.demo.UserService", provider, "1", map[string]string{"methods": "getUser,listUsers"})
			} else {
				f.provide(t, "com.example.demo.UserService", provider, "&methods=getUser,listUsers")
			}
			deadline := time.Now().Add(2 * time.Second)
			for {
				w := httptest.NewRecorder()
				tg.ServeHTTP(w, httptest.NewRequest("GET", "/api/users/42", nil))
				if w.Code == http.StatusOK {
					if !strings.Contains(w.Body.String(), `"id":"42"`) {
						t.Fatalf("answer %s", w.Body)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still %d %s 2s after a provider registered", w.Code, w.Body)
				}
				time.Sleep(20 * time.Millisecond)
			}
			f.waitWatches(t, tg.table.Load().registries["zk"], tc.watchesServed, "after the provider came")
		})
	}
}

// seedIncident000 sends 100,000 requests, concurrent, to the getUser route
// and the pass-through of a service without provider, and checks what
// they leave: one subscription with the given watches, one reference, a
// flat heap and goroutine count.
func seedIncident000(t *testing.T, f *zkFixture, tg *testGW, watches int, what string) {
	h := tg.Gateway // requests go straight to the handler: the socket layer is not under test
	call := func(i int) int {
		var req *http.Request
		if i%2 == 0 {
			req = httptest.NewRequest("GET", "/api/users/"+fmt.Sprint(i), nil)
		} else {
			req = httptest.NewRequest("POST", "/dubbo/com.example.demo.UserService/getUser",
				strings.NewReader(`{"types":["java.lang.String"],"args":["7"]}`))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	run := func(n int) {
		t.Helper()
		var next, bad atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
					if code := call(i); code != http.StatusServiceUnavailable {
						bad.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if bad.Load() > 0 {
			t.Fatalf("%d of %d requests did not answer 503", bad.Load(), n)
		}
	}
	run(2_000) // warm-up: pools, buffers, metric series
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	run(100_000)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 2<<20 {
		t.Errorf("heap grew by %d KiB over 100,000 requests (limit 2 MiB)", growth>>10)
	}
	// The registry's idle helpers end a second after their last operation.
	testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("goroutines back to at most %d+2", goroutines),
		func() bool { return runtime.NumGoroutine() <= goroutines+2 })
	tab := tg.table.Load()
	st := tab.registries["zk"].Status()
	if st.Subscriptions != 1 || st.Watches != watches {
		t.Errorf("registry status %+v: want 1 subscription and %d watches (%s)", st, watches, what)
	}
	if n := tab.references["zk"].Len(); n != 1 {
		t.Errorf("%d references, want 1 (route and pass-through share (service, timeout))", n)
	}
	if n := f.serverWatches(t); n != watches {
		t.Errorf("ZooKeeper holds %d watches; want %d (%s)", n, watches, what)
	}
}

// TestZooKeeperProviderGone: when the last provider leaves, the route
// stays and answers 503 NO_PROVIDER (not 404, not a call to the dead
// address); admin and metrics show the registry and its services; the
// gateway registered itself as a consumer.
func TestZooKeeperProviderGone(t *testing.T) {
	f := newZKFixture(t)
	provider := startProvider(t)
	node := f.provide(t, "com.example.demo.UserService", provider, "&weight=150")
	tg := startGW(t, f.gatewayYAML(""))
	if a := do(t, "GET", tg.base+"/api/users/1", nil); a.status != 200 {
		t.Fatalf("with a provider: %d %s", a.status, a.body)
	}
	var consumers []string
	for deadline := time.Now().Add(5 * time.Second); len(consumers) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not register as a consumer")
		}
		consumers, _, _ = f.conn.Children("/" + f.root + "/com.example.demo.UserService/consumers")
	}
	if len(consumers) != 1 {
		t.Fatalf("consumer nodes %v", consumers)
	}
	if c, _ := url.QueryUnescape(consumers[0]); !strings.HasPrefix(c, "consumer://") || !strings.Contains(c, "application=dubbogw") {
		t.Errorf("consumer node %q", c)
	}
	var services struct {
		Registries []struct {
			Name, Type, State string
			Subscriptions     int
			Watches           int
			References        int
		}
		Services []struct {
			Registry, Service, State string
			References               int
			Providers                []struct {
				Address  string
				Weight   int
				Breakers map[string]string
			}
		}
	}
	if err := json.Unmarshal([]byte(do(t, "GET", tg.admin+"/admin/services", nil).body), &services); err != nil {
		t.Fatal(err)
	}
	if len(services.Registries) != 1 || services.Registries[0].Type != "zookeeper" || services.Registries[0].State != "connected" ||
		services.Registries[0].Subscriptions != 1 || services.Registries[0].Watches != catalogWatches+watchesPerInterface || services.Registries[0].References != 1 {
		t.Errorf("admin registries: %+v", services.Registries)
	}
	if s := services.Services; len(s) != 1 || s[0].State != "ok" || len(s[0].Providers) != 1 || s[0].Providers[0].Address != provider ||
		s[0].Providers[0].Weight != 150 || s[0].Providers[0].Breakers["get-user"] != "closed" {
		t.Errorf("admin services: %+v", s)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_registry_subscriptions{registry="zk"} 1`, fmt.Sprintf(`dubbogw_registry_watches{registry="zk"} %d`, catalogWatches+watchesPerInterface),
		`dubbogw_references{registry="zk"} 1`, `dubbogw_providers{registry="zk",service="com.example.demo.UserService"} 1`,
		`dubbogw_registry_connected{registry="zk"} 1`, `dubbogw_registry_registered_consumers{registry="zk"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	if err := f.conn.Delete(node, -1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := do(t, "GET", tg.base+"/api/users/1", nil)
		if a.status == 503 {
			if code, _, _, _ := errorBody(t, a); code != "NO_PROVIDER" {
				t.Fatalf("after the provider left: %d %s", a.status, a.body)
			}
			break
		}
		if a.status != 200 || time.Now().After(deadline) {
			t.Fatalf("after the provider left: %d %s", a.status, a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Connections to the gone provider are closed once no registry lists it.
	tg.forgetUnlisted(tg.forgetUnlisted(nil))
	if addrs := tg.dubbo.Addrs(); len(addrs) != 0 {
		t.Errorf("the client still holds %v", addrs)
	}
}

// TestZooKeeperRouteDiscovery: a route asking for application-level
// discovery alone does not see a provider registered at interface level
// only, which its neighbour on the same registry (auto) calls; the derived
// registry shows in /admin/services.
func TestZooKeeperRouteDiscovery(t *testing.T) {
	f := newZKFixture(t)
	provider := startProvider(t)
	f.provide(t, "com.example.demo.UserService", provider, "&methods=getUser")
	route := func(name, discovery string) string {
		return fmt.Sprintf("  - {name: %s, match: {path: \"/%s/{id}\"}, dubbo: {registry: zk, interface: com.example.demo.UserService, method: getUser, discovery: %q, params: [{type: java.lang.String, from: path, name: id}]}}\n", name, name, discovery)
	}
	tg := startGW(t, fmt.Sprintf("registries:\n  zk: {type: zookeeper, address: %q, root: %s, startup_wait: 2s}\nroutes:\n", f.addr, f.root)+
		route("both", "")+route("apps", "application"))
	if a := do(t, "GET", tg.base+"/both/7", nil); a.status != http.StatusOK {
		t.Errorf("route with the registry's discovery: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", tg.base+"/apps/7", nil); a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "NO_PROVIDER") {
		t.Errorf("route with application-level discovery: %d %s; want 503 NO_PROVIDER", a.status, a.body)
	}
	body := do(t, "GET", tg.admin+"/admin/services", nil).body
	if !strings.Contains(body, `"name": "zk@application"`) && !strings.Contains(body, `"name":"zk@application"`) {
		t.Errorf("/admin/services lacks the derived registry:\n%s", body)
	}
}

// TestZooKeeperRestartedProviderRedialled: a provider that crashes (its
// node stays, as until its session expires) and comes back on the same
// address registering anew is called as soon as its new node is seen, not
// after the reconnect backoff the client grew while it was down.
func TestZooKeeperRestartedProviderRedialled(t *testing.T) {
	f := newZKFixture(t)
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	for _, svc := range demo.DubboServices() {
		s.Register(svc)
	}
	a, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := a.String()
	node := f.provide(t, "com.example.demo.UserService", addr, "&methods=getUser&pid=1")
	tg := startGW(t, f.gatewayYAML(""))
	if r := do(t, "GET", tg.base+"/api/users/1", nil); r.status != http.StatusOK {
		t.Fatalf("before the crash: %d %s", r.status, r.body)
	}
	_ = s.Close(context.Background())
	// Six failed dials in a row: the client's next wait is 1.6 s to 3.2 s.
	// (The one provider's: the series counts every provider's.)
	dialErrors := regexp.MustCompile(`(?m)^dubbogw_dubbo_dial_errors_total (\d+)$`)
	testenv.WaitFor(t, 15*time.Second, "six failed dials", func() bool {
		m := dialErrors.FindStringSubmatch(do(t, "GET", tg.admin+"/metrics", nil).body)
		if len(m) < 2 {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 6
	})
	s2 := provider.NewServer(slog.New(slog.DiscardHandler))
	for _, svc := range demo.DubboServices() {
		s2.Register(svc)
	}
	if _, err := s2.Listen(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close(context.Background()) })
	// The restarted process registers anew (another pid), then the old
	// session's node goes.
	f.provide(t, "com.example.demo.UserService", addr, "&methods=getUser&pid=2")
	f.deleteTree(node)
	start := time.Now()
	for {
		r := do(t, "GET", tg.base+"/api/users/2", nil)
		if r.status == http.StatusOK {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("still %d %s 5s after the provider registered again", r.status, r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Errorf("answered %v after the provider registered again; the client's backoff alone is at least 1.6s", d)
	}
}

// TestZooKeeperPassthroughFirstCall: the first pass-through call of a
// service key nobody called before waits for the registry's first answer
// (within the call's timeout) instead of answering 503 from a directory
// that is still pending; a service without provider still answers 503 at
// once after that, naming the versions and groups that have providers.
func TestZooKeeperPassthroughFirstCall(t *testing.T) {
	f := newZKFixture(t)
	provider := startProvider(t)
	f.provide(t, "com.example.demo.UserService", provider, "&methods=getUser")
	tg := startGW(t, fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, root: %s, startup_wait: 2s}
routes:
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: zk, passthrough: {allow: [com.example.demo.*]}}
`, f.addr, f.root))
	call := func(version string) (int, string) {
		w := httptest.NewRecorder()
		tg.ServeHTTP(w, httptest.NewRequest("POST", "/dubbo/com.example.demo.UserService/getUser",
			strings.NewReader(`{"version":"`+version+`","types":["java.lang.String"],"args":["7"]}`)))
		return w.Code, w.Body.String()
	}
	if code, body := call(""); code != http.StatusOK {
		t.Fatalf("first call of a new service key: %d %s", code, body)
	}
	// The answer says which versions and groups do have providers.
	if code, body := call("3.0.0"); code != http.StatusServiceUnavailable || !strings.Contains(body, "NO_PROVIDER") ||
		!strings.Contains(body, "no provider for com.example.demo.UserService:3.0.0; the registry has providers of com.example.demo.UserService for no version and no group") {
		t.Fatalf("a version nobody provides: %d %s", code, body)
	}
	start := time.Now()
	if code, _ := call("3.0.0"); code != http.StatusServiceUnavailable {
		t.Fatalf("again: %d", code)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a known service without provider took %v to answer; want at once", d)
	}
}

// TestZooKeeperDownAtStart: the gateway starts with ZooKeeper unreachable
// (routes answer 503 at once, readiness says degraded but stays 200),
// unless a route asks for check: true.
func TestZooKeeperDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	yml := fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, startup_wait: 1s, timeout: 2s}
routes:
  - name: get-user
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo: {registry: zk, interface: com.example.demo.UserService, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
`, dead)
	start := time.Now()
	tg := startGW(t, yml)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("start took %v with ZooKeeper down", d)
	}
	a := do(t, "GET", tg.base+"/api/users/1", nil)
	if code, _, _, _ := errorBody(t, a); a.status != 503 || code != "NO_PROVIDER" {
		t.Errorf("with ZooKeeper down: %d %s", a.status, a.body)
	}
	// Readiness waits for the registry's first answer; unreachable, it
	// answers "stale" once its timeout (2s) passes without a session:
	// then ready, and degraded.
	var r answer
	testenv.WaitFor(t, 15*time.Second, "/readyz 200 once the registry's directories went stale", func() bool {
		r = do(t, "GET", tg.admin+"/readyz", nil)
		return r.status == 200
	})
	if !strings.Contains(r.body, `"degraded"`) || !strings.Contains(r.body, "registry zk") {
		t.Errorf("readyz with ZooKeeper down: %d %s", r.status, r.body)
	}

	path := t.TempDir() + "/gw.yaml"
	check := strings.Replace(baseYAML+yml, "params:", "check: true, params:", 1)
	if err := os.WriteFile(path, []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	// The route table is built in New; Start waits for the registries
	// once the admin listener answers, and refuses to go on.
	g, err := newFromFile(path)
	if err == nil {
		err = g.Start(context.Background())
		_ = g.Shutdown(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "routes[0].dubbo.check: no provider of com.example.demo.UserService") {
		t.Errorf("check: true with ZooKeeper down: %v", err)
	}
}

// TestZooKeeperReloadDiffsSubscriptions: a reload that adds, changes and
// removes routes keeps the subscriptions it still needs untouched (the same
// directory), releases the others after release_after, and ZooKeeper's
// watches follow the live service keys.
func TestZooKeeperReloadDiffsSubscriptions(t *testing.T) {
	f, _ := newPrivateZKFixture(t)
	provider := startProvider(t)
	f.provide(t, "com.example.demo.UserService", provider, "")
	for _, iface := range []string{"com.example.B", "com.example.C", "com.example.D"} {
		// Registered (without providers), so auto discovery watches them.
		f.ensure(t, "/"+f.root+"/"+iface+"/providers")
	}
	route := func(name, iface string) string {
		return fmt.Sprintf("  - {name: %s, match: {path: /%s}, dubbo: {registry: zk, interface: %s, method: greet}}\n", name, name, iface)
	}
	head := fmt.Sprintf("registries:\n  zk: {type: zookeeper, address: %q, root: %s, release_after: 300ms, watch_gc: 200ms, startup_wait: 2s}\nroutes:\n", f.addr, f.root)
	tg := startGW(t, head+route("a", "com.example.demo.UserService")+route("b", "com.example.B")+route("c", "com.example.C"))
	dirA := tg.table.Load().routes[0].dubboDirectory()

	tg.rewrite(t, head+route("a2", "com.example.demo.UserService")+route("b", "com.example.B")+route("d", "com.example.D"))
	if err := tg.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	tab := tg.table.Load()
	if tab.routes[0].dubboDirectory() != dirA {
		t.Error("a service kept across the reload got a new directory")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := tab.registries["zk"].Status()
		n := f.serverWatches(t)
		if st.Subscriptions == 3 && st.Watches == catalogWatches+3*watchesPerInterface && st.OrphanWatches == 0 && n == catalogWatches+3*watchesPerInterface {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the reload: status %+v, ZooKeeper holds %d watches; want the catalog's and the 3 live services' %d", st, n, catalogWatches+3*watchesPerInterface)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a := do(t, "GET", tg.base+"/a2", nil); a.status != 200 {
		t.Errorf("kept service: %d %s", a.status, a.body)
	}
}

// newFromFile builds (without starting) a gateway from a config file.
func newFromFile(path string) (*Gateway, error) {
	return New(Options{Load: func() (*config.Config, error) { return config.Load(path) }, Logger: slog.New(slog.DiscardHandler)})
}

// TestZooKeeperProviderChurn: 50 providers appear and vanish (node
// deletions and session kills) while requests run. Once the gateway has
// seen a removal and every worker has finished one more request, the
// removed provider gets no further call; no request fails; the watches
// stay those of one interface.
func TestZooKeeperProviderChurn(t *testing.T) {
	f := newZKFixture(t)
	const iface = "com.example.Churn"
	type churner struct {
		srv  *provider.Server
		addr string
		sess *zk.Conn // the provider's own session: closing it is a session kill
		node string
	}
	start := func(i int) *churner {
		srv := provider.NewServer(slog.New(slog.DiscardHandler))
		srv.Register(provider.Service{Interface: iface, Methods: map[string][]provider.Method{
			"who": {{Func: func(context.Context, []any) (any, error) { return int32(i), nil }}},
		}})
		a, err := srv.Listen(context.Background(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sess, _, err := zk.Connect([]string{f.addr}, 10*time.Second, zk.WithLogger(quietZK{}))
		if err != nil {
			t.Fatal(err)
		}
		p := &churner{srv: srv, addr: a.String(), sess: sess}
		dir := "/" + f.root + "/" + iface + "/providers"
		f.ensure(t, dir)
		u := "dubbo://" + p.addr + "/" + iface + "?interface=" + iface + "&methods=who&side=provider"
		p.node = dir + "/" + url.QueryEscape(u)
		if _, err := sess.Create(p.node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("registering provider %d: %v", i, err)
		}
		return p
	}
	stop := func(p *churner) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.srv.Close(ctx)
		p.sess.Close()
	}
	live := map[int]*churner{}
	for i := range 10 {
		live[i] = start(i)
	}
	t.Cleanup(func() {
		for _, p := range live {
			stop(p)
		}
	})
	tg := startGW(t, fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, root: %s, startup_wait: 2s}
routes:
  - {name: who, match: {path: /who}, dubbo: {registry: zk, interface: %s, method: who, loadbalance: roundrobin}}
`, f.addr, f.root, iface))
	dir := tg.table.Load().routes[0].dubboDirectory()
	listed := func(addr string) bool {
		for _, p := range dir.Providers() {
			if p.Addr == addr {
				return true
			}
		}
		return false
	}

	// Load: workers call /who until told to stop; each counts its
	// completed requests, so "every worker finished one more" is checkable.
	const workers = 8
	var done [workers]atomic.Int64
	var failures atomic.Int64
	var firstFailure atomic.Value
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				select {
				case <-quit:
					return
				default:
				}
				rec := httptest.NewRecorder()
				tg.ServeHTTP(rec, httptest.NewRequest("GET", "/who", nil))
				if rec.Code != http.StatusOK {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", rec.Code, rec.Body))
				}
				done[w].Add(1)
			}
		})
	}
	oneMoreEach := func() {
		var marks [workers]int64
		for w := range workers {
			marks[w] = done[w].Load()
		}
		deadline := time.Now().Add(5 * time.Second)
		for w := range workers {
			for done[w].Load() < marks[w]+2 { // the one running now may predate; the next does not
				if time.Now().After(deadline) {
					t.Fatal("workers stopped making progress")
				}
				time.Sleep(time.Millisecond)
			}
		}
	}

	type removed struct {
		p     *churner
		calls uint64
	}
	var gone []removed
	next := 10
	for step := range 40 {
		// One provider comes, one goes: by node deletion or by session kill.
		var victim int
		for k := range live {
			victim = k
			break
		}
		v := live[victim]
		delete(live, victim)
		p := start(next)
		live[next] = p
		next++
		if step%2 == 0 {
			if err := v.sess.Delete(v.node, -1); err != nil {
				t.Fatal(err)
			}
		} else {
			v.sess.Close()
		}
		deadline := time.Now().Add(5 * time.Second)
		for listed(v.addr) || !listed(p.addr) {
			if time.Now().After(deadline) {
				t.Fatalf("step %d: the gateway did not see %s leave and %s come", step, v.addr, p.addr)
			}
			time.Sleep(2 * time.Millisecond)
		}
		oneMoreEach()
		gone = append(gone, removed{p: v, calls: v.srv.Stats().Requests})
	}
	oneMoreEach()
	close(quit)
	wg.Wait()
	for _, r := range gone {
		if n := r.p.srv.Stats().Requests; n != r.calls {
			t.Errorf("provider %s got %d calls after its removal was seen", r.p.addr, n-r.calls)
		}
		stop(r.p)
	}
	if n := failures.Load(); n > 0 {
		t.Errorf("%d requests failed during churn; first: %v", n, firstFailure.Load())
	}
	if st := tg.table.Load().registries["zk"].Status(); st.Watches != catalogWatches+watchesPerInterface || st.Subscriptions != 1 {
		t.Errorf("registry after churn: %+v", st)
	}
	var total int64
	for w := range workers {
		total += done[w].Load()
	}
	t.Logf("%d requests during 40 churn steps", total)
}

// TestZooKeeperOutagesUnderLoad: with requests running, ZooKeeper becomes
// unreachable long enough for the session to expire, then comes back; later
// it is restarted. Requests never fail and providers never drop to zero;
// /readyz stays 200 and says degraded meanwhile; after each outage the
// subscription is back exactly once (the server holds its watches: the catalog's and the interface's).
func TestZooKeeperOutagesUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a session expiry")
	}
	f, srv := newPrivateZKFixture(t)
	proxy := testenv.StartProxy(t, srv.Addr())
	// Persistent: on a loaded machine a ZooKeeper restart can outlast the
	// fixture's own 10 s session, whose ephemeral node would then go (and
	// the list rightly be empty); what is tested is the gateway's session.
	f.provideNode(t, "com.example.demo.UserService", startProvider(t), "", 0)
	tg := startGW(t, fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, root: %s, session_timeout: 2s, timeout: 1s, startup_wait: 3s}
routes:
  - name: get-user
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo: {registry: zk, interface: com.example.demo.UserService, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
`, proxy.Addr(), f.root))
	reg := tg.table.Load().registries["zk"]
	dir := tg.table.Load().routes[0].dubboDirectory()

	var failures, empty, total atomic.Int64
	var firstFailure atomic.Value
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-quit:
					return
				default:
				}
				if len(dir.Providers()) == 0 {
					empty.Add(1)
				}
				rec := httptest.NewRecorder()
				tg.ServeHTTP(rec, httptest.NewRequest("GET", "/api/users/1", nil))
				if rec.Code != http.StatusOK {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", rec.Code, rec.Body))
				}
				total.Add(1)
				time.Sleep(time.Millisecond)
			}
		})
	}
	stopLoad := sync.OnceFunc(func() { close(quit); wg.Wait() })
	defer stopLoad()

	waitFor := func(what string, ok func(registryStatus) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !ok(reg.Status()) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: status %+v", what, reg.Status())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	degradedReady := func() {
		t.Helper()
		r := do(t, "GET", tg.admin+"/readyz", nil)
		if r.status != 200 || !strings.Contains(r.body, "registry zk") {
			t.Errorf("readyz during the outage: %d %s", r.status, r.body)
		}
	}
	healthy := func(st registryStatus) bool {
		return st.State == "connected" && st.Watches == catalogWatches+watchesPerInterface && st.Subscriptions == 1
	}
	waitFor("the first session", healthy)

	// 1. Unreachable past the session timeout: the session expires.
	proxy.Pause()
	waitFor("the registry to notice", func(st registryStatus) bool { return st.Degraded })
	degradedReady()
	time.Sleep(3 * time.Second) // > session_timeout: the server expires the session
	proxy.Resume()
	waitFor("a new session", func(st registryStatus) bool { return healthy(st) && st.SessionExpiries == 1 })
	f.waitWatches(t, tg.table.Load().registries["zk"], catalogWatches+watchesPerInterface, "after the session expiry")

	// 2. ZooKeeper restarts.
	srv.Stop()
	waitFor("the registry to notice the restart", func(st registryStatus) bool { return st.Degraded })
	degradedReady()
	srv.Start()
	waitFor("the session back", healthy)
	f.waitWatches(t, tg.table.Load().registries["zk"], catalogWatches+watchesPerInterface, "after the restart")
	if r := do(t, "GET", tg.admin+"/readyz", nil); r.status != 200 || strings.Contains(r.body, "degraded") {
		t.Errorf("readyz after the outages: %d %s", r.status, r.body)
	}

	stopLoad()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d requests failed; first: %v", n, total.Load(), firstFailure.Load())
	}
	if n := empty.Load(); n > 0 {
		t.Errorf("the provider list was empty %d times", n)
	}
	t.Logf("%d requests across a session expiry and a restart; status %+v", total.Load(), reg.Status())
}

type registryStatus = registry.Status

// TestReadinessWaitsForTheRegistry: with a slow ZooKeeper (every reply
// held back), the gateway starts after startup_wait, but /readyz says 503
// and names the services still unread until the registry has answered for
// every route's service; then 200, and it stays 200. With readiness:
// lenient it is 200 at once, the unread services listed (issue 19:
// "readiness lies" on a large registry). Only then is the memory of
// startup's reads returned to the system.
func TestReadinessWaitsForTheRegistry(t *testing.T) {
	for _, mode := range []string{"strict", "lenient"} {
		t.Run(mode, func(t *testing.T) {
			zk := testenv.StartProxy(t, testenv.ZooKeeperAddr(t))
			zk.SetDelay(400 * time.Millisecond)
			tg := startGWRaw(t, strings.Replace(baseYAML, "admin:\n", "admin:\n  readiness: "+mode+"\n", 1)+fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, discovery: interface, startup_wait: 100ms, timeout: 20s, register: false}
routes:
  - name: slow
    match: {methods: [GET], path: "/api/slow/{id}"}
    dubbo: {registry: zk, interface: com.example.readiness.SlowService, method: get, params: [{type: java.lang.String, from: path, name: id}]}
`, zk.Addr()))
			const returned = "startup reads done"
			returnedEarly := strings.Contains(tg.logs.String(), returned) // read before /readyz: it came after the answer
			r := do(t, "GET", tg.admin+"/readyz", nil)
			if returnedEarly && strings.Contains(r.body, "SlowService") {
				t.Fatalf("startup memory returned before the registry answered: /readyz said %d %s after it", r.status, r.body)
			}
			wantStatus := 503
			if mode == "lenient" {
				wantStatus = 200
			}
			var body struct {
				Status       string   `json:"status"`
				Pending      []string `json:"pending"`
				PendingCount int      `json:"pending_count"`
			}
			if err := json.Unmarshal([]byte(r.body), &body); err != nil {
				t.Fatal(err)
			}
			if r.status != wantStatus || !slices.Equal(body.Pending, []string{"com.example.readiness.SlowService"}) || body.PendingCount != 1 {
				t.Fatalf("readyz while the registry reads: %d %s; want %d naming the unread service", r.status, r.body, wantStatus)
			}
			testenv.WaitFor(t, 30*time.Second, "/readyz 200 with nothing pending", func() bool {
				r = do(t, "GET", tg.admin+"/readyz", nil)
				return r.status == 200 && !strings.Contains(r.body, "pending")
			})
			// Startup's reads are over: what they left behind is returned.
			testenv.WaitFor(t, 10*time.Second, "the startup memory returned", func() bool { return strings.Contains(tg.logs.String(), returned) })
			if mode == "lenient" {
				return
			}
			// Once ready, it stays ready: a reload adding a service the
			// registry has yet to read lists it, with 200.
			tg.rewrite(t, fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, discovery: interface, startup_wait: 100ms, timeout: 20s, register: false}
routes:
  - name: slow
    match: {methods: [GET], path: "/api/slow/{id}"}
    dubbo: {registry: zk, interface: com.example.readiness.SlowService, method: get, params: [{type: java.lang.String, from: path, name: id}]}
  - name: later
    match: {methods: [GET], path: "/api/later/{id}"}
    dubbo: {registry: zk, interface: com.example.readiness.Later, method: get, params: [{type: java.lang.String, from: path, name: id}]}
`, zk.Addr()))
			if a := do(t, "POST", tg.admin+"/admin/reload", nil); a.status != 200 {
				t.Fatalf("reload: %d %s", a.status, a.body)
			}
			if r = do(t, "GET", tg.admin+"/readyz", nil); r.status != 200 {
				t.Errorf("readyz after a reload adding an unread service: %d %s; want 200 (ready once, ready on)", r.status, r.body)
			}
		})
	}
}

// TestAdminAnswersWhileTheRegistriesAreRead: Start opens the admin
// listener before it waits (up to startup_wait) for the registries, so a
// liveness probe gets 200 from /livez, and /readyz 503 "starting", while a
// registry that cannot be reached is waited for; the data listener opens
// only after the wait (issue 19: at 5,000 routes the wait is seconds, in
// which the probes were refused).
func TestAdminAnswersWhileTheRegistriesAreRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := ln.Addr().String()
	ln.Close()
	gone, err := net.Listen("tcp", "127.0.0.1:0") // ZooKeeper that refuses: nothing listens once closed
	if err != nil {
		t.Fatal(err)
	}
	zkAddr := gone.Addr().String()
	gone.Close()
	path := filepath.Join(t.TempDir(), "gw.yaml")
	yml := strings.Replace(baseYAML, "  listen: \"127.0.0.1:0\"\naccess_log", "  listen: \""+admin+"\"\naccess_log", 1) + fmt.Sprintf(`
registries:
  zk: {type: zookeeper, address: %q, discovery: interface, startup_wait: 4s, timeout: 20s, register: false}
routes:
  - name: slow
    match: {methods: [GET], path: "/api/slow/{id}"}
    dubbo: {registry: zk, interface: com.example.readiness.Unread, method: get, params: [{type: java.lang.String, from: path, name: id}]}
`, zkAddr)
	if !strings.Contains(yml, admin) {
		t.Fatalf("admin address not in the config:\n%s", yml)
	}
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := newFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- g.Start(context.Background()) }()
	returned := false
	defer func() {
		if !returned {
			<-started // Shutdown only once Start is over
		}
		_ = g.Shutdown(context.Background())
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	get := func(p string) (int, string) {
		resp, err := client.Get("http://" + admin + p)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.WaitFor(t, 3*time.Second, "/livez 200 while Start waits for the registry", func() bool {
		code, _ := get("/livez")
		return code == 200
	})
	select {
	case err := <-started:
		returned = true
		t.Fatalf("Start returned (%v) before startup_wait: the probe was not answered during the wait", err)
	default:
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "starting") {
		t.Errorf("/readyz during the wait: %d %s, want 503 starting", code, body)
	}
	err = <-started
	returned = true
	if err != nil {
		t.Fatal(err)
	}
	if g.Addr() == "" {
		t.Error("no data listener after Start")
	}
}
