package ratelimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/ratelimit"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// want is the expected answer to one request.
type want struct {
	status                              int
	limit, remaining, reset, retryAfter string // retryAfter "" = absent
}

func check(t *testing.T, step string, w *httptest.ResponseRecorder, exp want) {
	t.Helper()
	h := w.Result().Header
	got := want{w.Code, h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset"), h.Get("Retry-After")}
	if got != exp {
		t.Fatalf("%s: got %+v, want %+v", step, got, exp)
	}
	if exp.status != http.StatusTooManyRequests {
		return
	}
	var body struct {
		Error struct{ Code, Message, Route string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: body %q: %v", step, w.Body.String(), err)
	}
	if body.Error.Code != exchange.CodeRateLimited || body.Error.Message != "rate limit exceeded" || body.Error.Route != "r" {
		t.Fatalf("%s: error body %+v", step, body.Error)
	}
}

func TestLocalLimitIsExact(t *testing.T) {
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	// 2 per minute: one request every 30s, 4 at once.
	f := newFilter(t, ratelimit.Config{Rate: 2, Per: config.Duration(time.Minute), Burst: 4},
		ratelimit.Deps{Route: "r", Now: clock.Now, Metrics: reg})
	h := f.Wrap(okHandler)
	send := func() *httptest.ResponseRecorder {
		r, _ := request(context.Background(), "192.0.2.1", "")
		return serve(h, r)
	}

	// The burst, each request pushing the full-again time 30s further.
	for i, exp := range []want{
		{204, "4", "3", "30", ""},
		{204, "4", "2", "60", ""},
		{204, "4", "1", "90", ""},
		{204, "4", "0", "120", ""},
		{429, "4", "0", "120", "30"},
	} {
		check(t, "burst "+strconv.Itoa(i), send(), exp)
	}
	clock.Advance(10 * time.Second)
	check(t, "10s later", send(), want{429, "4", "0", "110", "20"})
	clock.Advance(20*time.Second - time.Nanosecond)
	check(t, "1ns before the refill", send(), want{429, "4", "0", "91", "1"})
	clock.Advance(time.Nanosecond)
	check(t, "one refilled", send(), want{204, "4", "0", "120", ""})
	check(t, "and no more", send(), want{429, "4", "0", "120", "30"})
	clock.Advance(75 * time.Second) // 2.5 requests' worth
	check(t, "2 of 2.5 refilled", send(), want{204, "4", "1", "75", ""})
	check(t, "2 of 2.5 refilled", send(), want{204, "4", "0", "105", ""})
	check(t, "2 of 2.5 refilled", send(), want{429, "4", "0", "105", "15"})
	clock.Advance(time.Hour)
	for i := range 4 {
		check(t, "full again "+strconv.Itoa(i), send(), want{204, "4", strconv.Itoa(3 - i), strconv.Itoa(30 * (i + 1)), ""})
	}
	check(t, "full again, then empty", send(), want{429, "4", "0", "120", "30"})

	allowed := counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"route": "r", "source": "local", "result": "allowed"})
	limited := counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"route": "r", "source": "local", "result": "limited"})
	if allowed != 11 || limited != 6 {
		t.Errorf("decisions allowed %v, limited %v; want 11, 6", allowed, limited)
	}
}

func TestDefaults(t *testing.T) {
	// Rate 5: burst 5, per 1s.
	clock := testenv.NewFakeClock()
	h := newFilter(t, ratelimit.Config{Rate: 5}, ratelimit.Deps{Now: clock.Now}).Wrap(okHandler)
	r, _ := request(context.Background(), "192.0.2.1", "")
	for i := range 5 {
		check(t, "burst "+strconv.Itoa(i), serve(h, r), want{204, "5", strconv.Itoa(4 - i), "1", ""})
	}
	check(t, "over", serve(h, r), want{429, "5", "0", "1", "1"})
	clock.Advance(200 * time.Millisecond)
	check(t, "one per 200ms", serve(h, r), want{204, "5", "0", "1", ""})
}

