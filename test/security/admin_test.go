package security

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// adminAttacks: see index_test.go.
var adminAttacks = []attack{
	{id: "10a", name: "cross-site-reload", run: attackCrossSiteReload},
	{id: "10b", name: "dns-rebinding-reads-config", run: attackDNSRebinding},
	{id: "10c", name: "admin-without-token", run: attackAdminWithoutToken},
	{id: "10d", name: "admin-token-file-rotation", run: attackAdminTokenFile},
	{id: "10e", name: "validate-open-admin", run: attackValidateOpenAdmin},
	{id: "11a", name: "secrets-in-admin-config", run: attackSecretsInAdminConfig},
	{id: "11b", name: "secrets-in-errors-and-logs", run: attackSecretsInErrors},
	{id: "13", name: "random-tokens-evict-hot-token", run: attackRandomTokensEvictHotToken},
}

// adminRequest is one raw HTTP/1.1 request to the admin listener, Host
// and headers exactly as given.
func adminRequest(t *testing.T, g *gw, method, path, host string, headers map[string]string, body string) rawResponse {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, path, host)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	r := sendRaw(t, g.admin, b.String(), 10*time.Second)
	if r.err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, path, host, r.err)
	}
	return r
}

func refused(g *gw, t *testing.T, reason string) float64 {
	return g.metric(t, "dubbogw_admin_refused_total", map[string]string{"reason": reason})
}

// attackCrossSiteReload: a page on another site posts a form to
// /admin/reload (the browser sends the admin's own Host, a foreign Origin
// and a form content type); and a form post without Origin.
func attackCrossSiteReload(t *testing.T) {
	g := startGateway(t, "")
	reloads := func() float64 {
		return g.metric(t, "dubbogw_config_reloads_total", map[string]string{"result": "success"})
	}
	form := map[string]string{"Origin": "https://evil.example", "Content-Type": "application/x-www-form-urlencoded"}
	r := adminRequest(t, g, "POST", "/admin/reload", g.admin, form, "x=1")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, `"code":"FORBIDDEN"`) {
		t.Errorf("cross-site POST /admin/reload: %d %s, want 403 FORBIDDEN", r.status, r.body)
	}
	// No Origin (an old browser, a plugin), but a form body: a browser
	// sends that without a preflight; a JSON admin client never does.
	r = adminRequest(t, g, "POST", "/admin/reload", g.admin, map[string]string{"Content-Type": "text/plain"}, "x=1")
	if r.status != http.StatusUnsupportedMediaType {
		t.Errorf("POST /admin/reload with text/plain: %d %s, want 415", r.status, r.body)
	}
	if n := reloads(); n > 0 { // -1: no reload counted at all
		t.Errorf("the refused posts reloaded the configuration %v times", n)
	}
	if refused(g, t, "origin") != 1 || refused(g, t, "content_type") != 1 {
		t.Errorf("refusals counted: origin %v, content_type %v; want 1 each", refused(g, t, "origin"), refused(g, t, "content_type"))
	}
	if g.logs.count("admin request refused") == 0 {
		t.Error("the refusals were not logged")
	}
	// What an operator does still works: same origin, JSON or no body.
	same := map[string]string{"Origin": "http://" + g.admin, "Content-Type": "application/json"}
	if r := adminRequest(t, g, "POST", "/admin/reload", g.admin, same, "{}"); r.status != http.StatusOK {
		t.Errorf("same-origin JSON reload: %d %s", r.status, r.body)
	}
	if r := adminRequest(t, g, "POST", "/admin/reload", g.admin, nil, ""); r.status != http.StatusOK {
		t.Errorf("curl -XPOST reload: %d %s", r.status, r.body)
	}
	if n := reloads(); n != 2 {
		t.Errorf("reloads = %v, want 2", n)
	}
}

