package configsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/observe"
)

// waitLimit bounds the functional tests' waits: generous, for a loaded
// 2-core machine under -race; the timed test asserts the 1 s goal.
const waitLimit = 30 * time.Second

// namedUpstream is an HTTP service answering its name.
func namedUpstream(t *testing.T, name string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// fleetConfig is a whole configuration routing /x to target.
func fleetConfig(target string) []byte {
	return fmt.Appendf(nil, `listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s, idle_grace: 0s}
upstreams:
  u: {targets: [{url: %q}]}
routes:
  - {name: x, match: {prefix: /x}, upstream: u}
`, target)
}

// instance is one gateway started in-process from a ZooKeeper node, as
// `dubbogw run --config zookeeper://...` starts it: the same Load (the
// node's data parsed with the environment, validated), the source's
// watch, its cache.
type instance struct {
	g        *gateway.Gateway
	src      *Source
	registry *prometheus.Registry
	base     string
	admin    string
	logs     *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func parseLoaded(data []byte, name string) (*config.Config, error) {
	cfg, err := config.Parse(data, name, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if err := config.ApplyEnvOverrides(cfg, os.LookupEnv); err != nil {
		return nil, err
	}
	return cfg, config.Validate(cfg)
}

func startInstance(t *testing.T, loc Location, opts Options) *instance {
	t.Helper()
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Logger = log
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	src, err := Open(loc, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := true
	reg := observe.NewRegistry()
	if err := src.Register(reg); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{
		Load: func() (*config.Config, error) {
			if first {
				first = false
				data, name, err := src.ReadAtStart()
				if err != nil {
					return nil, err
				}
				return parseLoaded(data, name)
			}
			data, err := src.Read()
			if err != nil {
				return nil, err
			}
			return parseLoaded(data, src.Name())
		},
		Source:   src,
		Logger:   log,
		Registry: reg,
	})
	if err != nil {
		src.Close()
		t.Fatalf("New: %v", err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	in := &instance{g: g, src: src, registry: reg, base: "http://" + g.Addr(), admin: "http://" + g.AdminAddr(), logs: logs}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
		src.Close()
	})
	return in
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// get returns the status and body of GET url ("" and -1 on an error).
func get(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// load keeps requests going to an instance until stop: it counts the
// failures (anything but a 200 from one of the upstreams) and records
// when it first saw each answer.
type load struct {
	failures atomic.Int64
	requests atomic.Int64
	mu       sync.Mutex
	first    map[string]time.Time
	lastErr  string
}

func startLoad(t *testing.T, url string, workers int, stop <-chan struct{}, wg *sync.WaitGroup) *load {
	l := &load{first: map[string]time.Time{}}
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body := get(url)
				at := time.Now()
				l.requests.Add(1)
				l.mu.Lock()
				if code != http.StatusOK {
					l.failures.Add(1)
					l.lastErr = fmt.Sprintf("%d %s", code, body)
				} else if _, seen := l.first[body]; !seen {
					l.first[body] = at
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

func (l *load) firstSeen(body string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.first[body]
	return at, ok
}

// adminConfig reads /admin/config's _source.
func adminSource(t *testing.T, in *instance) Status {
	t.Helper()
	code, body := get(in.admin + "/admin/config")
	if code != 200 {
		t.Fatalf("/admin/config: %d %s", code, body)
	}
	var v struct {
		Source Status `json:"_source"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("/admin/config: %v: %s", err, body)
	}
	return v.Source
}

// fleetPush starts three instances on one node, puts each under load,
// pushes a new configuration and returns how long after the push the
// last of them served it; it fails on any failed request.
func fleetPush(t *testing.T) time.Duration {
	addr := testenv.ZooKeeperAddr(t)
	loc := testNode(t, addr)
	store := openStore(t, loc)
	ctx := context.Background()
	a, b := namedUpstream(t, "a"), namedUpstream(t, "b")
	if _, err := store.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	var fleet []*instance
	for range 3 {
		fleet = append(fleet, startInstance(t, loc, Options{}))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var loads []*load
	for _, in := range fleet {
		loads = append(loads, startLoad(t, in.base+"/x", 4, stop, &wg))
	}
	defer func() { close(stop); wg.Wait() }()
	for i, l := range loads {
		testenv.WaitFor(t, waitLimit, fmt.Sprintf("instance %d serving a", i), func() bool { _, ok := l.firstSeen("a"); return ok })
	}

	pushed := time.Now()
	if _, err := store.Push(ctx, fleetConfig(b), PushOptions{IfVersion: version(0)}); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for i, l := range loads {
		testenv.WaitFor(t, waitLimit, fmt.Sprintf("instance %d serving b", i), func() bool { _, ok := l.firstSeen("b"); return ok })
		at, _ := l.firstSeen("b")
		slowest = max(slowest, at.Sub(pushed))
	}
	// Keep the load on a little longer: the old table drains under it.
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	for i, l := range loads {
		if n := l.failures.Load(); n > 0 || l.requests.Load() == 0 {
			t.Errorf("instance %d: %d of %d requests failed (last: %s)", i, n, l.requests.Load(), l.lastErr)
		}
	}
	for i, in := range fleet {
		if st := adminSource(t, in); st.Serving.Version != 1 || st.Refused != nil || st.Kind != "zookeeper" {
			t.Errorf("instance %d /admin/config _source: %+v", i, st)
		}
		if n := testenv.MetricValue(t, in.registry, "dubbogw_config_reloads_total", map[string]string{"result": "success"}); n != 1 {
			t.Errorf("instance %d: %v successful reloads, want 1", i, n)
		}
	}
	t.Logf("the push was served by all three instances %s after it (slowest)", slowest)
	return slowest
}

// TestFleetPush: three gateway instances on one node, each under load;
// a push is served by all three with no failed request. (The 1 s bound
// is asserted by TestFleetPushWithinOneSecond, without the race
// detector.)
func TestFleetPush(t *testing.T) {
	fleetPush(t)
}

// TestFleetRefusesInvalidPush: a configuration written into the node by
// other means than `dubbogw config push` (which validates first) and
// invalid is refused by every instance: the last good one keeps serving,
// readiness is unchanged, and the refusal (the version and the
// problems) is in /admin/config, the log and the rejected counter.
func TestFleetRefusesInvalidPush(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	loc := testNode(t, addr)
	store := openStore(t, loc)
	ctx := context.Background()
	a := namedUpstream(t, "a")
	if _, err := store.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	var fleet []*instance
	for range 3 {
		fleet = append(fleet, startInstance(t, loc, Options{}))
	}
	bad := bytes.Replace(fleetConfig(a), []byte("upstream: u}"), []byte("upstream: nope}"), 1)
	err := store.zk.call(ctx, "writing", func(c *zk.Conn) error {
		_, err := c.Set(loc.Path, bad, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range fleet {
		testenv.WaitFor(t, waitLimit, fmt.Sprintf("instance %d refusing version 1", i), func() bool {
			return testenv.MetricValue(t, in.registry, "dubbogw_config_reloads_total", map[string]string{"result": "rejected"}) == 1
		})
		st := adminSource(t, in)
		if st.Refused == nil || st.Refused.Version != 1 || len(st.Refused.Problems) != 1 ||
			st.Refused.Problems[0].Path != "routes[0].upstream" || st.Serving.Version != 0 {
			t.Errorf("instance %d /admin/config _source: %+v", i, st)
		}
		if code, body := get(in.base + "/x"); code != 200 || body != "a" {
			t.Errorf("instance %d after the refusal: %d %s", i, code, body)
		}
		if n := testenv.MetricValue(t, in.registry, "dubbogw_config_source_refused", nil); n != 1 {
			t.Errorf("instance %d: dubbogw_config_source_refused %v, want 1", i, n)
		}
		if code, body := get(in.admin + "/readyz"); code != 200 {
			t.Errorf("instance %d readiness after the refusal: %d %s", i, code, body)
		}
		if !strings.Contains(in.logs.String(), "routes[0].upstream") || !strings.Contains(in.logs.String(), "refused") {
			t.Errorf("instance %d log lacks the refusal:\n%s", i, in.logs.String())
		}
	}
	// The next good push clears the refusal.
	b := namedUpstream(t, "b")
	if _, err := store.Push(ctx, fleetConfig(b), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, in := range fleet {
		testenv.WaitFor(t, waitLimit, fmt.Sprintf("instance %d serving b", i), func() bool { _, body := get(in.base + "/x"); return body == "b" })
		if st := adminSource(t, in); st.Refused != nil || st.Serving.Version != 2 {
			t.Errorf("instance %d after a good push: %+v", i, st)
		}
		if v, r := testenv.MetricValue(t, in.registry, "dubbogw_config_source_version", nil),
			testenv.MetricValue(t, in.registry, "dubbogw_config_source_refused", nil); v != 2 || r != 0 {
			t.Errorf("instance %d after a good push: version %v, refused %v", i, v, r)
		}
	}
}

// TestChangeWhileCutOff: a change made while an instance cannot reach
// ZooKeeper (its connection through a proxy cut) is picked up when it
// can again: the session, still alive, is established again, and the
// source reads the node on every session; meanwhile the instance serves
// the last good configuration, and a reload asked for counts a failure.
func TestChangeWhileCutOff(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	loc := testNode(t, addr)
	store := openStore(t, loc)
	ctx := context.Background()
	a, b := namedUpstream(t, "a"), namedUpstream(t, "b")
	if _, err := store.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, addr)
	cut := loc
	cut.Addrs = []string{proxy.Addr()}
	in := startInstance(t, cut, Options{Timeout: 2 * time.Second})
	proxy.Pause()
	testenv.WaitFor(t, waitLimit, "the instance to see ZooKeeper gone", func() bool { return !adminSource(t, in).Connected })
	if n := testenv.MetricValue(t, in.registry, "dubbogw_config_source_connected", nil); n != 0 {
		t.Errorf("dubbogw_config_source_connected %v while cut off", n)
	}
	if _, err := store.Push(ctx, fleetConfig(b), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// SIGHUP's reload while away: a failure, not a rejection; a serves on.
	if err := in.g.Reload(ctx); err == nil {
		t.Error("a reload with ZooKeeper away succeeded")
	}
	if n := testenv.MetricValue(t, in.registry, "dubbogw_config_reloads_total", map[string]string{"result": "failure"}); n != 1 {
		t.Errorf("failures: %v, want 1", n)
	}
	for range 20 {
		if code, body := get(in.base + "/x"); code != 200 || body != "a" {
			t.Fatalf("while cut off: %d %s", code, body)
		}
	}
	proxy.Resume()
	testenv.WaitFor(t, waitLimit, "the change made while away to serve", func() bool { _, body := get(in.base + "/x"); return body == "b" })
	if st := adminSource(t, in); st.Serving.Version != 1 || !st.Connected {
		t.Errorf("after reconnecting: %+v", st)
	}
}

// TestZooKeeperRestartMidChange: ZooKeeper stops (as a crash: its
// process killed) while an operator pushes. The push cannot happen and
// says so; the instances keep serving; once ZooKeeper is back, the push
// is made and every instance loads it.
func TestZooKeeperRestartMidChange(t *testing.T) {
	srv := testenv.StartZooKeeper(t)
	loc := Location{Addrs: []string{srv.Addr()}, Path: "/dubbogw/restart/config"}
	ctx := context.Background()
	a, b := namedUpstream(t, "a"), namedUpstream(t, "b")
	first := openStore(t, loc)
	if _, err := first.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	fleet := []*instance{startInstance(t, loc, Options{Timeout: 2 * time.Second}), startInstance(t, loc, Options{Timeout: 2 * time.Second})}
	srv.Stop()
	short, err := OpenStore(loc, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if _, err := short.Push(ctx, fleetConfig(b), PushOptions{}); err == nil {
		t.Fatal("a push with ZooKeeper down succeeded")
	}
	for i, in := range fleet {
		if code, body := get(in.base + "/x"); code != 200 || body != "a" {
			t.Errorf("instance %d with ZooKeeper down: %d %s", i, code, body)
		}
	}
	srv.Start()
	// A new session: the first one's may have expired on the server.
	again := openStore(t, loc)
	testenv.WaitFor(t, waitLimit, "a push once ZooKeeper is back", func() bool {
		_, err := again.Push(ctx, fleetConfig(b), PushOptions{IfVersion: version(0)})
		return err == nil
	})
	for i, in := range fleet {
		testenv.WaitFor(t, waitLimit, fmt.Sprintf("instance %d serving b", i), func() bool { _, body := get(in.base + "/x"); return body == "b" })
	}
}

// TestStartFromCache: every accepted configuration is written to the
// cache (mode 0600); an instance that cannot reach ZooKeeper at start
// starts from it, says so loudly, and loads ZooKeeper's configuration
// once it can.
func TestStartFromCache(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	loc := testNode(t, addr)
	store := openStore(t, loc)
	ctx := context.Background()
	a, b := namedUpstream(t, "a"), namedUpstream(t, "b")
	if _, err := store.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir() + "/dubbogw.cache.yaml"
	startInstance(t, loc, Options{Cache: cache})
	st, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(cache); !bytes.Equal(data, fleetConfig(a)) || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache: mode %v, %q", st.Mode(), data)
	}
	if _, err := store.Push(ctx, fleetConfig(b), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// The cache holds a; ZooKeeper b. A new instance that cannot reach
	// ZooKeeper starts from the cache.
	proxy := testenv.StartProxy(t, addr)
	proxy.Pause()
	cut := loc
	cut.Addrs = []string{proxy.Addr()}
	if data, _ := os.ReadFile(cache); !bytes.Equal(data, fleetConfig(b)) {
		// The first instance wrote b too (it follows the node).
		testenv.WaitFor(t, waitLimit, "the cache to hold b", func() bool {
			data, _ := os.ReadFile(cache)
			return bytes.Equal(data, fleetConfig(b))
		})
	}
	if err := os.WriteFile(cache, fleetConfig(a), 0o600); err != nil { // as left by an instance stopped before b
		t.Fatal(err)
	}
	in := startInstance(t, cut, Options{Timeout: time.Second, Cache: cache})
	if code, body := get(in.base + "/x"); code != 200 || body != "a" {
		t.Fatalf("started from the cache: %d %s", code, body)
	}
	if !strings.Contains(in.logs.String(), "ZOOKEEPER UNREACHABLE AT START") {
		t.Errorf("no loud log line:\n%s", in.logs.String())
	}
	if st := adminSource(t, in); !st.Serving.FromCache {
		t.Errorf("/admin/config _source: %+v", st)
	}
	proxy.Resume()
	testenv.WaitFor(t, waitLimit, "ZooKeeper's configuration after the cache", func() bool { _, body := get(in.base + "/x"); return body == "b" })
}

// TestSessionExpiredWhileCutOff: an instance cut off from ZooKeeper for
// longer than its session (a private server, whose sessions last at most
// 10 s) comes back on a new session, without the watch the old one had:
// it reads the node again (a change made meanwhile serves) and re-arms
// the watch (a change made after serves too).
func TestSessionExpiredWhileCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a ZooKeeper session")
	}
	srv := testenv.StartZooKeeper(t)
	loc := Location{Addrs: []string{srv.Addr()}, Path: "/dubbogw/expiry/config"}
	ctx := context.Background()
	a, b, c := namedUpstream(t, "a"), namedUpstream(t, "b"), namedUpstream(t, "c")
	store := openStore(t, loc)
	if _, err := store.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, srv.Addr())
	cut := loc
	cut.Addrs = []string{proxy.Addr()}
	in := startInstance(t, cut, Options{Timeout: 2 * time.Second})
	session := in.src.zk.conn.SessionID()
	proxy.Pause()
	if _, err := store.Push(ctx, fleetConfig(b), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// The server's maximum session (20 ticks of 500 ms) and a margin.
	time.Sleep(20*testenv.ZooKeeperTickTime + 3*time.Second)
	proxy.Resume()
	testenv.WaitFor(t, waitLimit, "the change made while the session expired to serve", func() bool { _, body := get(in.base + "/x"); return body == "b" })
	if now := in.src.zk.conn.SessionID(); now == session {
		t.Fatalf("still session %#x: it did not expire", now)
	}
	if _, err := store.Push(ctx, fleetConfig(c), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, waitLimit, "a change on the new session to serve", func() bool { _, body := get(in.base + "/x"); return body == "c" })
	if !strings.Contains(in.logs.String(), "configuration changed in ZooKeeper") {
		t.Errorf("log:\n%s", in.logs.String())
	}
}

// TestNodeDeletedAndMadeAgain: the node deleted (zkCli's deleteall)
// leaves the last good configuration serving and readiness as it was; a
// push that makes it again is loaded (its creation is watched).
func TestNodeDeletedAndMadeAgain(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	loc := testNode(t, addr)
	store := openStore(t, loc)
	ctx := context.Background()
	a, b := namedUpstream(t, "a"), namedUpstream(t, "b")
	if _, err := store.Push(ctx, fleetConfig(a), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	in := startInstance(t, loc, Options{})
	deleteTree(t, addr, loc.Path)
	testenv.WaitFor(t, waitLimit, "the deletion to be seen", func() bool {
		return strings.Contains(in.logs.String(), "configuration node missing")
	})
	if code, body := get(in.base + "/x"); code != 200 || body != "a" {
		t.Errorf("after the deletion: %d %s", code, body)
	}
	if code, _ := get(in.admin + "/readyz"); code != 200 {
		t.Errorf("readiness after the deletion: %d", code)
	}
	if _, err := store.Push(ctx, fleetConfig(b), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, waitLimit, "the node made again to serve", func() bool { _, body := get(in.base + "/x"); return body == "b" })
}

// TestNoStartWithoutZooKeeperOrCache: ZooKeeper out of reach for the
// whole timeout and no cache (or a cache file missing): the start fails
// with a read error, after waiting the timeout, not before.
func TestNoStartWithoutZooKeeperOrCache(t *testing.T) {
	loc := Location{Addrs: []string{testenv.ClosedAddr(t)}, Path: "/dubbogw/none"}
	for _, cache := range []string{"", t.TempDir() + "/missing.yaml"} {
		src, err := Open(loc, Options{Timeout: 1500 * time.Millisecond, Cache: cache, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, _, err = src.ReadAtStart()
		took := time.Since(start)
		src.Close()
		var re *config.ReadError
		if !errors.As(err, &re) || took < time.Second {
			t.Errorf("cache %q: %v after %s, want a read error after the 1.5s timeout", cache, err, took)
		}
		if cache != "" && (err == nil || !strings.Contains(err.Error(), "no cache to start from")) {
			t.Errorf("cache %q: %v", cache, err)
		}
	}
}
