package security

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
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
	{id: "H1", name: "content-length-and-transfer-encoding", run: testCLAndTE},
	{id: "H2", name: "duplicate-content-length", run: testDuplicateContentLength},
	{id: "H3", name: "transfer-encoding-other-than-chunked", run: testTransferEncodings},
	{id: "H4", name: "obs-fold", run: testObsFold},
	{id: "H5", name: "bare-cr-lf", run: testBareCRLF},
	{id: "H6", name: "oversized-headers-and-url", run: testOversizedHeaders},
	{id: "H7", name: "missing-or-duplicate-host", run: testHostHeader},
	{id: "H8", name: "slowloris-headers", run: testSlowHeaders},
	{id: "H9", name: "h2-rapid-reset", run: testH2RapidReset},
	{id: "H10", name: "dot-segments-cleaned-before-matching", run: testDotSegments},
	{id: "H11", name: "json-depth-cap", run: testJSONDepth},
	{id: "H12", name: "body-limits", run: testBodyLimits},
	{id: "H13", name: "no-panics", run: testNoPanics},
}

// upstreamSeen is what an HTTP upstream received.
type upstreamSeen struct {
	uri    string
	header http.Header
	body   string
	bodyOK bool // the body was read to its end
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
		seen := upstreamSeen{uri: r.RequestURI, header: r.Header.Clone()}
		u.mu.Lock()
		i := len(u.seen)
		u.seen = append(u.seen, seen)
		u.mu.Unlock()
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		u.mu.Lock()
		u.seen[i].body, u.seen[i].bodyOK = string(b), err == nil
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

// catchAllYAML: one route taking every request to upstream.
func catchAllYAML(upstream, more string) string {
	return fmt.Sprintf(`
upstreams:
  up: {targets: [{url: %q}]}
routes:
  - {name: all, match: {prefix: /}, upstream: up, max_body_bytes: 1KiB}
%s`, upstream, more)
}

// testCLAndTE: Content-Length and Transfer-Encoding: chunked together.
// The body is read by Transfer-Encoding (RFC 9112 6.3), and the upstream
// gets it framed by the gateway, never with the client's Content-Length.
func testCLAndTE(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	for _, order := range [][2]string{
		{"Content-Length: 3", "Transfer-Encoding: chunked"},
		{"Transfer-Encoding: chunked", "Content-Length: 3"},
	} {
		res := sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\n"+order[0]+"\r\n"+order[1]+"\r\nConnection: close\r\n\r\n"+
			"5\r\nhello\r\n0\r\n\r\n", 10*time.Second)
		wantStatus(t, order[0]+" then "+order[1], res, http.StatusOK)
		seen := up.last(t)
		if !seen.bodyOK || seen.body != "hello" {
			t.Errorf("upstream got body %q (read to the end: %v), want the chunked body hello", seen.body, seen.bodyOK)
		}
		if cl := seen.header.Get("Content-Length"); cl == "3" {
			t.Error("upstream got the client's Content-Length: 3")
		}
	}
}

