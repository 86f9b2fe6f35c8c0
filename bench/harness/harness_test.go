package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/registry"
)

// TestMain runs the harness's subcommands when the benchmark under test
// starts this test binary as its own children.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "upstream", "provider", "load":
			os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// requireTools skips without nginx or redis-server, and fails under CI,
// where scripts/test.sh installs them.
func requireTools(t *testing.T) {
	t.Helper()
	for _, name := range []string{"nginx", "redis-server"} {
		if lookTool(name) != "" {
			continue
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI=true: scripts/test.sh installs it)", name)
		}
		t.Skipf("%s is not installed (Debian package nginx / redis-server)", name)
	}
}

// TestBenchSmoke runs the whole harness with tiny durations and a small
// plan: every process starts, every row answers the same bytes, every run
// succeeds without errors, and one row is profiled.
func TestBenchSmoke(t *testing.T) {
	requireTools(t)
	if testing.Short() {
		t.Skip("builds the gateway and starts nginx, Redis and the services")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "table.md")
	o := &options{
		duration: 100 * time.Millisecond, warmup: 20 * time.Millisecond, rounds: 1,
		out: out, profile: "always", maxProfiles: 1, profileDir: t.TempDir(),
		latencyLoad: 0.5, timeout: time.Minute,
		// Functional checks: not the 50 ms default, which a loaded machine
		// (the whole suite at once) can miss.
		redisTimeout: 10 * time.Second,
	}
	spec := planSpec{scalingConns: []int{1, 8}, mainConns: 8, routeCounts: []int{baseRoutes, 100}, providerCounts: []int{baseProviders, 10}}
	var stdout bytes.Buffer
	if err := bench(ctx, o, spec, &stdout, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	report := stdout.String()
	written, err := os.ReadFile(out)
	if err != nil || string(written) != report {
		t.Fatalf("-out file: %v; differs from stdout: %v", err, string(written) != report)
	}
	var rows []string
	for _, line := range strings.Split(report, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| path") && !strings.HasPrefix(line, "| ---") {
			rows = append(rows, line)
		}
	}
	// 1, 8 conns: rows 1–4 each; at 8: standard transport, the two HTTPS
	// rows, the Triple row, two auth rows, 100 routes, 10 providers.
	if len(rows) != 16 {
		t.Fatalf("%d table rows, want 16:\n%s", len(rows), report)
	}
	for _, want := range []string{"2. nginx → upstream | 8 |", "3. dubbogw → upstream, standard transport | 8 |", "5. dubbogw → Dubbo, Redis token auth | 8 |", "3. dubbogw → upstream, 100 routes | 8 |", "4. dubbogw → Dubbo, 10 providers | 8 |",
		"6. HTTPS → nginx → upstream | 8 |", "6. HTTPS → dubbogw → upstream | 8 |", "7. dubbogw → Triple provider | 8 |"} {
		if !strings.Contains(report, "| "+want) {
			t.Errorf("no row %q in\n%s", want, report)
		}
	}
	for _, r := range rows {
		if !strings.Contains(r, "| 0 / 0 |") {
			t.Errorf("row with errors or dropped calls: %s", r)
		}
	}
	if !strings.Contains(report, "- 6. HTTPS → dubbogw → upstream, 8 conns: req/s ≥ 0.8× HTTPS through nginx (") {
		t.Errorf("no HTTPS goal in the report:\n%s", report)
	}
	if n := strings.Count(report, "Profile of the gateway during"); n != 1 {
		t.Errorf("%d profiles in the report, want 1 (-max-profiles 1):\n%s", n, report)
	}
	if !strings.Contains(report, "flat%") {
		t.Errorf("no pprof -top output in the report:\n%s", report)
	}
}