// attackDNSRebinding: attacker.example resolves to the admin's address, so
// the victim's browser reads /admin/config "same-origin", with the
// attacker's Host. Health probes (Kubernetes sends the pod IP) stay open.
func attackDNSRebinding(t *testing.T) {
	g := startGateway(t, "")
	_, port, _ := strings.Cut(g.admin, ":")
	for _, host := range []string{"attacker.example", "attacker.example:" + port, "localhost.attacker.example:" + port} {
		r := adminRequest(t, g, "GET", "/admin/config", host, nil, "")
		if r.status != http.StatusForbidden || strings.Contains(r.body, "routes") {
			t.Errorf("GET /admin/config with Host %s: %d %s, want 403 without the config", host, r.status, r.body)
		}
	}
	if n := refused(g, t, "host"); n != 3 {
		t.Errorf("host refusals counted: %v, want 3", n)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		for _, host := range []string{"attacker.example", "10.1.2.3:" + port} {
			if r := adminRequest(t, g, "GET", path, host, nil, ""); r.status != http.StatusOK {
				t.Errorf("GET %s with Host %s: %d, want 200 (probes send any Host)", path, host, r.status)
			}
		}
	}
	for _, host := range []string{g.admin, "localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		if r := adminRequest(t, g, "GET", "/admin/config", host, nil, ""); r.status != http.StatusOK {
			t.Errorf("GET /admin/config with Host %s: %d %s, want 200", host, r.status, r.body)
		}
	}
	// An admin reached by a Service name: the operator lists it.
	g2 := startAdmin(t, "allowed_hosts: [dubbogw-admin.ops.svc]", "")
	if r := adminRequest(t, g2, "GET", "/admin/config", "dubbogw-admin.ops.svc:9090", nil, ""); r.status != http.StatusOK {
		t.Errorf("GET /admin/config with an allowed host: %d %s", r.status, r.body)
	}
}

const adminToken = "s3cr3t-admin-token-0123456789"

// attackAdminWithoutToken: with admin.token set, nothing but the probes
// (and the dashboard's static files) answers without it.
func attackAdminWithoutToken(t *testing.T) {
	g := startAdmin(t, "token: "+adminToken, "")
	for _, c := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "/admin/config", "", 401},
		{"GET", "/admin/config", "Bearer wrong-token-0123456789abc", 401},
		{"GET", "/admin/config", "Bearer " + adminToken[:len(adminToken)-1], 401},
		{"GET", "/admin/config", "Basic " + adminToken, 401},
		{"POST", "/admin/reload", "", 401},
		{"GET", "/metrics", "", 401},
		{"GET", "/admin/summary", "", 401},
		{"GET", "/admin/routes", "Bearer " + adminToken, 200},
		{"GET", "/admin/summary", "Bearer " + adminToken, 200},
		{"GET", "/admin/config", "Bearer " + adminToken, 200},
		{"GET", "/metrics", "Bearer " + adminToken, 200},
		{"POST", "/admin/reload", "Bearer " + adminToken, 200},
		{"GET", "/livez", "", 200},
		{"GET", "/readyz", "", 200},
		{"GET", "/admin/ui/", "", 200},
	} {
		h := map[string]string{}
		if c.auth != "" {
			h["Authorization"] = c.auth
		}
		r := adminRequest(t, g, c.method, c.path, g.admin, h, "")
		if r.status != c.want {
			t.Errorf("%s %s with Authorization %q: %d %s, want %d", c.method, c.path, c.auth, r.status, r.body, c.want)
		}
		if r.status == 401 && (r.header.Get("WWW-Authenticate") == "" || strings.Contains(r.body, adminToken)) {
			t.Errorf("%s %s: 401 without WWW-Authenticate, or echoing the token: %v %s", c.method, c.path, r.header, r.body)
		}
	}
	if n := refused(g, t, "token"); n != 7 {
		t.Errorf("token refusals counted: %v, want 7", n)
	}
	if strings.Contains(g.logs.String(), adminToken) {
		t.Error("the admin token is in the log")
	}
	var cfg = adminRequest(t, g, "GET", "/admin/config", g.admin, map[string]string{"Authorization": "Bearer " + adminToken}, "")
	if strings.Contains(cfg.body, adminToken) {
		t.Errorf("/admin/config shows the admin token: %s", cfg.body)
	}

	// /metrics can be left open for a scraper that cannot send a token.
	g2 := startAdmin(t, "token: "+adminToken+"\n  public_metrics: true", "")
	if r := adminRequest(t, g2, "GET", "/metrics", g2.admin, nil, ""); r.status != 200 {
		t.Errorf("GET /metrics with public_metrics: %d", r.status)
	}
	if r := adminRequest(t, g2, "GET", "/admin/config", g2.admin, nil, ""); r.status != 401 {
		t.Errorf("GET /admin/config with public_metrics and no token: %d", r.status)
	}
}