func TestDeniedRequestDoesNotReachNext(t *testing.T) {
	clock := testenv.NewFakeClock()
	var reached int
	h := newFilter(t, ratelimit.Config{Rate: 1, Per: config.Duration(time.Hour)}, ratelimit.Deps{Route: "r", Now: clock.Now}).
		Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	r, info := request(context.Background(), "192.0.2.1", "")
	serve(h, r)
	serve(h, r)
	if reached != 1 || info.ErrorCode != exchange.CodeRateLimited {
		t.Fatalf("next reached %d times, Info.ErrorCode %q; want 1, RATE_LIMITED", reached, info.ErrorCode)
	}
}

func TestKeysAreSeparate(t *testing.T) {
	long := strings.Repeat("k", 100)
	type req struct {
		remote, client, user string            // client: Info.ClientIP ("" none)
		header               map[string]string // request headers
		noInfo               bool
	}
	tests := []struct {
		name   string
		key    string
		first  req
		same   []req // spend from first's bucket
		others []req // each has a bucket of its own
	}{
		{
			name:   "client_ip",
			key:    "client_ip",
			first:  req{remote: "10.0.0.1:1", client: "192.0.2.1"},
			same:   []req{{remote: "10.0.0.2:1", client: "192.0.2.1"}, {client: "::ffff:192.0.2.1"}, {remote: "192.0.2.1:9", noInfo: true}, {remote: "192.0.2.1", client: ""}},
			others: []req{{remote: "10.0.0.1:1", client: "192.0.2.2"}, {client: "2001:db8::1"}, {remote: "10.0.0.1:1", client: ""}},
		},
		{
			name:   "default is client_ip",
			key:    "",
			first:  req{client: "192.0.2.1"},
			same:   []req{{client: "192.0.2.1", user: "u1"}},
			others: []req{{client: "192.0.2.2", user: "u1"}},
		},
		{
			name:   "unknown client addresses share one bucket",
			key:    "client_ip",
			first:  req{remote: "@", noInfo: true},
			same:   []req{{remote: "pipe", client: ""}},
			others: []req{{remote: "192.0.2.1:1"}},
		},
		{
			name:   "user",
			key:    "user",
			first:  req{client: "192.0.2.1", user: "alice"},
			same:   []req{{client: "192.0.2.9", user: "alice"}},
			others: []req{{client: "192.0.2.1", user: "bob"}, {client: "192.0.2.1"}, {client: "192.0.2.2"}, {client: "192.0.2.1", user: "192.0.2.1"}},
		},
		{
			name:   "anonymous users share their client's bucket",
			key:    "user",
			first:  req{client: "192.0.2.1"},
			same:   []req{{client: "192.0.2.1"}, {remote: "192.0.2.1:5", noInfo: true}},
			others: []req{{client: "192.0.2.2"}, {client: "192.0.2.1", user: "alice"}},
		},
		{
			name:   "header",
			key:    "header:x-api-key",
			first:  req{client: "192.0.2.1", header: map[string]string{"X-Api-Key": "k1"}},
			same:   []req{{client: "192.0.2.2", header: map[string]string{"x-api-key": "k1"}}},
			others: []req{{client: "192.0.2.1", header: map[string]string{"X-Api-Key": "k2"}}, {client: "192.0.2.1"}, {client: "192.0.2.1", header: map[string]string{"X-Api-Key": "header-missing"}}},
		},
		{
			name:   "missing and empty headers share one bucket",
			key:    "header:X-Api-Key",
			first:  req{client: "192.0.2.1"},
			same:   []req{{client: "192.0.2.2"}, {client: "192.0.2.3", header: map[string]string{"X-Api-Key": ""}}},
			others: []req{{client: "192.0.2.1", header: map[string]string{"X-Api-Key": "k"}}},
		},
		{
			name:   "long header values are told apart",
			key:    "header:X-Api-Key",
			first:  req{header: map[string]string{"X-Api-Key": long + "1"}},
			same:   []req{{header: map[string]string{"X-Api-Key": long + "1"}}},
			others: []req{{header: map[string]string{"X-Api-Key": long + "2"}}, {header: map[string]string{"X-Api-Key": long}}},
		},
		{
			name:  "route",
			key:   "route",
			first: req{client: "192.0.2.1", user: "alice", header: map[string]string{"X-Api-Key": "k"}},
			same:  []req{{client: "192.0.2.2"}, {remote: "@", noInfo: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFilter(t, ratelimit.Config{Key: tt.key, Rate: 1, Per: config.Duration(time.Hour)},
				ratelimit.Deps{Route: "r", Now: testenv.NewFakeClock().Now}).Wrap(okHandler)
			send := func(q req) int {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				if q.remote != "" {
					r.RemoteAddr = q.remote
				}
				for k, v := range q.header {
					r.Header.Set(k, v)
				}
				if !q.noInfo {
					info := &exchange.Info{UserID: q.user}
					if q.client != "" {
						info.ClientIP = netip.MustParseAddr(q.client)
					}
					r = r.WithContext(exchange.WithInfo(r.Context(), info))
				}
				return serve(h, r).Code
			}
			if code := send(tt.first); code != 204 {
				t.Fatalf("first request: %d", code)
			}
			for i, q := range tt.same {
				if code := send(q); code != 429 {
					t.Errorf("same bucket %d %+v: %d, want 429", i, q, code)
				}
			}
			for i, q := range tt.others {
				if code := send(q); code != 204 {
					t.Errorf("own bucket %d %+v: %d, want 204", i, q, code)
				}
			}
		})
	}
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newFilter(t, ratelimit.Config{Rate: 1, Per: config.Duration(time.Hour), MaxKeys: 3},
		ratelimit.Deps{Route: "r", Now: testenv.NewFakeClock().Now, Metrics: reg}).Wrap(okHandler)
	send := func(client string) int {
		r, _ := request(context.Background(), client, "")
		return serve(h, r).Code
	}
	evictions := func() float64 {
		return counter(t, reg, "dubbogw_ratelimit_evictions_total", map[string]string{"route": "r"})
	}
	for _, c := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		if send(c) != 204 {
			t.Fatalf("first request of %s limited", c)
		}
	}
	if send("192.0.2.1") != 429 { // .1 is now the most recently used
		t.Fatal(".1 not limited")
	}
	if send("192.0.2.4") != 204 || evictions() != 1 { // evicts .2
		t.Fatalf("adding .4: evictions %v, want 1", evictions())
	}
	if send("192.0.2.1") != 429 || send("192.0.2.3") != 429 || send("192.0.2.4") != 429 {
		t.Fatal("a kept bucket was reset")
	}
	// .2 was forgotten: a full bucket again, evicting .1 (least recent now).
	if send("192.0.2.2") != 204 || evictions() != 2 {
		t.Fatalf(".2 after eviction: evictions %v, want 2", evictions())
	}
	if send("192.0.2.1") != 204 {
		t.Fatal(".1 kept beyond max_keys")
	}
}

