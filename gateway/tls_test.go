package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// tlsFixture is a gateway with a TLS listener in front of an upstream
// that echoes the identity header it got; its certificate files live in
// dir as Kubernetes mounts a Secret (each name a symbolic link through
// ..data, which a rotation swaps atomically).
type tlsFixture struct {
	gw      *testGW
	tlsAddr string
	ca      *testcert.CA
	dir     string
}

// rotate writes files (name → content) into a new directory and swaps
// ..data to it, as the kubelet does.
func (f *tlsFixture) rotate(t *testing.T, files map[string][]byte) {
	t.Helper()
	next := filepath.Join(f.dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(next, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		testcert.Write(t, next, name, data)
	}
	tmp := filepath.Join(f.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(next), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func startTLSGateway(t *testing.T, extra string) *tlsFixture {
	t.Helper()
	f := &tlsFixture{ca: testcert.NewCA(t, "dubbogw test CA"), dir: t.TempDir()}
	api := f.ca.Server(t, time.Time{}, "api.example.com", "127.0.0.1")
	admin := f.ca.Server(t, time.Time{}, "admin.example.com")
	files := map[string][]byte{"api.pem": api.CertPEM, "api-key.pem": api.KeyPEM,
		"admin.pem": admin.CertPEM, "admin-key.pem": admin.KeyPEM, "ca.pem": f.ca.PEM}
	f.rotate(t, files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(f.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "subject=%s", r.Header.Get("X-Client-Subject"))
	}))
	t.Cleanup(upstream.Close)
	p := func(name string) string { return filepath.Join(f.dir, name) }
	f.gw = startGW(t, fmt.Sprintf(`
tls:
  listen: "127.0.0.1:0"
  certificates:
    - {cert_file: %s, key_file: %s}
    - {cert_file: %s, key_file: %s}
%s
upstreams:
  u: {targets: [{url: %q}]}
routes:
  - {name: echo, match: {prefix: /}, upstream: u}
`, p("api.pem"), p("api-key.pem"), p("admin.pem"), p("admin-key.pem"), strings.ReplaceAll(extra, "CA_FILE", p("ca.pem")), upstream.URL))
	f.tlsAddr = f.gw.TLSAddr()
	return f
}

// client is an HTTPS client trusting the test CA, for serverName, with
// HTTP/2 when h2, TLS up to maxVersion (0: any).
func (f *tlsFixture) client(serverName string, h2 bool, maxVersion uint16, certs ...tls.Certificate) *http.Client {
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool(), ServerName: serverName, MaxVersion: maxVersion, Certificates: certs},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, f.tlsAddr)
		},
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestTLSListener: Go clients over TLS 1.2 and 1.3, HTTP/1.1 and HTTP/2;
// SNI picks between two certificates; curl, an independent client, does
// the same; handshakes are counted and expiries published.
// TestTLSListener runs on each HTTP/1.1 engine: the loop (which does
// the handshakes itself and hands h2 to net/http) and net/http's.
func TestTLSListener(t *testing.T) {
	for _, engine := range []string{config.EngineLoop, config.EngineNetHTTP} {
		t.Run(engine, func(t *testing.T) {
			f := testTLSListener(t, "server: {engine: "+engine+"}")
			if _, std := f.gw.dataTLS.(*http.Server); std != (engine == config.EngineNetHTTP) {
				t.Errorf("engine %s served by %T", engine, f.gw.dataTLS)
			}
		})
	}
}

