package router

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func weight(w int) *int { return &w }

func header(name string, op Op, value string) Predicate {
	return Predicate{In: Header, Name: name, Op: op, Value: value}
}

func TestPredicatePrecedence(t *testing.T) {
	specs := []Spec[string]{
		{Path: "/x", Value: "plain"},
		{Path: "/x", Predicates: []Predicate{header("x-env", Exact, "canary")}, Value: "canary"},
		{Path: "/x", Predicates: []Predicate{header("X-Env", Exact, "canary"), {In: Cookie, Name: "beta", Op: Present}}, Value: "canary-beta"},
		{Path: "/x", Predicates: []Predicate{{In: Query, Name: "v", Op: Prefix, Value: "2"}}, Value: "v2"},
		{Path: "/x", Methods: []string{"POST"}, Value: "post"},
		{Path: "/only", Methods: []string{"GET"}, Predicates: []Predicate{header("X-Env", Regex, "can.*")}, Value: "only"},
		{Path: "/only", Methods: []string{"PUT"}, Value: "only-put"},
		{Prefix: "/p", Predicates: []Predicate{header("X-Env", Present, "")}, Value: "p-any-env"},
		{Prefix: "/p/q", Predicates: []Predicate{header("X-Env", Exact, "canary")}, Value: "pq-canary"},
	}
	r, l := mustNew(t, specs), newLinear(specs)
	tests := []struct {
		method, path, rawQuery string
		header                 http.Header
		want                   string
		st                     Status
	}{
		{"GET", "/x", "", nil, "plain", Matched},
		{"GET", "/x", "", http.Header{"X-Env": {"canary"}}, "canary", Matched},
		{"GET", "/x", "", http.Header{"X-Env": {"canary2"}}, "plain", Matched},
		{"GET", "/x", "", http.Header{"X-Env": {"prod", "canary"}}, "plain", Matched}, // the first value only
		// More predicates first: both hold.
		{"GET", "/x", "", http.Header{"X-Env": {"canary"}, "Cookie": {"a=1; beta=x"}}, "canary-beta", Matched},
		// Equal counts: config order (canary before v2).
		{"GET", "/x", "v=2", http.Header{"X-Env": {"canary"}}, "canary", Matched},
		{"GET", "/x", "v=21&v=1", nil, "v2", Matched},
		{"GET", "/x", "v=1&v=21", nil, "plain", Matched}, // the first value only
		{"GET", "/x", "%76=2", nil, "v2", Matched},       // decoded names
		// A method listed beats predicates on a route without methods.
		{"POST", "/x", "", http.Header{"X-Env": {"canary"}}, "post", Matched},
		// A route with predicates that do not hold is not there: no 405 for
		// GET without the header, since PUT is the only other route.
		{"GET", "/only", "", http.Header{"X-Env": {"canary"}}, "only", Matched},
		{"GET", "/only", "", http.Header{"X-Env": {"xcanary"}}, "", MethodNotAllowed}, // anchored: no match; PUT is
		{"POST", "/only", "", http.Header{"X-Env": {"canary"}}, "", MethodNotAllowed},
		// Prefixes: the longest whose predicates hold.
		{"GET", "/p/q/r", "", http.Header{"X-Env": {"canary"}}, "pq-canary", Matched},
		{"GET", "/p/q/r", "", http.Header{"X-Env": {"prod"}}, "p-any-env", Matched},
		{"GET", "/p/q/r", "", nil, "", NotFound}, // the path matched, no predicate set held: 404
	}
	for _, tt := range tests {
		req := &Request{Header: tt.header, RawQuery: tt.rawQuery}
		v, _, st := r.MatchRequest("", tt.method, tt.path, req, nil)
		if v != tt.want || st != tt.st {
			t.Errorf("%s %s?%s %v = %q, %v; want %q, %v", tt.method, tt.path, tt.rawQuery, tt.header, v, st, tt.want, tt.st)
		}
		if wv, _, _, wst := l.MatchRequest("", tt.method, tt.path, req, nil); wv != tt.want || wst != tt.st {
			t.Errorf("oracle %s %s?%s %v = %q, %v; want %q, %v", tt.method, tt.path, tt.rawQuery, tt.header, wv, wst, tt.want, tt.st)
		}
	}
	if got := r.Allowed("", "/only"); strings.Join(got, ",") != "PUT" {
		t.Errorf("Allowed(/only) = %v; want [PUT] (a route with predicates adds nothing)", got)
	}
}

