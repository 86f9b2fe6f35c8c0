package router

import (
	"fmt"
	"math/rand/v2"
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
		case !strings.Contains(err.Error(), "is shadowed by"):
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
	v, ps, st := r.Match(host, method, path, nil)
	wv, wps, wst := l.Match(host, method, path, nil)
	if v != wv || st != wst || !slices.Equal(ps, wps) {
		t.Fatalf("Match(%q, %q, %q) = %q, %v, %v; oracle %q, %v, %v", host, method, path, v, ps, st, wv, wps, wst)
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
