package auth_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/auth"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestStaleIfError: while Redis cannot answer (frozen, then killed), a
// token this instance found valid is served the identity it had; a token
// it never saw gets 503 with Retry-After; a token Redis said was gone is
// not brought back; stale_if_error: 0s fails closed.
func TestStaleIfError(t *testing.T) {
	s := testenv.StartRedis(t, "")
	raw := rawClient(t, s.Addr())
	prefix := uniquePrefix(t)
	for _, tok := range []string{"known", "revoked", "never-looked-up"} {
		setToken(t, raw, prefix+tok, fmt.Sprintf(`{"userId":"u-%s"}`, tok), time.Hour)
	}
	// A short deadline (the point is an answer while Redis is away), a
	// breaker that never opens, and no client-side cache: while a frozen
	// Redis's connection is not yet known dead, its cache would still
	// answer (rightly), and what is tested here is the filter's part.
	off := false
	rc := newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(200 * time.Millisecond),
		Breaker: config.RedisBreaker{MaxFailures: 1000}, ClientCache: config.ClientCache{Enabled: &off}})
	zero := config.Duration(0)
	open := newGateway(t, auth.Config{KeyPrefix: prefix}, rc)
	closed := newGateway(t, auth.Config{KeyPrefix: prefix, StaleIfError: &zero}, rc)
	for _, g := range []*gateway{open, closed} {
		for _, tok := range []string{"known", "revoked"} {
			if r := g.do("GET", "/", "Authorization: Bearer "+tok); r.status != 200 {
				t.Fatalf("%s with Redis up: %d %s", tok, r.status, r.body)
			}
		}
	}
	if err := raw.Do(t.Context(), raw.B().Del().Key(prefix+"revoked").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*gateway{open, closed} {
		testenv.WaitFor(t, 5*time.Second, "the revocation seen", func() bool {
			return g.do("GET", "/", "Authorization: Bearer revoked").status == http.StatusUnauthorized
		})
	}

	for _, failure := range []struct {
		name  string
		apply func()
	}{{"frozen", s.Freeze}, {"killed", s.Stop}} {
		failure.apply()
		r := open.do("GET", "/", "Authorization: Bearer known", "X-User-Id: forged")
		if r.status != 200 || r.seen.UserID != "u-known" || len(r.seen.Headers["X-User-Id"]) != 1 || r.seen.Headers["X-User-Id"][0] != "u-known" {
			t.Errorf("%s: known token: %d %+v, want 200 as u-known", failure.name, r.status, r.seen)
		}
		for _, c := range []struct {
			g   *gateway
			tok string
		}{{open, "never-looked-up"}, {closed, "known"}} {
			r := c.g.do("GET", "/", "Authorization: Bearer "+c.tok)
			if code, _ := errorBody(t, r); r.status != 503 || code != exchange.CodeAuthUnavailable || r.header.Get("Retry-After") == "" {
				t.Errorf("%s: %s: %d %s (Retry-After %q), want 503 AUTH_UNAVAILABLE", failure.name, c.tok, r.status, code, r.header.Get("Retry-After"))
			}
		}
		// Gone is gone: 401 (the client-side cache remembers Redis said
		// so) or 503, never the identity it had.
		if r := open.do("GET", "/", "Authorization: Bearer revoked"); r.status != 401 && r.status != 503 {
			t.Errorf("%s: the revoked token: %d %+v", failure.name, r.status, r.seen)
		}
	}
	if got := open.outcome("stale"); got != 2 {
		t.Errorf("stale outcomes %v, want 2", got)
	}
}

// TestUnknownTokenBudget: lookups of tokens the instance does not know
// take at most unknown_lookups slots (a request waits for one at most the
// lookup timeout, then gets 503); a flood of them against a stalled Redis
// is mostly refused at once, and a known token is not held behind them.
func TestUnknownTokenBudget(t *testing.T) {
	s := testenv.StartRedis(t, "")
	raw := rawClient(t, s.Addr())
	prefix := uniquePrefix(t)
	setToken(t, raw, prefix+"known", `{"userId":"u1"}`, time.Hour)
	rc := newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(5 * time.Second),
		Breaker: config.RedisBreaker{MaxFailures: 1000}})
	g := newGateway(t, auth.Config{KeyPrefix: prefix, UnknownLookups: 2, Timeout: config.Duration(time.Second)}, rc)
	if r := g.do("GET", "/", "Authorization: Bearer known"); r.status != 200 {
		t.Fatalf("known token: %d", r.status)
	}
	s.Freeze() // every lookup that reaches Redis now waits out its deadline
	defer s.Thaw()
	const flood = 50
	var wg sync.WaitGroup
	statuses := make(chan int, flood)
	for i := range flood {
		wg.Go(func() { statuses <- g.do("GET", "/", fmt.Sprintf("Authorization: Bearer random-%d", i)).status })
	}
	testenv.WaitFor(t, 5*time.Second, "unknown lookups in flight", func() bool {
		return g.metric("dubbogw_auth_unknown_lookups", map[string]string{"route": "r1"}) > 0
	})
	if r := g.do("GET", "/", "Authorization: Bearer known"); r.status != 200 {
		t.Errorf("the known token during the flood: %d", r.status)
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 503 {
			t.Errorf("a random token with Redis stalled: %d, want 503", st)
		}
	}
	// Two slots, each held for the 1 s lookup timeout, for requests that
	// wait at most 1 s for one: a handful reach Redis, the rest are refused.
	if rejected, timedOut := g.outcome("rejected"), g.outcome("store_error"); rejected < flood/2 || rejected+timedOut != flood {
		t.Errorf("%v refused at once and %v timed out in Redis, of %d; want most refused", rejected, timedOut, flood)
	}
}