func TestCookiePredicates(t *testing.T) {
	r := mustNew(t, []Spec[string]{
		{Path: "/c", Predicates: []Predicate{{In: Cookie, Name: "beta", Op: Exact, Value: "on"}}, Value: "beta"},
		{Path: "/c", Value: "plain"},
	})
	for _, tt := range []struct {
		cookies []string
		want    string
	}{
		{[]string{"beta=on"}, "beta"},
		{[]string{`beta="on"`}, "beta"},            // quotes removed, as net/http does
		{[]string{"a=1", " beta=on ;x=y"}, "beta"}, // any Cookie header, spaces trimmed
		{[]string{"Beta=on"}, "plain"},             // names are case-sensitive
		{[]string{"beta=o\\n; beta=on"}, "beta"},   // an invalid value is skipped
		{[]string{"beta=off; beta=on"}, "plain"},   // the first one
		{[]string{"xbeta=on"}, "plain"},
		{nil, "plain"},
	} {
		req := &Request{Header: http.Header{"Cookie": tt.cookies}}
		if v, _, _ := r.MatchRequest("", "GET", "/c", req, nil); v != tt.want {
			t.Errorf("Cookie %q: %q; want %q", tt.cookies, v, tt.want)
		}
	}
}

func TestPredicateErrors(t *testing.T) {
	long := strings.Repeat("a", MaxPredicateValue+1)
	tests := []struct {
		preds []Predicate
		want  string
	}{
		{[]Predicate{header("X Env", Exact, "a")}, `spec 0: header "X Env": not a header name`},
		{[]Predicate{header("host", Exact, "a")}, `spec 0: header "host": the host is matched by host`},
		{[]Predicate{header("Cookie", Present, "")}, `spec 0: header "Cookie": test a cookie by its name under cookies`},
		{[]Predicate{{In: Query, Op: Present}}, `spec 0: query "": empty parameter name`},
		{[]Predicate{{In: Cookie, Name: "a=b", Op: Present}}, `spec 0: cookie "a=b": not a cookie name`},
		{[]Predicate{header("X-A", Regex, "a(")}, "spec 0: header \"X-A\": error parsing regexp: missing closing ): `a(`"},
		{[]Predicate{header("X-A", Regex, "a)|(b")}, "spec 0: header \"X-A\": error parsing regexp: unexpected ): `a)|(b`"}, // would unanchor it
		{[]Predicate{header("X-A", Regex, long)}, `spec 0: header "X-A": regex longer than 256 bytes`},
		{[]Predicate{header("X-A", Prefix, "")}, `spec 0: header "X-A": an empty prefix matches every value: use present`},
		{[]Predicate{header("X-A", Present, "x")}, `spec 0: header "X-A": present takes no value`},
		{[]Predicate{header("X-A", 0, "x")}, `spec 0: header "X-A": say how to compare: exact, prefix, regex or present`},
		{[]Predicate{header("x-a", Exact, "1"), header("X-A", Prefix, "2")}, `spec 0: header "X-A" is tested twice: one predicate per name`},
		{make([]Predicate, MaxPredicates+1), `spec 0: 17 predicates: at most 16`},
	}
	for _, tt := range tests {
		_, err := New([]Spec[string]{{Path: "/a", Predicates: tt.preds}})
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%v) = %v\n want %s", tt.preds, err, tt.want)
		}
	}
}

func TestSplitRules(t *testing.T) {
	canary := []Predicate{header("X-Env", Exact, "canary")}
	sameCanary := []Predicate{header("x-env", Exact, "canary")} // equivalent: canonical names
	tests := []struct {
		name  string
		specs []Spec[string]
		want  string // "" accepted
	}{
		{"equivalent predicates, no weights", []Spec[string]{
			{Path: "/a", Predicates: canary}, {Path: "/a", Predicates: sameCanary},
		}, "spec 1 is shadowed by spec 0 (same host, path, no method list and predicates; give both a weight to split their requests)"},
		{"one weight of two", []Spec[string]{
			{Path: "/a", Weight: weight(10)}, {Path: "/a"},
		}, "spec 1 is shadowed by spec 0 (same host, path and no method list)"},
		{"predicates in another order", []Spec[string]{
			{Path: "/a", Predicates: []Predicate{header("A", Present, ""), header("B", Present, "")}},
			{Path: "/a", Predicates: []Predicate{header("B", Present, ""), header("A", Present, "")}},
		}, "spec 1 is shadowed by spec 0 (same host, path, no method list and predicates; give both a weight to split their requests)"},
		{"weights", []Spec[string]{
			{Path: "/a", Weight: weight(90)}, {Path: "/a", Weight: weight(10)},
		}, ""},
		{"weights adding up to 0", []Spec[string]{
			{Path: "/a", Methods: []string{"GET"}, Weight: weight(0)}, {Path: "/a", Methods: []string{"GET"}, Weight: weight(0)},
		}, "specs [0 1] (method GET): their weights add up to 0, so no route would serve these requests"},
		{"a lone route of weight 0", []Spec[string]{
			{Path: "/a", Methods: []string{"GET", "POST"}, Weight: weight(0)}, {Path: "/a", Methods: []string{"GET"}, Weight: weight(5)},
		}, "specs [0] (method POST): their weights add up to 0, so no route would serve these requests"},
		{"too much weight", []Spec[string]{
			{Path: "/a", Weight: weight(9000)}, {Path: "/a", Weight: weight(1001)},
		}, "specs [0 1] (no method list): their weights add up to 10001; at most 10000"},
		{"weight out of range", []Spec[string]{
			{Path: "/a", Weight: weight(-1)},
		}, "spec 0: weight -1: must be 0..10000"},
	}
	for _, tt := range tests {
		_, err := New(tt.specs)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("%s: New = %v\n want %s", tt.name, err, tt.want)
		}
	}
}

