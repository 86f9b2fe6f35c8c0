package rewrite_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/filter/rewrite"
)

func TestRewrite(t *testing.T) {
	tests := []struct {
		name   string
		cfg    rewrite.Config
		params map[string]string // route path values, set as the gateway core does
		target string            // request target as the client sent it
		want   string            // escaped path (and query) the upstream must get
	}{
		{name: "strip", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/api/users/7", want: "/users/7"},
		{name: "strip the whole path", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/api", want: "/"},
		{name: "strip with trailing slash", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/api/", want: "/"},
		{name: "strip is segment-aware", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/apis/x", want: "/apis/x"},
		{name: "strip leaves other paths", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/other/api", want: "/other/api"},
		{name: "strip prefix written with trailing slash", cfg: rewrite.Config{StripPrefix: "/api/v1/"}, target: "/api/v1/users?page=2", want: "/users?page=2"},
		{name: "strip keeps an encoded slash", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/api/a%2Fb", want: "/a%2Fb"},
		{name: "strip keeps other escapes", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/api/a%20b/%C3%A9", want: "/a%20b/%C3%A9"},
		{name: "strip compares decoded bytes", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/%61pi/x", want: "/x"},
		{name: "strip at an encoded slash", cfg: rewrite.Config{StripPrefix: "/api"}, target: "/api%2Fx", want: "/x"},
		{name: "strip decoded prefix", cfg: rewrite.Config{StripPrefix: "/café"}, target: "/caf%C3%A9/a", want: "/a"},

		{name: "add prefix", cfg: rewrite.Config{AddPrefix: "/v1"}, target: "/users", want: "/v1/users"},
		{name: "add prefix without double slash", cfg: rewrite.Config{AddPrefix: "/v1/"}, target: "/", want: "/v1/"},
		{name: "strip then add", cfg: rewrite.Config{StripPrefix: "/api", AddPrefix: "/v2"}, target: "/api/a%2Fb?x=1", want: "/v2/a%2Fb?x=1"},

		{name: "template", cfg: rewrite.Config{Path: "/users/{id}/profile"}, params: map[string]string{"id": "42"}, target: "/u/42", want: "/users/42/profile"},
		{name: "template with two params", cfg: rewrite.Config{Path: "/orgs/{org}/users/{id}"}, params: map[string]string{"org": "acme", "id": "7"}, target: "/acme/7?q=1", want: "/orgs/acme/users/7?q=1"},
		{name: "template re-escapes decoded values", cfg: rewrite.Config{Path: "/users/{id}"}, params: map[string]string{"id": "a b%"}, target: "/u/a%20b%25", want: "/users/a%20b%25"},
		{name: "template rest param keeps slashes", cfg: rewrite.Config{Path: "/static/{path...}"}, params: map[string]string{"path": "css/site.css"}, target: "/files/css/site.css", want: "/static/css/site.css"},
		{name: "template then add prefix", cfg: rewrite.Config{Path: "/users/{id}", AddPrefix: "/v1"}, params: map[string]string{"id": "9"}, target: "/u/9", want: "/v1/users/9"},

		{name: "regex", cfg: rewrite.Config{Regex: `^/old/(.*)$`, Replacement: "/new/$1"}, target: "/old/a/b", want: "/new/a/b"},
		{name: "regex sees the escaped path", cfg: rewrite.Config{Regex: `^/old/(.*)$`, Replacement: "/new/$1"}, target: "/old/a%2Fb", want: "/new/a%2Fb"},
		{name: "regex without a match", cfg: rewrite.Config{Regex: `^/old/(.*)$`, Replacement: "/new/$1"}, target: "/keep/x", want: "/keep/x"},
		{name: "regex named groups", cfg: rewrite.Config{Regex: `^/(?P<ver>v\d+)/(\w+)`, Replacement: "/$2/${ver}"}, target: "/v2/users", want: "/users/v2"},
		{name: "regex result gets a leading slash", cfg: rewrite.Config{Regex: `^/api/`}, target: "/api/x", want: "/x"},
		{name: "regex dollar escape", cfg: rewrite.Config{Regex: `^/price$`, Replacement: "/cost$$1"}, target: "/price", want: "/cost$1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := make([]string, 0, len(tt.params))
			for k := range tt.params {
				params = append(params, k)
			}
			f, err := rewrite.New(&tt.cfg, params)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var got *http.Request
			h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r }))

			req := httptest.NewRequest(http.MethodGet, tt.target, nil)
			for k, v := range tt.params {
				req.SetPathValue(k, v)
			}
			orig := *req.URL
			h.ServeHTTP(httptest.NewRecorder(), req)

			if got == nil {
				t.Fatal("next not called")
			}
			want, err := url.ParseRequestURI(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if got.URL.Path != want.Path || got.URL.RawPath != want.RawPath || got.URL.RawQuery != want.RawQuery {
				t.Errorf("upstream URL Path=%q RawPath=%q RawQuery=%q, want %q %q %q (as url.Parse makes %q)",
					got.URL.Path, got.URL.RawPath, got.URL.RawQuery, want.Path, want.RawPath, want.RawQuery, tt.want)
			}
			if got.URL.RequestURI() != tt.want {
				t.Errorf("upstream request URI = %q, want %q", got.URL.RequestURI(), tt.want)
			}
			if *req.URL != orig {
				t.Errorf("the client's request was modified: %+v", req.URL)
			}
			if tt.want == tt.target && got != req {
				t.Error("an unchanged path still copied the request")
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		cfg    rewrite.Config
		params []string
		want   string
	}{
		{"two modes", rewrite.Config{StripPrefix: "/a", Regex: "x"}, nil, "set at most one of strip_prefix, path and regex (got strip_prefix and regex)"},
		{"replacement alone", rewrite.Config{Replacement: "/x"}, nil, "replacement: only used with regex"},
		{"nothing", rewrite.Config{}, nil, "empty rewrite: set strip_prefix, path, regex or add_prefix"},
		{"strip without slash", rewrite.Config{StripPrefix: "api"}, nil, `strip_prefix: "api" must start with "/"`},
		{"strip with a space", rewrite.Config{StripPrefix: "/my docs"}, nil, `strip_prefix: "/my docs" contains a space or control character`},
		{"strip root", rewrite.Config{StripPrefix: "/"}, nil, `strip_prefix: "/" has no effect`},
		{"strip unclean", rewrite.Config{StripPrefix: "/a/../b"}, nil, `strip_prefix: "/a/../b" is not a clean path`},
		{"add prefix query", rewrite.Config{AddPrefix: "/v1?x=1"}, nil, `add_prefix: "/v1?x=1": a path has no "?" part`},
		{"template unknown param", rewrite.Config{Path: "/users/{ids}"}, []string{"id", "name"}, `path: "/users/{ids}": {ids} is not a parameter of the route's match.path (it captures: id, name)`},
		{"template on a route without params", rewrite.Config{Path: "/users/{id}"}, nil, "the route's path captures no parameters"},
		{"template unclosed", rewrite.Config{Path: "/users/{id"}, []string{"id"}, `"{" without "}"`},
		{"template stray brace", rewrite.Config{Path: "/users/id}"}, []string{"id"}, `"}" without "{"`},
		{"template bad name", rewrite.Config{Path: "/users/{1a}"}, []string{"1a"}, `"{1a}" is not a parameter`},
		{"template relative", rewrite.Config{Path: "users/{id}"}, []string{"id"}, `must start with "/"`},
		{"bad regex", rewrite.Config{Regex: "("}, nil, `regex: "(" does not compile: error parsing regexp`},
		{"group out of range", rewrite.Config{Regex: "^/(a)", Replacement: "/$2"}, nil, `replacement: "/$2": $2: the regex has 1 groups`},
		{"number glued to text", rewrite.Config{Regex: "^/(a)", Replacement: "/$1x"}, nil, `$1x names no group of the regex (for a group followed by text, write "${1}...")`},
		{"unknown named group", rewrite.Config{Regex: "^/(?P<v>a)", Replacement: "/${w}"}, nil, "$w names no group"},
		{"bare percent", rewrite.Config{Regex: "^/a", Replacement: "/100%"}, nil, `"%" must start an escape`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rewrite.New(&tt.cfg, tt.params)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func BenchmarkRewrite(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cfg    *rewrite.Config
		target string
	}{
		{"no-filter", nil, "/api/users/42"},
		{"strip_prefix", &rewrite.Config{StripPrefix: "/api"}, "/api/users/42"},
		{"strip_prefix-no-match", &rewrite.Config{StripPrefix: "/api"}, "/other/users/42"},
		{"path-template", &rewrite.Config{Path: "/v1/users/{id}"}, "/api/users/42"},
		{"regex", &rewrite.Config{Regex: `^/api/(.*)$`, Replacement: "/v1/$1"}, "/api/users/42"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
			var h http.Handler = next
			if bc.cfg != nil {
				f, err := rewrite.New(bc.cfg, []string{"id"})
				if err != nil {
					b.Fatal(err)
				}
				h = f.Wrap(next)
			}
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			req.SetPathValue("id", "42")
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(nil, req)
			}
		})
	}
}
