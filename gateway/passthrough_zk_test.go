package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// passthroughYAML is a gateway on the fixture's root with nothing but the
// pass-through, open to com.example.*; registryExtra and referencesExtra
// are settings of the registry and of dubbo.references (flow style,
// without braces: "new_per_second: 5").
func (f *zkFixture) passthroughYAML(registryExtra, referencesExtra string) string {
	return fmt.Sprintf(`
registries:
  zk:
    type: zookeeper
    address: %q
    root: %s
    session_timeout: 10s
    startup_wait: 2s
%s
dubbo:
  references: {%s}
routes:
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: zk, timeout: 2s, passthrough: {allow: ["com.example.*"]}}
`, f.addr, f.root, registryExtra, referencesExtra)
}

// passthroughCall calls getUser on iface through the pass-through, straight
// to the gateway's handler (the socket layer is not under test).
func passthroughCall(h http.Handler, iface string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/dubbo/"+iface+"/getUser", strings.NewReader(`{"types":["java.lang.String"],"args":["7"]}`))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// callAbsent makes n pass-through calls, from workers goroutines, each to
// another interface nobody registered (com.example.absent.S<first+i>), and
// fails the test unless every one answers 503 NO_PROVIDER. It returns each
// call's duration.
func callAbsent(t *testing.T, h http.Handler, first, n, workers int) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	var next atomic.Int64
	var bad atomic.Int64
	var firstBad atomic.Pointer[string]
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				start := time.Now()
				w := passthroughCall(h, "com.example.absent.S"+strconv.Itoa(first+i))
				took[i] = time.Since(start)
				if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"NO_PROVIDER"`) {
					bad.Add(1)
					s := fmt.Sprintf("%d %s", w.Code, w.Body)
					firstBad.CompareAndSwap(nil, &s)
				}
			}
		})
	}
	wg.Wait()
	if b := bad.Load(); b > 0 {
		t.Fatalf("%d of %d calls to absent interfaces did not answer 503 NO_PROVIDER; the first: %s", b, n, *firstBad.Load())
	}
	return took
}

// rss is the process's resident set size, from /proc (0 where there is
// none), once the runtime has returned what it can to the system.
func rss(t *testing.T) int64 {
	t.Helper()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestPassthroughAbsentInterfaces: 10,000 pass-through calls, each to
// another interface nobody registered, answer 503 NO_PROVIDER from the
// registry's catalog: ZooKeeper holds no more than the catalog's watches
// (+2, limit +5), no subscription or reference is left, goroutines, heap
// and RSS stay flat; an interface that was absent and is registered
// afterwards is served within a second (asserted outside -race).
func TestPassthroughAbsentInterfaces(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	f, _ := newPrivateZKFixture(t)
	tg := startGW(t, f.passthroughYAML("", ""))
	watchesBefore := f.serverWatches(t)

	// Warm-up: pools, buffers, metric series, the catalog's first read;
	// and the interface registered later is absent now.
	callAbsent(t, tg.Gateway, 0, 200, 16)
	if w := passthroughCall(tg.Gateway, "com.example.demo.UserService"); w.Code != http.StatusServiceUnavailable ||
		!strings.Contains(w.Body.String(), `"NO_PROVIDER"`) {
		t.Fatalf("before it is registered: %d %s", w.Code, w.Body)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines, rssBefore := runtime.NumGoroutine(), rss(t)

	callAbsent(t, tg.Gateway, 1000, 10_000, 16)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if n := f.serverWatches(t); n > watchesBefore+5 {
		t.Errorf("ZooKeeper holds %d watches after 10,200 calls to absent interfaces, %d before: want at most +5", n, watchesBefore)
	}
	tab := tg.table.Load()
	if st := tab.registries["zk"].Status(); st.Subscriptions != 0 {
		t.Errorf("registry status %+v: want no subscription", st)
	}
	if n := tab.references["zk"].Len(); n != 0 {
		t.Errorf("%d references, want none", n)
	}
	// The registry's idle helpers end a second after their last operation.
	testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("goroutines back to at most %d+10 after 10,000 calls", goroutines),
		func() bool { return runtime.NumGoroutine() <= goroutines+10 })
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 4<<20 {
		t.Errorf("heap grew by %d KiB over 10,000 calls (limit 4 MiB)", growth>>10)
	}
	if growth := rss(t) - rssBefore; growth > 64<<20 {
		t.Errorf("RSS grew by %d MiB over 10,000 calls (limit 64 MiB)", growth>>20)
	}
	t.Logf("10,000 calls: watches %d → %d, goroutines %d → %d, heap %d → %d KiB, RSS %d → %d MiB",
		watchesBefore, f.serverWatches(t), goroutines, runtime.NumGoroutine(), before.HeapAlloc>>10, after.HeapAlloc>>10,
		rssBefore>>20, rss(t)>>20)
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	if !strings.Contains(m, `dubbogw_references_refused_total{reason="not_registered",registry="zk"} 10201`) {
		t.Errorf("metrics: %s", grepLines(m, "dubbogw_references_refused_total"))
	}

	// Registered afterwards: served within a second.
	provider := startProvider(t)
	registered := time.Now()
	f.provide(t, "com.example.demo.UserService", provider, "&methods=getUser")
	var last *httptest.ResponseRecorder
	testenv.WaitFor(t, 30*time.Second, "the interface registered afterwards is served", func() bool {
		last = passthroughCall(tg.Gateway, "com.example.demo.UserService")
		return last.Code == http.StatusOK
	})
	served := time.Since(registered)
	t.Logf("served %v after the interface was registered", served)
	if !raceEnabled && served > time.Second {
		t.Errorf("served %v after the interface was registered; want within 1s", served)
	}
	if !strings.Contains(last.Body.String(), `"id":"7"`) {
		t.Errorf("answer %s", last.Body)
	}
}

// TestPassthroughAbsentInterfacesLatency: without the race detector, calls
// to interfaces nobody registered answer within 5 ms at the 99th
// percentile (measured on the handler, 4 callers at once).
func TestPassthroughAbsentInterfacesLatency(t *testing.T) {
	if raceEnabled {
		t.Skip("timing: the race detector slows every call")
	}
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	f := newZKFixture(t)
	tg := startGW(t, f.passthroughYAML("", ""))
	callAbsent(t, tg.Gateway, 0, 200, 4)
	took := callAbsent(t, tg.Gateway, 1000, 10_000, 4)
	slices.Sort(took)
	p50, p99 := took[len(took)/2], took[len(took)*99/100]
	t.Logf("10,000 calls to absent interfaces: p50 %v, p99 %v, max %v", p50, p99, took[len(took)-1])
	if p99 > 5*time.Millisecond {
		t.Errorf("p99 %v, want at most 5ms", p99)
	}
}

// TestPassthroughSubscribeLimits: interfaces that exist but that nobody
// else holds are subscribed on demand up to dubbo.references.max_subscriptions;
// beyond, 503 SUBSCRIBE_LIMITED with Retry-After, counted; a service
// already subscribed is not limited.
func TestPassthroughSubscribeLimits(t *testing.T) {
	f := newZKFixture(t)
	for i := range 3 {
		f.ensure(t, fmt.Sprintf("/%s/com.example.present.S%d/providers", f.root, i))
	}
	tg := startGW(t, f.passthroughYAML("    release_after: 1h", "max_subscriptions: 2"))
	for i := range 2 {
		if w := passthroughCall(tg.Gateway, fmt.Sprintf("com.example.present.S%d", i)); w.Code != http.StatusServiceUnavailable ||
			!strings.Contains(w.Body.String(), `"NO_PROVIDER"`) {
			t.Fatalf("present interface %d, without provider: %d %s", i, w.Code, w.Body)
		}
	}
	w := passthroughCall(tg.Gateway, "com.example.present.S2")
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"SUBSCRIBE_LIMITED"`) ||
		w.Header().Get("Retry-After") != "1" {
		t.Fatalf("a third: %d %s %v", w.Code, w.Body, w.Header())
	}
	if w := passthroughCall(tg.Gateway, "com.example.present.S0"); !strings.Contains(w.Body.String(), `"NO_PROVIDER"`) {
		t.Fatalf("a subscribed one again: %d %s", w.Code, w.Body)
	}
	if st := tg.table.Load().registries["zk"].Status(); st.Subscriptions != 2 {
		t.Errorf("status %+v, want 2 subscriptions", st)
	}
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_references_refused_total{reason="max",registry="zk"} 1`,
		`dubbogw_references_on_demand_subscriptions{registry="zk"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "dubbogw_references"))
		}
	}
	if !strings.Contains(tg.logs.String(), "over its limits") {
		t.Errorf("no log line of the refusal")
	}
}

