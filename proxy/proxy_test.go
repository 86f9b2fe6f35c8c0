package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

func TestNewRejectsBadConfig(t *testing.T) {
	ok := targets("http://127.0.0.1:1")
	tests := []struct {
		name string
		cfg  *Config
		want string
	}{
		// New applies Config.Validate, the rules `dubbogw validate` reports.
		{"nil", nil, "upstream config is missing"},
		{"no targets", &Config{}, "targets: required: at least one target"},
		{"ftp", &Config{Targets: targets("http://a:1", "ftp://b:2")}, `targets[1].url: "ftp://b:2": scheme must be http or https`},
		{"no host", &Config{Targets: targets("http:///x")}, `targets[0].url: "http:///x" has no host`},
		{"query", &Config{Targets: targets("http://a:1/?x=1")}, `targets[0].url: "http://a:1/?x=REDACTED": a target has no query`},
		{"bad port", &Config{Targets: targets("http://a:99999")}, `targets[0].url: "http://a:99999": port "99999" is not a number 1..65535`},
		{"duplicate", &Config{Targets: targets("http://a:1", "http://a:1")}, `targets[1].url: repeats targets[0]`},
		{"weight", &Config{Targets: []Target{{URL: "http://a:1", Weight: -1}}}, "targets[0].weight: must be 1..10000, got -1"},
		{"policy", &Config{Targets: ok, Policy: "random"}, `policy: "random" is not a policy`},
		{"retries", &Config{Targets: ok, Retry: Retry{Retries: intPtr(-1)}}, "retry.retries: must be 0..10, got -1"},
		{"retry on", &Config{Targets: ok, Retry: Retry{On: []string{"503", "timeout"}}}, `retry.on[1]: "timeout": want connect_failure or a status code 500..599`},
		{"retry method", &Config{Targets: ok, Retry: Retry{Methods: []string{"GET", "G T"}}}, `retry.methods[1]: "G T" is not an HTTP method`},
		{"max failures", &Config{Targets: ok, PassiveHealth: PassiveHealth{MaxFailures: intPtr(-2)}}, "passive_health.max_failures: must be 0 (no ejection) or more, got -2"},
		{"max ejection", &Config{Targets: ok, PassiveHealth: PassiveHealth{
			Ejection: config.Duration(10 * time.Second), MaxEjection: config.Duration(5 * time.Second)}},
			"passive_health.max_ejection: 5s is shorter than ejection (10s)"},
		{"pool", &Config{Targets: ok, Pool: Pool{MaxPerTarget: -1}}, "pool.max_per_target: must be 0 (no cap) or more"},
		{"timeout", &Config{Targets: ok, Timeout: config.Duration(-time.Second)}, "timeout: must be more than 0, got -1s"},
		{"transport", &Config{Targets: ok, Transport: "fast"}, `transport: "fast" is not a transport`},
		{"protocol", &Config{Targets: ok, Protocol: "spdy"}, `protocol: "spdy" is not a protocol: want http1 or http2`},
		{"direct over http2", &Config{Targets: ok, Protocol: ProtocolHTTP2, Transport: TransportDirect}, `transport: direct speaks HTTP/1.1 only`},
		{"tls on http targets", &Config{Targets: ok, TLS: config.ClientTLS{ServerName: "x"}}, "tls: no target is https://"},
		{"tls enabled", &Config{Targets: targets("https://a:1"), TLS: config.ClientTLS{Enabled: true}}, "tls.enabled: not an upstream setting"},
		{"tls missing CA", &Config{Targets: targets("https://a:1"), TLS: config.ClientTLS{CAFile: "/nonexistent/ca.pem"}}, "tls: reading ca_file"},
		{"tls key without cert", &Config{Targets: targets("https://a:1"), TLS: config.ClientTLS{KeyFile: "/etc/k.pem"}}, "tls: cert_file and key_file go together"},
		{"every problem", &Config{Targets: ok, Policy: "random", Transport: "fast"}, "policy: \"random\" is not a policy: want round_robin, weighted_random or least_request\ntransport:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := New("svc", tt.cfg, nil, nil)
			if err == nil {
				u.Close()
				t.Fatalf("New succeeded, want error %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	u := newTestUpstream(t, TransportStandard, "svc", &Config{Targets: targets("http://127.0.0.1:1/base/")})
	if _, ok := u.policy.(*roundRobin); !ok {
		t.Errorf("policy = %T, want round robin", u.policy)
	}
	if u.timeout != 30*time.Second || u.retries != 1 || !u.retryConnect || u.maxFailures != 5 ||
		u.ejection != 10*time.Second || u.maxEjection != 2*time.Minute {
		t.Errorf("defaults: timeout %s retries %d connect %v max failures %d ejection %s max %s",
			u.timeout, u.retries, u.retryConnect, u.maxFailures, u.ejection, u.maxEjection)
	}
	for _, code := range []int{502, 503, 504} {
		if !u.retryOnStatus(code) {
			t.Errorf("status %d not retried by default", code)
		}
	}
	if u.retryOnStatus(500) {
		t.Error("status 500 retried by default")
	}
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE"} {
		if !u.retryMethod(m) {
			t.Errorf("method %s not retried by default", m)
		}
	}
	if u.retryMethod("POST") {
		t.Error("POST retried by default")
	}
	tr := u.transport
	if tr.MaxIdleConnsPerHost != 64 || tr.MaxConnsPerHost != 0 || tr.IdleConnTimeout != 90*time.Second || tr.Proxy != nil {
		t.Errorf("transport: idle/host %d conns/host %d idle timeout %s proxy set %v",
			tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost, tr.IdleConnTimeout, tr.Proxy != nil)
	}
	if tr.Protocols == nil || !tr.Protocols.HTTP1() || tr.Protocols.HTTP2() {
		t.Errorf("transport protocols = %v, want HTTP/1 only", tr.Protocols)
	}
	if w := u.targets[0].weight; w != 100 {
		t.Errorf("weight = %d, want 100", w)
	}
	if u.Name() != "svc" {
		t.Errorf("Name() = %q", u.Name())
	}
}

// echoBackend answers with the request it received, as JSON.
type echoed struct {
	Method string      `json:"method"`
	Host   string      `json:"host"`
	Path   string      `json:"path"`
	Raw    string      `json:"raw"`
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
}

func newEchoBackend(t *testing.T, name string) *backend {
	return newBackend(t, name, 200, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Target", name)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(echoed{r.Method, r.Host, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header})
	})
}

func decodeEcho(t *testing.T, r result) echoed {
	t.Helper()
	var e echoed
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("echo body %q: %v", r.body, err)
	}
	return e
}

func TestForwardedHeadersHostAndPath(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newEchoBackend(t, "a")
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL + "/base/")})
		srv, infos := serveProxy(t, u.Handler(0))
		c := testClient(t)

		req, _ := http.NewRequest("GET", srv.URL+"/users/a%2Fb?x=1&y=2", nil)
		req.Header.Set("X-Forwarded-For", "6.6.6.6")
		req.Header.Set("X-Forwarded-Host", "evil.example")
		req.Header.Set("Forwarded", "for=6.6.6.6")
		res := do(t, c, req)
		if res.status != 200 {
			t.Fatalf("status %d: %s", res.status, res.body)
		}
		e := decodeEcho(t, res)
		backendHost := strings.TrimPrefix(b.URL, "http://")
		proxyHost := strings.TrimPrefix(srv.URL, "http://")
		if e.Path != "/base/users/a/b" || e.Raw != "/base/users/a%2Fb" || e.Query != "x=1&y=2" {
			t.Errorf("path %q raw %q query %q, want /base/users/a/b, /base/users/a%%2Fb, x=1&y=2", e.Path, e.Raw, e.Query)
		}
		if e.Host != backendHost {
			t.Errorf("Host = %q, want the target's %q", e.Host, backendHost)
		}
		if got := e.Header.Get("X-Forwarded-For"); got != "127.0.0.1" {
			t.Errorf("X-Forwarded-For = %q, want 127.0.0.1 (the client's spoofed value dropped)", got)
		}
		if got := e.Header.Get("X-Forwarded-Host"); got != proxyHost {
			t.Errorf("X-Forwarded-Host = %q, want %q", got, proxyHost)
		}
		if got := e.Header.Get("X-Forwarded-Proto"); got != "http" {
			t.Errorf("X-Forwarded-Proto = %q, want http", got)
		}
		if got := e.Header.Get("Forwarded"); got != "" {
			t.Errorf("Forwarded = %q, want it removed", got)
		}
		info := nextInfo(t, infos)
		if want := "svc " + b.URL + "/base/"; info.Upstream != want {
			t.Errorf("info.Upstream = %q, want %q", info.Upstream, want)
		}
	})
}

