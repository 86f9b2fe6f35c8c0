package ratelimit_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/ratelimit"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// rueidisScripter is ratelimit.Scripter over a plain rueidis client:
// EVALSHA, then EVAL when Redis does not know the script.
type rueidisScripter struct {
	client  rueidis.Client
	mu      sync.Mutex
	scripts map[string]*rueidis.Lua
}

func (s *rueidisScripter) EvalInts(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	s.mu.Lock()
	lua := s.scripts[script]
	if lua == nil {
		lua = rueidis.NewLuaScript(script)
		s.scripts[script] = lua
	}
	s.mu.Unlock()
	return lua.Exec(ctx, s.client, keys, args).AsIntSlice()
}

// newScripter connects a new client (a gateway instance of its own) to addr.
func newScripter(t testing.TB, addr string) *rueidisScripter {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{addr},
		DisableCache: true,
		Dialer:       net.Dialer{Timeout: time.Second},
	})
	if err != nil {
		t.Fatalf("connecting to Redis at %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return &rueidisScripter{client: c, scripts: make(map[string]*rueidis.Lua)}
}

// scripterFunc adapts a function to ratelimit.Scripter.
type scripterFunc func(ctx context.Context, script string, keys, args []string) ([]int64, error)

func (f scripterFunc) EvalInts(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	return f(ctx, script, keys, args)
}

// uniqueRoute names a test's route, and so its Redis keys, uniquely; the
// keys are deleted when the test ends.
func uniqueRoute(t testing.TB, s *rueidisScripter) string {
	t.Helper()
	route := strings.ReplaceAll(t.Name(), "/", "_") + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if s != nil {
		t.Cleanup(func() { deleteKeys(t, s.client, "ratelimit:"+route+":*") })
	}
	return route
}

func deleteKeys(t testing.TB, c rueidis.Client, pattern string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var cursor uint64
	for {
		entry, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Logf("cleaning up %s: %v", pattern, err)
			return
		}
		if len(entry.Elements) > 0 {
			if err := c.Do(ctx, c.B().Del().Key(entry.Elements...).Build()).Error(); err != nil {
				t.Logf("cleaning up %s: %v", pattern, err)
				return
			}
		}
		if cursor = entry.Cursor; cursor == 0 {
			return
		}
	}
}

// newFilter builds a filter and fails the test on error.
// With a real Redis and no DecisionTimeout in deps, decisions get
// functionalTimeout: a test about what Redis decides must not race the
// 20 ms default on a loaded machine (it would fall back, by chance).
func newFilter(t testing.TB, cfg ratelimit.Config, deps ratelimit.Deps) *ratelimit.Filter {
	t.Helper()
	if _, real := deps.Redis.(*rueidisScripter); real && deps.DecisionTimeout == 0 {
		deps.DecisionTimeout = functionalTimeout
	}
	f, err := ratelimit.New(&cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

// functionalTimeout is the decision deadline of tests on a real Redis that
// are not about deadlines.
const functionalTimeout = 5 * time.Second

// okHandler answers 204.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusNoContent)
})

// request is a GET from client carrying an exchange.Info.
func request(ctx context.Context, client, user string) (*http.Request, *exchange.Info) {
	r := httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(ctx)
	info := &exchange.Info{Route: "r", UserID: user}
	if client != "" {
		info.ClientIP = netip.MustParseAddr(client)
	}
	return r.WithContext(exchange.WithInfo(ctx, info)), info
}

// serve runs one request through h.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// counter sums the counters of reg named name whose labels include labels.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := make(map[string]string)
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// redisAddr is the shared test Redis.
func redisAddr(t testing.TB) string { return testenv.RedisAddr(t) }

var errBoom = errors.New("boom")
