package security

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// headerAttacks: see index_test.go. Rows 4, 6 and 9 (identity headers,
// hop-by-hop headers, path and host normalization, X-Forwarded-For), and
// the H rows: what already held at the HTTP parsing edge and must keep
// holding.
var headerAttacks = []attack{
	{id: "4a", name: "connection-listed-identity-headers", run: testConnectionListedIdentity},
	{id: "4b", name: "underscore-identity-anonymous", run: testUnderscoreIdentityAnonymous},
	{id: "4c", name: "connection-deletes-gateway-headers", run: testConnectionKeepsGatewayHeaders},
	{id: "6a", name: "path-parameters-and-control-bytes", run: testAmbiguousPaths},
	{id: "6b", name: "anonymous-rule-dotdot-semicolon", run: testAnonymousDotDotSemicolon},
	{id: "6c", name: "matrix-params-opt-in", run: testMatrixParamsOptIn},
	{id: "6d", name: "trailing-dot-host", run: testTrailingDotHost},
	{id: "9a", name: "xff-malformed-hop", run: testForwardedForMalformed},
	{id: "9b", name: "xff-ip-port", run: testForwardedForIPPort},
}

// upstreamSeen is what an HTTP upstream received.
type upstreamSeen struct {
	uri    string
	header http.Header
}

// echoUpstream is an HTTP upstream that answers 200 "ok" and keeps every
// request it got.
type echoUpstream struct {
	url  string
	mu   sync.Mutex
	seen []upstreamSeen
}

func startEchoUpstream(t *testing.T) *echoUpstream {
	t.Helper()
	u := &echoUpstream{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, upstreamSeen{uri: r.RequestURI, header: r.Header.Clone()})
		u.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(s.Close)
	u.url = s.URL
	return u
}

// requests returns what the upstream received so far.
func (u *echoUpstream) requests() []upstreamSeen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamSeen(nil), u.seen...)
}

// last returns the last request the upstream received; it fails the test
// when there is none.
func (u *echoUpstream) last(t *testing.T) upstreamSeen {
	t.Helper()
	seen := u.requests()
	if len(seen) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return seen[len(seen)-1]
}

// get sends "GET target" with the extra header lines on a raw connection
// to g and returns the response.
func (g *gw) get(t *testing.T, target, host string, lines ...string) rawResponse {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", target, host)
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	return sendRaw(t, g.addr, b.String(), 10*time.Second)
}

// wantStatus fails the test unless res has status want.
func wantStatus(t *testing.T, what string, res rawResponse, want int) {
	t.Helper()
	if res.err != nil {
		t.Fatalf("%s: no response: %v", what, res.err)
	}
	if res.status != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, res.status, want, res.body)
	}
}

// identityYAML is an upstream behind an auth route whose token maps to
// X-User-Id and X-Roles, an anonymous rule, and a route without auth.
func identityYAML(upstream string) string {
	return fmt.Sprintf(`
upstreams:
  up: {targets: [{url: %q}]}
routes:
  - name: me
    match: {prefix: /me}
    upstream: up
    filters:
      - headers: {request: {set: {X-Tenant: blue}}}
      - auth:
          store: memory
          tokens: {good-token: '{"userId":"u1","roles":"user"}'}
          headers: {userId: X-User-Id, roles: X-Roles}
          anonymous: [{path: "/me/public/*"}]
  - name: open
    match: {prefix: /open}
    upstream: up
`, upstream)
}

// identityNames are the spellings of the identity headers an upstream
// may read as X-User-Id or X-Roles.
var identityNames = []string{"X-User-Id", "X_User_Id", "X-Roles", "X_ROLES"}

// noClientIdentity fails the test when the upstream got an identity
// header other than the gateway's own values.
func noClientIdentity(t *testing.T, h http.Header, own map[string]string) {
	t.Helper()
	for name, vv := range h {
		for _, id := range identityNames {
			if !strings.EqualFold(strings.ReplaceAll(name, "_", "-"), strings.ReplaceAll(id, "_", "-")) {
				continue
			}
			if want, ok := own[name]; !ok || len(vv) != 1 || vv[0] != want {
				t.Errorf("upstream got %s: %q, want %q (only the gateway's)", name, vv, own[name])
			}
			break
		}
	}
}