func TestPreserveHost(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newEchoBackend(t, "a")
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL), PreserveHost: true})
		srv, _ := serveProxy(t, u.Handler(0))
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Host = "api.example.com"
		e := decodeEcho(t, do(t, testClient(t), req))
		if e.Host != "api.example.com" {
			t.Errorf("Host = %q, want the client's api.example.com", e.Host)
		}
		if e.Path != "/" {
			t.Errorf("path = %q, want /", e.Path)
		}
	})
}

func TestHopByHopHeadersRemoved(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "a", 200, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Connection", "X-Resp-Hop")
			h.Set("X-Resp-Hop", "secret")
			h.Set("Keep-Alive", "timeout=9")
			h.Set("X-End-To-End", "kept")
			_ = json.NewEncoder(w).Encode(r.Header)
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(0))
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Header.Set("Connection", "X-Req-Hop")
		req.Header.Set("X-Req-Hop", "secret")
		req.Header.Set("Keep-Alive", "timeout=5")
		req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
		req.Header.Set("X-End-To-End", "kept")
		res := do(t, testClient(t), req)
		var got http.Header
		if err := json.Unmarshal([]byte(res.body), &got); err != nil {
			t.Fatalf("body %q: %v", res.body, err)
		}
		for _, h := range []string{"Keep-Alive", "Proxy-Authorization", "Connection"} {
			if v := got.Get(h); v != "" {
				t.Errorf("target received hop-by-hop %s: %q", h, v)
			}
		}
		// What the client's Connection names is removed by the gateway as
		// the request enters, before any filter (gateway/edge.go); the proxy
		// runs after the filters and must not delete what they set.
		if got.Get("X-Req-Hop") != "secret" {
			t.Error("the proxy deleted a header named by Connection, which a filter may have set")
		}
		if got.Get("X-End-To-End") != "kept" {
			t.Error("target did not receive X-End-To-End")
		}
		for _, h := range []string{"X-Resp-Hop", "Keep-Alive"} {
			if v := res.header.Get(h); v != "" {
				t.Errorf("client received hop-by-hop %s: %q", h, v)
			}
		}
		if res.header.Get("X-End-To-End") != "kept" {
			t.Error("client did not receive X-End-To-End")
		}
	})
}