func testTLSListener(t *testing.T, extra string) *tlsFixture {
	f := startTLSGateway(t, extra)
	for _, c := range []struct {
		name       string
		h2         bool
		maxVersion uint16
		wantProto  string
		wantTLS    uint16
	}{
		{"TLS 1.2, HTTP/1.1", false, tls.VersionTLS12, "HTTP/1.1", tls.VersionTLS12},
		{"TLS 1.3, HTTP/1.1", false, 0, "HTTP/1.1", tls.VersionTLS13},
		{"TLS 1.2, HTTP/2", true, tls.VersionTLS12, "HTTP/2.0", tls.VersionTLS12},
		{"TLS 1.3, HTTP/2", true, 0, "HTTP/2.0", tls.VersionTLS13},
	} {
		resp, err := f.client("api.example.com", c.h2, c.maxVersion).Get("https://api.example.com/x")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Proto != c.wantProto || resp.TLS.Version != c.wantTLS || string(body) != "subject=" {
			t.Errorf("%s: %d %s TLS %x %q", c.name, resp.StatusCode, resp.Proto, resp.TLS.Version, body)
		}
	}
	// SNI: each name gets its certificate.
	for _, name := range []string{"api.example.com", "admin.example.com"} {
		resp, err := f.client(name, false, 0).Get("https://" + name + "/x")
		if err != nil {
			t.Fatalf("SNI %s: %v", name, err)
		}
		resp.Body.Close()
		if got := resp.TLS.PeerCertificates[0].DNSNames[0]; got != name {
			t.Errorf("SNI %s served the certificate of %s", name, got)
		}
	}
	// A client that does not trust the gateway's CA fails its handshake:
	// counted as an error.
	untrusting := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, f.tlsAddr)
	}}}
	if _, err := untrusting.Get("https://api.example.com/x"); err == nil {
		t.Error("a client without the CA completed a handshake")
	}
	testenv.WaitFor(t, 5*time.Second, "the failed handshake counted", func() bool {
		return testenv.MetricValue(t, f.gw.registry, "dubbogw_tls_handshakes_total", map[string]string{"result": "error"}) >= 1
	})
	if n := testenv.MetricValue(t, f.gw.registry, "dubbogw_tls_handshakes_total", map[string]string{"result": "ok"}); n < 6 {
		t.Errorf("%v handshakes counted ok, want at least 6", n)
	}
	if v := testenv.MetricValue(t, f.gw.registry, "dubbogw_tls_cert_not_after_seconds", map[string]string{"cert_file": filepath.Join(f.dir, "api.pem")}); v < float64(time.Now().Unix()) {
		t.Errorf("expiry of api.pem published as %v", v)
	}

	// curl (OpenSSL), HTTP/1.1 and HTTP/2, TLS 1.2 and 1.3.
	curl := testenv.Tool(t, "curl")
	_, port, _ := net.SplitHostPort(f.tlsAddr)
	caFile := filepath.Join(f.dir, "ca.pem")
	for _, args := range [][]string{
		{"--http1.1", "--tlsv1.2", "--tls-max", "1.2"},
		{"--http2", "--tlsv1.3"},
		{"--http2", "--tlsv1.2", "--tls-max", "1.2"},
	} {
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "--cacert", caFile,
			"--resolve", "admin.example.com:" + port + ":127.0.0.1", "-w", " %{http_version} %{http_code}",
			"https://admin.example.com:" + port + "/x"}, args...)...)
		out, err := cmd.CombinedOutput()
		want := " 1.1 200"
		if args[0] == "--http2" {
			want = " 2 200"
		}
		if err != nil || !strings.HasSuffix(string(out), want) {
			t.Errorf("curl %v: %v %q, want ...%q", args, err, out, want)
		}
	}
	return f
}

