package router

import (
	"slices"
	"strings"
	"testing"
)

type matchCase struct {
	host, method, path string
	want               string // route value; "" when none
	params             []Param
	st                 Status
}

// p builds a Param list from name, value pairs.
func p(kv ...string) []Param {
	var ps []Param
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, Param{kv[i], kv[i+1]})
	}
	return ps
}

func mustNew(t testing.TB, specs []Spec[string]) *Router[string] {
	t.Helper()
	r, err := New(specs)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func checkMatch(t *testing.T, r *Router[string], l *linear[string], c matchCase) {
	t.Helper()
	if c.want != "" && c.st == NotFound {
		c.st = Matched
	}
	v, ps, st := r.Match(c.host, c.method, c.path, nil)
	if v != c.want || st != c.st || !slices.Equal(ps, c.params) {
		t.Errorf("Match(%q, %q, %q) = %q, %v, %v; want %q, %v, %v",
			c.host, c.method, c.path, v, ps, st, c.want, c.params, c.st)
	}
	// The oracle must agree with every hand-written expectation too.
	v, ps, st = l.Match(c.host, c.method, c.path, nil)
	if v != c.want || st != c.st || !slices.Equal(ps, c.params) {
		t.Errorf("oracle Match(%q, %q, %q) = %q, %v, %v; want %q, %v, %v",
			c.host, c.method, c.path, v, ps, st, c.want, c.params, c.st)
	}
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		specs []Spec[string]
		cases []matchCase
	}{
		{
			name: "host groups",
			specs: []Spec[string]{
				{Path: "/x", Value: "any"},
				{Host: "*.example.com", Path: "/x", Value: "wild"},
				{Host: "*.a.example.com", Path: "/x", Value: "wild-a"},
				{Host: "b.a.example.com", Path: "/x", Value: "exact"},
				{Host: "[::1]", Path: "/x", Value: "ipv6"},
				{Host: "10.0.0.1", Path: "/x", Value: "ipv4"},
			},
			cases: []matchCase{
				{host: "b.a.example.com", method: "GET", path: "/x", want: "exact"},
				{host: "B.A.Example.COM:8080", method: "GET", path: "/x", want: "exact"},
				{host: "c.a.example.com", method: "GET", path: "/x", want: "wild-a"},
				{host: "d.c.a.example.com", method: "GET", path: "/x", want: "wild-a"}, // several labels
				{host: "a.example.com", method: "GET", path: "/x", want: "wild"},       // not the bare suffix of *.a.example.com
				{host: "x.y.example.com", method: "GET", path: "/x", want: "wild"},
				{host: "example.com", method: "GET", path: "/x", want: "any"},
				{host: ".example.com", method: "GET", path: "/x", want: "any"}, // empty label in front
				{host: "notexample.com", method: "GET", path: "/x", want: "any"},
				{host: "[::1]:8080", method: "GET", path: "/x", want: "ipv6"},
				{host: "[::1]", method: "GET", path: "/x", want: "ipv6"},
				{host: "::1", method: "GET", path: "/x", want: "ipv6"}, // bare IPv6 kept whole
				{host: "10.0.0.1:80", method: "GET", path: "/x", want: "ipv4"},
				{host: "", method: "GET", path: "/x", want: "any"},
				// A fully qualified name (trailing dot) is the same host.
				{host: "b.a.example.com.", method: "GET", path: "/x", want: "exact"},
				{host: "B.A.Example.COM.:8080", method: "GET", path: "/x", want: "exact"},
				{host: "b.a.example.com..", method: "GET", path: "/x", want: "exact"},
				{host: "c.a.example.com.", method: "GET", path: "/x", want: "wild-a"},
				{host: "x.y.example.com.:443", method: "GET", path: "/x", want: "wild"},
				{host: "10.0.0.1.", method: "GET", path: "/x", want: "ipv4"},
				{host: ".", method: "GET", path: "/x", want: "any"},
			},
		},
		{
			name: "host fallback and status",
			specs: []Spec[string]{
				{Host: "api.example.com", Methods: []string{"GET"}, Path: "/users", Value: "api-get"},
				{Host: "api.example.com", Methods: []string{"PUT"}, Path: "/only-api", Value: "api-put"},
				{Host: "*.example.com", Methods: []string{"PATCH"}, Path: "/users", Value: "wild-patch"},
				{Methods: []string{"POST"}, Path: "/users", Value: "any-post"},
				{Path: "/health", Value: "health"},
			},
			cases: []matchCase{
				{host: "api.example.com", method: "GET", path: "/users", want: "api-get"},
				{host: "api.example.com", method: "PATCH", path: "/users", want: "wild-patch"}, // exact group: path but not method
				{host: "api.example.com", method: "POST", path: "/users", want: "any-post"},
				{host: "api.example.com", method: "DELETE", path: "/users", st: MethodNotAllowed},
				{host: "api.example.com", method: "GET", path: "/health", want: "health"}, // exact group: no path
				{host: "api.example.com", method: "GET", path: "/only-api", st: MethodNotAllowed},
				{host: "other.com", method: "PUT", path: "/only-api", st: NotFound},
				{host: "api.example.com", method: "GET", path: "/none", st: NotFound},
				{host: "other.com", method: "GET", path: "/users", st: MethodNotAllowed},
			},
		},
		{
			name: "exact, param, catch-all, backtracking",
			specs: []Spec[string]{
				{Path: "/users/{id}", Value: "user"},
				{Path: "/users/me", Value: "me"},
				{Path: "/users/{id}/posts/{post}", Value: "post"},
				{Path: "/users/{rest...}", Value: "users-rest"},
				{Path: "/a/b/c", Value: "abc"},
				{Path: "/a/{x}/d", Value: "axd"},
				{Path: "/a/b/{y}/e", Value: "abye"},
				{Path: "/a/{p...}", Value: "a-rest"},
				{Path: "/{p...}", Value: "root-rest"},
			},
			cases: []matchCase{
				{method: "GET", path: "/users/me", want: "me"},
				{method: "GET", path: "/users/42", want: "user", params: p("id", "42")},
				{method: "GET", path: "/users/42/posts/7", want: "post", params: p("id", "42", "post", "7")},
				{method: "GET", path: "/users/me/posts/7", want: "post", params: p("id", "me", "post", "7")}, // static "me" is a leaf: backtrack
				{method: "GET", path: "/users/42/x", want: "users-rest", params: p("rest", "42/x")},
				{method: "GET", path: "/users/", want: "users-rest", params: p("rest", "")}, // {id} never matches an empty segment
				{method: "GET", path: "/a/b/c", want: "abc"},
				{method: "GET", path: "/a/b/d", want: "axd", params: p("x", "b")},
				{method: "GET", path: "/a/b/z/e", want: "abye", params: p("y", "z")},
				{method: "GET", path: "/a/b/z/f", want: "a-rest", params: p("p", "b/z/f")},
				{method: "GET", path: "/a", want: "root-rest", params: p("p", "a")},
				{method: "GET", path: "/", want: "root-rest", params: p("p", "")},
				{method: "GET", path: "/b/c/", want: "root-rest", params: p("p", "b/c/")},
			},
		},
		{
			name: "trailing slash, root, empty catch-all",
			specs: []Spec[string]{
				{Path: "/", Value: "root"},
				{Path: "/a", Value: "a"},
				{Path: "/a/", Value: "a/"},
				{Path: "/files/{p...}", Value: "files"},
				{Path: "/u/{id}/", Value: "u-slash"},
				{Path: "/héllo/{wörld}", Value: "unicode"},
			},
			cases: []matchCase{
				{method: "GET", path: "/", want: "root"},
				{method: "GET", path: "/a", want: "a"},
				{method: "GET", path: "/a/", want: "a/"},
				{method: "GET", path: "/a/b", st: NotFound},
				{method: "GET", path: "/files/", want: "files", params: p("p", "")},
				{method: "GET", path: "/files/x/y.txt", want: "files", params: p("p", "x/y.txt")},
				{method: "GET", path: "/files", st: NotFound},
				{method: "GET", path: "/u/1/", want: "u-slash", params: p("id", "1")},
				{method: "GET", path: "/u/1", st: NotFound},
				{method: "GET", path: "/u//", st: NotFound},
				{method: "GET", path: "/héllo/mönd", want: "unicode", params: p("wörld", "mönd")},
				{method: "GET", path: "", st: NotFound},
				{method: "OPTIONS", path: "*", st: NotFound},
				{method: "GET", path: "a", st: NotFound},
			},
		},
		{
			name: "prefixes",
			specs: []Spec[string]{
				{Prefix: "/", Value: "all"},
				{Prefix: "/api", Value: "api"},
				{Prefix: "/api/v1", Methods: []string{"GET"}, Value: "v1"},
				{Path: "/api/v1/{p...}", Methods: []string{"POST"}, Value: "v1-post"},
				{Path: "/api/v1/users", Methods: []string{"DELETE"}, Value: "users-delete"},
			},
			cases: []matchCase{
				{method: "GET", path: "/api", want: "api"},
				{method: "GET", path: "/api/", want: "api"},
				{method: "GET", path: "/api/x", want: "api"},
				{method: "GET", path: "/apix", want: "all"},
				{method: "GET", path: "/api/v1", want: "v1"},
				{method: "GET", path: "/api/v1/users", want: "v1"}, // path route takes DELETE only
				{method: "DELETE", path: "/api/v1/users", want: "users-delete"},
				{method: "POST", path: "/api/v1/users", want: "v1-post", params: p("p", "users")}, // pattern beats prefix
				{method: "PUT", path: "/api/v1/users", want: "api"},                               // longest prefix lacks PUT: next one
				{method: "GET", path: "/", want: "all"},
				{method: "GET", path: "/other/x", want: "all"},
			},
		},
		{
			name: "prefix 405",
			specs: []Spec[string]{
				{Prefix: "/api", Methods: []string{"GET"}, Value: "api"},
				{Prefix: "/", Methods: []string{"POST"}, Value: "root"},
			},
			cases: []matchCase{
				{method: "POST", path: "/api/x", want: "root"},
				{method: "PUT", path: "/api/x", st: MethodNotAllowed},
				{method: "PUT", path: "/zzz", st: MethodNotAllowed},
			},
		},
		{
			name: "methods at the same key",
			specs: []Spec[string]{
				{Path: "/m", Value: "m-any"},
				{Path: "/m", Methods: []string{"GET"}, Value: "m-get"},
				{Path: "/m", Methods: []string{"POST", "PUT"}, Value: "m-post-put"},
				{Path: "/h", Methods: []string{"GET"}, Value: "h-get"},
				{Path: "/h", Methods: []string{"HEAD"}, Value: "h-head"},
				{Path: "/g", Methods: []string{"GET"}, Value: "g-get"},
				{Path: "/g", Value: "g-any"},
				{Path: "/p", Methods: []string{"POST"}, Value: "p-post"},
				{Path: "/{x}", Methods: []string{"DELETE"}, Value: "x-delete"},
				{Path: "/e", Value: "e-any"},
			},
			cases: []matchCase{
				{method: "GET", path: "/m", want: "m-get"},
				{method: "PUT", path: "/m", want: "m-post-put"},
				{method: "PATCH", path: "/m", want: "m-any"},
				{method: "HEAD", path: "/m", want: "m-get"},
				{method: "HEAD", path: "/h", want: "h-head"},
				{method: "GET", path: "/h", want: "h-get"},
				{method: "HEAD", path: "/g", want: "g-get"}, // GET beats no method list for HEAD
				{method: "HEAD", path: "/p", st: MethodNotAllowed},
				{method: "get", path: "/p", st: MethodNotAllowed}, // methods are case-sensitive
				{method: "DELETE", path: "/p", want: "x-delete", params: p("x", "p")},
				{method: "DELETE", path: "/e", want: "e-any"}, // exact path beats a pattern listing the method
				{method: "POST", path: "/q", st: MethodNotAllowed},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, l := mustNew(t, tt.specs), newLinear(tt.specs)
			for _, c := range tt.cases {
				checkMatch(t, r, l, c)
			}
		})
	}
}