func TestRetryConnectFailureOnOtherTarget(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		down := closedURL(t)
		b := newBackend(t, "up", 200, nil)
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(down, b.URL)})
		srv, infos := serveProxy(t, u.Handler(0))
		c := testClient(t)
		for range 3 {
			res := get(t, c, srv.URL+"/x")
			if res.status != 200 || res.body != "from up" {
				t.Fatalf("got %d %q, want 200 from up", res.status, res.body)
			}
			if info := nextInfo(t, infos); info.Upstream != "svc "+b.URL {
				t.Errorf("info.Upstream = %q, want the final attempt's target", info.Upstream)
			}
		}
		failed := u.mustMetric(t, "dubbogw_upstream_requests_total", map[string]string{"target": down, "code": "error"})
		retried := u.mustMetric(t, "dubbogw_upstream_retries_total", map[string]string{"upstream": "svc"})
		if failed == 0 || retried != failed {
			t.Errorf("connect failures %v, retries %v: want every failure retried", failed, retried)
		}
		if got := u.mustMetric(t, "dubbogw_upstream_requests_total", map[string]string{"target": b.URL, "code": "200"}); got != 3 {
			t.Errorf("200s from the live target = %v, want 3", got)
		}
	})
}

func TestRetryOn503ThenSuccess(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		for _, policy := range []string{"round_robin", "weighted_random", "least_request"} {
			t.Run(policy, func(t *testing.T) {
				a := newBackend(t, "a", 503, nil)
				b := newBackend(t, "b", 200, nil)
				u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(a.URL, b.URL), Policy: policy})
				// Random policies always favour the first candidate: only excluding a sends the retry to b.
				switch p := u.policy.(type) {
				case *weightedRandom:
					p.intN = func(int) int { return 0 }
				case *leastRequest:
					p.intN = func(n int) int { return n - 1 } // ties keep the first target
				}
				srv, infos := serveProxy(t, u.Handler(0))
				res := get(t, testClient(t), srv.URL+"/")
				if res.status != 200 || res.body != "from b" {
					t.Fatalf("got %d %q, want 200 from b", res.status, res.body)
				}
				if a.hits.Load() != 1 || b.hits.Load() != 1 {
					t.Errorf("hits a=%d b=%d, want 1 each", a.hits.Load(), b.hits.Load())
				}
				if info := nextInfo(t, infos); info.Upstream != "svc "+b.URL {
					t.Errorf("info.Upstream = %q, want b", info.Upstream)
				}
				if got := u.mustMetric(t, "dubbogw_upstream_retries_total", nil); got != 1 {
					t.Errorf("retries = %v, want 1", got)
				}
				if got := u.mustMetric(t, "dubbogw_upstream_in_flight", map[string]string{"target": a.URL}); got != 0 {
					t.Errorf("in flight on a = %v after its retried response was drained, want 0", got)
				}
			})
		}
	})
}

func TestRetriesExhaustedReturnLastResponse(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		a := newBackend(t, "a", 503, nil)
		b := newBackend(t, "b", 503, nil)
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(a.URL, b.URL)})
		srv, _ := serveProxy(t, u.Handler(0))
		res := get(t, testClient(t), srv.URL+"/")
		if res.status != 503 || res.body != "from b" || res.header.Get("X-Target") != "b" {
			t.Fatalf("got %d %q (X-Target %q), want b's 503 unchanged", res.status, res.body, res.header.Get("X-Target"))
		}
		if a.hits.Load()+b.hits.Load() != 2 {
			t.Errorf("attempts = %d, want 2 (retries: 1)", a.hits.Load()+b.hits.Load())
		}
	})
}

func TestPostIsNotRetried(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		a := newBackend(t, "a", 503, nil)
		b := newBackend(t, "b", 200, nil)
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(a.URL, b.URL)})
		srv, _ := serveProxy(t, u.Handler(0))
		req, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader("payload"))
		res := do(t, testClient(t), req)
		if res.status != 503 || res.body != "from a" {
			t.Fatalf("got %d %q, want a's 503", res.status, res.body)
		}
		if b.hits.Load() != 0 {
			t.Errorf("POST reached b %d times, want 0", b.hits.Load())
		}
		if got := u.mustMetric(t, "dubbogw_upstream_retries_total", nil); got != 0 {
			t.Errorf("retries = %v, want 0", got)
		}
	})
}

