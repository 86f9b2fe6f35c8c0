package router

import (
	"fmt"
	"net/http"
	"testing"
)

// benchSpecs returns n routes of a realistic gateway: per service, exact
// paths, patterns with one and two parameters, a catch-all, prefixes,
// host-specific and wildcard-host routes, with and without method lists.
func benchSpecs(n int) []Spec[string] {
	var specs []Spec[string]
	for k := 0; len(specs) < n; k++ {
		svc := fmt.Sprintf("/svc%d", k)
		specs = append(specs,
			Spec[string]{Path: svc + "/health"},
			Spec[string]{Path: svc + "/users", Methods: []string{"GET", "POST"}},
			Spec[string]{Path: svc + "/users/{id}", Methods: []string{"GET", "PUT", "DELETE"}},
			Spec[string]{Path: svc + "/users/{id}/orders/{oid}", Methods: []string{"GET"}},
			Spec[string]{Path: svc + "/files/{path...}", Methods: []string{"GET"}},
			Spec[string]{Prefix: svc + "/static"},
			Spec[string]{Host: fmt.Sprintf("api%d.example.com", k), Path: svc + "/users/{id}", Methods: []string{"GET"}},
			Spec[string]{Host: "*.tenant.example.com", Path: svc + "/items/{id}"},
			Spec[string]{Path: svc + "/items", Methods: []string{"GET"}},
			Spec[string]{Prefix: svc},
		)
	}
	specs = specs[:n]
	for i := range specs {
		specs[i].Value = fmt.Sprint("route", i)
	}
	return specs
}

type benchQuery struct {
	name, host, method, path string
	st                       Status
}

// benchQueries are requests against benchSpecs(n), aimed at a middle service.
func benchQueries(n int) []benchQuery {
	k := (n + 9) / 10 / 2
	return []benchQuery{
		{"exact", "www.example.com", "GET", fmt.Sprintf("/svc%d/users", k), Matched},
		{"params", fmt.Sprintf("API%d.example.com:8443", k), "GET", fmt.Sprintf("/svc%d/users/123/orders/456", k), Matched},
		{"prefix", "x.tenant.example.com", "GET", fmt.Sprintf("/svc%d/static/css/app.css", k), Matched},
		{"miss", "www.example.com", "GET", "/nope/x", NotFound},
	}
}

type matcher interface {
	Match(host, method, path string, params []Param) (string, []Param, Status)
}

// BenchmarkMatch compares the trie at 10, 100 and 1000 routes with the naive
// linear matcher (the test oracle) at 1000 routes.
func BenchmarkMatch(b *testing.B) {
	run := func(b *testing.B, m matcher, n int) {
		for _, q := range benchQueries(n) {
			b.Run(q.name, func(b *testing.B) {
				var buf [8]Param
				if _, _, st := m.Match(q.host, q.method, q.path, buf[:0]); st != q.st {
					b.Fatalf("Match(%q, %q) = %v; want %v", q.host, q.path, st, q.st)
				}
				b.ReportAllocs()
				for b.Loop() {
					m.Match(q.host, q.method, q.path, buf[:0])
				}
			})
		}
	}
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("trie/routes=%d", n), func(b *testing.B) {
			r, err := New(benchSpecs(n))
			if err != nil {
				b.Fatal(err)
			}
			run(b, r, n)
		})
	}
	b.Run("linear/routes=1000", func(b *testing.B) {
		run(b, newLinear(benchSpecs(1000)), 1000)
	})
}

// BenchmarkMatchPredicates measures the routes of one slot with predicates
// (a header and cookie canary, a query version) and a weighted split, at
// 1000 routes, against the same request on a route without predicates.
func BenchmarkMatchPredicates(b *testing.B) {
	specs := append(benchSpecs(1000),
		Spec[string]{Path: "/svc50/users", Methods: []string{"GET"}, Predicates: []Predicate{
			{In: Header, Name: "X-Env", Op: Exact, Value: "canary"}, {In: Cookie, Name: "beta", Op: Present}}, Value: "canary"},
		Spec[string]{Path: "/svc50/users", Methods: []string{"GET"}, Predicates: []Predicate{
			{In: Query, Name: "v", Op: Regex, Value: `2\.[0-9]+`}}, Value: "v2"},
		Spec[string]{Path: "/svc50/split", Weight: weight(90), Value: "a"},
		Spec[string]{Path: "/svc50/split", Weight: weight(10), Value: "b"},
	)
	r, err := New(specs)
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"X-Env": {"canary"}, "Cookie": {"session=abc; theme=dark; beta=1"}, "Accept": {"*/*"}}
	for _, q := range []struct{ name, path, rawQuery string }{
		{"plain", "/svc49/users", "v=2.1"},       // same shape, a slot without predicates
		{"header+cookie", "/svc50/users", ""},    // the first alternative holds
		{"fallthrough", "/svc50/users", "v=2.1"}, // with header, then query regex
		{"split", "/svc50/split", ""},
	} {
		b.Run(q.name, func(b *testing.B) {
			hd := h
			if q.name == "fallthrough" {
				hd = http.Header{"Accept": {"*/*"}}
			}
			var buf [8]Param
			b.ReportAllocs()
			for b.Loop() {
				req := Request{Header: hd, RawQuery: q.rawQuery}
				r.MatchRequest("www.example.com", "GET", q.path, &req, buf[:0])
			}
		})
	}
}
