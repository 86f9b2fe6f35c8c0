package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/auth"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/redisclient"
)

const identityJSON = `{"userId":"u-42","tenant":"acme","level":3,"vip":true,"note":null,"nested":{"a":[1,{"b":2}]}}`

func TestValidToken(t *testing.T) {
	addr := testenv.RedisAddr(t)
	prefix := uniquePrefix(t)
	setToken(t, rawClient(t, addr), prefix+"tok1", identityJSON, time.Hour*5)
	g := newGateway(t, auth.Config{
		KeyPrefix: prefix,
		Headers:   map[string]string{"userId": "X-User-Id", "tenant": "X-Tenant", "level": "x-level", "vip": "X-Vip", "note": "X-Note", "nested": "X-Nested"},
	}, newRedisClient(t, config.Redis{Address: addr}))

	for i := range 2 { // a lookup in Redis, then one from the client-side cache
		r := g.do("GET", "/orders", "Authorization: Bearer tok1", "X-User-Id: forged", "X-Tenant: forged", "X-Other: kept")
		if r.status != http.StatusOK {
			t.Fatalf("#%d: status %d %s", i, r.status, r.body)
		}
		want := map[string][]string{"X-User-Id": {"u-42"}, "X-Tenant": {"acme"}, "X-Level": {"3"}, "X-Vip": {"true"}, "X-Other": {"kept"}}
		if !reflect.DeepEqual(r.seen.Headers, want) {
			t.Errorf("#%d: upstream headers %v, want %v", i, r.seen.Headers, want)
		}
		wantAtt := map[string]string{"userId": "u-42", "tenant": "acme", "level": "3", "vip": "true"}
		if r.seen.UserID != "u-42" || !reflect.DeepEqual(r.seen.Attachments, wantAtt) {
			t.Errorf("#%d: Info user %q attachments %v, want u-42 %v", i, r.seen.UserID, r.seen.Attachments, wantAtt)
		}
	}
	if got := g.outcome("ok"); got != 2 {
		t.Errorf("ok outcomes %v, want 2", got)
	}
	if got := g.metric("dubbogw_auth_lookup_duration_seconds", map[string]string{"route": "r1", "result": "found"}); got != 2 {
		t.Errorf("found lookups %v, want 2", got)
	}
}

func TestDefaults(t *testing.T) {
	addr := testenv.RedisAddr(t)
	raw := rawClient(t, addr)
	tok := fmt.Sprintf("defaults-%d", time.Now().UnixNano())
	setToken(t, raw, "token:"+tok, `{"userId":"u1","role":"admin"}`, 5*time.Hour)
	g := newGateway(t, auth.Config{}, newRedisClient(t, config.Redis{Address: addr}))
	r := g.do("GET", "/", "Authorization: Bearer "+tok, "X-Role: forged-but-not-an-identity-header")
	want := map[string][]string{"X-User-Id": {"u1"}, "X-Role": {"forged-but-not-an-identity-header"}}
	if r.status != 200 || !reflect.DeepEqual(r.seen.Headers, want) || !reflect.DeepEqual(r.seen.Attachments, map[string]string{"userId": "u1"}) {
		t.Errorf("defaults: %d %+v", r.status, r.seen)
	}
}