// hashingBackend records the SHA-256 of each request body it receives.
func hashingBackend(t *testing.T, name string, status int, sums chan<- [32]byte) *backend {
	return newBackend(t, name, status, func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		if _, err := io.Copy(h, r.Body); err != nil {
			t.Errorf("%s reading body: %v", name, err)
		}
		sums <- [32]byte(h.Sum(nil))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "from "+name)
	})
}

func TestRequestBodies(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		small := bytes.Repeat([]byte("0123456789abcdef"), 64)     // 1 KiB: buffered and replayed
		large := bytes.Repeat([]byte("0123456789abcdef"), 100<<6) // 100 KiB: sent once
		tests := []struct {
			name      string
			body      []byte
			chunked   bool
			wantRetry bool
		}{
			{"small body is replayed", small, false, true},
			{"large body is sent once", large, false, false},
			{"chunked body is sent once", small, true, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				sums := make(chan [32]byte, 2)
				a := hashingBackend(t, "a", 503, sums)
				b := hashingBackend(t, "b", 200, sums)
				u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(a.URL, b.URL)})
				srv, _ := serveProxy(t, u.Handler(0))
				var body io.Reader = bytes.NewReader(tt.body)
				if tt.chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
				req, _ := http.NewRequest("PUT", srv.URL+"/", body)
				res := do(t, testClient(t), req)
				want := sha256.Sum256(tt.body)
				if got := <-sums; got != want {
					t.Error("first target received a corrupted body")
				}
				if !tt.wantRetry {
					if res.status != 503 || b.hits.Load() != 0 {
						t.Fatalf("got %d, b hits %d: want a's 503 and no retry", res.status, b.hits.Load())
					}
					return
				}
				if res.status != 200 || res.body != "from b" {
					t.Fatalf("got %d %q, want the retry's 200 from b", res.status, res.body)
				}
				if got := <-sums; got != want {
					t.Error("retried target received a corrupted body")
				}
			})
		}
	})
}

func TestPassiveHealthEjectsAndProbesBack(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		a := newBackend(t, "a", 500, nil)
		b := newBackend(t, "b", 200, nil)
		clock := testenv.NewFakeClock()
		u := newTestUpstream(t, transport, "svc", &Config{
			Targets: targets(a.URL, b.URL),
			Retry:   Retry{Retries: intPtr(0)},
			PassiveHealth: PassiveHealth{
				MaxFailures: intPtr(3),
				Ejection:    config.Duration(10 * time.Second),
				MaxEjection: config.Duration(25 * time.Second),
			},
		})
		u.now = clock.Now
		srv, _ := serveProxy(t, u.Handler(0))
		c := testClient(t)
		aLabels := map[string]string{"upstream": "svc", "target": a.URL}

		// requestsUntilA sends requests until one reaches a (at most n).
		requestsUntilA := func(n int) result {
			t.Helper()
			before := a.hits.Load()
			for range n {
				res := get(t, c, srv.URL+"/")
				if a.hits.Load() > before {
					return res
				}
			}
			t.Fatalf("no request reached a in %d tries", n)
			return result{}
		}
		checkEjected := func(wantFor time.Duration, wantEjections float64) {
			t.Helper()
			st := u.Targets()[0]
			if st.State != "ejected" || !st.EjectedUntil.Equal(clock.Now().Add(wantFor)) {
				t.Fatalf("a: state %q until %v, want ejected until now+%s", st.State, st.EjectedUntil, wantFor)
			}
			if got := u.mustMetric(t, "dubbogw_upstream_ejections_total", aLabels); got != wantEjections {
				t.Errorf("ejections = %v, want %v", got, wantEjections)
			}
			if got := u.mustMetric(t, "dubbogw_upstream_target_healthy", aLabels); got != 0 {
				t.Errorf("healthy gauge = %v, want 0", got)
			}
		}

		for range 3 {
			requestsUntilA(2)
		}
		checkEjected(10*time.Second, 1)
		if st := u.Targets()[0]; st.ConsecutiveFailures != 3 {
			t.Errorf("consecutive failures = %d, want 3", st.ConsecutiveFailures)
		}

		// While ejected, everything goes to b.
		hits := a.hits.Load()
		for range 4 {
			if res := get(t, c, srv.URL+"/"); res.body != "from b" {
				t.Fatalf("got %q while a is ejected, want b", res.body)
			}
		}
		if a.hits.Load() != hits {
			t.Fatal("an ejected target took traffic before its ejection time")
		}

		// A failed probe ejects again for twice as long, capped at max_ejection.
		clock.Advance(10 * time.Second)
		requestsUntilA(2)
		checkEjected(20*time.Second, 2)
		clock.Advance(20 * time.Second)
		requestsUntilA(2)
		checkEjected(25*time.Second, 3)

		// A successful probe restores the target and resets the ejection time.
		a.status.Store(200)
		clock.Advance(25 * time.Second)
		if res := requestsUntilA(2); res.status != 200 {
			t.Fatalf("probe got %d, want 200", res.status)
		}
		if st := u.Targets()[0]; st.State != "healthy" || !st.EjectedUntil.IsZero() || st.ConsecutiveFailures != 0 {
			t.Fatalf("after a good probe: %+v, want healthy", st)
		}
		if got := u.mustMetric(t, "dubbogw_upstream_target_healthy", aLabels); got != 1 {
			t.Errorf("healthy gauge = %v, want 1", got)
		}
		a.status.Store(500)
		for range 3 {
			requestsUntilA(2)
		}
		checkEjected(10*time.Second, 4)
	})
}

