package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/observe"
	"github.com/dubbogw/dubbogw/registry"
)

// summaryAnswer is the part of /admin/summary the tests read.
type summaryAnswer struct {
	Status     string            `json:"status"`
	Ready      bool              `json:"ready"`
	Version    string            `json:"version"`
	Uptime     float64           `json:"uptime_seconds"`
	Requests   uint64            `json:"requests"`
	Errors     uint64            `json:"errors"`
	ErrorCodes map[string]uint64 `json:"error_codes"`
	Latency    struct {
		Bounds     []float64
		Cumulative []uint64
		Count      uint64
	}
	Limits []struct {
		Scope      string
		Limit      int
		Saturation float64
	}
	Routes []struct {
		Name             string
		Requests, Errors uint64
		Breakers         *struct {
			Route               bool
			Providers, Services int
		}
	}
	Breakers   struct{ Routes, Providers, Services int }
	Registries []struct {
		Name, Type, State string
		Services          int
		Providers         *int
		Pending           int
	}
	Reload struct {
		Successes, Failures uint64
		LastSuccessful      bool   `json:"last_successful"`
		LastError           string `json:"last_error"`
	}
	Redis *struct{ Connected bool }
}

// TestAdminSummary: after known traffic, /admin/summary counts it by
// route, with the errors, the latency histogram, the limits, the breakers
// not closed (a pass-through route's service breaker among them), the
// registries and the reloads; behind the admin token, as every /admin
// endpoint. /admin/services shows the service's open breaker beside it.
func TestAdminSummary(t *testing.T) {
	const token = "summary-token-0123456789abcdef"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	live := startProvider(t)
	up := echoUpstream(t, "up")
	routes := fmt.Sprintf(`
registries:
  demo:
    providers:
      com.example.demo.UserService: [%q]
      com.example.demo.DeadService: [%q]
upstreams: {up: {targets: [{url: %q}]}}
routes:
  - {name: http, match: {prefix: /http}, upstream: up, max_in_flight: 10}
  - name: user
    match: {methods: [GET], path: "/users/{id}"}
    dubbo: {registry: demo, interface: com.example.demo.UserService, method: getUser,
            params: [{type: java.lang.String, from: path, name: id}]}
  - name: generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: demo, passthrough: {allow: [com.example.demo.*]}, breaker: {max_failures: 1, open_for: 1m}}
`, live, dead, up.URL)
	withToken := strings.Replace(baseYAML, "admin:\n", "admin:\n  token: "+token+"\n", 1)
	tg := startGWRaw(t, withToken+routes)
	auth := []string{"Authorization", "Bearer " + token}

	if a := do(t, "GET", tg.admin+"/admin/summary", nil); a.status != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", tg.admin+"/livez", nil); a.status != 200 {
		t.Errorf("/livez without the token: %d", a.status)
	}

	call := func(method, path, body string, status int) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		if a := do(t, method, tg.base+path, r); a.status != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, a.status, a.body, status)
		}
	}
	for range 3 {
		call("GET", "/http/x", "", 200)
	}
	for range 2 {
		call("GET", "/users/7", "", 200)
	}
	call("GET", "/nothing", "", 404)
	call("POST", "/dubbo/com.example.demo.DeadService/ping", `{"types":[],"args":[]}`, 502)
	call("POST", "/dubbo/com.example.demo.DeadService/ping", `{"types":[],"args":[]}`, 503)
	want := map[string]int{"http": 3, "user": 2, "none": 1, "generic": 2}

	// A request is counted once its handler returned, which may be just
	// after the client read the answer: wait for every count to be in.
	var s summaryAnswer
	deadline := time.Now().Add(10 * time.Second)
	for {
		s = summaryAnswer{}
		body := getJSON(t, tg.admin+"/admin/summary", &s, auth...)
		codes := uint64(0)
		for _, n := range s.ErrorCodes {
			codes += n
		}
		if s.Requests == 8 && s.Latency.Count == 8 && codes == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 8 requests (3 errors) were never all counted:\n%s", body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	body := getJSON(t, tg.admin+"/admin/summary", &s, auth...)
	if s.Status != "ready" || !s.Ready || s.Version == "" || s.Uptime <= 0 {
		t.Errorf("status %q ready %v version %q uptime %v", s.Status, s.Ready, s.Version, s.Uptime)
	}
	if s.Errors != 2 {
		t.Errorf("errors (5xx) = %d, want 2 (502, 503)", s.Errors)
	}
	for code, n := range map[string]uint64{"NO_ROUTE": 1, "BAD_GATEWAY": 1, "BREAKER_OPEN": 1} {
		if s.ErrorCodes[code] != n {
			t.Errorf("error_codes[%s] = %d, want %d (%v)", code, s.ErrorCodes[code], n, s.ErrorCodes)
		}
	}
	if s.Latency.Count != 8 || len(s.Latency.Bounds) == 0 || len(s.Latency.Cumulative) != len(s.Latency.Bounds) ||
		s.Latency.Cumulative[len(s.Latency.Cumulative)-1] > 8 {
		t.Errorf("latency: %+v", s.Latency)
	}
	got := map[string]int{}
	for _, r := range s.Routes {
		got[r.Name] = int(r.Requests)
		switch r.Name {
		case "generic":
			if r.Errors != 2 || r.Breakers == nil || r.Breakers.Services != 1 || r.Breakers.Providers != 1 || r.Breakers.Route {
				t.Errorf("the pass-through route: %+v %+v", r, r.Breakers)
			}
		case "user":
			if r.Errors != 0 || r.Breakers == nil || *r.Breakers != (struct {
				Route               bool
				Providers, Services int
			}{}) {
				t.Errorf("the method route: %+v", r)
			}
		case "http":
			if r.Breakers != nil {
				t.Errorf("an HTTP route with Dubbo breakers: %+v", r.Breakers)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests by route %v, want %v", got, want)
	}
	if s.Breakers != (struct{ Routes, Providers, Services int }{0, 1, 1}) {
		t.Errorf("breakers not closed: %+v, want the dead provider's and service's", s.Breakers)
	}
	if len(s.Registries) != 1 || s.Registries[0].Name != "demo" || s.Registries[0].Type != "static" ||
		s.Registries[0].Services != 2 || s.Registries[0].Providers == nil || *s.Registries[0].Providers != 2 || s.Registries[0].Pending != 0 {
		t.Errorf("registries: %s", body)
	}
	if len(s.Limits) != 2 || s.Limits[0].Scope != "global" || s.Limits[1].Scope != "http" || s.Limits[1].Limit != 10 {
		t.Errorf("limits: %+v", s.Limits)
	}
	if s.Redis != nil {
		t.Errorf("redis without a redis section: %+v", s.Redis)
	}
	if s.Reload.Successes != 0 || s.Reload.Failures != 0 || !s.Reload.LastSuccessful {
		t.Errorf("reload before any: %+v", s.Reload)
	}

	// The service's breaker, beside the service.
	var services struct {
		Services []struct {
			Service         string
			ServiceBreakers map[string]string `json:"service_breakers"`
		}
	}
	getJSON(t, tg.admin+"/admin/services", &services, auth...)
	shown := map[string]string{}
	for _, sv := range services.Services {
		shown[sv.Service] = fmt.Sprint(sv.ServiceBreakers)
	}
	if shown["com.example.demo.DeadService"] != "map[generic:open]" || shown["com.example.demo.UserService"] != "map[]" {
		t.Errorf("service breakers in /admin/services: %v", shown)
	}

	// Reloads: a refused one, then a good one.
	if err := os.WriteFile(tg.path, []byte(withToken+"routes: [{name: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "POST", tg.admin+"/admin/reload", nil, auth...); a.status != 400 {
		t.Fatalf("a bad reload: %d", a.status)
	}
	s = summaryAnswer{}
	getJSON(t, tg.admin+"/admin/summary", &s, auth...)
	if s.Reload.Failures != 1 || s.Reload.LastSuccessful || s.Reload.LastError == "" {
		t.Errorf("after a refused reload: %+v", s.Reload)
	}
	if err := os.WriteFile(tg.path, []byte(withToken+routes), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "POST", tg.admin+"/admin/reload", nil, auth...); a.status != 200 {
		t.Fatalf("a good reload: %d %s", a.status, a.body)
	}
	s = summaryAnswer{}
	getJSON(t, tg.admin+"/admin/summary", &s, auth...)
	if s.Reload.Successes != 1 || s.Reload.Failures != 1 || !s.Reload.LastSuccessful || s.Reload.LastError != "" {
		t.Errorf("after a good reload: %+v", s.Reload)
	}
}

// bigGateway builds (without starting) a gateway whose static registry
// "big" lists providers providers, ten per service, every service
// subscribed; a method route calls the first service, a pass-through
// route may call any.
func bigGateway(tb testing.TB, providers int) *Gateway {
	tb.Helper()
	services := providers / 10
	g := offlineGateway(tb, bigRegistryYAML("com.example.big.Service", services)+`routes:
  - {name: one, match: {path: /one}, dubbo: {registry: big, interface: com.example.big.Service0, method: m}}
  - {name: generic, match: {methods: [POST], path: "/dubbo/{interface}/{method}"},
     dubbo: {registry: big, passthrough: {allow: [com.example.big.*]}}}
`)
	reg := g.table.Load().registries["big"]
	for s := range services {
		reg.Subscribe(registry.ServiceKey{Interface: fmt.Sprintf("com.example.big.Service%d", s)})
	}
	if n := reg.(registry.ProviderCounter).ProviderCount(); n != providers {
		tb.Fatalf("%d providers subscribed, want %d", n, providers)
	}
	return g
}

// bigRegistryYAML is a static registry "big" of services <prefix>0 … with
// ten providers each, every address its own.
func bigRegistryYAML(prefix string, services int) string {
	var yaml strings.Builder
	yaml.WriteString("registries:\n  big:\n    providers:\n")
	for s := range services {
		fmt.Fprintf(&yaml, "      %s%d: [", prefix, s)
		for p := range 10 {
			if p > 0 {
				yaml.WriteString(", ")
			}
			n := s*10 + p
			fmt.Fprintf(&yaml, `"10.%d.%d.%d:20880"`, n>>16&255, n>>8&255, n&255)
		}
		yaml.WriteString("]\n")
	}
	return yaml.String()
}

// offlineGateway builds, without starting, a gateway of baseYAML and yaml,
// shut down when the test ends.
func offlineGateway(tb testing.TB, yaml string) *Gateway {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(baseYAML+yaml), 0o644); err != nil {
		tb.Fatal(err)
	}
	g, err := New(Options{
		Load:     func() (*config.Config, error) { return config.Load(path) },
		Logger:   slog.New(slog.DiscardHandler),
		Registry: observe.NewRegistry(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return g
}

// TestAdminSummaryDoesNotGrowWithProviders: from 100 providers (10
// services) to 2,000 (200 services), /admin/summary is the same answer
// but for its figures, and allocates as much: its cost is the routes' and
// the registries', not the providers'.
func TestAdminSummaryDoesNotGrowWithProviders(t *testing.T) {
	digits := regexp.MustCompile(`[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?`)
	var shapes [2]string
	var sizes, allocs [2]float64
	for i, n := range []int{100, 2000} {
		g := bigGateway(t, n)
		h := g.adminHandler(g.startCfg)
		get := func() *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/summary", nil))
			if rec.Code != 200 {
				t.Fatalf("%d providers: %d %s", n, rec.Code, rec.Body)
			}
			return rec
		}
		body := get().Body.String()
		var s summaryAnswer
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Registries) != 1 || s.Registries[0].Providers == nil || *s.Registries[0].Providers != n || s.Registries[0].Services != n/10 {
			t.Fatalf("%d providers: registries %s", n, body)
		}
		shapes[i], sizes[i] = digits.ReplaceAllString(body, "0"), float64(len(body))
		if !raceEnabled { // the race detector's allocations would blur the count
			allocs[i] = testing.AllocsPerRun(20, func() { get() })
		}
	}
	if shapes[0] != shapes[1] {
		t.Errorf("the summary's shape changed from 100 to 2,000 providers:\n%s\n---\n%s", shapes[0], shapes[1])
	}
	// The figures may gain digits (2000 is one more than 100): a few bytes.
	if sizes[1] > sizes[0]+16 {
		t.Errorf("summary: %v bytes at 100 providers, %v at 2,000", sizes[0], sizes[1])
	}
	if allocs[1] > allocs[0]*1.05+5 {
		t.Errorf("summary: %v allocations at 100 providers, %v at 2,000", allocs[0], allocs[1])
	}
	t.Logf("100 providers: %v bytes, %v allocs; 2,000: %v bytes, %v allocs", sizes[0], allocs[0], sizes[1], allocs[1])
}

// BenchmarkAdminSummary measures /admin/summary, what an open dashboard
// asks every second, against /metrics, what it asked before, as the
// registry grows: 100 providers (10 services), 2,000 (200) and 50,000
// (5,000 services of 10, issue 19's size).
func BenchmarkAdminSummary(b *testing.B) {
	for _, n := range []int{100, 2000, 50000} {
		g := bigGateway(b, n)
		h := g.adminHandler(g.startCfg)
		for _, target := range []string{"/admin/summary", "/metrics"} {
			b.Run(fmt.Sprintf("providers=%d%s", n, strings.ReplaceAll(target, "/", "_")), func(b *testing.B) {
				req := httptest.NewRequest("GET", target, nil)
				b.ReportAllocs()
				size := 0
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatalf("%s: %d", target, rec.Code)
					}
					size = rec.Body.Len()
				}
				b.ReportMetric(float64(size), "bytes/answer")
			})
		}
	}
}
