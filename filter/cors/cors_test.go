package cors_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/cors"
)

// upstream stands for a proxied service that sends its own CORS headers,
// which the filter must replace.
func upstream(called *bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*called = true
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "DELETE")
		w.Header().Add("Vary", "Accept-Encoding")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("hello"))
	})
}

func newHandler(t *testing.T, cfg cors.Config, next http.Handler) http.Handler {
	t.Helper()
	f, err := cors.New(&cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f.Wrap(next)
}

var (
	strict = cors.Config{
		AllowOrigins:     []string{"https://app.example.com", "https://*.example.org"},
		AllowMethods:     []string{"GET", "PUT"},
		AllowHeaders:     []string{"Content-Type", "X-Token"},
		ExposeHeaders:    []string{"X-Total", "X-Page"},
		AllowCredentials: true,
		MaxAge:           config.Duration(10 * time.Minute),
	}
	public = cors.Config{AllowOrigins: []string{"*"}, AllowHeaders: []string{"*"}}
)

func TestPreflight(t *testing.T) {
	tests := []struct {
		name    string
		cfg     cors.Config
		origin  string
		method  string
		reqHdrs string
		status  int
		want    map[string]string // "" means absent
		errText string
	}{
		{
			name: "allowed exact origin", cfg: strict, origin: "https://app.example.com", method: "PUT", reqHdrs: "x-token",
			status: http.StatusNoContent,
			want: map[string]string{
				"Access-Control-Allow-Origin":      "https://app.example.com",
				"Access-Control-Allow-Methods":     "GET, PUT",
				"Access-Control-Allow-Headers":     "Content-Type, X-Token",
				"Access-Control-Max-Age":           "600",
				"Access-Control-Allow-Credentials": "true",
				"Vary":                             "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
				"Access-Control-Expose-Headers":    "",
			},
		},
		{
			name: "origin compared case-insensitively, echoed as sent", cfg: strict, origin: "HTTPS://App.Example.COM", method: "GET",
			status: http.StatusNoContent,
			want:   map[string]string{"Access-Control-Allow-Origin": "HTTPS://App.Example.COM"},
		},
		{
			name: "wildcard subdomain", cfg: strict, origin: "https://a.b.example.org", method: "GET",
			status: http.StatusNoContent,
			want:   map[string]string{"Access-Control-Allow-Origin": "https://a.b.example.org"},
		},
		{
			name: "disallowed origin", cfg: strict, origin: "https://evil.example.net", method: "GET",
			status:  http.StatusForbidden,
			want:    map[string]string{"Access-Control-Allow-Origin": "", "Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"},
			errText: `CORS preflight: origin "https://evil.example.net" is not allowed`,
		},
		{
			name: "wildcard does not match the bare domain", cfg: strict, origin: "https://example.org", method: "GET",
			status:  http.StatusForbidden,
			errText: `CORS preflight: origin "https://example.org" is not allowed`,
		},
		{
			name: "disallowed method", cfg: strict, origin: "https://app.example.com", method: "DELETE",
			status:  http.StatusForbidden,
			want:    map[string]string{"Access-Control-Allow-Origin": ""},
			errText: `CORS preflight: method "DELETE" is not allowed`,
		},
		{
			name: "default methods", cfg: cors.Config{AllowOrigins: []string{"https://a.test"}}, origin: "https://a.test", method: "POST",
			status: http.StatusNoContent,
			want: map[string]string{
				"Access-Control-Allow-Methods":     "GET, HEAD, POST",
				"Access-Control-Allow-Headers":     "",
				"Access-Control-Max-Age":           "",
				"Access-Control-Allow-Credentials": "",
			},
		},
		{
			name: "any origin answers * and echoes requested headers", cfg: public, origin: "https://whoever.test", method: "GET", reqHdrs: "X-A, x-b",
			status: http.StatusNoContent,
			want: map[string]string{
				"Access-Control-Allow-Origin":      "*",
				"Access-Control-Allow-Headers":     "X-A, x-b",
				"Access-Control-Allow-Credentials": "",
			},
		},
		{
			name: "any method echoes the requested one", cfg: cors.Config{AllowOrigins: []string{"https://a.test"}, AllowMethods: []string{"*"}},
			origin: "https://a.test", method: "PATCH",
			status: http.StatusNoContent,
			want:   map[string]string{"Access-Control-Allow-Methods": "PATCH"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var called bool
			h := newHandler(t, tt.cfg, upstream(&called))
			req := httptest.NewRequest(http.MethodOptions, "/api/x", nil)
			req.Header.Set("Origin", tt.origin)
			req.Header.Set("Access-Control-Request-Method", tt.method)
			if tt.reqHdrs != "" {
				req.Header.Set("Access-Control-Request-Headers", tt.reqHdrs)
			}
			info := &exchange.Info{Route: "r1"}
			req = req.WithContext(exchange.WithInfo(req.Context(), info))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			res := rec.Result()

			if called {
				t.Error("preflight reached the upstream")
			}
			if res.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.status)
			}
			checkHeaders(t, res.Header, tt.want)
			if tt.errText != "" {
				var body struct {
					Error struct{ Code, Message, Route string }
				}
				if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
					t.Fatalf("error body: %v", err)
				}
				if body.Error.Code != exchange.CodeForbidden || body.Error.Message != tt.errText || body.Error.Route != "r1" {
					t.Errorf("error body = %+v, want code %s message %q", body.Error, exchange.CodeForbidden, tt.errText)
				}
				if info.ErrorCode != exchange.CodeForbidden {
					t.Errorf("info.ErrorCode = %q", info.ErrorCode)
				}
			}
		})
	}
}