func TestTokenSources(t *testing.T) {
	g := newGateway(t, auth.Config{
		Store:  "memory",
		Tokens: map[string]string{"tok 1": `{"userId":"u1"}`, "tok2": `{"userId":"u2"}`},
		Token:  auth.TokenSource{Cookie: "sid", Query: "access_token"},
	}, nil)
	noBearer := false
	raw := newGateway(t, auth.Config{
		Store:  "memory",
		Tokens: map[string]string{"Bearer tok2": `{"userId":"literal"}`, "tok2": `{"userId":"u2"}`},
		Token:  auth.TokenSource{Header: "X-Token", Bearer: &noBearer},
	}, nil)
	for _, c := range []struct {
		name    string
		g       *gateway
		path    string
		headers []string
		user    string // "" = 401
	}{
		{"bearer header", g, "/", []string{"Authorization: Bearer tok2"}, "u2"},
		{"bearer, any case and spaces", g, "/", []string{"Authorization: bEARER   tok2 "}, "u2"},
		{"header without Bearer", g, "/", []string{"Authorization: tok2"}, "u2"},
		{"cookie", g, "/", []string{"Cookie: a=b; sid=tok2"}, "u2"},
		{"query", g, "/x?a=1&access_token=tok%201", nil, "u1"},
		{"query with escaped name", g, "/x?access%5Ftoken=tok2", nil, "u2"},
		{"header before cookie", g, "/", []string{"Authorization: Bearer tok2", "Cookie: sid=tok%201"}, "u2"},
		{"cookie before query", g, "/?access_token=tok2", []string{"Cookie: sid=nope"}, ""},
		{"empty bearer falls back to the query", g, "/?access_token=tok2", []string{"Authorization: Bearer "}, "u2"},
		{"no token", g, "/", nil, ""},
		{"other header", raw, "/", []string{"X-Token: tok2"}, "u2"},
		{"bearer: false keeps the prefix", raw, "/", []string{"X-Token: Bearer tok2"}, "literal"},
		{"the Authorization header is not read then", raw, "/", []string{"Authorization: Bearer tok2"}, ""},
	} {
		r := c.g.do("GET", c.path, c.headers...)
		if c.user == "" {
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want 401", c.name, r.status)
			}
			continue
		}
		if r.status != http.StatusOK || r.seen.UserID != c.user {
			t.Errorf("%s: status %d user %q, want %q", c.name, r.status, r.seen.UserID, c.user)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	g := newGateway(t, auth.Config{
		Store: "memory",
		Tokens: map[string]string{
			"ok": `{"userId":"u1"}`,
		},
	}, nil)
	// Values a token may hold in Redis that are no identity.
	prefix := uniquePrefix(t)
	addr := testenv.RedisAddr(t)
	raw := rawClient(t, addr)
	bad := map[string]string{
		"no-user":     `{"name":"x"}`,
		"empty-user":  `{"userId":""}`,
		"number-user": `{"userId":42}`,
		"not-json":    `userId=u1`,
		"array":       `[{"userId":"u1"}]`,
		"trailing":    `{"userId":"u1"} x`,
		"newline":     `{"userId":"u1\nX-Admin: 1"}`,
	}
	for tok, v := range bad {
		setToken(t, raw, prefix+tok, v, time.Hour)
	}
	rg := newGateway(t, auth.Config{KeyPrefix: prefix}, newRedisClient(t, config.Redis{Address: addr}))

	r := g.do("GET", "/", "X-User-Id: forged")
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != "Bearer" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("no token: %d %v", r.status, r.header)
	}
	if code, msg := errorBody(t, r); code != exchange.CodeUnauthorized || msg != "missing token" {
		t.Errorf("no token: %s %q", code, msg)
	}
	r = g.do("GET", "/", "Authorization: Bearer unknown")
	if code, msg := errorBody(t, r); r.status != 401 || code != exchange.CodeUnauthorized || msg != "invalid token" ||
		r.header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("unknown token: %d %s %q %v", r.status, code, msg, r.header)
	}
	r = g.do("GET", "/", "Authorization: Bearer "+strings.Repeat("x", 5000))
	if r.status != 401 {
		t.Errorf("a 5000-byte token: %d", r.status)
	}
	for tok := range bad {
		if r := rg.do("GET", "/", "Authorization: Bearer "+tok); r.status != 401 {
			t.Errorf("value of %s: status %d, want 401", tok, r.status)
		}
	}
	if g.outcome("missing") != 1 || g.outcome("invalid") != 2 || rg.outcome("invalid") != float64(len(bad)) {
		t.Errorf("outcomes missing %v invalid %v, %v", g.outcome("missing"), g.outcome("invalid"), rg.outcome("invalid"))
	}
}