func TestOneProbeAtATime(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		entered := make(chan struct{}, 10)
		release := make(chan struct{})
		var blocking atomic.Bool
		a := newBackend(t, "a", 500, func(w http.ResponseWriter, r *http.Request) {
			if !blocking.Load() {
				w.WriteHeader(500)
				return
			}
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
			_, _ = io.WriteString(w, "from a")
		})
		b := newBackend(t, "b", 200, nil)
		clock := testenv.NewFakeClock()
		u := newTestUpstream(t, transport, "svc", &Config{
			Targets:       targets(a.URL, b.URL),
			Retry:         Retry{Retries: intPtr(0)},
			PassiveHealth: PassiveHealth{MaxFailures: intPtr(1)},
		})
		u.now = clock.Now
		srv, _ := serveProxy(t, u.Handler(0))
		c := testClient(t)

		get(t, c, srv.URL+"/") // round robin: a, which fails and is ejected
		if st := u.Targets()[0].State; st != "ejected" {
			t.Fatalf("a is %q, want ejected", st)
		}
		clock.Advance(10 * time.Second)
		blocking.Store(true)

		probe := make(chan result, 1)
		for i := 0; ; i++ {
			if i == 3 {
				t.Fatal("no probe reached a in 3 requests")
			}
			done := make(chan result, 1)
			go func() {
				res, err := c.Get(srv.URL + "/")
				if err != nil {
					t.Error(err)
					done <- result{}
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				done <- result{status: res.StatusCode, body: string(body)}
			}()
			select {
			case <-done: // went to b
				continue
			case <-entered:
				go func() { probe <- <-done }()
			case <-time.After(5 * time.Second):
				t.Fatal("request neither finished nor reached a within 5s")
			}
			break
		}
		if st := u.Targets()[0].State; st != "probing" {
			t.Fatalf("a is %q with its probe in flight, want probing", st)
		}
		for range 6 {
			if res := get(t, c, srv.URL+"/"); res.body != "from b" {
				t.Fatalf("got %q while a's probe is in flight, want b", res.body)
			}
		}
		close(release)
		select {
		case res := <-probe:
			if res.status != 200 || res.body != "from a" {
				t.Fatalf("probe answered %d %q", res.status, res.body)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("probe did not finish within 5s")
		}
		if st := u.Targets()[0].State; st != "healthy" {
			t.Fatalf("a is %q after a good probe, want healthy", st)
		}
	})
}

func TestPanicModeWhenAllTargetsEjected(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		a := newBackend(t, "a", 500, nil)
		b := newBackend(t, "b", 500, nil)
		u := newTestUpstream(t, transport, "svc", &Config{
			Targets:       targets(a.URL, b.URL),
			Retry:         Retry{Retries: intPtr(0)},
			PassiveHealth: PassiveHealth{MaxFailures: intPtr(1)},
		})
		srv, _ := serveProxy(t, u.Handler(0))
		c := testClient(t)
		get(t, c, srv.URL+"/")
		get(t, c, srv.URL+"/")
		for i, st := range u.Targets() {
			if st.State != "ejected" {
				t.Fatalf("target %d is %q, want ejected", i, st.State)
			}
		}
		// Every target is ejected: traffic still flows to them.
		for range 4 {
			if res := get(t, c, srv.URL+"/"); res.status != 500 || !strings.HasPrefix(res.body, "from ") {
				t.Fatalf("panic mode got %d %q, want a target's own 500", res.status, res.body)
			}
		}
		if a.hits.Load() != 3 || b.hits.Load() != 3 {
			t.Errorf("hits a=%d b=%d, want panic mode to spread 3/3", a.hits.Load(), b.hits.Load())
		}
		if got := u.mustMetric(t, "dubbogw_upstream_panic_selections_total", nil); got != 4 {
			t.Errorf("panic selections = %v, want 4", got)
		}
		// A success in panic mode restores its target, which ends panic mode.
		a.status.Store(200)
		b.status.Store(200)
		get(t, c, srv.URL+"/")
		healthy := 0
		for _, st := range u.Targets() {
			if st.State == "healthy" {
				healthy++
			}
		}
		if healthy != 1 {
			t.Fatalf("%d healthy targets after a success in panic mode, want 1", healthy)
		}
		get(t, c, srv.URL+"/")
		if got := u.mustMetric(t, "dubbogw_upstream_panic_selections_total", nil); got != 5 {
			t.Errorf("panic selections = %v, want 5 (none once a target is healthy)", got)
		}
	})
}

