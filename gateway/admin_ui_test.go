package gateway

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// chromiumPath finds headless Chromium (DUBBOGW_TEST_CHROMIUM, else on
// PATH). Like internal/testenv: without it the test skips, but under CI
// (CI=true), where scripts/test.sh installs it, it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DUBBOGW_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found under CI: scripts/test.sh must install it")
	}
	t.Skip("chromium not found: install Debian's chromium (scripts/test.sh does) to test the dashboard")
	return ""
}

// browserPage is one Chromium tab driven over the DevTools protocol.
type browserPage struct {
	t      *testing.T
	conn   *websocket.Conn
	nextID int
	errors []string // uncaught exceptions of the page's scripts
}

// startBrowser runs headless Chromium (with flags more) until the test
// ends and attaches to its tab.
func startBrowser(t *testing.T, more ...string) *browserPage {
	t.Helper()
	// The profile directory is ours to remove, after every Chromium process
	// (they are several) is gone: t.TempDir's cleanup would race with the
	// renderers still writing into it.
	profile, err := os.MkdirTemp("", "dubbogw-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromiumPath(t), "--headless=new", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--user-data-dir="+profile)
	cmd.Args = append(append(cmd.Args, more...), "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // one group: killed whole
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	var stderrDone sync.WaitGroup
	t.Cleanup(func() {
		cancel() // kills chromium's process group
		_ = cmd.Wait()
		stderrDone.Wait()
		// Wait (bounded) for the group's other processes to be gone.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if syscall.Kill(-cmd.Process.Pid, 0) != nil {
				break
			}
		}
		_ = os.RemoveAll(profile)
	})
	// Chromium prints "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID".
	listening := make(chan string, 1)
	stderrDone.Add(1)
	go func() {
		defer stderrDone.Done()
		re := regexp.MustCompile(`DevTools listening on ws://([^/\s]+)/`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
	}()
	var hostPort string
	select {
	case hostPort = <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not open its DevTools port within 30s")
	}

	// The tab opened on about:blank, listed once it exists.
	var wsURL string
	deadline := time.Now().Add(10 * time.Second)
	for wsURL == "" {
		var targets []struct{ Type, WebSocketDebuggerURL string }
		resp, err := client.Get("http://" + hostPort + "/json/list")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		for _, tg := range targets {
			if tg.Type == "page" {
				wsURL = tg.WebSocketDebuggerURL
			}
		}
		if wsURL == "" {
			if time.Now().After(deadline) {
				t.Fatalf("chromium lists no page (last error: %v)", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, _, err := dialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatalf("attaching to the tab: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	p := &browserPage{t: t, conn: conn}
	p.call("Runtime.enable", nil)
	return p
}

// call sends one DevTools command and returns its result, noting the
// page's uncaught exceptions among the events read meanwhile.
func (p *browserPage) call(method string, params any) json.RawMessage {
	p.t.Helper()
	p.nextID++
	id := p.nextID
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := p.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		p.t.Fatalf("%s: %v", method, err)
	}
	_ = p.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := p.conn.ReadJSON(&msg); err != nil {
			p.t.Fatalf("%s: reading the answer: %v", method, err)
		}
		if msg.Method == "Runtime.exceptionThrown" {
			p.errors = append(p.errors, string(msg.Params))
		}
		if msg.ID != id {
			continue
		}
		if msg.Error != nil {
			p.t.Fatalf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result
	}
}

// eval evaluates a JavaScript expression in the page and returns its string value.
func (p *browserPage) eval(expr string) string {
	p.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(p.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &r); err != nil {
		p.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		p.t.Fatalf("evaluating %s: %v", expr, r.ExceptionDetails)
	}
	if r.Result.Value == nil {
		return ""
	}
	return fmt.Sprint(r.Result.Value)
}

// waitFor evaluates expr until ok accepts its value, for up to 20s, and
// returns the value accepted; expr must not throw while the page loads. The page updates itself on its own timers:
// polling what it shows is the only way to see it.
func (p *browserPage) waitFor(what, expr string, ok func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v := p.eval(expr)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: the page still shows %q after 20s (page errors: %v)", what, v, p.errors)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDashboardInChromium(t *testing.T) {
	browser := startBrowser(t)
	a := echoUpstream(t, "a")
	provider := startProvider(t)
	tg := startGW(t, fmt.Sprintf(`
upstreams: {a: {targets: [{url: %q}]}}
registries: {demo: {providers: {com.example.demo.UserService: [%q], com.example.demo.OtherService: []}}}
routes:
  - {name: orders-route, match: {prefix: /orders}, upstream: a}
  - {name: users-route, match: {methods: [GET], path: "/users/{id}"},
     dubbo: {registry: demo, interface: com.example.demo.UserService, method: getUser,
             params: [{type: java.lang.String, from: path, name: id}]}}
  - {name: other-route, match: {path: /other}, dubbo: {registry: demo, interface: com.example.demo.OtherService, method: m}}
`, a.URL, provider))

	// The admin listener is reached through a proxy that serves it under
	// /ops, as an operator's ingress might: the page must work there too.
	// It counts what the page asks for.
	adminURL, err := url.Parse(tg.admin)
	if err != nil {
		t.Fatal(err)
	}
	var fetchedMu sync.Mutex
	fetched := map[string]int{}
	fetches := func(path string) int {
		fetchedMu.Lock()
		defer fetchedMu.Unlock()
		return fetched[path]
	}
	admin := httputil.NewSingleHostReverseProxy(adminURL)
	ingress := httptest.NewServer(http.StripPrefix("/ops", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetchedMu.Lock()
		fetched[r.URL.Path]++
		fetchedMu.Unlock()
		admin.ServeHTTP(w, r)
	})))
	t.Cleanup(ingress.Close)
	// A short window: the services table starts below it, out of sight.
	browser.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1000, "height": 200, "deviceScaleFactor": 1, "mobile": false})
	browser.call("Page.navigate", map[string]any{"url": ingress.URL + "/ops/admin/ui"})
	routes := browser.waitFor("route names", `document.querySelector('#routes tbody')?.textContent ?? ''`,
		func(v string) bool { return strings.Contains(v, "orders-route") && strings.Contains(v, "users-route") })
	if !strings.Contains(routes, "com.example.demo.UserService.getUser") {
		t.Errorf("routes table lacks the Dubbo target: %q", routes)
	}
	browser.waitFor("registries", `document.getElementById('registries')?.textContent ?? ''`,
		func(v string) bool { return strings.Contains(v, "demo: static static · 2 services, 1 providers") })

	// The page polls the summary, never /metrics, and not the services
	// while their table is out of sight.
	deadline := time.Now().Add(20 * time.Second)
	for fetches("/admin/summary") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the page asked /admin/summary %d times in 20s", fetches("/admin/summary"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := fetches("/metrics"); n != 0 {
		t.Errorf("the page fetched /metrics %d times", n)
	}
	if n := fetches("/admin/services"); n != 0 {
		t.Errorf("the page fetched /admin/services %d times with the services out of sight", n)
	}
	browser.eval(`(() => { document.getElementById('services-view').scrollIntoView(); return ''; })()`)
	servicesText := `document.querySelector('#services tbody')?.textContent ?? ''`
	browser.waitFor("services once in sight", servicesText,
		func(v string) bool { return strings.Contains(v, "com.example.demo.UserService") })

	// A page at a time (here one service a page), filtered by prefix.
	filter := func(prefix string) {
		browser.eval(fmt.Sprintf(`(() => { const f = document.getElementById('services-filter'); f.value = %q;
			f.dispatchEvent(new Event('input')); return ''; })()`, prefix))
	}
	shown := `document.querySelector('#services tbody').textContent + ' | ' + document.getElementById('services-more').textContent`
	browser.eval(`(() => { document.getElementById('services').dataset.page = '1'; return ''; })()`)
	filter("com.example.demo.")
	browser.waitFor("the first page", shown, func(v string) bool {
		return strings.Contains(v, "OtherService") && !strings.Contains(v, "UserService") && strings.HasSuffix(v, "1–1 of 2")
	})
	browser.eval(`(() => { document.getElementById('services-next').click(); return ''; })()`)
	browser.waitFor("the next page", shown, func(v string) bool {
		return strings.Contains(v, "UserService") && !strings.Contains(v, "OtherService") && strings.HasSuffix(v, "2–2 of 2")
	})
	if d := browser.eval(`String(document.getElementById('services-next').disabled)`); d != "true" {
		t.Error("next page offered on the last page")
	}
	browser.eval(`(() => { document.getElementById('services-prev').click(); return ''; })()`)
	browser.waitFor("the previous page", shown, func(v string) bool { return strings.HasSuffix(v, "1–1 of 2") })
	filter("com.example.demo.U")
	browser.waitFor("a filtered page", shown, func(v string) bool {
		return strings.Contains(v, "UserService") && strings.HasSuffix(v, "1–1 of 1")
	})
	if n := fetches("/metrics"); n != 0 {
		t.Errorf("the page fetched /metrics %d times", n)
	}

	// No traffic yet: once two summaries are in, the rate is 0.
	rateExpr := `document.getElementById('rate')?.dataset.value ?? ''`
	before := browser.waitFor("first rate", rateExpr, func(v string) bool { return v != "" })
	if r, _ := strconv.ParseFloat(before, 64); r != 0 {
		t.Errorf("request rate before any traffic = %s, want 0", before)
	}

	stop := make(chan struct{})
	var traffic sync.WaitGroup
	traffic.Add(1)
	go func() {
		defer traffic.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			path := "/orders/1"
			if i%2 == 1 {
				path = "/users/" + strconv.Itoa(i)
			}
			if resp, err := client.Get(tg.base + path); err == nil {
				resp.Body.Close()
			}
		}
	}()
	after := browser.waitFor("rate under traffic", rateExpr, func(v string) bool {
		r, err := strconv.ParseFloat(v, 64)
		return err == nil && r > 0
	})
	close(stop)
	traffic.Wait()
	if after == before {
		t.Errorf("the request rate did not change under traffic: %s", after)
	}
	if p99 := browser.eval(`document.getElementById('p99').dataset.value`); p99 == "" {
		t.Error("no p99 latency shown under traffic")
	}
	if n := browser.eval(`String(document.querySelector('#rate-spark polyline').getAttribute('points').split(' ').length)`); n == "" || n == "1" {
		t.Errorf("rate sparkline has %s points", n)
	}
	if len(browser.errors) > 0 {
		t.Errorf("the page threw: %v", browser.errors)
	}
	if r := do(t, "GET", tg.admin+"/admin/ui", nil); r.status != http.StatusOK {
		t.Errorf("GET /admin/ui: %d", r.status)
	}
}