func TestAnonymousRules(t *testing.T) {
	g := newGateway(t, auth.Config{
		Store:  "memory",
		Tokens: map[string]string{"ok": `{"userId":"u1"}`},
		Anonymous: []auth.AnonymousRule{
			{Path: "/public/*"},
			{Path: "/health", Methods: []string{"GET", "HEAD"}},
		},
	}, nil)
	for _, c := range []struct {
		method, path, token string
		status              int
		user                string
	}{
		{"GET", "/public/a/b", "", 200, ""},
		{"POST", "/public/", "", 200, ""},
		{"GET", "/public", "", 200, ""},
		{"GET", "/publicity", "", 401, ""},
		{"GET", "/health", "", 200, ""},
		{"HEAD", "/health", "", 200, ""},
		{"POST", "/health", "", 401, ""},
		{"GET", "/health/x", "", 401, ""},
		{"GET", "/public/../admin", "", 401, ""},
		{"GET", "/public//x", "", 401, ""},
		{"GET", "/public/x", "wrong", 200, ""}, // an invalid token is anonymous where allowed
		{"GET", "/public/x", "ok", 200, "u1"},  // a valid one still identifies
		{"GET", "/private", "ok", 200, "u1"},
	} {
		headers := []string{"X-User-Id: forged"}
		if c.token != "" {
			headers = append(headers, "Authorization: Bearer "+c.token)
		}
		req, _ := http.NewRequest(c.method, "http://x"+c.path, nil)
		for _, h := range headers {
			name, value, _ := strings.Cut(h, ": ")
			req.Header.Set(name, value)
		}
		req = req.WithContext(exchange.WithInfo(req.Context(), &exchange.Info{Route: "r1"}))
		rec := httptest.NewRecorder()
		var sawUser []string
		g.f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sawUser = r.Header.Values("X-User-Id")
		})).ServeHTTP(rec, req) // the raw path, as the gateway would pass it after cleaning (or not)
		if rec.Code != c.status {
			t.Errorf("%s %s token %q: status %d, want %d", c.method, c.path, c.token, rec.Code, c.status)
			continue
		}
		if c.status == 200 && !reflect.DeepEqual(sawUser, nonEmpty(c.user)) {
			t.Errorf("%s %s token %q: upstream X-User-Id %q, want %q", c.method, c.path, c.token, sawUser, c.user)
		}
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// Under 1,000 concurrent requests with one token whose TTL is low, the
// token is extended once: one renewal, one PEXPIRE in Redis.
func TestRenewalOnce(t *testing.T) {
	s := testenv.StartRedis(t, "")
	raw := rawClient(t, s.Addr())
	prefix := uniquePrefix(t)
	setToken(t, raw, prefix+"low", `{"userId":"u1"}`, time.Minute)
	setToken(t, raw, prefix+"high", `{"userId":"u2"}`, 3*time.Hour)
	// Generous timeouts: 1,000 goroutines on a slow (-race) machine are
	// about renewal here, not about deadlines.
	cfg := auth.Config{KeyPrefix: prefix, Timeout: config.Duration(5 * time.Second),
		Sliding: auth.Sliding{Threshold: config.Duration(time.Hour), Window: config.Duration(2 * time.Hour)}}
	g := newGateway(t, cfg, newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(5 * time.Second)}))
	h := withInfo(g.f.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	before := pexpireCalls(t, raw)

	burst := func(token string, n int) {
		start := make(chan struct{})
		var wg sync.WaitGroup
		codes := make(chan int, n)
		for range n {
			wg.Go(func() {
				req := httptest.NewRequest("GET", "/", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				<-start
				h.ServeHTTP(rec, req)
				codes <- rec.Code
			})
		}
		close(start)
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != 200 {
				t.Fatalf("%s: status %d", token, c)
			}
		}
	}

	burst("high", 1000)
	if g.metric("dubbogw_auth_renew_tracked_tokens", map[string]string{"route": "r1"}) != 0 || g.renewals("deduplicated") != 0 {
		t.Fatal("a token above the threshold was queued for renewal")
	}
	burst("low", 1000)
	testenv.WaitFor(t, 5*time.Second, "the renewal", func() bool { return g.renewals("renewed") == 1 })
	if ttl := pttl(t, raw, prefix+"low"); ttl <= 2*time.Hour-time.Minute {
		t.Errorf("renewed TTL %s, want about 2h", ttl)
	}
	burst("low", 1000) // now above the threshold, and within the interval anyway
	burst("high", 100)
	if got := pexpireCalls(t, raw) - before; got != 1 {
		t.Errorf("%d PEXPIREs, want 1", got)
	}
	if ttl := pttl(t, raw, prefix+"high"); ttl > 3*time.Hour || ttl < 3*time.Hour-time.Minute {
		t.Errorf("the high token's TTL changed: %s", ttl)
	}
	if g.renewals("dropped") != 0 || g.renewals("error") != 0 || g.renewals("not_needed") != 0 {
		t.Errorf("renewals dropped %v error %v not_needed %v", g.renewals("dropped"), g.renewals("error"), g.renewals("not_needed"))
	}
	t.Logf("deduplicated %v", g.renewals("deduplicated"))
}