// attackAdminTokenFile: the token is read from a file at start and again
// on every reload, so rotating it needs no restart; an empty file is
// refused and the old token keeps working.
func attackAdminTokenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "admin-token")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first, second := "first-token-0123456789abcdef", "second-token-0123456789abcdef"
	write(first + "\n")
	g := startAdmin(t, fmt.Sprintf("token_file: %q", file), "")
	get := func(token string) int {
		return adminRequest(t, g, "GET", "/admin/routes", g.admin, map[string]string{"Authorization": "Bearer " + token}, "").status
	}
	if get(first) != 200 || get(second) != 401 {
		t.Fatalf("token from file: first %d, second %d", get(first), get(second))
	}
	write(second)
	if r := adminRequest(t, g, "POST", "/admin/reload", g.admin, map[string]string{"Authorization": "Bearer " + first}, ""); r.status != 200 {
		t.Fatalf("reload: %d %s", r.status, r.body)
	}
	if get(first) != 401 || get(second) != 200 {
		t.Errorf("after rotation: first %d, second %d; want 401, 200", get(first), get(second))
	}
	write("")
	if r := adminRequest(t, g, "POST", "/admin/reload", g.admin, map[string]string{"Authorization": "Bearer " + second}, ""); r.status != 400 {
		t.Errorf("reload with an empty token file: %d %s, want 400", r.status, r.body)
	}
	if get(second) != 200 {
		t.Error("the refused reload dropped the working token")
	}
	if strings.Contains(g.logs.String(), first) || strings.Contains(g.logs.String(), second) {
		t.Error("an admin token is in the log")
	}
}

// attackValidateOpenAdmin: an admin listener on every interface without a
// token is valid but warned about; with a token, or on loopback, it is not.
func attackValidateOpenAdmin(t *testing.T) {
	warns := func(yaml string) []config.Problem {
		cfg, err := config.Parse([]byte(yaml), "gw.yaml", nil)
		if err != nil {
			t.Fatalf("%s: %v", yaml, err)
		}
		return config.Warnings(cfg)
	}
	for _, listen := range []string{"0.0.0.0:9090", ":9090", "[::]:9090", "10.0.0.5:9090", "admin.example.com:9090"} {
		ws := warns(fmt.Sprintf("admin: {listen: %q}\n", listen))
		if len(ws) != 1 || ws[0].Path != "admin.listen" || !strings.Contains(ws[0].Reason, "token") {
			t.Errorf("admin.listen %s without a token: warnings %v", listen, ws)
		}
	}
	for _, yaml := range []string{
		"admin: {listen: \"0.0.0.0:9090\", token: " + adminToken + "}\n",
		"admin: {listen: \"127.0.0.1:9090\"}\n",
		"admin: {listen: \"[::1]:9090\"}\n",
		"admin: {listen: \"localhost:9090\"}\n",
	} {
		if ws := warns(yaml); len(ws) != 0 {
			t.Errorf("%s: warnings %v, want none", yaml, ws)
		}
	}
	for yaml, want := range map[string]string{
		"admin: {token: short}\n":                              "admin.token",
		"admin: {token: " + adminToken + ", token_file: /x}\n": "admin.token",
		"admin: {allowed_hosts: [\"http://x\"]}\n":             "admin.allowed_hosts[0]",
	} {
		_, err := config.Parse([]byte(yaml), "gw.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want a problem at %s", yaml, err, want)
		}
	}
}

// Secrets of row 11, each unique so that any leak is found by substring.
const (
	secretProviderToken = "prov-tok-5e1f"
	secretCookie        = "cookie-val-8a2c"
	secretUpstreamAuth  = "up-auth-3d9b"
	secretSign          = "sign-val-6c4e"
	secretURLPassword   = "url-pw-2b7a"
	secretURLUser       = "url-user-4f1d"
)