func TestLeastRequestPrefersIdleTarget(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		busy := newBackend(t, "busy", 200, func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		idle := newBackend(t, "idle", 200, nil)
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(busy.URL, idle.URL), Policy: "least_request"})
		srv, _ := serveProxy(t, u.Handler(0))
		c := testClient(t)
		// Occupy busy: with both idle, ties are random, so send until one request sticks there.
		done := make(chan error, 10)
		for occupied := false; !occupied; {
			go func() {
				res, err := c.Get(srv.URL + "/")
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				done <- err
			}()
			select {
			case <-entered:
				occupied = true
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no request finished or reached busy within 5s")
			}
		}
		for range 10 {
			if res := get(t, c, srv.URL+"/"); res.body != "from idle" {
				t.Fatalf("got %q with busy occupied, want idle", res.body)
			}
		}
		if st := u.Targets()[0]; st.InFlight != 1 {
			t.Errorf("busy in flight = %d, want 1", st.InFlight)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestStreamingIsNotBuffered(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		readFirst := make(chan struct{})
		b := newBackend(t, "a", 200, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "first\n")
			http.NewResponseController(w).Flush()
			select {
			case <-readFirst:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "second\n")
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(0))
		res, err := testClient(t).Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		br := bufio.NewReader(res.Body)
		line, err := br.ReadString('\n') // the client's 10s timeout bounds this read
		if err != nil || line != "first\n" {
			t.Fatalf("first chunk = %q, %v: the proxy held it back", line, err)
		}
		close(readFirst)
		rest, err := io.ReadAll(br)
		if err != nil || string(rest) != "second\n" {
			t.Fatalf("rest = %q, %v", rest, err)
		}
	})
}

func TestWebSocketOutlivesRouteTimeout(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		upgrader := websocket.Upgrader{}
		b := newBackend(t, "ws", 200, func(w http.ResponseWriter, r *http.Request) {
			conn, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				kind, msg, err := conn.ReadMessage()
				if err != nil {
					return
				}
				if err := conn.WriteMessage(kind, append([]byte(r.URL.Path+":"), msg...)); err != nil {
					return
				}
			}
		})
		const routeTimeout = 100 * time.Millisecond
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(routeTimeout))
		dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		conn, res, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/chat", nil)
		if err != nil {
			t.Fatalf("dial through the proxy: %v (response %v)", err, res)
		}
		defer conn.Close()
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		echo := func(msg string) {
			t.Helper()
			if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatalf("write %q: %v", msg, err)
			}
			_, got, err := conn.ReadMessage()
			if err != nil || string(got) != "/chat:"+msg {
				t.Fatalf("echo of %q = %q, %v", msg, got, err)
			}
		}
		echo("hello")
		if st := u.Targets()[0]; st.InFlight != 1 {
			t.Errorf("in flight during the WebSocket = %d, want 1", st.InFlight)
		}
		time.Sleep(4 * routeTimeout) // let the route timeout pass: it must not end the connection
		echo("still here")
	})
}

func TestUpgradeWaitIsBoundedByTimeout(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "ws", 200, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answers the upgrade
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(100*time.Millisecond))
		dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		_, res, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/chat", nil)
		if err == nil || res == nil {
			t.Fatalf("dial err = %v, response %v: want a 504 answer", err, res)
		}
		body, _ := io.ReadAll(res.Body)
		e := decodeError(t, result{res.StatusCode, res.Header, string(body)})
		if res.StatusCode != 504 || e.Error.Code != exchange.CodeTimeout {
			t.Fatalf("got %d %+v, want 504 TIMEOUT", res.StatusCode, e)
		}
	})
}

func TestTimeoutIs504(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "slow", 200, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
		u := newTestUpstream(t, transport, "slow", &Config{Targets: targets(b.URL)})
		srv, infos := serveProxy(t, u.Handler(100*time.Millisecond))
		res := get(t, testClient(t), srv.URL+"/")
		e := decodeError(t, res)
		if res.status != 504 || e.Error.Code != "TIMEOUT" || e.Error.Message != "upstream slow timed out after 100ms" {
			t.Fatalf("got %d %+v, want 504 TIMEOUT", res.status, e.Error)
		}
		if e.Error.Route != "test-route" || e.Error.RequestID != "req-1" {
			t.Errorf("error body route %q id %q, want the exchange's", e.Error.Route, e.Error.RequestID)
		}
		if info := nextInfo(t, infos); info.ErrorCode != exchange.CodeTimeout {
			t.Errorf("info.ErrorCode = %q", info.ErrorCode)
		}
		if b.hits.Load() != 1 {
			t.Errorf("attempts = %d, want 1 (no retry past the deadline)", b.hits.Load())
		}
		if st := u.Targets()[0]; st.ConsecutiveFailures != 1 {
			t.Errorf("consecutive failures = %d, want the timeout counted", st.ConsecutiveFailures)
		}
	})
}

func TestConnectFailureIs502(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		down := closedURL(t)
		u := newTestUpstream(t, transport, "down", &Config{Targets: targets(down)})
		srv, _ := serveProxy(t, u.Handler(0))
		res := get(t, testClient(t), srv.URL+"/")
		e := decodeError(t, res)
		if res.status != 502 || e.Error.Code != "BAD_GATEWAY" {
			t.Fatalf("got %d %+v, want 502 BAD_GATEWAY", res.status, e.Error)
		}
		want := "upstream down target " + down + ": "
		if !strings.HasPrefix(e.Error.Message, want) || !strings.Contains(e.Error.Message, "refused") {
			t.Errorf("message %q, want it to start with %q and give the cause", e.Error.Message, want)
		}
		if got := u.mustMetric(t, "dubbogw_upstream_requests_total", map[string]string{"code": "error"}); got != 2 {
			t.Errorf("error attempts = %v, want 2 (one retry on the only target)", got)
		}
	})
}

