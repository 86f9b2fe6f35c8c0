package router

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// The alphabets are small so that random routes overlap a lot.
var (
	propHosts    = []string{"", "", "", "a.com", "b.a.com", "*.a.com", "*.b.a.com", "[::1]", "10.0.0.1"}
	propMethods  = []string{"GET", "HEAD", "POST", "PUT"}
	propSegments = []string{"x", "y", "z"}

	reqHosts    = []string{"", "a.com", "A.COM:80", "b.a.com", "c.b.a.com", "d.c.b.a.com", "x.a.com", ".a.com", "[::1]:8080", "::1", "10.0.0.1:443", "other"}
	reqMethods  = []string{"GET", "HEAD", "POST", "PUT", "DELETE"}
	reqSegments = []string{"x", "y", "z", "", "w"}
)

func randomSpec(rng *rand.Rand, value string) Spec[string] {
	s := Spec[string]{Host: propHosts[rng.IntN(len(propHosts))], Value: value}
	if rng.IntN(2) == 0 {
		for _, m := range propMethods {
			if rng.IntN(3) == 0 {
				s.Methods = append(s.Methods, m)
			}
		}
	}
	n := rng.IntN(4)
	var b strings.Builder
	if rng.IntN(4) == 0 { // prefix
		for range n {
			b.WriteString("/" + propSegments[rng.IntN(len(propSegments))])
		}
		if s.Prefix = b.String(); s.Prefix == "" {
			s.Prefix = "/"
		}
		return s
	}
	for k := range n {
		switch r := rng.IntN(10); {
		case r < 6:
			b.WriteString("/" + propSegments[rng.IntN(len(propSegments))])
		case r < 9 || k < n-1:
			fmt.Fprintf(&b, "/{p%d}", k)
		default:
			fmt.Fprintf(&b, "/{rest%d...}", k)
		}
	}
	if n == 0 || (rng.IntN(5) == 0 && !strings.HasSuffix(b.String(), "...}")) {
		b.WriteString("/")
	}
	s.Path = b.String()
	return s
}

// Predicates and requests draw from small alphabets too, so that routes
// share slots and predicate sets, and requests satisfy some of them.
var (
	propPredNames = []string{"a", "b"}
	propValues    = []string{"", "1", "12", "2"}
)

// randomPredicates gives s up to two predicates, and sometimes a weight.
func randomPredicates(rng *rand.Rand, s *Spec[string]) {
	for k := range rng.IntN(3) {
		p := Predicate{In: Source(1 + rng.IntN(3)), Name: propPredNames[k%2], Op: Op(1 + rng.IntN(4))}
		if p.In == Header && rng.IntN(2) == 0 {
			p.Name = "X-" + strings.ToUpper(p.Name) // canonical: the same as "x-a"
		} else if p.In == Header {
			p.Name = "x-" + p.Name
		}
		switch p.Op {
		case Exact:
			p.Value = propValues[rng.IntN(len(propValues))]
		case Prefix:
			p.Value = propValues[1+rng.IntN(len(propValues)-1)]
		case Regex:
			p.Value = []string{"1.*", "[0-9]+", "2|12"}[rng.IntN(3)]
		}
		s.Predicates = append(s.Predicates, p)
	}
	if rng.IntN(2) == 0 {
		w := rng.IntN(4)
		s.Weight = &w
	}
}

