package gateway

import (
	"net/http"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter/auth"
)

func TestCheckPath(t *testing.T) {
	for _, c := range []struct {
		path, raw string
		matrix    bool
		bad       bool
	}{
		{"/", "", false, false},
		{"/a/b.json", "", false, false},
		{"/a/.well-known/x", "", false, false},
		{"/a/../b", "", false, false}, // cleaned by the gateway
		{"/a/./b/", "", false, false},
		{"/a b", "/a%20b", false, false},
		{"/a/b%c", "/a/b%25c", false, false}, // an escaped percent sign alone is data
		{"/cars;color=red/x", "", true, false},
		{"/cars/x;v=1", "", true, false},
		{"/private;x", "", true, false}, // the route decides
		{"/private./x", "", false, true},
		{"/private.", "", false, true},
		{"/a/...", "", false, true},
		{"/a/..;/b", "", true, true},
		{"/a/.;x=1/b", "", true, true},
		{"/a/..;", "", true, true},
		{"/a\x00/b", "/a%00/b", false, true},
		{"/a\x7f", "/a%7F", false, true},
		{"/a\tb", "/a%09b", false, true},
		{"/a\\b", "/a%5Cb", false, true},
		{"/a/../b", "/a/%2e%2e/b", false, true},
		{"/a/b.c", "/a/b%2Ec", false, true},
		{"/a/b/c", "/a/b%2fc", false, true},
		{"/a/%2e%2e/b", "/a/%252e%252e/b", false, true},
		{"/a/%5c", "/a/%255C", false, true},
	} {
		matrix, problem := checkPath(c.path, c.raw)
		if matrix != c.matrix || (problem != "") != c.bad {
			t.Errorf("checkPath(%q, %q) = %v, %q; want matrix %v, refused %v", c.path, c.raw, matrix, problem, c.matrix, c.bad)
		}
	}
}

func TestWithoutMatrix(t *testing.T) {
	for in, want := range map[string]string{
		"/cars;color=red/x":   "/cars/x",
		"/cars;a;b/x;y":       "/cars/x",
		"/private;x":          "/private",
		"/private;/x":         "/private/x",
		"/a;x=1/b;y=2/c;z=3/": "/a/b/c/",
		"/plain":              "/plain",
	} {
		if got := withoutMatrix(in); got != want {
			t.Errorf("withoutMatrix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRemoveConnectionListed(t *testing.T) {
	h := http.Header{
		"Connection":   {"keep-alive, X-User-Id", "x-request-id,Upgrade"},
		"X-User-Id":    {"admin"},
		"X-Request-Id": {"forged"},
		"Upgrade":      {"websocket"},
		"X-Kept":       {"1"},
	}
	if n := removeConnectionListed(h, h["Connection"]); n != 2 {
		t.Errorf("removed %d, want 2", n)
	}
	want := http.Header{"Connection": {"keep-alive, Upgrade"}, "Upgrade": {"websocket"}, "X-Kept": {"1"}}
	if !equalHeaders(h, want) {
		t.Errorf("header = %v, want %v", h, want)
	}

	h = http.Header{"Connection": {"X-Hop"}, "X-Hop": {"1"}}
	removeConnectionListed(h, h["Connection"])
	if len(h) != 0 {
		t.Errorf("header = %v, want empty (no Connection left)", h)
	}

	h = http.Header{"Connection": {"keep-alive"}}
	if n := removeConnectionListed(h, h["Connection"]); n != 0 || h.Get("Connection") != "keep-alive" {
		t.Errorf("keep-alive alone: removed %d, header %v", n, h)
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestIdentitySet(t *testing.T) {
	cfg := &config.Config{
		Server:         config.Server{IdentityHeaders: []string{"X-Remote-User"}},
		DefaultFilters: []config.Filter{{Name: "auth", Spec: &auth.Config{Headers: map[string]string{"tenant": "x-tenant-id"}}}},
		Routes: []*config.Route{
			{Filters: []config.Filter{{Name: "auth", Spec: &auth.Config{}}}}, // default: X-User-Id
			{Filters: []config.Filter{{Name: "auth", Spec: &auth.Config{Headers: map[string]string{"roles": "X-Roles"}}}}},
			nil,
		},
	}
	s := newIdentitySet(cfg)
	for _, name := range []string{"X-Remote-User", "X_remote_user", "X-User-Id", "X_user_id", "X-USER_ID", "X-Tenant-Id", "X-Roles", "X_roles"} {
		if !s.has(name) {
			t.Errorf("%s is not an identity header", name)
		}
	}
	for _, name := range []string{"X-User", "X-User-Ids", "Authorization", "X-Request-Id", "X-Rolez", ""} {
		if s.has(name) {
			t.Errorf("%s is an identity header", name)
		}
	}
}

func TestTrimHostDots(t *testing.T) {
	for in, want := range map[string]string{
		"api.example.com.":      "api.example.com",
		"api.example.com..":     "api.example.com",
		"api.example.com.:8080": "api.example.com:8080",
		"api.example.com:8080":  "api.example.com:8080",
		"api.example.com":       "api.example.com",
		"[::1]:8080":            "[::1]:8080",
		"::1":                   "::1",
		"":                      "",
	} {
		if got := trimHostDots(in); got != want {
			t.Errorf("trimHostDots(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCleanHeadersDoesNotAllocate: a plain request (keep-alive, no
// identity header, a plain path) costs the edge no allocation.
func TestCleanHeadersDoesNotAllocate(t *testing.T) {
	g := &Gateway{metrics: newMetrics(prometheus.NewRegistry(), zero)}
	tbl := &table{identity: newIdentitySet(&config.Config{Server: config.Server{IdentityHeaders: config.DefaultIdentityHeaders()}})}
	r, _ := http.NewRequest("GET", "http://api.example.com/svc/items/42", nil)
	r.Header = http.Header{"Connection": {"keep-alive"}, "User-Agent": {"x"}, "Accept": {"*/*"}, "X_Forwarded_Proto": {"https"}}
	allocs := testing.AllocsPerRun(100, func() {
		g.cleanHeaders(tbl, r)
		if _, problem := checkPath(r.URL.Path, r.URL.RawPath); problem != "" {
			t.Fatal(problem)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
	if len(r.Header) != 4 {
		t.Errorf("header = %v, want it untouched", r.Header)
	}
}

// BenchmarkEdge measures what the edge adds to a plain request: the pass
// over its header names and over its path.
func BenchmarkEdge(b *testing.B) {
	g := &Gateway{metrics: newMetrics(prometheus.NewRegistry(), zero)}
	tbl := &table{identity: newIdentitySet(&config.Config{Server: config.Server{IdentityHeaders: config.DefaultIdentityHeaders()}})}
	r, _ := http.NewRequest("GET", "http://api.example.com/svc500/items/42", nil)
	r.Header = http.Header{"Connection": {"keep-alive"}, "User-Agent": {"Mozilla/5.0"}, "Accept": {"application/json"},
		"Accept-Encoding": {"gzip, deflate, br"}, "Accept-Language": {"en-US,en;q=0.9"}, "Cookie": {"session=abc"}}
	b.ReportAllocs()
	for b.Loop() {
		g.cleanHeaders(tbl, r)
		_, _ = checkPath(r.URL.Path, r.URL.RawPath)
	}
}