// testConnectionListedIdentity: a valid token, and a Connection header
// listing the identity headers, and an identity header look-alike.
func testConnectionListedIdentity(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, identityYAML(up.url))
	res := g.get(t, "/me", "gw.test",
		"Authorization: Bearer good-token",
		"Connection: X-User-Id, X-Roles",
		"X_User_Id: admin",
		"X-Roles: admin")
	wantStatus(t, "GET /me", res, http.StatusOK)
	h := up.last(t).header
	noClientIdentity(t, h, map[string]string{"X-User-Id": "u1", "X-Roles": "user"})
	if h.Get("X-User-Id") != "u1" || h.Get("X-Roles") != "user" {
		t.Errorf("upstream got X-User-Id %q, X-Roles %q; want the gateway's u1, user", h.Get("X-User-Id"), h.Get("X-Roles"))
	}
}

// testUnderscoreIdentityAnonymous: no token, on an anonymous path and on a
// route without auth, identity headers and their look-alikes.
func testUnderscoreIdentityAnonymous(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, identityYAML(up.url))
	for _, target := range []string{"/me/public/x", "/open/x"} {
		res := g.get(t, target, "gw.test", "X_User_Id: admin", "x_roles: admin", "X-USER-ID: admin")
		wantStatus(t, "GET "+target, res, http.StatusOK)
		noClientIdentity(t, up.last(t).header, nil)
	}
}

// testConnectionKeepsGatewayHeaders: Connection lists headers the gateway
// sets (the request id, the headers filter's), and one of the client's.
func testConnectionKeepsGatewayHeaders(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, identityYAML(up.url))
	res := g.get(t, "/me/public/x", "gw.test",
		"Connection: X-Request-Id, X-Tenant, X-Hop",
		"X-Hop: secret-for-the-next-hop-only")
	wantStatus(t, "GET /me/public/x", res, http.StatusOK)
	h := up.last(t).header
	if got := h.Get("X-Tenant"); got != "blue" {
		t.Errorf("upstream got X-Tenant %q, want the headers filter's blue", got)
	}
	if got, want := h.Get("X-Request-Id"), res.header.Get("X-Request-Id"); got == "" || got != want {
		t.Errorf("upstream got X-Request-Id %q, want the response's %q", got, want)
	}
	if got := h.Get("X-Hop"); got != "" {
		t.Errorf("upstream got X-Hop %q: a header the client listed in Connection was forwarded", got)
	}
	if got := h.Get("Connection"); got != "" {
		t.Errorf("upstream got Connection %q", got)
	}
}

// pathsYAML: a catch-all route (no filter), routes that protect /private
// (an IP rule nobody passes) and /secure (auth with an anonymous rule),
// then moreRoutes.
func pathsYAML(upstream, moreRoutes string) string {
	return fmt.Sprintf(`
upstreams:
  up: {targets: [{url: %q}]}
routes:
  - name: catch-all
    match: {prefix: /}
    upstream: up
  - name: private
    match: {prefix: /private}
    upstream: up
    filters: [{ip: {allow: [192.0.2.1]}}]
  - name: secure
    match: {prefix: /secure}
    upstream: up
    filters:
      - auth:
          store: memory
          tokens: {good-token: '{"userId":"u1"}'}
          anonymous: [{path: "/secure/open/*"}]
%s`, upstream, moreRoutes)
}

