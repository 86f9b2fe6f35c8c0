package governance

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/cluster"
)

// The naive condition evaluator: Dubbo's own algorithm, written as
// dubbo-go v3.3.0 writes it (cluster/router/condition/route.go
// processMatchers with the pattern below; matcher/base.go IsMatch;
// pattern_value/wildcard.go Match) over maps of strings. It shares no code
// with the parser and evaluator under test, which must agree with it on
// every condition both accept.
var naivePattern = regexp.MustCompile(`([&!=,]*)\s*([^&!=,\s]+)`)

type naivePair struct{ matches, mismatches map[string]bool }

type naiveCond struct {
	when, then map[string]*naivePair
	block      bool
}

func naiveParseSide(rule string) (map[string]*naivePair, error) {
	cond := map[string]*naivePair{}
	var cur *naivePair
	var values map[string]bool
	for _, m := range naivePattern.FindAllStringSubmatch(rule, -1) {
		sep, content := m[1], m[2]
		switch sep {
		case "":
			cur = &naivePair{matches: map[string]bool{}, mismatches: map[string]bool{}}
			cond[content] = cur
		case "&":
			if cond[content] == nil {
				cond[content] = &naivePair{matches: map[string]bool{}, mismatches: map[string]bool{}}
			}
			cur = cond[content]
		case "=", "!=":
			if cur == nil {
				return nil, fmt.Errorf("no key")
			}
			values = cur.matches
			if sep == "!=" {
				values = cur.mismatches
			}
			values[content] = true
		case ",":
			if len(values) == 0 {
				return nil, fmt.Errorf("comma first")
			}
			values[content] = true
		default:
			return nil, fmt.Errorf("bad separator %q", sep)
		}
	}
	return cond, nil
}

func naiveParse(rule string) (*naiveCond, error) {
	rule = strings.ReplaceAll(strings.ReplaceAll(rule, "consumer.", ""), "provider.", "")
	whenRule, thenRule := "", strings.TrimSpace(rule)
	if i := strings.Index(rule, "=>"); i >= 0 {
		whenRule, thenRule = strings.TrimSpace(rule[:i]), strings.TrimSpace(rule[i+2:])
	}
	c := &naiveCond{when: map[string]*naivePair{}}
	var err error
	if whenRule != "" && whenRule != "true" {
		if c.when, err = naiveParseSide(whenRule); err != nil {
			return nil, err
		}
	}
	if thenRule == "" || thenRule == "false" {
		c.block = true
	} else if c.then, err = naiveParseSide(thenRule); err != nil {
		return nil, err
	}
	return c, nil
}

func naiveGlob(pattern, value string, param map[string]string) bool {
	if param != nil && strings.HasPrefix(pattern, "$") {
		pattern = param[pattern[1:]]
	}
	if pattern == "*" {
		return true
	}
	if pattern == "" && value == "" {
		return true
	}
	if pattern == "" || value == "" {
		return false
	}
	i := strings.LastIndex(pattern, "*")
	switch {
	case i == -1:
		return value == pattern
	case i == len(pattern)-1:
		return strings.HasPrefix(value, pattern[:i])
	case i == 0:
		return strings.HasSuffix(value, pattern[i+1:])
	}
	return strings.HasPrefix(value, pattern[:i]) && strings.HasSuffix(value, pattern[i+1:])
}

func naiveMatch(cond map[string]*naivePair, sample, param map[string]string) bool {
	for key, pair := range cond {
		value, ok := sample[key]
		if !ok {
			return false
		}
		any := func(set map[string]bool) bool {
			for p := range set {
				if naiveGlob(p, value, param) {
					return true
				}
			}
			return false
		}
		var holds bool
		switch {
		case len(pair.matches) > 0 && len(pair.mismatches) == 0:
			holds = any(pair.matches)
		case len(pair.mismatches) > 0 && len(pair.matches) == 0:
			holds = !any(pair.mismatches)
		case len(pair.matches) > 0:
			holds = !any(pair.mismatches) && any(pair.matches)
		}
		if !holds {
			return false
		}
	}
	return true
}

// The alphabets are small so that random conditions and samples overlap.
var (
	propWhenKeys = []string{"method", "arguments[0]", "arguments[1]", "attachments[zone]", "application", "consumer.host", "region"}
	propThenKeys = []string{"host", "port", "address", "application", "region", "provider.region"}
	propValues   = []string{"a", "ab", "b", "a*", "*b", "a*b", "*", "find*", "10.0.0.1", "10.0.0.*", "2088*", "$host", "$application"}
	propSeps     = []string{"=", "!="}
	propStrings  = []string{"a", "ab", "b", "abb", "find", "findAll", "10.0.0.1", "10.0.0.2", "20880", "20881", "gw"}
)

