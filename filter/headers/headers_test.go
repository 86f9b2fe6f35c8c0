package headers_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/filter/headers"
)

func TestRequestOps(t *testing.T) {
	tests := []struct {
		name     string
		ops      headers.Ops
		incoming http.Header
		want     map[string][]string // nil value: absent
	}{
		{
			name:     "remove, then set, then add on one name",
			ops:      headers.Ops{Remove: []string{"x-a"}, Set: map[string]string{"X-A": "set"}, Add: map[string]string{"x-a": "added"}},
			incoming: http.Header{"X-A": {"client1", "client2"}},
			want:     map[string][]string{"X-A": {"set", "added"}},
		},
		{
			name:     "set replaces every value, add appends",
			ops:      headers.Ops{Set: map[string]string{"X-Env": "prod"}, Add: map[string]string{"X-Tag": "gw"}},
			incoming: http.Header{"X-Env": {"dev", "test"}, "X-Tag": {"client"}},
			want:     map[string][]string{"X-Env": {"prod"}, "X-Tag": {"client", "gw"}},
		},
		{
			name:     "names are canonicalized",
			ops:      headers.Ops{Set: map[string]string{"x-custom-header": "v"}, Remove: []string{"AUTHORIZATION"}},
			incoming: http.Header{"Authorization": {"Bearer x"}},
			want:     map[string][]string{"X-Custom-Header": {"v"}, "Authorization": nil},
		},
		{
			name:     "removing an absent header is fine",
			ops:      headers.Ops{Remove: []string{"X-None"}},
			incoming: http.Header{"X-Keep": {"1"}},
			want:     map[string][]string{"X-Keep": {"1"}, "X-None": nil},
		},
		{
			name:     "values are literal",
			ops:      headers.Ops{Set: map[string]string{"X-Lit": "${HOME} {id} $1", "X-Empty": ""}},
			incoming: http.Header{},
			want:     map[string][]string{"X-Lit": {"${HOME} {id} $1"}, "X-Empty": {""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := headers.New(&headers.Config{Request: tt.ops})
			if err != nil {
				t.Fatal(err)
			}
			var got http.Header
			rec := httptest.NewRecorder()
			h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Clone()
				if w != http.ResponseWriter(rec) {
					t.Error("request-only filter wrapped the response writer")
				}
			}))
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header = tt.incoming
			h.ServeHTTP(rec, req)
			for k, v := range tt.want {
				if v == nil {
					if _, ok := got[k]; ok {
						t.Errorf("%s = %q, want absent", k, got[k])
					}
				} else if !slices.Equal(got[k], v) {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// A set header's value slice is the filter's, shared by every request: a
// later Add by another handler must neither overwrite a neighbour nor
// reach the next request.
func TestSetValuesDoNotAlias(t *testing.T) {
	f, err := headers.New(&headers.Config{Request: headers.Ops{Set: map[string]string{"X-A": "a", "X-B": "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got http.Header
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		r.Header.Add("X-A", "a2")
		r.Header.Add("X-B", "b2")
	}))
	for i := range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		if !slices.Equal(got["X-A"], []string{"a"}) || !slices.Equal(got["X-B"], []string{"b"}) {
			t.Errorf("request %d: X-A = %q, X-B = %q", i, got["X-A"], got["X-B"])
		}
	}
	h = f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Add("X-A", "a2")
		got = r.Header
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if !slices.Equal(got["X-A"], []string{"a", "a2"}) || !slices.Equal(got["X-B"], []string{"b"}) {
		t.Errorf("X-A = %q, X-B = %q", got["X-A"], got["X-B"])
	}
}

func TestResponseOps(t *testing.T) {
	cfg := headers.Config{Response: headers.Ops{
		Remove: []string{"X-Powered-By", "server"},
		Set:    map[string]string{"Server": "dubbogw", "Cache-Control": "no-store"},
		Add:    map[string]string{"X-Frame-Options": "DENY", "Vary": "Origin"},
	}}
	upstreams := map[string]http.HandlerFunc{
		"WriteHeader": func(w http.ResponseWriter, r *http.Request) {
			setUpstreamHeaders(w.Header())
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte("body"))
		},
		"Write only": func(w http.ResponseWriter, r *http.Request) {
			setUpstreamHeaders(w.Header())
			_, _ = w.Write([]byte("body"))
		},
		"writes nothing": func(w http.ResponseWriter, r *http.Request) {
			setUpstreamHeaders(w.Header())
		},
	}
	for name, up := range upstreams {
		t.Run(name, func(t *testing.T) {
			f, err := headers.New(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			f.Wrap(up).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			got := rec.Result().Header // as written with the status line
			want := map[string][]string{
				"Server":          {"dubbogw"},
				"Cache-Control":   {"no-store"},
				"X-Frame-Options": {"DENY"},
				"Vary":            {"Accept-Encoding", "Origin"},
				"Content-Type":    {"text/plain"},
			}
			for k, v := range want {
				if !slices.Equal(got[k], v) {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if _, ok := got["X-Powered-By"]; ok {
				t.Error("X-Powered-By not removed")
			}
		})
	}
}

func setUpstreamHeaders(h http.Header) {
	h.Set("Server", "upstream/1.0")
	h.Set("X-Powered-By", "php")
	h.Set("Cache-Control", "max-age=60")
	h.Set("Content-Type", "text/plain")
	h.Add("Vary", "Accept-Encoding")
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  headers.Config
		want string
	}{
		{"nothing to do", headers.Config{}, "empty headers filter: set request or response"},
		{"hop-by-hop set", headers.Config{Request: headers.Ops{Set: map[string]string{"connection": "keep-alive"}}},
			`request.set.connection: "connection" cannot be set here: it is a hop-by-hop header`},
		{"hop-by-hop add on response", headers.Config{Response: headers.Ops{Add: map[string]string{"Transfer-Encoding": "chunked"}}},
			`response.add.Transfer-Encoding: "Transfer-Encoding" cannot be set here: it is a hop-by-hop header`},
		{"host", headers.Config{Request: headers.Ops{Add: map[string]string{"Host": "a.test"}}},
			`request.add.Host: "Host" cannot be set here: the Host sent upstream is the target's`},
		{"content-length", headers.Config{Response: headers.Ops{Set: map[string]string{"Content-Length": "3"}}},
			`response.set.Content-Length: "Content-Length" cannot be set here`},
		{"bad name", headers.Config{Request: headers.Ops{Set: map[string]string{"X Y": "1"}}},
			`request.set["X Y"]: "X Y" is not a valid header name`},
		{"bad remove name", headers.Config{Response: headers.Ops{Remove: []string{"X:Y"}}},
			`response.remove[0]: "X:Y" is not a valid header name`},
		{"control character", headers.Config{Request: headers.Ops{Set: map[string]string{"X-A": "a\r\nX-Evil: 1"}}},
			`request.set.X-A: the value contains the control character '\r'`},
		{"same name twice", headers.Config{Request: headers.Ops{Set: map[string]string{"x-a": "1", "X-A": "2"}}},
			`request.set.x-a: "X-A" and "x-a" name the same header`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := headers.New(&tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRemoveMayNameHopByHop(t *testing.T) {
	if _, err := headers.New(&headers.Config{Request: headers.Ops{Remove: []string{"Connection"}}}); err != nil {
		t.Fatalf("remove Connection: %v", err)
	}
}

func BenchmarkHeaders(b *testing.B) {
	ops := headers.Ops{
		Remove: []string{"X-Internal"},
		Set:    map[string]string{"X-Gateway": "dubbogw", "X-Env": "prod"},
		Add:    map[string]string{"X-Tag": "edge"},
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, bc := range []struct {
		name string
		cfg  *headers.Config
	}{
		{"no-filter", nil},
		{"request", &headers.Config{Request: ops}},
		{"response", &headers.Config{Response: ops}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var h http.Handler = next
			if bc.cfg != nil {
				f, err := headers.New(bc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				h = f.Wrap(next)
			}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				clear(req.Header)
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}

// discardWriter reuses one header map across benchmark iterations.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