// attackSecretsInAdminConfig: /admin/config (which the dashboard and
// anyone with the admin token read) shows none of the configuration's
// secrets: provider URL query values, user info, header values set by a
// headers filter, constant Dubbo attachments.
func attackSecretsInAdminConfig(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
upstreams: {up: {targets: [{url: "http://127.0.0.1:1"}]}}
registries:
  local:
    type: static
    providers: {com.example.demo.UserService: ["dubbo://127.0.0.1:1?token=%s&version=1.0.0"]}
tracing: {enabled: false, endpoint: "http://%s:%s@127.0.0.1:4318"}
routes:
  - name: up
    match: {prefix: /up}
    upstream: up
    filters:
      - headers:
          request: {set: {Cookie: "session=%s", X-Upstream-Auth: %s}}
          response: {add: {X-Debug: %s}}
  - name: greet
    match: {path: /greet}
    dubbo: {registry: local, interface: com.example.demo.UserService, method: greet, attachments: {sign: %s}}
`, secretProviderToken, secretURLUser, secretURLPassword, secretCookie, secretUpstreamAuth, secretUpstreamAuth, secretSign))
	r := adminRequest(t, g, "GET", "/admin/config", g.admin, nil, "")
	if r.status != 200 {
		t.Fatalf("GET /admin/config: %d %s", r.status, r.body)
	}
	for _, s := range []string{secretProviderToken, secretCookie, secretUpstreamAuth, secretSign, secretURLPassword, secretURLUser} {
		if strings.Contains(r.body, s) {
			t.Errorf("/admin/config shows %q", s)
		}
	}
	// What is not secret still shows: names, hosts, ports, header names.
	for _, s := range []string{"X-Upstream-Auth", "Cookie", "sign", "127.0.0.1:1", "token=", "com.example.demo.UserService"} {
		if !strings.Contains(r.body, s) {
			t.Errorf("/admin/config lost %q:\n%s", s, r.body)
		}
	}
	for _, s := range []string{secretProviderToken, secretCookie, secretUpstreamAuth, secretSign, secretURLPassword, secretURLUser} {
		if strings.Contains(g.logs.String(), s) {
			t.Errorf("the log shows %q", s)
		}
	}
}

// attackSecretsInErrors: a configuration refused for a bad value names the
// key and the problem, never the secret in the value: in `dubbogw
// validate`'s error, in the log and in the answer of /admin/reload.
func attackSecretsInErrors(t *testing.T) {
	bad := fmt.Sprintf(`
upstreams: {up: {targets: [{url: "http://%s:%s@127.0.0.1:1"}]}}
registries:
  local:
    type: static
    providers: {com.example.demo.UserService: ["rmi://127.0.0.1:1?token=%s"]}
routes:
  - name: up
    match: {prefix: /up}
    upstream: up
    filters:
      - headers: {request: {set: {X-Upstream-Auth: "%s\u0001"}}}
`, secretURLUser, secretURLPassword, secretProviderToken, secretUpstreamAuth)
	secrets := []string{secretURLUser, secretURLPassword, secretProviderToken, secretUpstreamAuth}
	_, err := config.Parse([]byte(bad), "gw.yaml", nil)
	if err == nil {
		t.Fatal("the bad configuration was accepted")
	}
	for _, want := range []string{"upstreams.up.targets[0].url", "routes[0].filters[0].headers.request.set.X-Upstream-Auth", `registries.local.providers["com.example.demo.UserService"][0]`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the validation error shows %q:\n%v", s, err)
		}
	}

	// The same file on reload: the 400 answer and the log keep them too.
	path := filepath.Join(t.TempDir(), "gw.yaml")
	g := startGatewayFile(t, path, baseYAML)
	if err := os.WriteFile(path, []byte(baseYAML+bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r := adminRequest(t, g, "POST", "/admin/reload", g.admin, nil, "")
	if r.status != 400 || !strings.Contains(r.body, "upstreams.up.targets[0].url") {
		t.Fatalf("reload of the bad file: %d %s", r.status, r.body)
	}
	for _, s := range secrets {
		if strings.Contains(r.body, s) {
			t.Errorf("the reload answer shows %q: %s", s, r.body)
		}
		if strings.Contains(g.logs.String(), s) {
			t.Errorf("the log shows %q", s)
		}
	}
}

// attackRandomTokensEvictHotToken: a client sends thousands of random
// tokens. None exists in Redis; each lookup must not take a place in the
// client-side cache, so a hot token stays a cache hit and the cache holds
// only real tokens.
func attackRandomTokensEvictHotToken(t *testing.T) {
	redisAddr := testenv.RedisAddr(t)
	prefix := "sec13-" + randomHex(t, 4) + ":"
	hot := "hot-" + randomHex(t, 8)
	rc := redisCommand(t, redisAddr)
	rc("SET", prefix+hot, `{"userId":"u-hot"}`, "EX", "600")
	t.Cleanup(func() { rc("DEL", prefix+hot) })

	up := httpEcho(t)
	// One connection, so one cache (each connection has its own), and a
	// cache TTL no slow run reaches: a hit or a miss is the store's doing.
	g := startGateway(t, fmt.Sprintf(`
redis: {address: %q, pipelines: 1, timeout: 2s, client_cache: {max_bytes: 64KiB, ttl: 10m}}
upstreams: {up: {targets: [{url: %q}]}}
routes:
  - name: me
    match: {prefix: /me}
    upstream: up
    filters: [{auth: {store: redis, key_prefix: %q, timeout: 2s, sliding: {enabled: false}}}]
`, redisAddr, up, prefix))
	client := &http.Client{Timeout: 10 * time.Second}
	status := func(token string) (int, error) {
		req, _ := http.NewRequest("GET", g.base+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	get := func(token string) int {
		s, err := status(token)
		if err != nil {
			t.Fatalf("GET /me: %v", err)
		}
		return s
	}
	hits := func() float64 { return g.metric(t, "dubbogw_redis_client_cache_hits_total", nil) }
	testenv.WaitFor(t, 10*time.Second, "redis connected", func() bool {
		return g.metric(t, "dubbogw_redis_connected", nil) == 1
	})
	if s := get(hot); s != 200 {
		t.Fatalf("hot token: %d", s)
	}
	before := hits()
	if s := get(hot); s != 200 || hits() != before+1 {
		t.Fatalf("hot token, second time: %d, cache hits %v → %v", s, before, hits())
	}

	// 3,000 random tokens: in a 64KiB cache, that is many times what the
	// cache holds if each miss took a place.
	const random = 3000
	sem := make(chan struct{}, 8)
	type answer struct {
		status int
		err    error
	}
	answers := make(chan answer, random)
	for i := 0; i < random; i++ {
		sem <- struct{}{}
		token := "rnd-" + randomHex(t, 12)
		go func() {
			defer func() { <-sem }()
			s, err := status(token)
			answers <- answer{s, err}
		}()
	}
	for i := 0; i < random; i++ {
		if a := <-answers; a.err != nil || a.status != 401 {
			t.Fatalf("random token: %d %v, want 401", a.status, a.err)
		}
	}
	before = hits()
	for i := 0; i < 5; i++ {
		if s := get(hot); s != 200 {
			t.Fatalf("hot token after the flood: %d", s)
		}
	}
	if got := hits() - before; got != 5 {
		t.Errorf("hot token after %d random ones: %v of 5 lookups were cache hits, want 5", random, got)
	}
	// The hot token's GET and PTTL are the only replies about keys that
	// exist; the misses stay within their 1/16 of the cache.
	if n := g.metric(t, "dubbogw_redis_client_cache_entries", map[string]string{"kind": "found"}); n != 2 {
		t.Errorf("client-side cache entries of found keys after the flood: %v, want 2 (the hot token's GET and PTTL)", n)
	}
	if b := g.metric(t, "dubbogw_redis_client_cache_bytes", map[string]string{"kind": "absent"}); b < 0 || b > 64<<10/16 {
		t.Errorf("client-side cache bytes of absent keys after the flood: %v, want at most 4KiB", b)
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Error(err)
	}
	return hex.EncodeToString(b)
}

// redisCommand returns a function that runs one command on the Redis at
// addr over its own connection (RESP2), failing the test on an error reply.
func redisCommand(t *testing.T, addr string) func(args ...string) {
	return func(args ...string) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Errorf("redis %v: %v", args, err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(c, b.String()); err != nil {
			t.Errorf("redis %v: %v", args, err)
			return
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || strings.HasPrefix(line, "-") {
			t.Errorf("redis %v: %q %v", args, line, err)
		}
	}
}

// httpEcho is an upstream answering 200 to everything.
func httpEcho(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// startAdmin is startGateway with more admin settings (YAML lines under
// admin:, indented by two spaces).
func startAdmin(t *testing.T, admin, yamlText string) *gw {
	t.Helper()
	const listen = "admin:\n  listen: \"127.0.0.1:0\"\n"
	if !strings.Contains(baseYAML, listen) {
		t.Fatal("baseYAML no longer has the admin listener startAdmin extends")
	}
	base := strings.Replace(baseYAML, listen, listen+"  "+admin+"\n", 1)
	return startGatewayFile(t, filepath.Join(t.TempDir(), "gw.yaml"), base+yamlText)
}