func TestGoals(t *testing.T) {
	res := func(thr float64, p99 time.Duration) []*loadResult {
		return []*loadResult{{Throughput: thr, P99: p99}}
	}
	mk := func(k kind, thr float64, p99 time.Duration) *row {
		return &row{kind: k, conns: 64, routes: baseRoutes, providers: baseProviders, peaks: res(thr, 0), lats: res(0, p99)}
	}
	tests := []struct {
		name                           string
		gwHTTP, gwP99, dubbo, httpAuth float64
		gwTLS                          float64 // nginx's HTTPS row: 500
		want                           map[kind]bool
	}{
		{"all on the line", 1000, 1.2, 800, 900, 400, map[kind]bool{kindGatewayHTTP: true, kindGatewayDubbo: true, kindGatewayHTTPAuth: true, kindGatewayHTTPTLS: true}},
		{"throughput under nginx", 990, 1.0, 800, 900, 500, map[kind]bool{kindGatewayHTTP: false, kindGatewayDubbo: true, kindGatewayHTTPAuth: true, kindGatewayHTTPTLS: true}},
		{"p99 over 1.2x", 1100, 1.25, 880, 990, 600, map[kind]bool{kindGatewayHTTP: false, kindGatewayDubbo: true, kindGatewayHTTPAuth: true, kindGatewayHTTPTLS: true}},
		{"dubbo, auth and HTTPS under", 1000, 1.0, 790, 890, 399, map[kind]bool{kindGatewayHTTP: true, kindGatewayDubbo: false, kindGatewayHTTPAuth: false, kindGatewayHTTPTLS: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plan{rows: []*row{
				mk(kindDirect, 2000, 5*time.Millisecond),
				mk(kindNginx, 1000, 10*time.Millisecond),
				mk(kindGatewayHTTP, tt.gwHTTP, time.Duration(tt.gwP99*10*float64(time.Millisecond))),
				mk(kindGatewayDubbo, tt.dubbo, 0),
				mk(kindGatewayHTTPAuth, tt.httpAuth, 0),
				mk(kindNginxTLS, 500, 0),
				mk(kindGatewayHTTPTLS, tt.gwTLS, 0),
				{kind: kindGatewayHTTP, conns: 64, routes: 1000, providers: baseProviders, peaks: res(1, 0), lats: res(0, time.Hour)},
			}}
			got := map[kind]bool{}
			for _, g := range p.goals() {
				got[g.row.kind] = g.met
			}
			for k, want := range tt.want {
				if met, ok := got[k]; !ok || met != want {
					t.Errorf("%s: met %v (judged: %v), want %v", (&row{kind: k, routes: baseRoutes, providers: baseProviders}).name(), met, ok, want)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("goals judged %v, want only %v (cost-growth rows have none)", got, tt.want)
			}
		})
	}
}

func TestSetLatencyRates(t *testing.T) {
	r := func(conns int, thr ...float64) *row {
		x := &row{conns: conns, routes: baseRoutes, providers: baseProviders}
		for _, v := range thr {
			x.peaks = append(x.peaks, &loadResult{Throughput: v})
		}
		return x
	}
	p := &plan{rows: []*row{r(1, 100, 300, 200), r(1, 900), r(64, 5000, 4000), r(64, 1000, 9000, 10000)}}
	p.setLatencyRates(0.5)
	// Medians: 200, 900 (conns 1) and 4500, 9000 (conns 64).
	for i, want := range []float64{100, 100, 2250, 2250} {
		if got := p.rows[i].rate; got != want {
			t.Errorf("row %d: rate %v, want %v", i, got, want)
		}
	}
}

// TestGatewayYAML checks the generated configuration is one the gateway
// accepts, with the route count asked for.
func TestGatewayYAML(t *testing.T) {
	providers := make([]string, 10)
	for i := range providers {
		providers[i] = fmt.Sprintf("127.0.0.1:%d", 20000+i)
	}
	certs, err := writeBenchCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, routes := range []int{baseRoutes, 1000} {
		redisTimeout := time.Duration(i) * 10 * time.Second // the default, then 10 s
		yml := gatewayYAML(gatewaySpec{
			listen: "127.0.0.1:18080", admin: "127.0.0.1:19090", accessLog: filepath.Join(t.TempDir(), "access.log"),
			redis: "127.0.0.1:6379", upstream: "http://127.0.0.1:18081", tokenPrefix: "t:",
			providers: providers, triple: "127.0.0.1:28882", providerCounts: []int{1, 10}, routes: routes, idlePerTarget: 512,
			redisTimeout: redisTimeout,
			tlsListen:    "127.0.0.1:18443", certFile: certs.certFile, keyFile: certs.keyFile,
		})
		if !strings.Contains(yml, "tls:\n  listen: \"127.0.0.1:18443\"") {
			t.Errorf("no TLS listener in\n%s", yml)
		}
		path := filepath.Join(t.TempDir(), "gw.yaml")
		if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err == nil {
			err = config.Validate(cfg)
		}
		if err == nil {
			err = gateway.Check(cfg)
		}
		if err != nil {
			t.Fatalf("%d routes: %v\n%s", routes, err, yml)
		}
		if want := cmp.Or(redisTimeout, config.DefaultRedisTimeout.D()); cfg.Redis.Timeout.D() != want ||
			redisTimeout > 0 && strings.Count(yml, "timeout: 10s") != 3 {
			t.Errorf("redis timeout %s, want %s (and the two auth filters')", cfg.Redis.Timeout.D(), want)
		}
		if len(cfg.Routes) != routes {
			t.Errorf("%d routes configured, want %d", len(cfg.Routes), routes)
		}
		if !cfg.Admin.Pprof || len(cfg.Registries["p10"].Spec.(*registry.StaticConfig).Providers) != 1 {
			t.Errorf("pprof %v, registry p10 %+v", cfg.Admin.Pprof, cfg.Registries["p10"])
		}
	}
}

// TestNginxConf has nginx itself check the generated configuration.
func TestNginxConf(t *testing.T) {
	nginx := lookTool("nginx")
	if nginx == "" {
		requireTools(t)
	}
	prefix := t.TempDir()
	certs, err := writeBenchCerts(prefix)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConf(prefix, "127.0.0.1:18080", "127.0.0.1:18081", 512, "127.0.0.1:18443", certs)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nginx, "-t", "-p", prefix+"/", "-c", conf, "-e", filepath.Join(prefix, "error.log")).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	for _, want := range []string{"keepalive 512;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, "daemon off;",
		"listen 127.0.0.1:18443 ssl;", "ssl_certificate " + certs.certFile + ";"} {
		if !strings.Contains(nginxConf(prefix, "a", "b", 512, "127.0.0.1:18443", certs), want) {
			t.Errorf("config lacks %q", want)
		}
	}
	if strings.Contains(nginxConf(prefix, "a", "b", 512, "", nil), "ssl") {
		t.Error("a config without a TLS listener mentions ssl")
	}
}