// TestSplitIsExact: a smooth weighted round robin gives every route its
// exact share of each period of sum(weights) requests, interleaved, also
// when requests come concurrently.
func TestSplitIsExact(t *testing.T) {
	r := mustNew(t, []Spec[string]{
		{Path: "/a", Weight: weight(90), Value: "stable"},
		{Path: "/a", Weight: weight(10), Value: "canary"},
		{Path: "/a", Weight: weight(0), Value: "drained"},
		{Path: "/b", Weight: weight(1), Value: "one"},
		{Path: "/b", Weight: weight(2), Value: "two"},
		{Path: "/b", Weight: weight(3), Value: "three"},
	})
	count := func(path string, n, workers int) map[string]int {
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				local := map[string]int{}
				for range n / workers {
					v, _, _ := r.Match("", "GET", path, nil)
					local[v]++
				}
				mu.Lock()
				defer mu.Unlock()
				for k, c := range local {
					got[k] += c
				}
			})
		}
		wg.Wait()
		return got
	}
	if got := count("/a", 10000, 8); got["stable"] != 9000 || got["canary"] != 1000 || got["drained"] != 0 {
		t.Errorf("/a over 10000 requests: %v; want stable 9000, canary 1000", got)
	}
	if got := count("/b", 6000, 3); got["one"] != 1000 || got["two"] != 2000 || got["three"] != 3000 {
		t.Errorf("/b over 6000 requests: %v; want 1000, 2000, 3000", got)
	}
	// Smooth: the canary's requests are spread out, never 9 in a row of 10.
	run, longest := 0, 0
	for range 1000 {
		if v, _, _ := r.Match("", "GET", "/a", nil); v == "canary" {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest != 1 {
		t.Errorf("canary served %d requests in a row; a smooth round robin spreads them", longest)
	}
}

func TestSplitSchedule(t *testing.T) {
	for _, weights := range [][]int{{90, 10}, {1, 1}, {5000, 5000}, {3, 0, 7}, {1, 2, 3, 4}, {9999, 1}, {60, 40}} {
		s := newSplit(make([]int, len(weights)), weights)
		got := make([]int, len(weights))
		for _, k := range s.schedule {
			got[k]++
		}
		sum := 0
		for _, w := range weights {
			sum += w
		}
		for i, w := range weights {
			// Exact shares of the period (reduced by the weights' gcd).
			if float64(got[i])/float64(len(s.schedule)) != float64(w)/float64(sum) {
				t.Errorf("weights %v: schedule %v gives route %d %d of %d", weights, got, i, got[i], len(s.schedule))
			}
		}
	}
}

func TestMatchRequestDoesNotAllocate(t *testing.T) {
	specs := benchSpecs(1000)
	specs = append(specs,
		Spec[string]{Path: "/svc50/users", Methods: []string{"GET"}, Predicates: []Predicate{header("X-Env", Exact, "canary"), {In: Cookie, Name: "beta", Op: Present}}, Value: "canary"},
		Spec[string]{Path: "/svc50/users", Methods: []string{"GET"}, Predicates: []Predicate{{In: Query, Name: "v", Op: Regex, Value: "2\\.[0-9]+"}}, Value: "v2"},
		Spec[string]{Path: "/svc50/split", Weight: weight(90), Value: "a"},
		Spec[string]{Path: "/svc50/split", Weight: weight(10), Value: "b"},
	)
	r := mustNew(t, specs)
	h := http.Header{"X-Env": {"canary"}, "Cookie": {"session=abc; beta=1"}}
	for _, tt := range []struct {
		path, rawQuery, want string
	}{
		{"/svc50/users", "", "canary"},
		{"/svc50/users", "a=b&v=2.10", "canary"},
		{"/svc50/split", "", "a"},
	} {
		req := Request{Header: h, RawQuery: tt.rawQuery}
		if v, _, _ := r.MatchRequest("", "GET", tt.path, &req, nil); v != tt.want {
			t.Fatalf("%s: %q; want %q", tt.path, v, tt.want)
		}
		var buf [8]Param
		allocs := testing.AllocsPerRun(100, func() {
			req := Request{Header: h, RawQuery: tt.rawQuery}
			r.MatchRequest("", "GET", tt.path, &req, buf[:0])
		})
		if allocs != 0 {
			t.Errorf("MatchRequest(%s?%s) allocates %v times per run", tt.path, tt.rawQuery, allocs)
		}
	}
}