func TestActualRequest(t *testing.T) {
	tests := []struct {
		name   string
		cfg    cors.Config
		method string
		origin string // "" sends no Origin
		want   map[string]string
		vary   []string
	}{
		{
			name: "allowed origin replaces upstream CORS headers", cfg: strict, method: "GET", origin: "https://app.example.com",
			want: map[string]string{
				"Access-Control-Allow-Origin":      "https://app.example.com",
				"Access-Control-Allow-Credentials": "true",
				"Access-Control-Expose-Headers":    "X-Total, X-Page",
				"Access-Control-Allow-Methods":     "",
				"X-Upstream":                       "yes",
			},
			vary: []string{"Accept-Encoding", "Origin"},
		},
		{
			name: "wildcard origin with mixed case", cfg: strict, method: "POST", origin: "https://API.Example.org",
			want: map[string]string{"Access-Control-Allow-Origin": "https://API.Example.org"},
			vary: []string{"Accept-Encoding", "Origin"},
		},
		{
			name: "disallowed origin gets no CORS headers, not even the upstream's", cfg: strict, method: "GET", origin: "https://evil.test",
			want: map[string]string{
				"Access-Control-Allow-Origin":      "",
				"Access-Control-Allow-Methods":     "",
				"Access-Control-Allow-Credentials": "",
				"X-Upstream":                       "yes",
			},
			vary: []string{"Accept-Encoding", "Origin"},
		},
		{
			name: "wildcard needs the configured scheme", cfg: strict, method: "GET", origin: "http://a.example.org",
			want: map[string]string{"Access-Control-Allow-Origin": ""},
			vary: []string{"Accept-Encoding", "Origin"},
		},
		{
			name: "wildcard is not a substring match", cfg: strict, method: "GET", origin: "https://a.example.org.evil.test",
			want: map[string]string{"Access-Control-Allow-Origin": ""},
		},
		{
			name: "no Origin: not a CORS request", cfg: strict, method: "GET",
			want: map[string]string{"Access-Control-Allow-Origin": "", "X-Upstream": "yes"},
			vary: []string{"Accept-Encoding", "Origin"},
		},
		{
			name: "OPTIONS without Access-Control-Request-Method is an actual request", cfg: strict, method: "OPTIONS", origin: "https://app.example.com",
			want: map[string]string{"Access-Control-Allow-Origin": "https://app.example.com", "X-Upstream": "yes"},
		},
		{
			name: "any origin answers * without Vary: Origin", cfg: public, method: "GET", origin: "https://x.test",
			want: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": "", "Access-Control-Allow-Methods": ""},
			vary: []string{"Accept-Encoding"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var called bool
			h := newHandler(t, tt.cfg, upstream(&called))
			req := httptest.NewRequest(tt.method, "/api/x", nil)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			res := rec.Result() // headers as they were when the status was written

			if !called {
				t.Fatal("upstream not called")
			}
			if res.StatusCode != http.StatusOK || rec.Body.String() != "hello" {
				t.Errorf("got %d %q, want 200 hello", res.StatusCode, rec.Body.String())
			}
			checkHeaders(t, res.Header, tt.want)
			if tt.vary != nil && !slices.Equal(res.Header.Values("Vary"), tt.vary) {
				t.Errorf("Vary = %q, want %q", res.Header.Values("Vary"), tt.vary)
			}
		})
	}
}

func TestActualRequestHandlerWritesNothing(t *testing.T) {
	h := newHandler(t, strict, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Origin", "https://app.example.com")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Result().Header.Get("Access-Control-Allow-Origin"); got != "https://app.example.com" {
		t.Errorf("Access-Control-Allow-Origin = %q after an implicit 200", got)
	}
}