func randomSide(rng *rand.Rand, keys []string) string {
	var b strings.Builder
	n := 1 + rng.IntN(3)
	for i := range n {
		if i > 0 {
			b.WriteString([]string{" & ", "&", " &"}[rng.IntN(3)])
		}
		b.WriteString(keys[rng.IntN(len(keys))])
		b.WriteString([]string{" ", ""}[rng.IntN(2)])
		b.WriteString(propSeps[rng.IntN(2)])
		b.WriteString([]string{" ", ""}[rng.IntN(2)])
		nv := 1 + rng.IntN(3)
		for j := range nv {
			if j > 0 {
				if rng.IntN(4) == 0 {
					b.WriteString(" " + propSeps[rng.IntN(2)] + " ")
				} else {
					b.WriteString(",")
				}
			}
			b.WriteString(propValues[rng.IntN(len(propValues))])
		}
	}
	return b.String()
}

func randomCondition(rng *rand.Rand) string {
	when, then := "", ""
	if rng.IntN(5) > 0 {
		when = randomSide(rng, propWhenKeys)
	}
	if rng.IntN(8) > 0 {
		then = randomSide(rng, propThenKeys)
	}
	switch rng.IntN(10) {
	case 0:
		return then // no "=>": all then
	case 1:
		return when + " => false"
	}
	return when + " => " + then
}

type propArgs []string

func (a propArgs) Argument(i int) (string, bool) {
	if i < len(a) {
		return a[i], true
	}
	return "", false
}

func pick(rng *rand.Rand) string { return propStrings[rng.IntN(len(propStrings))] }

// TestConditionOracle checks the parser and evaluator against the naive
// Dubbo algorithm on random conditions, requests and providers.
func TestConditionOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for n := range 20000 {
		text := randomCondition(rng)
		c, err := ParseCondition(text)
		nc, nerr := naiveParse(text)
		if err != nil || nerr != nil {
			t.Fatalf("%d: %q: parse errors %v / naive %v", n, text, err, nerr)
		}
		cons := Consumer{Application: pick(rng), Host: pick(rng), Interface: "I"}
		req := &Request{Method: pick(rng), Args: propArgs{pick(rng)}, Attachments: map[string]string{}}
		whenSample := map[string]string{"method": req.Method, "arguments[0]": req.Args.(propArgs)[0],
			"application": cons.Application, "host": cons.Host, "interface": "I", "side": "consumer"}
		if rng.IntN(2) == 0 {
			req.Attachments["zone"] = pick(rng)
			whenSample["attachments[zone]"] = req.Attachments["zone"]
		}
		params := map[string]string{"application": pick(rng)}
		if rng.IntN(2) == 0 {
			params["region"] = pick(rng)
		}
		host, port := pick(rng), []string{"20880", "20881"}[rng.IntN(2)]
		p, err := cluster.NewProvider(host+":"+port, params)
		if err != nil {
			t.Fatal(err)
		}
		thenSample := maps.Clone(params)
		thenSample["host"], thenSample["port"], thenSample["address"] = host, port, host+":"+port
		consParams := map[string]string{"application": cons.Application, "host": cons.Host, "interface": "I"}

		gotWhen := c.matchesWhen(&cons, req)
		wantWhen := naiveMatch(nc.when, whenSample, nil)
		if gotWhen != wantWhen {
			t.Fatalf("%d: %q when: got %v, naive %v (request %+v, consumer %+v)", n, text, gotWhen, wantWhen, req, cons)
		}
		gotThen := c.matchesThen(&cons, p)
		wantThen := !nc.block && naiveMatch(nc.then, thenSample, consParams)
		if gotThen != wantThen {
			t.Fatalf("%d: %q then: got %v, naive %v (provider %v %v, consumer %+v)", n, text, gotThen, wantThen, p.Addr, params, cons)
		}
	}
}

// TestConditionStrictness: on random strings over the grammar's
// characters, whatever the parser accepts, Dubbo's parses the same way
// (same keys, same values); what it refuses, it names.
func TestConditionStrictness(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	pieces := []string{"a", "b", "method", "host", "=", "!=", "!", "&", ",", " ", "*", "=>", "==", "&&", ",,"}
	accepted := 0
	for range 50000 {
		var b strings.Builder
		for range 1 + rng.IntN(9) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		c, err := ParseCondition(text)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: refused without a reason", text)
			}
			continue
		}
		accepted++
		nc, nerr := naiveParse(text)
		if nerr != nil {
			t.Fatalf("%q: accepted, Dubbo's parser refuses it: %v", text, nerr)
		}
		if !sameSide(c.when, nc.when) || c.block != nc.block || (!c.block && !sameSide(c.then, nc.then)) {
			t.Fatalf("%q: parsed %+v / %+v, Dubbo's %+v / %+v", text, c.when, c.then, nc.when, nc.then)
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d random conditions accepted: the generator tests nothing", accepted)
	}
}

func sameSide(ms []match, naive map[string]*naivePair) bool {
	if len(ms) != len(naive) {
		return false
	}
	set := func(vs []string) []string {
		out := slices.Clone(vs)
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, m := range ms {
		p := naive[m.key]
		if p == nil || !slices.Equal(set(m.values), slices.Sorted(maps.Keys(p.matches))) ||
			!slices.Equal(set(m.mismatches), slices.Sorted(maps.Keys(p.mismatches))) {
			return false
		}
	}
	return true
}