func TestMatchAppendsToCallerSlice(t *testing.T) {
	r := mustNew(t, []Spec[string]{{Path: "/u/{id}", Value: "u"}, {Path: "/v", Value: "v"}})
	buf := make([]Param, 1, 4)
	buf[0] = Param{"keep", "me"}
	_, out, st := r.Match("", "GET", "/u/7", buf)
	if st != Matched || !slices.Equal(out, p("keep", "me", "id", "7")) || &out[0] != &buf[0] {
		t.Errorf("Match with a prefilled buffer = %v, %v; want the buffer extended in place", out, st)
	}
	_, out, st = r.Match("", "GET", "/nope/x", buf)
	if st != NotFound || !slices.Equal(out, buf) {
		t.Errorf("miss = %v, %v; want the buffer unchanged", out, st)
	}
	// Backtracking must not leave stray parameters behind.
	r = mustNew(t, []Spec[string]{{Path: "/{a}/{b}/x", Value: "x"}, {Path: "/{a}/{p...}", Value: "rest"}})
	_, out, _ = r.Match("", "GET", "/1/2/y", nil)
	if !slices.Equal(out, p("a", "1", "p", "2/y")) {
		t.Errorf("after backtracking params = %v", out)
	}
}

func TestAllowed(t *testing.T) {
	r := mustNew(t, []Spec[string]{
		{Host: "api.example.com", Methods: []string{"PUT"}, Path: "/users/{id}", Value: "1"},
		{Host: "*.example.com", Methods: []string{"DELETE"}, Prefix: "/users", Value: "2"},
		{Methods: []string{"GET", "POST"}, Path: "/users/{id}", Value: "3"},
		{Path: "/users/{id}", Value: "4"}, // no method list: adds nothing
		{Methods: []string{"PATCH"}, Path: "/other", Value: "5"},
	})
	tests := []struct {
		host, path string
		want       []string
	}{
		{"api.example.com:443", "/users/1", []string{"DELETE", "GET", "HEAD", "POST", "PUT"}},
		{"x.example.com", "/users/1", []string{"DELETE", "GET", "HEAD", "POST"}},
		{"other.com", "/users/1", []string{"GET", "HEAD", "POST"}},
		{"other.com", "/other", []string{"PATCH"}},
		{"other.com", "/missing", nil},
		{"other.com", "missing", nil},
	}
	for _, tt := range tests {
		if got := r.Allowed(tt.host, tt.path); !slices.Equal(got, tt.want) {
			t.Errorf("Allowed(%q, %q) = %v; want %v", tt.host, tt.path, got, tt.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		spec Spec[string]
		want string
	}{
		{Spec[string]{Path: "/a/{"}, `spec 1: path "/a/{": unclosed "{"`},
		{Spec[string]{Path: "/a/x{id"}, `spec 1: path "/a/x{id": unclosed "{"`},
		{Spec[string]{Path: "/a/{id}.json"}, `spec 1: path "/a/{id}.json": segment "{id}.json" mixes text and a parameter; a parameter must be a whole segment`},
		{Spec[string]{Path: "/a/v{id}"}, `spec 1: path "/a/v{id}": segment "v{id}" mixes text and a parameter; a parameter must be a whole segment`},
		{Spec[string]{Path: "/a/id}"}, `spec 1: path "/a/id}": segment "id}": "}" without "{"`},
		{Spec[string]{Path: "/a/{}"}, `spec 1: path "/a/{}": segment "{}": empty parameter name`},
		{Spec[string]{Path: "/a/{...}"}, `spec 1: path "/a/{...}": segment "{...}": empty parameter name`},
		{Spec[string]{Path: "/a/{1x}"}, `spec 1: path "/a/{1x}": segment "{1x}": parameter name "1x" is not a Go identifier`},
		{Spec[string]{Path: "/a/{x-y}"}, `spec 1: path "/a/{x-y}": segment "{x-y}": parameter name "x-y" is not a Go identifier`},
		{Spec[string]{Path: "/{id}/{id}"}, `spec 1: path "/{id}/{id}": duplicate parameter name "id"`},
		{Spec[string]{Path: "/{p...}/x"}, `spec 1: path "/{p...}/x": segment "{p...}": a {name...} parameter must be the final segment`},
		{Spec[string]{Path: "/{p...}/"}, `spec 1: path "/{p...}/": segment "{p...}": a {name...} parameter must be the final segment`},
		{Spec[string]{Path: "a/b"}, `spec 1: path "a/b": must start with "/"`},
		{Spec[string]{Path: "/a//b"}, `spec 1: path "/a//b": empty segment ("//")`},
		{Spec[string]{Prefix: "/api/"}, `spec 1: prefix "/api/": trailing "/" not allowed: write "/api", it already matches "/api/..."`},
		{Spec[string]{Prefix: "api"}, `spec 1: prefix "api": must start with "/"`},
		{Spec[string]{Prefix: "/a/{x}"}, `spec 1: prefix "/a/{x}": a prefix is plain text; use path with "{name...}" for a pattern`},
		{Spec[string]{Prefix: "/a//b"}, `spec 1: prefix "/a//b": empty segment ("//")`},
		{Spec[string]{Path: "/a", Prefix: "/a"}, `spec 1: path "/a" and prefix "/a" are exclusive`},
		{Spec[string]{Host: "a.com"}, `spec 1: one of path or prefix is required`},
		{Spec[string]{Path: "/a", Methods: []string{"get"}}, `spec 1: "get": methods are case-sensitive; write GET`},
		{Spec[string]{Path: "/a", Methods: []string{"GE T"}}, `spec 1: "GE T" is not an HTTP method`},
		{Spec[string]{Path: "/a", Methods: []string{""}}, `spec 1: "" is not an HTTP method`},
		{Spec[string]{Path: "/a", Methods: []string{"GET", "POST", "GET"}}, `spec 1: method GET listed twice`},
		{Spec[string]{Path: "/a", Host: "a.com:8080"}, `spec 1: host "a.com:8080": must not include a port (the request's port is ignored when matching)`},
		{Spec[string]{Path: "/a", Host: "[::1]:8080"}, `spec 1: host "[::1]:8080": brackets must enclose an IPv6 address, without a port`},
		{Spec[string]{Path: "/a", Host: "[1.2.3.4]"}, `spec 1: host "[1.2.3.4]": brackets must enclose an IPv6 address, without a port`},
		{Spec[string]{Path: "/a", Host: "a.*.com"}, `spec 1: host "a.*.com": a wildcard is "*." followed by a domain, as in "*.example.com"`},
		{Spec[string]{Path: "/a", Host: "*"}, `spec 1: host "*": leave host empty to match any host`},
		{Spec[string]{Path: "/a", Host: "::1"}, `spec 1: host "::1": write an IPv6 address in brackets, as in "[::1]"`},
		{Spec[string]{Path: "/a", Host: "*."}, `spec 1: host "*.": empty label`},
		{Spec[string]{Path: "/a", Host: "a..com"}, `spec 1: host "a..com": empty label`},
		{Spec[string]{Path: "/a", Host: "a.com."}, `spec 1: host "a.com.": empty label`},
		{Spec[string]{Path: "/a", Host: "a/b.com"}, `spec 1: host "a/b.com": invalid character '/'`},
		{Spec[string]{Path: "/a", Host: strings.Repeat("a.", 127)}, `spec 1: host "` + strings.Repeat("a.", 127) + `": longer than 253 characters`},
		// Shadowing: spec 0 is {Host: "A.com", Path: "/s/{x}", Methods: GET, POST}, {Prefix: "/p"}.
		{Spec[string]{Host: "a.com", Path: "/s/{y}", Methods: []string{"PUT", "POST"}}, `spec 1 is shadowed by spec 0 (same host, path and method POST)`},
		{Spec[string]{Host: "a.com", Prefix: "/p"}, `spec 1 is shadowed by spec 0 (same host, prefix and no method list)`},
	}
	first := []Spec[string]{{Host: "A.com", Path: "/s/{x}", Methods: []string{"GET", "POST"}}, {Host: "A.com", Prefix: "/p"}}
	for _, tt := range tests {
		specs := []Spec[string]{first[0], tt.spec}
		if strings.Contains(tt.want, "prefix and") {
			specs[0] = first[1]
		}
		_, err := New(specs)
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) error = %v\n want %s", tt.spec, err, tt.want)
		}
	}
}

func TestNewAcceptsDistinctKeys(t *testing.T) {
	// None of these shadow each other: different host, key kind, or methods.
	_, err := New([]Spec[string]{
		{Path: "/a", Methods: []string{"GET"}},
		{Path: "/a", Methods: []string{"HEAD"}},
		{Path: "/a"},
		{Prefix: "/a"},
		{Path: "/a/"},
		{Path: "/{x}"},
		{Path: "/{x...}"},
		{Host: "a.com", Path: "/a"},
		{Host: "*.a.com", Path: "/a"},
		{Host: "[::1]", Path: "/a"},
		{Host: "[::2]", Path: "/a"},
		{Host: "Mixed.Example.com", Path: "/a"},
		{Path: "/a", Methods: []string{"M-SEARCH", "PROPFIND"}},
		{Prefix: "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	specs := benchSpecs(1000)
	r, err := New(specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range benchQueries(1000) {
		var buf [8]Param
		allocs := testing.AllocsPerRun(100, func() {
			r.Match(q.host, q.method, q.path, buf[:0])
		})
		if allocs != 0 {
			t.Errorf("Match(%q, %q, %q) allocates %v times per run", q.host, q.method, q.path, allocs)
		}
	}
}