// TestDashboardWithAdminToken: with admin.token set, the page asks for the
// token, keeps it for the tab and sends it with every call; a wrong one
// is asked again.
func TestDashboardWithAdminToken(t *testing.T) {
	const token = "dashboard-token-0123456789abcdef"
	browser := startBrowser(t)
	a := echoUpstream(t, "a")
	tg := startGWRaw(t, strings.Replace(baseYAML, "admin:\n", "admin:\n  token: "+token+"\n", 1)+fmt.Sprintf(`
upstreams: {a: {targets: [{url: %q}]}}
routes:
  - {name: orders-route, match: {prefix: /orders}, upstream: a}
`, a.URL))
	if r := do(t, "GET", tg.admin+"/admin/routes", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("GET /admin/routes without the token: %d", r.status)
	}
	browser.call("Page.navigate", map[string]any{"url": tg.admin + "/admin/ui/"})
	formShown := func(v string) bool { return v == "true" }
	browser.waitFor("token form", `String(document.getElementById('login')?.hidden === false)`, formShown)
	if rows := browser.eval(`document.querySelector('#routes tbody').textContent`); rows != "" {
		t.Errorf("routes shown without the token: %q", rows)
	}
	submit := func(tok string) {
		browser.eval(fmt.Sprintf(`(() => { document.getElementById('token').value = %q; document.getElementById('login').requestSubmit(); return ''; })()`, tok))
	}
	submit("wrong-token-0123456789abcdefgh")
	browser.waitFor("token form again after a wrong token", `String(document.getElementById('login').hidden === false && sessionStorage.length === 0)`, formShown)

	submit(token)
	browser.waitFor("routes with the token", `document.querySelector('#routes tbody')?.textContent ?? ''`,
		func(v string) bool { return strings.Contains(v, "orders-route") })
	browser.waitFor("metrics with the token", `document.getElementById('rate')?.dataset.value ?? ''`,
		func(v string) bool { return v != "" })
	if hidden := browser.eval(`String(document.getElementById('login').hidden)`); hidden != "true" {
		t.Error("the token form is still shown once the token works")
	}
	if len(browser.errors) > 0 {
		t.Errorf("the page threw: %v", browser.errors)
	}
}