func TestBodyOverLimitIs413(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		for _, chunked := range []bool{false, true} {
			t.Run(map[bool]string{false: "buffered", true: "streamed"}[chunked], func(t *testing.T) {
				b := newBackend(t, "a", 200, nil)
				u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
				h := u.Handler(0)
				srv, _ := serveProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					r.Body = http.MaxBytesReader(w, r.Body, 1024)
					h.ServeHTTP(w, r)
				}))
				var body io.Reader = bytes.NewReader(make([]byte, 4096))
				if chunked {
					body = io.MultiReader(body)
				}
				req, _ := http.NewRequest("PUT", srv.URL+"/", body)
				res := do(t, testClient(t), req)
				e := decodeError(t, res)
				if res.status != 413 || e.Error.Code != "PAYLOAD_TOO_LARGE" {
					t.Fatalf("got %d %+v, want 413 PAYLOAD_TOO_LARGE", res.status, e.Error)
				}
				if st := u.Targets()[0]; st.ConsecutiveFailures != 0 {
					t.Errorf("the client's oversized body counted against the target (%d failures)", st.ConsecutiveFailures)
				}
			})
		}
	})
}

func TestClientGoneWritesNothing(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		entered := make(chan struct{})
		b := newBackend(t, "a", 200, func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-r.Context().Done()
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-entered:
			case <-time.After(5 * time.Second):
				t.Error("the request did not reach the target within 5s")
			}
			cancel() // the client goes away
		}()
		info := &exchange.Info{}
		req := httptest.NewRequest("GET", "/", nil).WithContext(exchange.WithInfo(ctx, info))
		rec := httptest.NewRecorder()
		u.Handler(0).ServeHTTP(rec, req)
		if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
			t.Errorf("wrote %d %v %q to a client that left, want nothing", rec.Code, rec.Header(), rec.Body)
		}
		if info.ErrorCode != exchange.CodeClientClosed {
			t.Errorf("info.ErrorCode = %q, want %q", info.ErrorCode, exchange.CodeClientClosed)
		}
		if st := u.Targets()[0]; st.ConsecutiveFailures != 0 || st.InFlight != 0 {
			t.Errorf("after the client left: %+v, want no failure and nothing in flight", st)
		}
	})
}

func TestMetricsSeriesLifecycle(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "a", 200, nil)
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		cfg := &Config{Targets: targets(b.URL), Transport: transport}
		u1, err := New("svc", cfg, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		tu := testUpstream{u1, reg}
		srv, _ := serveProxy(t, u1.Handler(0))
		c := testClient(t)
		for range 3 {
			get(t, c, srv.URL+"/")
		}
		labels := map[string]string{"upstream": "svc", "target": b.URL}
		for _, want := range []struct {
			name   string
			labels map[string]string
			value  float64
		}{
			{"dubbogw_upstream_requests_total", map[string]string{"upstream": "svc", "target": b.URL, "code": "200"}, 3},
			{"dubbogw_upstream_request_duration_seconds", map[string]string{"upstream": "svc"}, 3},
			{"dubbogw_upstream_in_flight", labels, 0},
			{"dubbogw_upstream_target_healthy", labels, 1},
			{"dubbogw_upstream_ejections_total", labels, 0},
			{"dubbogw_upstream_retries_total", map[string]string{"upstream": "svc"}, 0},
			{"dubbogw_upstream_panic_selections_total", map[string]string{"upstream": "svc"}, 0},
		} {
			if got := tu.mustMetric(t, want.name, want.labels); got != want.value {
				t.Errorf("%s%v = %v, want %v", want.name, want.labels, got, want.value)
			}
		}

		// A reload builds the new upstream before closing the old one: series survive.
		u2, err := New("svc", cfg, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		u1.Close()
		if _, ok := tu.metric(t, "dubbogw_upstream_requests_total", labels); !ok {
			t.Fatal("closing the old upstream deleted series the new one uses")
		}
		u2.Close()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, s := range f.GetMetric() {
				t.Errorf("series left after the last upstream closed: %s %v", f.GetName(), s.GetLabel())
			}
		}
	})
}