// testAmbiguousPaths: paths a server behind may read as another path than
// the gateway routed.
func testAmbiguousPaths(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, pathsYAML(up.url, ""))
	before := g.metric(t, "dubbogw_errors_total", map[string]string{"code": "BAD_REQUEST"})
	paths := []string{
		"/private;x", "/private;/x", "/private./x", "/private%00/x", "/private%01/x", "/private%7f",
		"/files/%2e%2e;/admin", "/files/%2e%2e/private", "/files/.%2e/private", "/private%2fx", "/files%2F..%2Fprivate",
		"/private%5cx", "/files/..%5cprivate", "/files/%252e%252e/private", "/private..;/x", "/files/..;/private",
	}
	for _, p := range paths {
		res := g.get(t, p, "gw.test")
		wantStatus(t, "GET "+p, res, http.StatusBadRequest)
		if !strings.Contains(res.body, `"code":"BAD_REQUEST"`) {
			t.Errorf("GET %s: body %s, want the JSON error BAD_REQUEST", p, res.body)
		}
	}
	if seen := up.requests(); len(seen) > 0 {
		t.Errorf("the upstream received %d requests, the first %q", len(seen), seen[0].uri)
	}
	// Counted once each (after the answer is out: wait for it).
	want := max(before, 0) + float64(len(paths))
	testenv.WaitFor(t, 10*time.Second, "dubbogw_errors_total{code=BAD_REQUEST} counting every refused path", func() bool {
		return g.metric(t, "dubbogw_errors_total", map[string]string{"code": "BAD_REQUEST"}) == want
	})
	if got := g.metric(t, "dubbogw_edge_total", map[string]string{"action": "path_refused"}); got != float64(len(paths)) {
		t.Errorf("dubbogw_edge_total{action=path_refused} = %v, want %d", got, len(paths))
	}
	if n := g.logs.count("request refused at the edge"); n < 1 {
		t.Error("no log line for the refused requests") // that it is bounded: gateway's TestSampledLog
	}
	// Ordinary paths still pass.
	for _, p := range []string{"/a/b.json", "/a/%20b", "/a/b%3Fc", "/a/.well-known/x"} {
		wantStatus(t, "GET "+p, g.get(t, p, "gw.test"), http.StatusOK)
	}
}

// testAnonymousDotDotSemicolon: an anonymous rule for /secure/open/* and
// "/secure/open/..;/admin", which Tomcat reads as /secure/admin.
func testAnonymousDotDotSemicolon(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, pathsYAML(up.url, ""))
	for _, p := range []string{"/secure/open/..;/admin", "/secure/open/.;/../admin", "/secure/open/..;x=1/admin"} {
		wantStatus(t, "GET "+p, g.get(t, p, "gw.test"), http.StatusBadRequest)
	}
	if seen := up.requests(); len(seen) > 0 {
		t.Errorf("the upstream received %q", seen[0].uri)
	}
	wantStatus(t, "GET /secure/open/x", g.get(t, "/secure/open/x", "gw.test"), http.StatusOK)
}

// testMatrixParamsOptIn: a route that opts in to matrix parameters gets
// them verbatim; dot segments with parameters and other routes still 400.
func testMatrixParamsOptIn(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, pathsYAML(up.url, `
  - name: cars
    match: {prefix: /cars}
    allow_matrix_params: true
    upstream: up
`))
	wantStatus(t, "GET /cars;color=red/x", g.get(t, "/cars;color=red/x", "gw.test"), http.StatusOK)
	if got := up.last(t).uri; got != "/cars;color=red/x" {
		t.Errorf("upstream got %q, want /cars;color=red/x", got)
	}
	n := len(up.requests())
	// The route is chosen by the path without its parameters: /private;x=1 is
	// /private's (which does not opt in), never the catch-all's.
	for _, p := range []string{"/cars/..;/private", "/cars/.;x/private", "/private;x=1/y", "/cars;x/%2e%2e/private"} {
		wantStatus(t, "GET "+p, g.get(t, p, "gw.test"), http.StatusBadRequest)
	}
	if got := len(up.requests()); got != n {
		t.Errorf("the upstream received %q", up.requests()[n].uri)
	}
}