// TestDashboardOverHTTPS: with admin.tls (and a token, as in production)
// the admin listener serves HTTPS only, Chromium trusting just its
// certificate shows the dashboard, asks for the token and polls the
// summary over it, and the handshakes count under listener="admin".
func TestDashboardOverHTTPS(t *testing.T) {
	const token = "dashboard-token-0123456789abcdef"
	dir := t.TempDir()
	ca := testcert.NewCA(t, "admin")
	leaf := ca.Server(t, time.Time{}, "127.0.0.1")
	certFile, keyFile := testcert.Write(t, dir, "admin.pem", leaf.CertPEM), testcert.Write(t, dir, "admin-key.pem", leaf.KeyPEM)
	// Chromium accepts this certificate, and no other, by its public key.
	spki := sha256.Sum256(leaf.Cert.RawSubjectPublicKeyInfo)
	browser := startBrowser(t, "--ignore-certificate-errors-spki-list="+base64.StdEncoding.EncodeToString(spki[:]))
	a := echoUpstream(t, "a")
	admin := fmt.Sprintf("admin:\n  token: %s\n  tls: {certificates: [{cert_file: %q, key_file: %q}], min_version: \"1.3\"}\n", token, certFile, keyFile)
	tg := startGWRaw(t, strings.Replace(baseYAML, "admin:\n", admin, 1)+fmt.Sprintf(`
upstreams: {a: {targets: [{url: %q}]}}
routes:
  - {name: orders-route, match: {prefix: /orders}, upstream: a}
`, a.URL))
	adminURL := "https://" + tg.AdminAddr()

	// Plaintext is refused; HTTPS with the CA answers.
	if r, err := client.Get("http://" + tg.AdminAddr() + "/livez"); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Fatal("the admin listener answered plaintext HTTP with admin.tls set")
		}
	}
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig()}}
	t.Cleanup(tlsClient.CloseIdleConnections)
	r, err := tlsClient.Get(adminURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK || r.TLS == nil || r.TLS.Version != tls.VersionTLS13 {
		t.Fatalf("GET /readyz over HTTPS: %d, TLS %+v", r.StatusCode, r.TLS)
	}

	browser.call("Page.navigate", map[string]any{"url": adminURL + "/admin/ui/"})
	browser.waitFor("token form", `String(document.getElementById('login')?.hidden === false)`, func(v string) bool { return v == "true" })
	if proto := browser.eval(`location.protocol`); proto != "https:" {
		t.Fatalf("the page is on %q", proto)
	}
	browser.eval(fmt.Sprintf(`(() => { document.getElementById('token').value = %q; document.getElementById('login').requestSubmit(); return ''; })()`, token))
	browser.waitFor("routes over HTTPS", `document.querySelector('#routes tbody')?.textContent ?? ''`,
		func(v string) bool { return strings.Contains(v, "orders-route") })
	browser.waitFor("the summary over HTTPS", `document.getElementById('rate')?.dataset.value ?? ''`,
		func(v string) bool { return v != "" })
	if len(browser.errors) > 0 {
		t.Errorf("the page threw: %v", browser.errors)
	}
	if n := testenv.MetricValue(t, tg.registry, "dubbogw_tls_handshakes_total", map[string]string{"listener": "admin", "result": "ok"}); n < 2 {
		t.Errorf("admin handshakes ok = %v, want the client's and the browser's", n)
	}
	if v := testenv.MetricValue(t, tg.registry, "dubbogw_tls_cert_not_after_seconds", map[string]string{"listener": "admin", "cert_file": certFile}); int64(v) != leaf.Cert.NotAfter.Unix() {
		t.Errorf("admin certificate expiry %v, want %d", v, leaf.Cert.NotAfter.Unix())
	}
}