// Two gateway instances renewing one token at once extend it once: the
// script only extends a TTL that is still low. (Whether the second
// instance still saw the low TTL depends on timing; store_test.go runs the
// script twice deterministically.)
func TestRenewalAcrossInstances(t *testing.T) {
	s := testenv.StartRedis(t, "")
	raw := rawClient(t, s.Addr())
	prefix := uniquePrefix(t)
	setToken(t, raw, prefix+"low", `{"userId":"u1"}`, time.Minute)
	cfg := auth.Config{KeyPrefix: prefix, Timeout: config.Duration(5 * time.Second),
		Sliding: auth.Sliding{Threshold: config.Duration(time.Hour), Window: config.Duration(2 * time.Hour)}}
	a := newGateway(t, cfg, newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(5 * time.Second)}))
	b := newGateway(t, cfg, newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(5 * time.Second)}))
	before := pexpireCalls(t, raw)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, g := range []*gateway{a, b} {
		h := g.f.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		for range 50 {
			wg.Go(func() {
				req := httptest.NewRequest("GET", "/", nil)
				req.Header.Set("Authorization", "Bearer low")
				<-start
				h.ServeHTTP(httptest.NewRecorder(), req)
			})
		}
	}
	close(start)
	wg.Wait()
	// A request queues its renewal before it returns: the instances that
	// saw the low TTL track the token.
	queued := 0.0
	for _, g := range []*gateway{a, b} {
		queued += g.metric("dubbogw_auth_renew_tracked_tokens", map[string]string{"route": "r1"})
	}
	done := func(result string) float64 { return a.renewals(result) + b.renewals(result) }
	testenv.WaitFor(t, 5*time.Second, "the queued renewals done", func() bool {
		return done("renewed")+done("not_needed")+done("error") == queued
	})
	t.Logf("%v instances queued a renewal", queued)
	if done("renewed") != 1 || done("not_needed") != queued-1 {
		t.Errorf("renewed %v, not needed %v; want 1 and %v", done("renewed"), done("not_needed"), queued-1)
	}
	if got := pexpireCalls(t, raw) - before; got != 1 {
		t.Errorf("%d PEXPIREs, want 1", got)
	}
}

// Revoking a token (DEL) is seen by every gateway instance within the
// client-side cache's invalidation delay.
func TestRevocation(t *testing.T) {
	addr := testenv.RedisAddr(t)
	raw := rawClient(t, addr)
	prefix := uniquePrefix(t)
	setToken(t, raw, prefix+"tok", `{"userId":"u1"}`, 5*time.Hour)
	cfg := auth.Config{KeyPrefix: prefix}
	instances := []*gateway{
		newGateway(t, cfg, newRedisClient(t, config.Redis{Address: addr})),
		newGateway(t, cfg, newRedisClient(t, config.Redis{Address: addr})),
	}
	for range 2 {
		for i, g := range instances {
			if r := g.do("GET", "/", "Authorization: Bearer tok"); r.status != 200 {
				t.Fatalf("instance %d before revocation: %d", i, r.status)
			}
		}
	}
	if err := raw.Do(context.Background(), raw.B().Del().Key(prefix+"tok").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i, g := range instances {
		testenv.WaitFor(t, time.Second, fmt.Sprintf("instance %d rejecting the revoked token", i), func() bool {
			return g.do("GET", "/", "Authorization: Bearer tok").status == http.StatusUnauthorized
		})
	}
	t.Logf("revocation seen by both instances after %s", time.Since(start))
}

// When the store cannot answer, each policy answers within the timeout.
func TestStoreDown(t *testing.T) {
	s := testenv.StartRedis(t, "")
	raw := rawClient(t, s.Addr())
	prefix := uniquePrefix(t)
	setToken(t, raw, prefix+"cached", `{"userId":"u1"}`, 5*time.Hour)
	const timeout = 50 * time.Millisecond
	// What is proven is an answer while Redis holds or refuses every
	// command; the margin is far below "never" and far above a slow
	// scheduler under -race.
	const margin = 2 * time.Second
	rc := newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(timeout), Breaker: config.RedisBreaker{MaxFailures: 1000}})
	public := []auth.AnonymousRule{{Path: "/public/*"}}
	reject := newGateway(t, auth.Config{KeyPrefix: prefix, Anonymous: public}, rc)
	anon := newGateway(t, auth.Config{KeyPrefix: prefix, Anonymous: public, OnStoreError: "anonymous"}, rc)
	// A filter timeout shorter than the client's: the filter's holds.
	slowClient := newRedisClient(t, config.Redis{Address: s.Addr(), Timeout: config.Duration(time.Second), Breaker: config.RedisBreaker{MaxFailures: 1000}})
	short := newGateway(t, auth.Config{KeyPrefix: prefix, Timeout: config.Duration(30 * time.Millisecond)}, slowClient)
	for _, g := range []*gateway{reject, anon, short} {
		// The first lookup has the short deadlines too: a slow scheduler
		// may make it miss; once answered it is cached.
		testenv.WaitFor(t, 10*time.Second, "the token answered before Redis fails", func() bool {
			return g.do("GET", "/x", "Authorization: Bearer cached").status == 200
		})
	}

	rejectErrors, anonErrors := reject.outcome("store_error"), anon.outcome("store_error")
	check := func(what string, g *gateway, path string, wantStatus int, within time.Duration) {
		t.Helper()
		r := g.do("GET", path, "Authorization: Bearer fresh-"+fmt.Sprint(time.Now().UnixNano()), "X-User-Id: forged")
		if r.status != wantStatus {
			t.Errorf("%s: status %d, want %d (%s)", what, r.status, wantStatus, r.body)
		}
		if r.elapsed > within+margin {
			t.Errorf("%s: answered after %s, timeout %s", what, r.elapsed, within)
		}
		if wantStatus == 503 {
			if code, _ := errorBody(t, r); code != exchange.CodeAuthUnavailable || r.header.Get("Retry-After") != "1" {
				t.Errorf("%s: code %s, Retry-After %q", what, code, r.header.Get("Retry-After"))
			}
		}
		if wantStatus == 200 && (r.seen.UserID != "" || len(r.seen.Headers["X-User-Id"]) != 0) {
			t.Errorf("%s: anonymous request with identity %+v", what, r.seen)
		}
	}
	for _, failure := range []struct {
		name  string
		apply func()
	}{{"frozen", s.Freeze}, {"killed", s.Stop}} {
		failure.apply()
		check(failure.name+", reject", reject, "/public/x", 503, timeout)
		check(failure.name+", anonymous policy, anonymous path", anon, "/public/x", 200, timeout)
		check(failure.name+", anonymous policy, other path", anon, "/private", 503, timeout)
		check(failure.name+", filter timeout 30ms", short, "/x", 503, 30*time.Millisecond)
	}
	if reject.outcome("store_error")-rejectErrors != 2 || anon.outcome("anonymous") != 2 || anon.outcome("store_error")-anonErrors != 2 {
		t.Errorf("outcomes after the failure: reject store_error %v, anon anonymous %v store_error %v",
			reject.outcome("store_error")-rejectErrors, anon.outcome("anonymous"), anon.outcome("store_error")-anonErrors)
	}
}