// testDuplicateContentLength: two different lengths, or a list, are 400;
// the upstream gets nothing.
func testDuplicateContentLength(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	for _, cl := range []string{"Content-Length: 5\r\nContent-Length: 6", "Content-Length: 5, 6", "Content-Length: -1", "Content-Length: +5"} {
		res := sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\n"+cl+"\r\n\r\nhello!", 10*time.Second)
		wantStatus(t, strings.ReplaceAll(cl, "\r\n", " | "), res, http.StatusBadRequest)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// testTransferEncodings: any Transfer-Encoding but a lone "chunked" is
// refused (501), never forwarded.
func testTransferEncodings(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	for _, te := range []string{"chunked, identity", "identity", "gzip, chunked", "chunked\r\nTransfer-Encoding: chunked"} {
		res := sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: "+te+"\r\n\r\n0\r\n\r\n", 10*time.Second)
		wantStatus(t, "Transfer-Encoding: "+te, res, http.StatusNotImplemented)
	}
	res := sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 10*time.Second)
	wantStatus(t, "Transfer-Encoding with a space before the colon", res, http.StatusBadRequest)
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// testObsFold: a folded header line is unfolded into one value (RFC 9112
// 5.2), never forwarded as a line of its own.
func testObsFold(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	res := sendRaw(t, g.addr, "GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\r\n X-User-Id: admin\r\nConnection: close\r\n\r\n", 10*time.Second)
	wantStatus(t, "folded X-A", res, http.StatusOK)
	h := up.last(t).header
	if got := h.Values("X-A"); len(got) != 1 || got[0] != "a X-User-Id: admin" {
		t.Errorf("upstream got X-A %q, want the one unfolded value", got)
	}
	if got := h.Get("X-User-Id"); got != "" {
		t.Errorf("upstream got X-User-Id %q from a folded line", got)
	}
}

// testBareCRLF: a bare CR in a header is 400; a bare LF ends a line (RFC
// 9112 2.2 lets a recipient accept it), so the upstream gets the headers
// as the gateway parsed them, framed with CRLF.
func testBareCRLF(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	for _, raw := range []string{
		"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\rX-User-Id: admin\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-A: a\r\r\n\r\n",
		"GET /x\r HTTP/1.1\r\nHost: gw.test\r\n\r\n",
	} {
		wantStatus(t, fmt.Sprintf("%q", raw), sendRaw(t, g.addr, raw, 10*time.Second), http.StatusBadRequest)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
	res := sendRaw(t, g.addr, "GET /x HTTP/1.1\nHost: gw.test\nX-A: a\nX-B: b\nConnection: close\n\n", 10*time.Second)
	wantStatus(t, "bare LF line ends", res, http.StatusOK)
	h := up.last(t).header
	if h.Get("X-A") != "a" || h.Get("X-B") != "b" {
		t.Errorf("upstream got X-A %q, X-B %q; want a, b", h.Get("X-A"), h.Get("X-B"))
	}
}

// sendFlood writes head and then pad bytes of filler as one header line or
// URL, concurrently reading the answer (the gateway answers and closes
// before reading it all).
func sendFlood(t *testing.T, addr, head string, pad int, tail string) rawResponse {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("a", 4096))
		for n := 0; n < pad; n += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(c, tail)
	}()
	res := readRaw(c)
	c.Close()
	<-done
	return res
}

// testOversizedHeaders: headers or a URL over max_header_bytes are 431,
// and the upstream gets nothing.
func testOversizedHeaders(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, "server: {max_header_bytes: 8KiB}\n"))
	// net/http allows 4096 bytes over max_header_bytes: 64KiB is well over.
	res := sendFlood(t, g.addr, "GET /x HTTP/1.1\r\nHost: gw.test\r\nX-Big: ", 64<<10, "\r\n\r\n")
	wantStatus(t, "a 64KiB header", res, http.StatusRequestHeaderFieldsTooLarge)
	res = sendFlood(t, g.addr, "GET /", 64<<10, " HTTP/1.1\r\nHost: gw.test\r\n\r\n")
	wantStatus(t, "a 64KiB URL", res, http.StatusRequestHeaderFieldsTooLarge)
	var many strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&many, "X-H%d: v\r\n", i)
	}
	res = sendFlood(t, g.addr, "GET /x HTTP/1.1\r\nHost: gw.test\r\n"+many.String(), 0, "\r\n")
	wantStatus(t, "2000 header lines", res, http.StatusRequestHeaderFieldsTooLarge)
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
	wantStatus(t, "a normal request after", g.get(t, "/x", "gw.test"), http.StatusOK)
}

// testHostHeader: HTTP/1.1 without Host, or with two, is 400.
func testHostHeader(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	for _, raw := range []string{
		"GET /x HTTP/1.1\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a.test, b.test\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a.test/evil\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a test\r\n\r\n",
	} {
		wantStatus(t, fmt.Sprintf("%q", raw), sendRaw(t, g.addr, raw, 10*time.Second), http.StatusBadRequest)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// testSlowHeaders: a client sending its headers a line at a time, never
// finishing, is cut at read_header_timeout however it keeps trickling.
func testSlowHeaders(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, "server: {read_header_timeout: 1s}\n"))
	c, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: gw.test\r\n"); err != nil {
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := fmt.Fprintf(c, "X-Slow-%d: v\r\n", i); err != nil {
					return
				}
			}
		}
	}()
	// Far longer than the timeout: the server must close well before.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadAll(c)
	close(stop)
	<-trickled
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the gateway kept a connection trickling headers for 30s (read_header_timeout 1s)")
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests", n)
	}
}

