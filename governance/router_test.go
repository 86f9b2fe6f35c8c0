package governance

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dubbogw/dubbogw/cluster"
)

func mustRule(t testing.TB, key, yaml string) *Rule {
	t.Helper()
	r, err := Parse(key, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fleet: a untagged, b static tag gray, c and d untagged (c named by the
// rule's canary addresses), e env=blue.
func fleet(t testing.TB) []*cluster.Provider {
	return []*cluster.Provider{
		provider(t, "10.0.0.1:20880", map[string]string{"application": "shop"}),
		provider(t, "10.0.0.2:20880", map[string]string{"application": "shop", "dubbo.tag": "gray"}),
		provider(t, "10.0.0.3:20880", map[string]string{"application": "shop"}),
		provider(t, "10.0.0.4:20881", map[string]string{"application": "shop"}),
		provider(t, "10.0.0.5:20880", map[string]string{"application": "shop", "env": "blue"}),
	}
}

// TestTagRouting: the tag router's semantics, as dubbo-go v3.3.0's
// cluster/router/tag/match.go (staticTag, requestEmptyTag, requestTag)
// and Dubbo's tag rule documentation (dubbo.apache.org
// overview/core-features/traffic/tag-rule) define them.
func TestTagRouting(t *testing.T) {
	ps := fleet(t)
	rule := func(force bool) *TagRule {
		return mustRule(t, "shop.tag-router", fmt.Sprintf(`configVersion: v3.0
force: %v
enabled: true
key: shop
tags:
  - name: canary
    addresses: ["10.0.0.3:20880"]
  - name: blue
    match:
      - key: env
        value:
          exact: blue
  - name: empty
    addresses: ["10.9.9.9:20880"]
`, force)).TagRouter
	}
	for _, c := range []struct {
		name string
		rule *TagRule
		tag  string
		want []string
	}{
		{"static: no tag goes to untagged", nil, "", []string{"10.0.0.1:20880", "10.0.0.3:20880", "10.0.0.4:20881", "10.0.0.5:20880"}},
		{"static: gray goes to gray", nil, "gray", []string{"10.0.0.2:20880"}},
		{"static: unknown falls back to untagged", nil, "red", []string{"10.0.0.1:20880", "10.0.0.3:20880", "10.0.0.4:20881", "10.0.0.5:20880"}},
		{"rule: no tag leaves out tagged and addressed", rule(false), "", []string{"10.0.0.1:20880", "10.0.0.4:20881", "10.0.0.5:20880"}},
		{"rule: addresses", rule(false), "canary", []string{"10.0.0.3:20880"}},
		{"rule: match", rule(false), "blue", []string{"10.0.0.5:20880"}},
		{"rule: static tag not in the rule", rule(false), "gray", []string{"10.0.0.2:20880"}},
		{"rule: none tagged, force false: untagged", rule(false), "empty", []string{"10.0.0.1:20880", "10.0.0.4:20881", "10.0.0.5:20880"}},
		{"rule: none tagged, force true: none", rule(true), "empty", []string{}},
		{"rule: unknown tag, force true: none", rule(true), "red", []string{}},
		{"disabled rule: static", func() *TagRule { r := rule(true); r.Enabled = false; return r }(), "canary",
			[]string{"10.0.0.1:20880", "10.0.0.3:20880", "10.0.0.4:20881", "10.0.0.5:20880"}},
	} {
		got := addrs(NewRouter(Consumer{}, c.rule).Route(ps, &Request{Method: "m", Tag: c.tag}))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestConditionRouting: rules in order, force, block, enabled, $ values,
// arguments and attachments. Semantics: Dubbo 3 ConditionStateRouter
// (a condition leaving none is ignored unless force; an empty then side
// blocks) and the documentation's examples (dubbo.apache.org
// overview/core-features/traffic/condition-rule).
func TestConditionRouting(t *testing.T) {
	ps := fleet(t)[2:] // 10.0.0.3:20880, 10.0.0.4:20881, 10.0.0.5:20880: no static tag but env
	cons := Consumer{Application: "gw", Host: "10.0.0.4", Interface: "I"}
	rule := func(force bool, conds ...string) *ConditionRule {
		y := fmt.Sprintf("configVersion: v3.0\nscope: service\nkey: I\nforce: %v\nconditions:\n", force)
		for _, c := range conds {
			y += fmt.Sprintf("  - %q\n", c)
		}
		return mustRule(t, "I::.condition-router", y).Condition
	}
	all := []string{"10.0.0.3:20880", "10.0.0.4:20881", "10.0.0.5:20880"}
	for _, c := range []struct {
		name  string
		rules []*ConditionRule
		req   Request
		want  []string
	}{
		{"excludes a host for one method", []*ConditionRule{rule(false, "method = find* => host != 10.0.0.3")},
			Request{Method: "findUser"}, []string{"10.0.0.4:20881", "10.0.0.5:20880"}},
		{"other method untouched", []*ConditionRule{rule(false, "method = find* => host != 10.0.0.3")},
			Request{Method: "save"}, all},
		{"address wildcard", []*ConditionRule{rule(false, "=> address = *:20881")}, Request{Method: "x"}, []string{"10.0.0.4:20881"}},
		{"empty result ignored without force", []*ConditionRule{rule(false, "=> host = 1.1.1.1")}, Request{Method: "x"}, all},
		{"empty result kept with force", []*ConditionRule{rule(true, "=> host = 1.1.1.1")}, Request{Method: "x"}, []string{}},
		{"block", []*ConditionRule{rule(false, "method = save =>")}, Request{Method: "save"}, []string{}},
		{"block false", []*ConditionRule{rule(false, "method = save => false")}, Request{Method: "save"}, []string{}},
		{"chain", []*ConditionRule{rule(false, "=> port = 20880", "method = a => host != 10.0.0.5")}, Request{Method: "a"}, []string{"10.0.0.3:20880"}},
		{"two rules in order", []*ConditionRule{rule(false, "=> port = 20880"), rule(false, "=> env = blue")}, Request{Method: "a"}, []string{"10.0.0.5:20880"}},
		{"$host", []*ConditionRule{rule(false, "=> host = $host")}, Request{Method: "a"}, []string{"10.0.0.4:20881"}},
		{"consumer application", []*ConditionRule{rule(false, "application = gw => port = 20881")}, Request{Method: "a"}, []string{"10.0.0.4:20881"}},
		{"argument", []*ConditionRule{rule(false, "arguments[0] = vip* => host = 10.0.0.5")}, Request{Method: "a", Args: propArgs{"vip-1"}}, []string{"10.0.0.5:20880"}},
		{"argument not matching", []*ConditionRule{rule(false, "arguments[0] = vip* => host = 10.0.0.5")}, Request{Method: "a", Args: propArgs{"x"}}, all},
		{"argument absent", []*ConditionRule{rule(false, "arguments[1] != x => host = 10.0.0.5")}, Request{Method: "a", Args: propArgs{"x"}}, all},
		{"attachment", []*ConditionRule{rule(false, "attachments[zone] = b => host = 10.0.0.3")}, Request{Method: "a", Attachments: map[string]string{"zone": "b"}}, []string{"10.0.0.3:20880"}},
		{"disabled rule", []*ConditionRule{func() *ConditionRule { r := rule(true, "=> host = 1.1.1.1"); r.Enabled = false; return r }()}, Request{Method: "a"}, all},
	} {
		r := NewRouter(cons, nil, c.rules...)
		for range 2 { // computed, then from the cache
			got := addrs(r.Route(ps, &c.req))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
		}
	}
}

// TestRouteKeepsSnapshot: when the rules leave every provider, Route
// returns the snapshot itself, so the cluster's per-snapshot caches keep
// hitting; a narrowed result is the same slice at each call.
func TestRouteKeepsSnapshot(t *testing.T) {
	ps := fleet(t)[2:]
	r := NewRouter(Consumer{}, nil, mustRule(t, "I::.condition-router", "conditions: [\"method = a => port = 20880\"]").Condition)
	if got := r.Route(ps, &Request{Method: "b"}); &got[0] != &ps[0] || len(got) != len(ps) {
		t.Fatal("an untouched snapshot was copied")
	}
	a1, a2 := r.Route(ps, &Request{Method: "a"}), r.Route(ps, &Request{Method: "a"})
	if len(a1) != 2 || &a1[0] != &a2[0] {
		t.Fatalf("a narrowed result is not cached: %v %v", addrs(a1), addrs(a2))
	}
	ps2 := slices.Clone(ps)
	if a3 := r.Route(ps2, &Request{Method: "a"}); &a3[0] == &a1[0] {
		t.Fatal("a new snapshot got the old snapshot's result")
	}
}

// TestRouteAllocatesNothing: a cached result costs no allocation, with or
// without conditions on arguments.
func TestRouteAllocatesNothing(t *testing.T) {
	ps := fleet(t)
	r := NewRouter(Consumer{Host: "h"}, mustRule(t, "shop.tag-router", "tags:\n  - name: canary\n    addresses: [\"10.0.0.3:20880\"]\n").TagRouter,
		mustRule(t, "I::.condition-router", "conditions:\n  - \"method = a => port = 20880\"\n  - \"arguments[0] = vip => host != 10.0.0.1\"\n").Condition)
	req := &Request{Method: "a", Tag: "canary", Args: propArgs{"vip"}}
	r.Route(ps, req)
	if n := testing.AllocsPerRun(100, func() { r.Route(ps, req) }); n != 0 {
		t.Fatalf("Route allocates %v times per cached call", n)
	}
	var none *Router
	if n := testing.AllocsPerRun(100, func() { none.Route(ps, req) }); n != 0 {
		t.Fatalf("a nil Router allocates %v times", n)
	}
}

// TestRouteCacheBounded: distinct keys beyond the cache's bound (a
// pass-through client naming a new method at each call) are routed
// correctly without growing it, and every equal result is the same slice,
// so the cluster's per-snapshot caches are not rebuilt at each call.
func TestRouteCacheBounded(t *testing.T) {
	ps := fleet(t)
	r := NewRouter(Consumer{}, nil, mustRule(t, "I::.condition-router", "conditions: [\"method != zzz => port = 20880\"]").Condition)
	var first []*cluster.Provider
	for i := range 3 * maxCached {
		got := r.Route(ps, &Request{Method: fmt.Sprint("m", i)})
		if len(got) != 3 {
			t.Fatalf("method %d: %v", i, addrs(got))
		}
		if first == nil {
			first = got
		}
		if &got[0] != &first[0] {
			t.Fatalf("method %d: an equal result is a new slice", i)
		}
	}
	if n := len(r.cacheOf(ps).m); n != maxCached {
		t.Fatalf("cache holds %d entries, want %d", n, maxCached)
	}
}

// TestRouteUnknownTagsShareOneEntry: the attack of a client sending a new
// tag at each request (X-Dubbo-Tag is a client's header). Every unknown
// tag routes as one (to the untagged providers, force being false), under
// one cache entry, so the cache keeps room for the tags that exist and
// the cluster sees one subset.
func TestRouteUnknownTagsShareOneEntry(t *testing.T) {
	ps := fleet(t)
	r := NewRouter(Consumer{}, mustRule(t, "shop.tag-router", "tags:\n  - name: canary\n    addresses: [\"10.0.0.3:20880\"]\n").TagRouter)
	var first []*cluster.Provider
	for i := range 3 * maxCached {
		got := r.Route(ps, &Request{Method: "a", Tag: fmt.Sprint("t", i)})
		if want := []string{"10.0.0.1:20880", "10.0.0.4:20881", "10.0.0.5:20880"}; !slices.Equal(addrs(got), want) {
			t.Fatalf("unknown tag %d: %v, want %v", i, addrs(got), want)
		}
		if first == nil {
			first = got
		}
		if &got[0] != &first[0] {
			t.Fatalf("unknown tag %d: an equal result is a new slice", i)
		}
	}
	if n := len(r.cacheOf(ps).m); n != 1 {
		t.Fatalf("cache holds %d entries after %d unknown tags, want 1", n, 3*maxCached)
	}
	for _, tag := range []string{"canary", "gray"} { // the rule's and a static one: still cached
		got := r.Route(ps, &Request{Method: "a", Tag: tag})
		if again := r.Route(ps, &Request{Method: "a", Tag: tag}); len(got) != 1 || &again[0] != &got[0] {
			t.Fatalf("tag %s: %v, then %v", tag, addrs(got), addrs(again))
		}
	}
	if n := len(r.cacheOf(ps).m); n != 3 {
		t.Fatalf("cache holds %d entries, want 3", n)
	}
}

func BenchmarkRoute(b *testing.B) {
	ps := make([]*cluster.Provider, 0, 100)
	for i := range 100 {
		params := map[string]string{"application": "shop"}
		if i%10 == 0 {
			params["dubbo.tag"] = "gray"
		}
		ps = append(ps, provider(b, fmt.Sprintf("10.0.%d.%d:20880", i/250, i%250), params))
	}
	cond := mustRule(b, "I::.condition-router", "conditions:\n  - \"method = find* => host != 10.0.0.3\"\n  - \"arguments[0] = vip* => port = 20880\"\n").Condition
	b.Run("none", func(b *testing.B) {
		var r *Router
		req := &Request{Method: "findUser"}
		for b.Loop() {
			r.Route(ps, req)
		}
	})
	b.Run("static-tags", func(b *testing.B) {
		r := NewRouter(Consumer{}, nil)
		req := &Request{Method: "findUser", Tag: "gray"}
		for b.Loop() {
			r.Route(ps, req)
		}
	})
	b.Run("conditions+arguments", func(b *testing.B) {
		r := NewRouter(Consumer{}, nil, cond)
		req := &Request{Method: "findUser", Args: propArgs{"vip-7"}}
		for b.Loop() {
			r.Route(ps, req)
		}
	})
	b.Run("uncached-baseline", func(b *testing.B) {
		r := NewRouter(Consumer{}, nil, cond)
		req := &Request{Method: "findUser", Args: propArgs{"vip-7"}}
		for b.Loop() {
			r.route(ps, req, 0)
		}
	})
}
