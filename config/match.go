package config

import (
	"strings"

	"github.com/dubbogw/dubbogw/router"
)

// ValueMatch is one predicate of a route's match on a header, query
// parameter or cookie: its name and one comparison.
type ValueMatch struct {
	// Name is the header (any case), query parameter or cookie name.
	Name string `yaml:"name"`
	// Exact is the whole value ("" matches an empty value).
	Exact *string `yaml:"exact"`
	// Prefix is a non-empty start of the value.
	Prefix string `yaml:"prefix"`
	// Regex is an RE2 pattern the whole value must match (anchored: write
	// ".*x.*" to search). At most 256 bytes.
	Regex string `yaml:"regex"`
	// Present holds whatever the value, even an empty one.
	Present bool `yaml:"present"`
}

// predicate is v as the router reads it; ok is false when v does not set
// exactly one comparison.
func (v ValueMatch) predicate(in router.Source) (p router.Predicate, ok bool) {
	p = router.Predicate{In: in, Name: v.Name}
	n := 0
	if v.Exact != nil {
		p.Op, p.Value = router.Exact, *v.Exact
		n++
	}
	if v.Prefix != "" {
		p.Op, p.Value = router.Prefix, v.Prefix
		n++
	}
	if v.Regex != "" {
		p.Op, p.Value = router.Regex, v.Regex
		n++
	}
	if v.Present {
		p.Op, p.Value = router.Present, ""
		n++
	}
	return p, n == 1
}

// Predicates are the route's headers, query and cookies predicates, as
// the router reads them (entries validation refuses are left out).
func (m *Match) Predicates() []router.Predicate {
	var out []router.Predicate
	for _, l := range m.predicateLists() {
		for _, v := range l.list {
			if p, ok := v.predicate(l.in); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

type predicateList struct {
	key, what string
	in        router.Source
	list      []ValueMatch
}

func (m *Match) predicateLists() []predicateList {
	return []predicateList{
		{"headers", "header", router.Header, m.Headers},
		{"query", "query parameter", router.Query, m.Query},
		{"cookies", "cookie", router.Cookie, m.Cookies},
	}
}

// validatePredicates checks the predicates and weight of a route's match
// at at.
func validatePredicates(at At, c *Config, m *Match) {
	identity := map[string]bool{}
	for _, h := range append(append([]string(nil), c.Server.IdentityHeaders...), IdentityHeaders(c)...) {
		identity[foldHeaderName(h)] = true
	}
	total := 0
	for _, l := range m.predicateLists() {
		for i, v := range l.list {
			vat := at.Field(l.key).Index(i)
			total++
			p, ok := v.predicate(l.in)
			switch {
			case v.Name == "":
				vat.Field("name").Errorf("required: the %s to test", l.what)
				continue
			case !ok && v.Exact == nil && v.Prefix == "" && v.Regex == "" && !v.Present:
				vat.Errorf("say how to compare: set one of exact, prefix, regex or present: true")
				continue
			case !ok:
				vat.Errorf("set one of exact, prefix, regex and present")
				continue
			case l.in == router.Header && identity[foldHeaderName(v.Name)]:
				vat.Field("name").Errorf("%q is an identity header, removed from every request before routing: no client can send it", v.Name)
				continue
			}
			if err := router.CheckPredicate(p); err != nil {
				vat.Errorf("%v", err)
				continue
			}
			for j, w := range l.list[:i] {
				if w.Name == v.Name || (l.in == router.Header && strings.EqualFold(w.Name, v.Name)) {
					vat.Field("name").Errorf("%q is tested by %s[%d] already: one predicate per name", v.Name, l.key, j)
					break
				}
			}
		}
	}
	if total > router.MaxPredicates {
		at.Errorf("%d predicates: at most %d per route", total, router.MaxPredicates)
	}
	if m.Weight != nil && (*m.Weight < 0 || *m.Weight > router.MaxSplitWeight) {
		at.Field("weight").Errorf("must be 0..%d, got %d", router.MaxSplitWeight, *m.Weight)
	}
}

// foldHeaderName folds a header name as the gateway does when it removes
// identity headers: any case, '_' for '-'.
func foldHeaderName(h string) string {
	return strings.ReplaceAll(strings.ToLower(h), "_", "-")
}