// TestPassthroughIdleReleased: an on-demand subscription unused for
// dubbo.references.idle_ttl is released then, with its watches, without
// waiting for the registry's release_after.
func TestPassthroughIdleReleased(t *testing.T) {
	f := newZKFixture(t)
	f.ensure(t, "/"+f.root+"/com.example.present.Idle/providers")
	tg := startGW(t, f.passthroughYAML("    release_after: 1h", "idle_ttl: 3s"))
	used := time.Now()
	if w := passthroughCall(tg.Gateway, "com.example.present.Idle"); !strings.Contains(w.Body.String(), `"NO_PROVIDER"`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	reg := tg.table.Load().registries["zk"]
	// The call answers from the first provider list; the interface's other
	// watches are armed by the registry's worker meanwhile (idle_ttl leaves
	// seconds for it).
	testenv.WaitFor(t, 2*time.Second, "the subscription, the catalog's and the interface's watches", func() bool {
		st := reg.Status()
		return st.Subscriptions == 1 && st.Watches == catalogWatches+watchesPerInterface
	})
	testenv.WaitFor(t, 30*time.Second, "the idle subscription released", func() bool {
		st := reg.Status()
		return st.Subscriptions == 0 && st.Watches == catalogWatches
	})
	t.Logf("released %v after its last use (idle_ttl 3s, release_after 1h)", time.Since(used))
}