func TestLRUBoundWithShards(t *testing.T) {
	const maxKeys, clients = 2048, 10000
	reg := prometheus.NewRegistry()
	h := newFilter(t, ratelimit.Config{Rate: 1, Per: config.Duration(time.Hour), MaxKeys: maxKeys},
		ratelimit.Deps{Route: "r", Now: testenv.NewFakeClock().Now, Metrics: reg}).Wrap(okHandler)
	base := netip.MustParseAddr("10.0.0.0")
	a := base
	for range clients {
		a = a.Next()
		r, _ := request(context.Background(), a.String(), "")
		if code := serve(h, r).Code; code != 204 {
			t.Fatalf("first request of %s: %d", a, code)
		}
	}
	// Every shard overflowed, so exactly maxKeys are kept.
	if got := counter(t, reg, "dubbogw_ratelimit_evictions_total", map[string]string{"route": "r"}); got != clients-maxKeys {
		t.Fatalf("evictions %v, want %d", got, clients-maxKeys)
	}
	// The most recent client is kept.
	r, _ := request(context.Background(), a.String(), "")
	if code := serve(h, r).Code; code != 429 {
		t.Fatalf("most recent client forgotten: %d", code)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  ratelimit.Config
		deps ratelimit.Deps
		want string
	}{
		{"no rate", ratelimit.Config{}, ratelimit.Deps{}, "rate: required: requests per period, at least 1 (got 0)"},
		{"negative burst", ratelimit.Config{Rate: 1, Burst: -1}, ratelimit.Deps{}, "burst: must be at least 1, got -1"},
		{"negative max keys", ratelimit.Config{Rate: 1, MaxKeys: -1}, ratelimit.Deps{}, "max_keys: must be at least 1, got -1"},
		{"too fast", ratelimit.Config{Rate: 2000000}, ratelimit.Deps{}, "rate: 2000000 per 1s is more than one request per 1µs"},
		{"negative timeout", ratelimit.Config{Rate: 1, Timeout: config.Duration(-time.Second)}, ratelimit.Deps{}, "timeout: must be more than 0, got -1s"},
		{"non-positive period", ratelimit.Config{Rate: 1, Per: config.Duration(-time.Second)}, ratelimit.Deps{}, "per: must be more than 0, got -1s"},
		{"burst too long", ratelimit.Config{Rate: 1, Per: config.Duration(time.Hour), Burst: 1 << 30}, ratelimit.Deps{}, "burst: 1073741824"},
		{"unknown key", ratelimit.Config{Rate: 1, Key: "cookie:x"}, ratelimit.Deps{}, `key: unknown key "cookie:x" (known: client_ip, user, route, header:<Name>)`},
		{"empty header", ratelimit.Config{Rate: 1, Key: "header:"}, ratelimit.Deps{}, `key: unknown key "header:"`},
		{"bad header", ratelimit.Config{Rate: 1, Key: "header:X Key"}, ratelimit.Deps{}, `key: unknown key "header:X Key"`},
		{"distributed without Redis", ratelimit.Config{Rate: 1, Distributed: true}, ratelimit.Deps{}, "distributed: a distributed limit needs the top-level redis: section"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ratelimit.New(&tt.cfg, tt.deps)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestFiltersShareMetricsAcrossRebuilds(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 { // a reload builds the route's filter again
		for _, route := range []string{"a", "b"} {
			f := newFilter(t, ratelimit.Config{Rate: 1}, ratelimit.Deps{Route: route, Metrics: reg})
			r, _ := request(context.Background(), "192.0.2.1", "")
			serve(f.Wrap(okHandler), r)
		}
	}
	if got := counter(t, reg, "dubbogw_ratelimit_decisions_total", map[string]string{"route": "a", "result": "allowed"}); got != 2 {
		t.Fatalf("route a allowed %v, want 2", got)
	}
}

func TestFallbackWarningsAreSpaced(t *testing.T) {
	clock := testenv.NewFakeClock()
	var logged bytes.Buffer
	f := newFilter(t, ratelimit.Config{Rate: 1000, Distributed: true}, ratelimit.Deps{
		Route: "r",
		Now:   clock.Now,
		Log:   slog.New(slog.NewTextHandler(&logged, nil)),
		Redis: scripterFunc(func(context.Context, string, []string, []string) ([]int64, error) { return nil, errBoom }),
	})
	h := f.Wrap(okHandler)
	r, _ := request(context.Background(), "192.0.2.1", "")
	for range 5 {
		serve(h, r)
	}
	if n := strings.Count(logged.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d warnings for 5 fallbacks in no time, want 1:\n%s", n, logged.String())
	}
	clock.Advance(10 * time.Second)
	serve(h, r)
	out := logged.String()
	if n := strings.Count(out, "level=WARN"); n != 2 || !strings.Contains(out, "fallbacks=5") || !strings.Contains(out, "err=\"running the rate limit script: boom\"") {
		t.Fatalf("want a second warning counting the 5 fallbacks since the first:\n%s", out)
	}
}