func TestTargetsJSON(t *testing.T) {
	u := newTestUpstream(t, TransportStandard, "svc", &Config{Targets: []Target{{URL: "http://127.0.0.1:1", Weight: 7}}})
	u.targets[0].ejectedUntil.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	u.targets[0].failures.Store(5)
	b, err := json.Marshal(u.Targets())
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"url":"http://127.0.0.1:1","weight":7,"state":"ejected","ejected_until":"2030-01-02T03:04:05Z","consecutive_failures":5,"in_flight":0}]`
	if string(b) != want {
		t.Errorf("Targets JSON\n got %s\nwant %s", b, want)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		release := make(chan struct{})
		b := newBackend(t, "a", 200, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				<-release
			}
			_, _ = io.WriteString(w, "ok")
		})
		u, err := New("svc", &Config{Targets: targets(b.URL), Transport: transport}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(u.Handler(0))
		defer srv.Close()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		before := goroutines()

		for range 5 {
			get(t, c, srv.URL+"/")
		}
		// One request is in flight across Close: its connection must not linger.
		slow := make(chan result, 1)
		go func() {
			res, err := c.Get(srv.URL + "/slow")
			if err != nil {
				t.Error(err)
				slow <- result{}
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			slow <- result{status: res.StatusCode, body: string(body)}
		}()
		testenv.WaitFor(t, 5*time.Second, "the condition", func() bool { return u.Targets()[0].InFlight == 1 })
		u.Close()
		close(release)
		if res := <-slow; res.status != 200 || res.body != "ok" {
			t.Fatalf("in-flight request across Close got %d %q", res.status, res.body)
		}
		// A late request, routed before a reload swapped the upstream out, still works.
		if res := get(t, c, srv.URL+"/"); res.status != 200 {
			t.Fatalf("request after Close got %d", res.status)
		}
		var leaked []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked = leaked[:0]
			for id, stack := range goroutines() {
				if _, old := before[id]; !old {
					leaked = append(leaked, stack)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines started during the test still run 5s after Close:\n%s",
					len(leaked), strings.Join(leaked, "\n\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// goroutines returns the stack of every goroutine by its id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := make(map[string]string)
	for _, stack := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(stack, "\n")
		fields := strings.Fields(header) // goroutine 42 [state]:
		if len(fields) >= 2 && fields[0] == "goroutine" {
			out[fields[1]] = stack
		}
	}
	return out
}

// waitFor polls cond for up to 5 seconds.
func TestJoinPath(t *testing.T) {
	tests := []struct{ base, reqPath, reqRaw, wantPath, wantRaw string }{
		{"", "/a", "", "/a", ""},
		{"/base/", "/a", "", "/base/a", ""},
		{"/base", "/", "", "/base/", ""},
		{"/base", "/a/b", "/a%2Fb", "/base/a/b", "/base/a%2Fb"},
		{"/b%2Fc", "/x y", "", "/b/c/x y", "/b%2Fc/x%20y"},
	}
	for _, tt := range tests {
		u, err := url.Parse("http://h:1" + tt.base)
		if err != nil {
			t.Fatal(err)
		}
		tg := &target{url: u, basePath: strings.TrimSuffix(u.Path, "/"),
			escapedBase: strings.TrimSuffix(u.EscapedPath(), "/"), rawBase: u.RawPath != ""}
		var out url.URL
		tg.setURL(&out, tt.reqPath, tt.reqRaw)
		if out.Path != tt.wantPath || out.RawPath != tt.wantRaw {
			t.Errorf("base %q + %q (%q) = %q (%q), want %q (%q)", tt.base, tt.reqPath, tt.reqRaw,
				out.Path, out.RawPath, tt.wantPath, tt.wantRaw)
		}
	}
}

// TestFailureLogsSampled: a target that keeps failing does not write a
// WARN per request; one a second goes through, saying how many it held
// back (issue 19: a WARN per failed request, unbounded).
func TestFailureLogsSampled(t *testing.T) {
	var logs bytes.Buffer
	clock := testenv.NewFakeClock()
	u, err := New("dead", &Config{Targets: targets("http://" + testenv.ClosedAddr(t)),
		PassiveHealth: PassiveHealth{MaxFailures: intPtr(0)}}, nil, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	u.now = clock.Now
	srv, _ := serveProxy(t, u.Handler(0))
	get := func() {
		resp, err := http.Get(srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502", resp.StatusCode)
		}
	}
	for range 50 {
		get()
	}
	if n := strings.Count(logs.String(), `"msg":"upstream request failed"`); n != 1 {
		t.Fatalf("%d WARN lines for 50 failures within a second, want 1:\n%s", n, logs.String())
	}
	clock.Advance(time.Second)
	get()
	if !strings.Contains(logs.String(), `"suppressed":49`) {
		t.Errorf("the next second's line does not say 49 were held back:\n%s", logs.String())
	}
}

// TestGRPCMethodLabels: gRPC calls are counted per method for the first
// 100 methods of an upstream; later ones, and paths that are no method,
// count as "other", so clients cannot grow the series without bound.
func TestGRPCMethodLabels(t *testing.T) {
	var g grpcMethods
	for i := range maxGRPCMethods {
		if got := g.label(fmt.Sprintf("/pkg.S/M%d", i)); got != fmt.Sprintf("/pkg.S/M%d", i) {
			t.Fatalf("method %d labelled %q", i, got)
		}
	}
	for _, p := range []string{"/pkg.S/M100", "/a/b/c", "/nomethod", "/pkg.S/M\n", "/" + strings.Repeat("x", 200) + "/m"} {
		if got := g.label(p); got != "other" {
			t.Errorf("%q labelled %q, want other", p, got)
		}
	}
	if got := g.label("/pkg.S/M7"); got != "/pkg.S/M7" {
		t.Errorf("a known method labelled %q", got)
	}
}