func TestVaryNotDuplicated(t *testing.T) {
	h := newHandler(t, strict, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Vary", "accept-encoding, origin")
		w.WriteHeader(http.StatusOK)
	}))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Origin", "https://app.example.com")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Result().Header.Values("Vary"); !slices.Equal(got, []string{"accept-encoding, origin"}) {
		t.Errorf("Vary = %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  cors.Config
		want string // substring of the error
	}{
		{"no origins", cors.Config{}, `allow_origins: required: list the allowed origins`},
		{"credentials with any origin", cors.Config{AllowOrigins: []string{"*"}, AllowCredentials: true}, `allow_credentials: cannot be true with allow_origins "*"`},
		{"trailing slash", cors.Config{AllowOrigins: []string{"https://a.test", "https://b.test/"}}, `allow_origins[1]: origin "https://b.test/": drop the trailing "/"`},
		{"path", cors.Config{AllowOrigins: []string{"https://a.test/app"}}, `allow_origins[0]: origin "https://a.test/app": has a path`},
		{"no scheme", cors.Config{AllowOrigins: []string{"a.test"}}, `allow_origins[0]: origin "a.test": want scheme://host[:port]`},
		{"bad scheme", cors.Config{AllowOrigins: []string{"1http://a.test"}}, `want scheme://host[:port]`},
		{"upper case", cors.Config{AllowOrigins: []string{"https://App.example"}}, `browsers send origins in lower case; write "https://app.example"`},
		{"star inside host", cors.Config{AllowOrigins: []string{"https://a.*.test"}}, `allow_origins[0]: origin "https://a.*.test": bad host`},
		{"star glued to domain", cors.Config{AllowOrigins: []string{"https://*example.com"}}, `bad host`},
		{"bad port", cors.Config{AllowOrigins: []string{"https://a.test:99999"}}, `port "99999"`},
		{"port zero", cors.Config{AllowOrigins: []string{"https://a.test:0"}}, `port "0"`},
		{"user info", cors.Config{AllowOrigins: []string{"https://u@a.test"}}, "has user info"},
		{"empty host", cors.Config{AllowOrigins: []string{"https://"}}, "bad host"},
		{"bad method", cors.Config{AllowOrigins: []string{"*"}, AllowMethods: []string{"GE T"}}, `allow_methods[0]: "GE T" is not an HTTP method`},
		{"lower-case method", cors.Config{AllowOrigins: []string{"*"}, AllowMethods: []string{"get"}}, `allow_methods[0]: "get": methods are case-sensitive; write GET`},
		{"repeated method", cors.Config{AllowOrigins: []string{"*"}, AllowMethods: []string{"GET", "GET"}}, `allow_methods[1]: GET repeats allow_methods[0]`},
		{"bad header", cors.Config{AllowOrigins: []string{"*"}, AllowHeaders: []string{"X:Y"}}, `allow_headers[0]: "X:Y" is not a valid header name`},
		{"bad exposed header", cors.Config{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"*", "Bad:"}}, `expose_headers[1]: "Bad:" is not a valid header name`},
		{"expose star with credentials", cors.Config{AllowOrigins: []string{"https://a.test"}, AllowCredentials: true, ExposeHeaders: []string{"*"}}, `expose_headers: "*" is not a wildcard`},
		{"sub-second max age", cors.Config{AllowOrigins: []string{"*"}, MaxAge: config.Duration(500 * time.Millisecond)}, "max_age: 500ms is below"},
		{"negative max age", cors.Config{AllowOrigins: []string{"*"}, MaxAge: config.Duration(-time.Second)}, "max_age: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cors.New(&tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNewAcceptsOriginShapes(t *testing.T) {
	for _, o := range []string{"http://localhost:3000", "https://[::1]:8443", "https://*.example.com:8443", "http://127.0.0.1", "chrome-extension://abcdef"} {
		if _, err := cors.New(&cors.Config{AllowOrigins: []string{o}}); err != nil {
			t.Errorf("New(%q): %v", o, err)
		}
	}
}

func checkHeaders(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if v == "" {
			if got, ok := h[k]; ok {
				t.Errorf("%s = %q, want absent", k, got)
			}
			continue
		}
		if got := strings.Join(h.Values(k), "|"); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func BenchmarkActualRequest(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cfg    cors.Config
		origin string
	}{
		{"no-filter", cors.Config{}, "https://app.example.com"},
		{"allowed-origin", strict, "https://app.example.com"},
		{"allowed-wildcard", strict, "https://a.example.org"},
		{"any-origin", public, "https://app.example.com"},
		{"disallowed", strict, "https://evil.test"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Access-Control-Allow-Origin"] = []string{"*"}
				w.WriteHeader(http.StatusOK)
			})
			var h http.Handler = next
			if bc.cfg.AllowOrigins != nil {
				f, err := cors.New(&bc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				h = f.Wrap(next)
			}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Origin", bc.origin)
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter is a ResponseWriter whose header map is reused across
// benchmark iterations, so only the filter's allocations are counted.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