// With the breaker open the store refuses at once: "rejected".
func TestBreakerOpenRejects(t *testing.T) {
	s := testenv.StartRedis(t, "")
	rc := newRedisClient(t, config.Redis{Address: s.Addr(), Breaker: config.RedisBreaker{MaxFailures: 1, OpenFor: config.Duration(time.Minute)}})
	g := newGateway(t, auth.Config{KeyPrefix: uniquePrefix(t)}, rc)
	s.Stop()
	testenv.WaitFor(t, 5*time.Second, "the breaker opening", func() bool {
		g.do("GET", "/", "Authorization: Bearer t")
		return !rc.Healthy()
	})
	r := g.do("GET", "/", "Authorization: Bearer t2")
	if r.status != 503 || g.outcome("rejected") < 1 {
		t.Errorf("with the breaker open: %d, rejected %v", r.status, g.outcome("rejected"))
	}
}

func TestMemoryStore(t *testing.T) {
	g := newGateway(t, auth.Config{
		Store:   "memory",
		Tokens:  map[string]string{"demo-token": `{"userId":"demo","name":"Demo User"}`},
		Headers: map[string]string{"userId": "X-User-Id", "name": "X-User-Name"},
		// Tokens start with the window as TTL, under the threshold: renewed at once.
		Sliding: auth.Sliding{Threshold: config.Duration(time.Hour), Window: config.Duration(time.Hour)},
	}, nil)
	r := g.do("GET", "/", "Authorization: Bearer demo-token", "X-User-Name: forged")
	want := map[string][]string{"X-User-Id": {"demo"}, "X-User-Name": {"Demo User"}}
	if r.status != 200 || !reflect.DeepEqual(r.seen.Headers, want) || r.seen.UserID != "demo" {
		t.Fatalf("memory store: %d %+v", r.status, r.seen)
	}
	if r := g.do("GET", "/", "Authorization: Bearer other"); r.status != 401 {
		t.Errorf("unknown token: %d", r.status)
	}
	testenv.WaitFor(t, 5*time.Second, "the renewal", func() bool { return g.renewals("renewed") == 1 })
	g.do("GET", "/", "Authorization: Bearer demo-token")
	if g.renewals("deduplicated") != 1 {
		t.Errorf("a second renewal within the interval was not deduplicated: %v", g.renewals("deduplicated"))
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	addr := testenv.RedisAddr(t)
	rc := newRedisClient(t, config.Redis{Address: addr})
	mem := map[string]string{"t": `{"userId":"u"}`}
	for _, c := range []struct {
		name string
		cfg  auth.Config
		rc   *redisclient.Client
		want string
	}{
		{"redis store without a client", auth.Config{}, nil, `store: the redis store needs the top-level redis: section`},
		{"unknown store", auth.Config{Store: "ldap"}, rc, `store: unknown store "ldap" (known: redis, memory)`},
		{"tokens with the redis store", auth.Config{Tokens: mem}, rc, `tokens: tokens are for the memory store`},
		{"memory store without tokens", auth.Config{Store: "memory"}, nil, `tokens: the memory store needs tokens`},
		{"memory token without user id", auth.Config{Store: "memory", Tokens: map[string]string{"t": `{"name":"x"}`}}, nil, `tokens: the value of token t…: want a JSON object with a non-empty string "userId"`},
		{"unknown policy", auth.Config{OnStoreError: "allow"}, rc, `on_store_error: unknown policy "allow"`},
		{"bad header name", auth.Config{Headers: map[string]string{"userId": "X User"}}, rc, `headers.userId: want a JSON field name mapped to an HTTP header name, got "X User"`},
		{"reserved header", auth.Config{Headers: map[string]string{"userId": "Host"}}, rc, `headers.userId: "Host" may not carry identity`},
		{"the token header", auth.Config{Token: auth.TokenSource{Header: "X-Token"}, Headers: map[string]string{"userId": "x-token"}}, rc, `headers.userId: "x-token" may not carry identity`},
		{"two fields, one header", auth.Config{Headers: map[string]string{"a": "X-A", "b": "x-a"}}, rc, `headers.b: two fields are sent as "x-a"`},
		{"empty attachment", auth.Config{Attachments: map[string]string{"userId": ""}}, rc, `attachments.userId: want a JSON field name mapped to an attachment name`},
		{"window below threshold", auth.Config{Sliding: auth.Sliding{Threshold: config.Duration(time.Hour), Window: config.Duration(time.Minute)}}, rc, `sliding.window: the window (1m0s) must be at least the threshold (1h0m0s)`},
		{"anonymous path without /", auth.Config{Anonymous: []auth.AnonymousRule{{Path: "public/*"}}}, rc, `anonymous[0].path: "public/*": want an exact path or a prefix ending in /*`},
		{"anonymous path with a wildcard inside", auth.Config{Anonymous: []auth.AnonymousRule{{Path: "/a/*/b"}}}, rc, `anonymous[0].path: "/a/*/b"`},
		{"lower-case method", auth.Config{Anonymous: []auth.AnonymousRule{{Path: "/a", Methods: []string{"get"}}}}, rc, `anonymous[0].methods[0]: "get": methods are case-sensitive; write GET`},
		{"negative durations", auth.Config{Timeout: config.Duration(-time.Second), StaleIfError: ptr(config.Duration(-time.Second)), UnknownLookups: -1}, rc, "stale_if_error: must not be negative"},
		{"bad method", auth.Config{Anonymous: []auth.AnonymousRule{{Path: "/a", Methods: []string{"GE T"}}}}, rc, `anonymous[0].methods[0]: "GE T" is not an HTTP method`},
	} {
		f, err := auth.New(&c.cfg, auth.Deps{Redis: c.rc})
		if err == nil {
			f.Close()
			t.Errorf("%s: accepted", c.name)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestCloseStopsWorkers(t *testing.T) {
	count := func() int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		n := 0
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "dubbogw/filter/auth.") {
				n++
			}
		}
		return n
	}
	testenv.WaitFor(t, 3*time.Second, "no renewer of earlier tests", func() bool { return count() == 0 })
	f, err := auth.New(&auth.Config{Store: "memory", Tokens: map[string]string{"t": `{"userId":"u"}`}}, auth.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 3*time.Second, "the renewer's goroutines running", func() bool { return count() == 3 })
	f.Close()
	if n := count(); n != 0 {
		t.Errorf("%d renewer goroutines after Close", n)
	}
}