// testH2RapidReset: an h2c client opening streams and resetting each at
// once (CVE-2023-44487). The gateway ends with nothing in flight and no
// goroutine left for the flood, and keeps serving.
func testH2RapidReset(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	g := startGateway(t, catchAllYAML(slow.URL, ""))
	wantStatus(t, "a request before the flood", g.get(t, "/x", "gw.test"), http.StatusOK)
	before := runtime.NumGoroutine()

	c, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	read := make(chan struct{})
	go func() { defer close(read); _, _ = io.Copy(io.Discard, c) }() // the server's frames, so its writes never block
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		n := len(payload)
		return append([]byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags,
			byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}, payload...)
	}
	// HPACK without indexing: :method GET, :scheme http, :path /slow, :authority gw.test.
	headers := []byte{0x82, 0x86, 0x04, 0x05, '/', 's', 'l', 'o', 'w', 0x01, 0x07, 'g', 'w', '.', 't', 'e', 's', 't'}
	const streams = 5000
	buf := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	buf = append(buf, frame(0x4, 0, 0, nil)...) // SETTINGS
	for i := uint32(0); i < streams; i++ {
		id := 2*i + 1
		buf = append(buf, frame(0x1, 0x5, id, headers)...)            // HEADERS, END_STREAM|END_HEADERS
		buf = append(buf, frame(0x3, 0, id, []byte{0, 0, 0, 0x8})...) // RST_STREAM CANCEL
	}
	_, _ = c.Write(buf) // the gateway may close the connection midway: a fine answer too
	_ = c.Close()
	<-read

	testenv.WaitFor(t, 30*time.Second, "nothing in flight after the flood", func() bool {
		return g.metric(t, "dubbogw_inflight", map[string]string{"scope": "global"}) == 0
	})
	// Each stream's handler, and the upstream exchanges, are gone: a
	// handful of goroutines may remain (idle upstream connections).
	testenv.WaitFor(t, 30*time.Second, "the flood's goroutines to end", func() bool {
		return runtime.NumGoroutine() <= before+20
	})
	t.Logf("streams answered 499 (reset): %v", g.metric(t, "dubbogw_http_requests_total", map[string]string{"route": "all", "code": "499"}))
	wantStatus(t, "a request after the flood", g.get(t, "/x", "gw.test"), http.StatusOK)
}

// testDotSegments: "..", "//" are resolved before matching (routed as the
// path they resolve to, with its filters); escaped dots and slashes are
// refused. Neither reaches the upstream past /admin's auth.
func testDotSegments(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, fmt.Sprintf(`
upstreams:
  up: {targets: [{url: %q}]}
routes:
  - {name: public, match: {prefix: /public}, upstream: up}
  - name: admin
    match: {prefix: /admin}
    upstream: up
    filters: [{auth: {store: memory, tokens: {good-token: '{"userId":"u1"}'}}}]
`, up.url))
	for _, p := range []string{"/public/../admin", "/public/./../admin/x", "//admin", "/public/..//admin", "/public/%2e%2e/admin",
		"/public/%2E%2E/admin", "/public%2f..%2fadmin", "/public/..%2fadmin"} {
		res := g.get(t, p, "gw.test")
		if res.err != nil || (res.status != http.StatusUnauthorized && res.status != http.StatusBadRequest) {
			t.Errorf("GET %s: status %d (%v), want 401 from /admin's auth or 400", p, res.status, res.err)
		}
	}
	if seen := up.requests(); len(seen) > 0 {
		t.Errorf("the upstream received %q", seen[0].uri)
	}
	wantStatus(t, "GET /public/x/../y", g.get(t, "/public/x/../y", "gw.test"), http.StatusOK)
	if got := up.last(t).uri; got != "/public/y" {
		t.Errorf("upstream got %q, want the cleaned /public/y", got)
	}
}