func TestDriveLoad(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(serveUser))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	closed, err := driveLoad(ctx, srv.URL+"/http/users/7", 4, 100*time.Millisecond, 10*time.Millisecond, 0, 1000, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if closed.OK == 0 || closed.Errors != 0 || closed.P99 <= 0 || closed.P50 > closed.P99 {
		t.Errorf("closed loop: %+v", closed)
	}
	open, err := driveLoad(ctx, srv.URL+"/http/users/7", 2, 200*time.Millisecond, 0, 100, 1000, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if open.OK+open.Dropped != 20 || open.Errors != 0 {
		t.Errorf("open loop at 100/s for 200ms: %+v, want 20 calls", open)
	}
	failing, err := driveLoad(ctx, srv.URL+"/nothing", 2, 50*time.Millisecond, 0, 0, 100, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if failing.OK != 0 || failing.Errors == 0 || !strings.Contains(failing.FirstError, "404") {
		t.Errorf("a 404 target: %+v, want every call an error", failing)
	}
	// HTTPS: the target's certificate is checked against the CA given.
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(serveUser))
	defer tlsSrv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	secure, err := driveLoad(ctx, tlsSrv.URL+"/http/users/7", 2, 100*time.Millisecond, 0, 0, 1000, nil, roots)
	if err != nil {
		t.Fatal(err)
	}
	if secure.OK == 0 || secure.Errors != 0 {
		t.Errorf("HTTPS with the CA: %+v", secure)
	}
	untrusted, err := driveLoad(ctx, tlsSrv.URL+"/http/users/7", 1, 50*time.Millisecond, 0, 0, 100, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if untrusted.OK != 0 || !strings.Contains(untrusted.FirstError, "certificate") {
		t.Errorf("HTTPS without the CA: %+v", untrusted)
	}
	if _, err := driveLoad(ctx, "http://example.com/", 1, time.Millisecond, 0, 0, 1, nil, nil); err == nil {
		t.Error("a target off loopback was accepted")
	}
}

func TestHeaderFlags(t *testing.T) {
	var h headerFlags
	if err := h.Set("Authorization: Bearer a:b"); err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0] != "Authorization" || h[1] != "Bearer a:b" {
		t.Errorf("%q", h)
	}
	if err := h.Set("no colon"); err == nil {
		t.Error(`"no colon" accepted`)
	}
}

func TestReadyLine(t *testing.T) {
	r := newReadyLine()
	for _, part := range []string{"rea", "dy 127.0.0.1:1", "\nmore\n"} {
		if _, err := r.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case line := <-r.line:
		if line != "ready 127.0.0.1:1" {
			t.Errorf("line %q", line)
		}
	default:
		t.Fatal("no line")
	}
	if _, err := r.Write([]byte("ready again\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-r.line:
		t.Errorf("a second line %q", line)
	default:
	}
}

// TestChildStop starts the upstream subcommand as a child and stops it:
// it must have served, and must no longer listen afterwards.
func TestChildStop(t *testing.T) {
	self, err := selfCommand()
	if err != nil {
		t.Fatal(err)
	}
	c, addr, err := startReporting(t.TempDir(), "upstream", 20*time.Second, append(self, "upstream")...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	status, body, err := httpGet(ctx, http.DefaultClient, "http://"+addr+"/http/users/5")
	if err != nil || status != http.StatusOK || !strings.Contains(body, `"id":"5"`) {
		t.Fatalf("upstream answered %d %q, %v", status, body, err)
	}
	c.stop()
	select {
	case <-c.done:
	default:
		t.Fatal("stop returned before the child exited")
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Fatal("the upstream still listens after stop")
	}
}