// TestTLSCertificateRotationUnderLoad: the certificate files are replaced
// on disk (as a Kubernetes Secret is) while clients make new connections
// without pause: new handshakes get the new certificate within 2 s,
// without a restart and without a failed request.
func TestTLSCertificateRotationUnderLoad(t *testing.T) {
	if raceEnabled {
		t.Skip("measures how soon the new certificate is served; runs in the serial pass without -race")
	}
	f := startTLSGateway(t, "")
	var (
		stop            atomic.Bool
		ok, failed      atomic.Int64
		firstNewAt      atomic.Int64 // unix nanoseconds of the first handshake seeing the new certificate
		newSerial       atomic.Pointer[string]
		wg              sync.WaitGroup
		mu              sync.Mutex
		firstErrs       []string
		placeholder     = "none"
		servedCertKey   = func(r *http.Response) string { return r.TLS.PeerCertificates[0].SerialNumber.String() }
		clientPerWorker = func() *http.Client {
			c := f.client("api.example.com", false, 0)
			c.Transport.(*http.Transport).DisableKeepAlives = true // a handshake per request
			return c
		}
	)
	newSerial.Store(&placeholder)
	for range 4 {
		wg.Go(func() {
			c := clientPerWorker()
			for !stop.Load() {
				resp, err := c.Get("https://api.example.com/x")
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if len(firstErrs) < 5 {
						firstErrs = append(firstErrs, err.Error())
					}
					mu.Unlock()
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					continue
				}
				ok.Add(1)
				if servedCertKey(resp) == *newSerial.Load() {
					firstNewAt.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	next := f.ca.Server(t, time.Time{}, "api.example.com", "127.0.0.1")
	serial := next.Cert.SerialNumber.String()
	newSerial.Store(&serial)
	admin := f.ca.Server(t, time.Time{}, "admin.example.com")
	swapped := time.Now()
	f.rotate(t, map[string][]byte{"api.pem": next.CertPEM, "api-key.pem": next.KeyPEM,
		"admin.pem": admin.CertPEM, "admin-key.pem": admin.KeyPEM, "ca.pem": f.ca.PEM})
	testenv.WaitFor(t, 10*time.Second, "a handshake with the new certificate", func() bool { return firstNewAt.Load() != 0 })
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	took := time.Duration(firstNewAt.Load() - swapped.UnixNano())
	t.Logf("%d requests ok, %d failed; the new certificate served %v after the swap", ok.Load(), failed.Load(), took)
	if failed.Load() != 0 {
		t.Errorf("%d requests failed during the rotation: %v", failed.Load(), firstErrs)
	}
	if took > 2*time.Second {
		t.Errorf("the new certificate was served %v after the files changed, want within 2s", took)
	}
	if n := testenv.MetricValue(t, f.gw.registry, "dubbogw_tls_reloads_total", map[string]string{"result": "loaded"}); n != 1 {
		t.Errorf("%v reloads counted, want 1", n)
	}
}

// TestMutualTLS: with client_auth require, a client without a
// certificate is refused at the handshake; one with a certificate of the
// client CA gets through, and its subject reaches the upstream in the
// configured header, which no client can send itself on either listener.
func TestMutualTLS(t *testing.T) {
	for _, engine := range []string{config.EngineLoop, config.EngineNetHTTP} {
		t.Run(engine, func(t *testing.T) { testMutualTLS(t, engine) })
	}
}

func testMutualTLS(t *testing.T, engine string) {
	f := startTLSGateway(t, `  client_auth: require
  client_ca_file: CA_FILE
  client_subject_header: X-Client-Subject
server: {engine: `+engine+`}`)
	if _, err := f.client("api.example.com", false, 0).Get("https://api.example.com/x"); err == nil {
		t.Error("a client without a certificate got through client_auth require")
	}
	alice := f.ca.Client(t, "alice")
	pair, err := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, h2 := range []bool{false, true} {
		req, _ := http.NewRequest("GET", "https://api.example.com/x", nil)
		req.Header.Set("X-Client-Subject", "CN=mallory") // replaced by the verified one
		resp, err := f.client("api.example.com", h2, 0, pair).Do(req)
		if err != nil {
			t.Fatalf("h2 %v: a client with a certificate: %v", h2, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "subject=CN=alice,O=dubbogw tests"; resp.StatusCode != 200 || string(body) != want {
			t.Errorf("h2 %v: %d %q, want %q", h2, resp.StatusCode, body, want)
		}
	}
	// A certificate of another CA is refused.
	stranger := testcert.NewCA(t, "another CA").Client(t, "eve")
	evePair, _ := tls.X509KeyPair(stranger.CertPEM, stranger.KeyPEM)
	if _, err := f.client("api.example.com", false, 0, evePair).Get("https://api.example.com/x"); err == nil {
		t.Error("a certificate of another CA got through")
	}
	// On the plain listener the header is an identity header: removed.
	a := do(t, "GET", f.gw.base+"/x", nil, "X-Client-Subject", "CN=mallory")
	if a.status != 200 || a.body != "subject=" {
		t.Errorf("plain listener with a forged subject: %d %q", a.status, a.body)
	}
}

// TestHTTPSUpstreamWithPrivateCA: an upstream whose certificate a private
// CA signed, which wants a client certificate: reached with the
// upstream's tls (ca_file, cert_file/key_file, server_name); without the
// CA, or naming another server, the gateway answers 502 and sends nothing.
func TestHTTPSUpstreamWithPrivateCA(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "upstream CA")
	server := ca.Server(t, time.Time{}, "backend.internal")
	client := ca.Client(t, "dubbogw-gateway")
	serverPair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int64
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprintf(w, "client=%s", r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	upstream.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	upstream.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test's own
	upstream.StartTLS()
	t.Cleanup(upstream.Close)
	caFile := testcert.Write(t, dir, "ca.pem", ca.PEM)
	certFile, keyFile := testcert.Write(t, dir, "c.pem", client.CertPEM), testcert.Write(t, dir, "k.pem", client.KeyPEM)
	up := func(name, tlsYAML string) string {
		return fmt.Sprintf("  %s: {targets: [{url: %q}], retry: {retries: 0}, tls: %s}\n", name, upstream.URL, tlsYAML)
	}
	g := startGW(t, "upstreams:\n"+
		up("good", fmt.Sprintf("{ca_file: %s, cert_file: %s, key_file: %s, server_name: backend.internal}", caFile, certFile, keyFile))+
		up("no-ca", fmt.Sprintf("{cert_file: %s, key_file: %s, server_name: backend.internal}", certFile, keyFile))+
		up("no-cert", fmt.Sprintf("{ca_file: %s, server_name: backend.internal}", caFile))+
		up("other-name", fmt.Sprintf("{ca_file: %s, cert_file: %s, key_file: %s, server_name: other.internal}", caFile, certFile, keyFile))+`
routes:
  - {name: good, match: {path: /good}, upstream: good}
  - {name: no-ca, match: {path: /no-ca}, upstream: no-ca}
  - {name: no-cert, match: {path: /no-cert}, upstream: no-cert}
  - {name: other-name, match: {path: /other-name}, upstream: other-name}
`)
	if a := do(t, "GET", g.base+"/good", nil); a.status != 200 || a.body != "client=dubbogw-gateway" {
		t.Errorf("/good: %d %q", a.status, a.body)
	}
	for _, path := range []string{"/no-ca", "/other-name", "/no-cert"} {
		before := reached.Load()
		if a := do(t, "GET", g.base+path, nil); a.status != 502 {
			t.Errorf("%s: %d %q, want 502", path, a.status, a.body)
		}
		if reached.Load() != before {
			t.Errorf("%s: the request reached the upstream", path)
		}
	}
}

// TestTLSConnectionCap: a connection over server.max_connections on the
// TLS listener is refused with a TLS alert, which clients report (Go's
// crypto/tls and curl's OpenSSL: "internal error"), not a plain-text 503
// they would read as a protocol error. It is counted, and the slot is
// free again once the connection holding it closes.
func TestTLSConnectionCap(t *testing.T) {
	f := startTLSGateway(t, "server: {max_connections: 1}")
	cfg := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "api.example.com"}
	holder, err := tls.Dial("tcp", f.tlsAddr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	const tries = 20
	for i := range tries {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", f.tlsAddr, cfg)
		if err == nil {
			c.Close()
			t.Fatalf("try %d: a connection over the cap completed its handshake", i)
		}
		if !strings.Contains(err.Error(), "remote error: tls: internal error") {
			t.Fatalf("try %d: %v, want the gateway's alert", i, err)
		}
	}
	curl := testenv.Tool(t, "curl")
	_, port, _ := net.SplitHostPort(f.tlsAddr)
	out, err := exec.Command(curl, "-sS", "--max-time", "10", "--cacert", filepath.Join(f.dir, "ca.pem"),
		"--resolve", "api.example.com:"+port+":127.0.0.1", "https://api.example.com:"+port+"/x").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "internal error") {
		t.Errorf("curl over the cap: %v %q, want the alert", err, out)
	}
	if n := testenv.MetricValue(t, f.gw.registry, "dubbogw_connections_rejected_total", map[string]string{"reason": "total"}); n != tries+1 {
		t.Errorf("rejected{reason=total} = %v, want %d", n, tries+1)
	}
	// The connection holding the slot serves, and once it is closed the
	// slot is free.
	if _, err := holder.Write([]byte("GET /x HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = holder.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(holder); !strings.HasPrefix(string(b), "HTTP/1.1 200 ") {
		t.Fatalf("the connection within the cap read %q", b)
	}
	testenv.WaitFor(t, 10*time.Second, "a new connection accepted once the slot is free", func() bool {
		resp, err := f.client("api.example.com", false, 0).Get("https://api.example.com/x")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}