// testTrailingDotHost: "api.example.com." is api.example.com, whose route
// requires a token, not the catch-all.
func testTrailingDotHost(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, fmt.Sprintf(`
upstreams:
  up: {targets: [{url: %q}]}
routes:
  - name: catch-all
    match: {prefix: /}
    upstream: up
  - name: api
    match: {host: api.example.com, prefix: /}
    upstream: up
    filters:
      - auth: {store: memory, tokens: {good-token: '{"userId":"u1"}'}}
  - name: wild
    match: {host: "*.internal.example.com", prefix: /}
    upstream: up
    filters: [{ip: {allow: [192.0.2.1]}}]
`, up.url))
	for _, c := range []struct {
		host string
		want int
	}{
		{"api.example.com.", http.StatusUnauthorized},
		{"API.Example.Com.:80", http.StatusUnauthorized},
		{"api.example.com..", http.StatusUnauthorized},
		{"db.internal.example.com.", http.StatusForbidden},
		{"db.internal.example.com.:8080", http.StatusForbidden},
	} {
		wantStatus(t, "Host: "+c.host, g.get(t, "/x", c.host), c.want)
	}
	if seen := up.requests(); len(seen) > 0 {
		t.Errorf("the upstream received %d requests", len(seen))
	}
	wantStatus(t, "Host: other.example.", g.get(t, "/x", "other.example."), http.StatusOK)
}

// forwardedYAML: the gateway trusts 127.0.0.1 (the test's own connection:
// a proxy); route /proxy-only admits only that proxy, /deny refuses
// 198.51.100.0/24, /allow admits only 198.51.100.0/24.
func forwardedYAML(upstream string) string {
	return fmt.Sprintf(`
server: {trusted_proxies: [127.0.0.1]}
upstreams:
  up: {targets: [{url: %q}]}
routes:
  - name: proxy-only
    match: {prefix: /proxy-only}
    upstream: up
    filters: [{ip: {allow: [127.0.0.1]}}]
  - name: deny
    match: {prefix: /deny}
    upstream: up
    filters: [{ip: {deny: [198.51.100.0/24, "2001:db8::/32"]}}]
  - name: allow
    match: {prefix: /allow}
    upstream: up
    filters: [{ip: {allow: [198.51.100.0/24, "2001:db8::/32"]}}]
`, upstream)
}

// testForwardedForMalformed: X-Forwarded-For hops the gateway cannot
// parse as an address make the client unknown, never the trusted proxy.
func testForwardedForMalformed(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, forwardedYAML(up.url))
	for _, xff := range []string{"198.51.100.7:5555", "unknown", "[2001:db8::1]:443", "198.51.100.7, garbage", "_hidden", "127.0.0.1:1:2"} {
		wantStatus(t, "X-Forwarded-For: "+xff, g.get(t, "/proxy-only", "gw.test", "X-Forwarded-For: "+xff), http.StatusForbidden)
	}
	if seen := up.requests(); len(seen) > 0 {
		t.Errorf("the upstream received %d requests", len(seen))
	}
	// The proxy itself, with no or a well-formed chain of trusted hops, still passes.
	wantStatus(t, "no X-Forwarded-For", g.get(t, "/proxy-only", "gw.test"), http.StatusOK)
	wantStatus(t, "X-Forwarded-For: 127.0.0.1", g.get(t, "/proxy-only", "gw.test", "X-Forwarded-For: 127.0.0.1"), http.StatusOK)
}

// testForwardedForIPPort: "ip:port" and "[ipv6]:port" hops are the
// addresses they carry.
func testForwardedForIPPort(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, forwardedYAML(up.url))
	for _, xff := range []string{"198.51.100.7:5555", "[2001:db8::1]:443", "[2001:db8::1]", "203.0.113.9, 198.51.100.7:80"} {
		wantStatus(t, "deny, X-Forwarded-For: "+xff, g.get(t, "/deny", "gw.test", "X-Forwarded-For: "+xff), http.StatusForbidden)
		wantStatus(t, "allow, X-Forwarded-For: "+xff, g.get(t, "/allow", "gw.test", "X-Forwarded-For: "+xff), http.StatusOK)
	}
	if n := len(up.requests()); n != 4 {
		t.Errorf("the upstream received %d requests, want 4 (the allowed ones)", n)
	}
}