// randomPredRequest gives a request some of the headers, parameters and
// cookies predicates test, some of them repeated or malformed.
func randomPredRequest(rng *rand.Rand) *Request {
	req := &Request{Header: http.Header{}}
	var q []string
	for _, name := range propPredNames {
		for range rng.IntN(3) {
			v := propValues[rng.IntN(len(propValues))]
			req.Header.Add("X-"+strings.ToUpper(name), v)
		}
		for range rng.IntN(3) {
			v := propValues[rng.IntN(len(propValues))]
			switch rng.IntN(5) {
			case 0:
				q = append(q, name) // no "=": present, empty
			case 1:
				q = append(q, "%"+name+"="+v) // a bad escape: skipped
			case 2:
				q = append(q, url.QueryEscape(name)+"=%3"+v) // "%31" is "1"
			default:
				q = append(q, name+"="+v)
			}
		}
		for range rng.IntN(3) {
			v := propValues[rng.IntN(len(propValues))]
			switch rng.IntN(4) {
			case 0:
				v = `"` + v + `"`
			case 1:
				v += `\` // invalid: skipped
			}
			req.Header.Add("Cookie", " "+name+"="+v+"; other=x")
		}
	}
	req.RawQuery = strings.Join(q, "&")
	return req
}

// randomSpecs returns up to n valid specs, skipping those New rejects as
// shadowed.
func randomSpecs(t testing.TB, rng *rand.Rand, n int) []Spec[string] {
	var specs []Spec[string]
	for i := range n {
		s := randomSpec(rng, fmt.Sprint("r", i))
		_, err := New(append(specs, s))
		switch {
		case err == nil:
			specs = append(specs, s)
		case !strings.Contains(err.Error(), "is shadowed by") && !strings.Contains(err.Error(), "weights add up"):
			t.Fatalf("random spec %+v rejected: %v", s, err)
		}
	}
	return specs
}

func randomRequest(rng *rand.Rand) (host, method, path string) {
	var b strings.Builder
	for range 1 + rng.IntN(5) {
		b.WriteString("/" + reqSegments[rng.IntN(len(reqSegments))])
	}
	return reqHosts[rng.IntN(len(reqHosts))], reqMethods[rng.IntN(len(reqMethods))], b.String()
}

// agree checks that the trie and the oracle give the same answer.
func agree(t *testing.T, r *Router[string], l *linear[string], host, method, path string) {
	t.Helper()
	agreeRequest(t, r, l, host, method, path, &Request{})
}

// agreeRequest checks that the trie and the oracle give the same answer
// for req: the same route, or a route of the same split.
func agreeRequest(t *testing.T, r *Router[string], l *linear[string], host, method, path string, req *Request) {
	t.Helper()
	v, ps, st := r.MatchRequest(host, method, path, req, nil)
	wv, split, wps, wst := l.MatchRequest(host, method, path, req, nil)
	if len(split) > 0 && slices.Contains(split, v) {
		wv = v
	}
	if v != wv || st != wst || !slices.Equal(ps, wps) {
		t.Fatalf("Match(%q, %q, %q, %+v) = %q, %v, %v; oracle %q (split %q), %v, %v", host, method, path, *req, v, ps, st, wv, split, wps, wst)
	}
	allowed := r.Allowed(host, path)
	if want := l.Allowed(host, path); !slices.Equal(allowed, want) {
		t.Fatalf("Allowed(%q, %q) = %v; oracle %v", host, path, allowed, want)
	}
	if st == MethodNotAllowed && len(allowed) == 0 {
		t.Fatalf("Match(%q, %q, %q) = 405 with an empty Allowed", host, method, path)
	}
	for _, m := range allowed {
		if _, _, st := r.Match(host, m, path, nil); st != Matched {
			t.Fatalf("Allowed(%q, %q) lists %s, but Match gives %v", host, path, m, st)
		}
	}
}

func TestMatchAgreesWithLinearOracle(t *testing.T) {
	statuses := map[Status]int{}
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 0))
		// Sparse tables give 404s and 405s; dense ones stress precedence.
		specs := randomSpecs(t, rng, []int{10, 30, 100, 300}[seed%4])
		r, l := mustNew(t, specs), newLinear(specs)
		for range 5000 {
			host, method, path := randomRequest(rng)
			agree(t, r, l, host, method, path)
			_, _, st := r.Match(host, method, path, nil)
			statuses[st]++
		}
	}
	// The generator must exercise every outcome, or the test proves little.
	if statuses[Matched] < 1000 || statuses[NotFound] < 1000 || statuses[MethodNotAllowed] < 1000 {
		t.Errorf("outcomes %v; want at least 1000 of each", statuses)
	}
}

// TestPredicatesAgreeWithLinearOracle is the oracle test with predicates
// and splits: random routes with header, query and cookie predicates and
// weights, random requests with those headers, parameters and cookies.
func TestPredicatesAgreeWithLinearOracle(t *testing.T) {
	var statuses [3]int
	var byPreds, splits int
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := []int{10, 30, 100, 300}[seed%4]
		var specs []Spec[string]
		for i := range n {
			s := randomSpec(rng, fmt.Sprint("r", i))
			randomPredicates(rng, &s)
			if len(specs) > 0 && rng.IntN(4) == 0 {
				// Another route at an earlier one's place: a split, or shadowed.
				s = specs[rng.IntN(len(specs))]
				s.Value, s.Weight = fmt.Sprint("r", i), nil
				if rng.IntN(4) > 0 {
					w := rng.IntN(4)
					s.Weight = &w
				}
			}
			if _, err := New(append(specs, s)); err == nil {
				specs = append(specs, s)
			} else if !strings.Contains(err.Error(), "is shadowed by") && !strings.Contains(err.Error(), "weights add up") {
				t.Fatalf("random spec %+v rejected: %v", s, err)
			}
		}
		r, l := mustNew(t, specs), newLinear(specs)
		for range 5000 {
			host, method, path := randomRequest(rng)
			req := randomPredRequest(rng)
			agreeRequest(t, r, l, host, method, path, req)
			v, _, st := r.MatchRequest(host, method, path, req, nil)
			statuses[st]++
			if st == Matched {
				k := slices.IndexFunc(specs, func(s Spec[string]) bool { return s.Value == v })
				if len(specs[k].Predicates) > 0 {
					byPreds++
				}
				if _, split, _, _ := l.MatchRequest(host, method, path, req, nil); len(split) > 1 {
					splits++
				}
			}
		}
	}
	t.Logf("outcomes %v, matched by a route with predicates %d, by a split %d", statuses, byPreds, splits)
	if statuses[Matched] < 1000 || statuses[NotFound] < 1000 || statuses[MethodNotAllowed] < 1000 || byPreds < 1000 || splits < 100 {
		t.Errorf("outcomes %v, %d by a route with predicates, %d by a split; want at least 1000 of each, 100 splits", statuses, byPreds, splits)
	}
}

func fuzzSpecs(t testing.TB) []Spec[string] {
	specs := randomSpecs(t, rand.New(rand.NewPCG(1, 2)), 200)
	return append(specs,
		Spec[string]{Host: "api.example.com", Path: "/users/{id}", Methods: []string{"GET"}, Value: "api"},
		Spec[string]{Host: "*.example.com", Prefix: "/static", Value: "static"},
		Spec[string]{Path: "/files/{p...}", Value: "files"},
	)
}

func FuzzMatch(f *testing.F) {
	for _, s := range [][3]string{
		{"api.example.com", "GET", "/users/1"},
		{"API.example.com:80", "HEAD", "/users/1"},
		{"x.y.example.com", "GET", "/static/a/b"},
		{"[::1]:8080", "POST", "/x/y/"},
		{"b.a.com", "PUT", "/x/{p0}"},
		{"", "DELETE", "/files/"},
		{"[a]:b:c", "GET", ""},
		{"[::1", "GET", "//x//"},
		{"a.com:", "OPTIONS", "*"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	specs := fuzzSpecs(f)
	r, err := New(specs)
	if err != nil {
		f.Fatal(err)
	}
	l := newLinear(specs)
	f.Fuzz(func(t *testing.T, host, method, path string) {
		agree(t, r, l, host, method, path)
	})
}

// FuzzMatchRequest checks the predicates' own readers of headers, query
// and cookies against net/http's and net/url's (the oracle's) on
// arbitrary values.
func FuzzMatchRequest(f *testing.F) {
	for _, s := range [][3]string{
		{"1", "a=1&b=2", "a=1; b=2"},
		{"12", "a=%31&a=2", `a="12"; b=\`},
		{"", "%zz=1&a", " a = 1 ;b=2"},
		{"2", "a=1;b=2&+a=1&a+=1", "a=1;;b=\x7f"},
		{"x", "%61=%32", "b=2; a=\"\""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var specs []Spec[string]
	for i := range 300 {
		s := randomSpec(rng, fmt.Sprint("r", i))
		s.Host, s.Methods = "", nil // every route can answer: the predicates decide
		randomPredicates(rng, &s)
		if _, err := New(append(specs, s)); err == nil {
			specs = append(specs, s)
		}
	}
	r, l := mustNew(f, specs), newLinear(specs)
	f.Fuzz(func(t *testing.T, header, rawQuery, cookie string) {
		req := &Request{Header: http.Header{"X-A": {header}, "X-B": {header, "1"}, "Cookie": {cookie}}, RawQuery: rawQuery}
		for _, path := range []string{"/x", "/x/y", "/y/z/x", "/"} {
			agreeRequest(t, r, l, "", "GET", path, req)
		}
	})
}