// testJSONDepth: a JSON body nested far deeper than the cap is 400 and no
// call reaches the provider.
func testJSONDepth(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, fmt.Sprintf(`
registries:
  demo: {type: static, providers: {com.example.demo.UserService: [%q]}}
routes:
  - name: create
    match: {methods: [POST], path: /users}
    max_body_bytes: 4MiB
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: createUser
      params: [{type: com.example.demo.User, from: body}]
`, addr))
	for _, body := range []string{
		strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20),
		strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000),
		`{"name":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	} {
		res := sendRaw(t, g.addr, fmt.Sprintf("POST /users HTTP/1.1\r\nHost: gw.test\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			len(body), body), 30*time.Second)
		wantStatus(t, fmt.Sprintf("%d-byte nested body", len(body)), res, http.StatusBadRequest)
	}
	if rec.contains("createUser") {
		t.Error("a call reached the provider")
	}
}

// testBodyLimits: a body over the route's max_body_bytes is 413, declared
// (never sent upstream) or streamed.
func testBodyLimits(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, ""))
	big := strings.Repeat("a", 2048)
	res := sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 2048\r\nConnection: close\r\n\r\n"+big, 10*time.Second)
	wantStatus(t, "Content-Length 2048 over 1KiB", res, http.StatusRequestEntityTooLarge)
	res = sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 99999999999999\r\nConnection: close\r\n\r\n", 10*time.Second)
	wantStatus(t, "a huge Content-Length", res, http.StatusRequestEntityTooLarge)
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream received %d requests with a declared body over the limit", n)
	}
	res = sendRaw(t, g.addr, "POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+
		"800\r\n"+big+"\r\n0\r\n\r\n", 10*time.Second)
	wantStatus(t, "a chunked body of 2048 bytes over 1KiB", res, http.StatusRequestEntityTooLarge)
	for _, seen := range up.requests() {
		if seen.bodyOK && len(seen.body) > 1024 {
			t.Errorf("the upstream read a whole body of %d bytes", len(seen.body))
		}
	}
}

// testNoPanics: odd but parseable requests each get an answer; no panic
// is recovered or logged, and the gateway keeps serving.
func testNoPanics(t *testing.T) {
	up := startEchoUpstream(t)
	g := startGateway(t, catchAllYAML(up.url, "server: {trusted_proxies: [127.0.0.1]}\n"))
	for _, raw := range []string{
		"OPTIONS * HTTP/1.1\r\nHost: gw.test\r\n\r\n",
		"CONNECT gw.test:443 HTTP/1.1\r\nHost: gw.test:443\r\n\r\n",
		"GET http://other.test/x?a=%zz&b=;c HTTP/1.1\r\nHost: gw.test\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: [::1]:99999\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-Forwarded-For: ,,,[,]:,\r\nConnection: ,,, ,\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: gw.test\r\nX-Request-Id: \xff\xfe\r\nOrigin: x\r\nAccess-Control-Request-Method: \x01\r\n\r\n",
		"PATCH /" + strings.Repeat("a/", 2000) + " HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 0\r\n\r\n",
		"G\xc3\xa9T /x HTTP/1.1\r\nHost: gw.test\r\n\r\n",
		"GET /x?" + strings.Repeat("a=1&", 1000) + " HTTP/1.1\r\nHost: gw.test\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer\r\nCookie: =;=;;\r\n\r\n",
		"GET /x HTTP/9.9\r\nHost: gw.test\r\n\r\n",
	} {
		res := sendRaw(t, g.addr, raw, 10*time.Second)
		if res.err != nil || res.status == 0 {
			t.Errorf("%.60q: no answer (%v)", raw, res.err)
		}
	}
	if n := g.metric(t, "dubbogw_filter_panics_total", map[string]string{"route": "all"}); n > 0 {
		t.Errorf("%v panics recovered", n)
	}
	if strings.Contains(strings.ToLower(g.logs.String()), "panic") {
		t.Error("a panic was logged")
	}
	wantStatus(t, "a normal request after", g.get(t, "/x", "gw.test"), http.StatusOK)
}
