package governance

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
)

func provider(t testing.TB, addr string, params map[string]string) *cluster.Provider {
	t.Helper()
	p, err := cluster.NewProvider(addr, params)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func addrs(ps []*cluster.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Addr
	}
	return out
}

// TestKeys: the rule keys and node paths as Dubbo writes them. Sources:
// dubbo-go v3.3.0 common/url.go ColonSeparatedKey ("iface:version:group",
// empty parts kept, version 0.0.0 as empty), common/constant/key.go (the
// suffixes), config_center/zookeeper/impl.go (root /dubbo/config, group
// dubbo).
func TestKeys(t *testing.T) {
	for _, c := range []struct{ iface, version, group, want string }{
		{"org.example.Users", "", "", "org.example.Users::"},
		{"org.example.Users", "1.0.0", "", "org.example.Users:1.0.0:"},
		{"org.example.Users", "", "blue", "org.example.Users::blue"},
		{"org.example.Users", "1.0.0", "blue", "org.example.Users:1.0.0:blue"},
		{"org.example.Users", "0.0.0", "", "org.example.Users::"},
	} {
		if got := ServiceKey(c.iface, c.version, c.group); got != c.want {
			t.Errorf("ServiceKey(%q, %q, %q) = %q, want %q", c.iface, c.version, c.group, got, c.want)
		}
	}
	if got := Path(DefaultRoot, DefaultGroup, Key("shop", KindTagRouter)); got != "/dubbo/config/dubbo/shop.tag-router" {
		t.Errorf("path %q", got)
	}
	if got := Key(ServiceKey("a.B", "", ""), KindConditionRouter); got != "a.B::.condition-router" {
		t.Errorf("key %q", got)
	}
}

// TestParseDubboAdminRules parses the rules as Dubbo Admin and Dubbo's
// documentation write them. Sources: dubbo.apache.org
// overview/core-features/traffic/condition-rule (v3.0 condition rule),
// tag-rule (v3.0 tag rule with match), configuration-rule (configurators),
// and the 2.7 examples of the governance samples (scope, priority,
// addresses).
func TestParseDubboAdminRules(t *testing.T) {
	cond, err := Parse("org.apache.dubbo.samples.CommentService::.condition-router", []byte(`configVersion: v3.0
scope: service
force: true
runtime: true
enabled: true
key: org.apache.dubbo.samples.CommentService
conditions:
  - method=getComment => region=Hangzhou
`))
	if err != nil {
		t.Fatal(err)
	}
	if cr := cond.Condition; cr == nil || !cr.Force || !cr.Runtime || !cr.Enabled || len(cr.Conditions) != 1 || cr.Scope != "service" {
		t.Fatalf("condition rule %+v", cond.Condition)
	}
	app, err := Parse("governance-conditionrouter-consumer.condition-router", []byte(`---
scope: application
force: true
runtime: true
enabled: true
priority: 2
key: governance-conditionrouter-consumer
conditions:
  - application=app1 => address=*:20880
  - application=app2 => address=*:20881
...
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(app.Condition.Conditions) != 2 || app.Condition.Priority != 2 {
		t.Fatalf("application condition rule %+v", app.Condition)
	}

	tag, err := Parse("shop-detail.tag-router", []byte(`configVersion: v3.0
force: true
enabled: true
key: shop-detail
tags:
  - name: gray
    match:
      - key: env
        value:
          exact: gray
  - name: canary
    addresses: ["30.5.120.37:20881"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if tr := tag.TagRouter; tr == nil || !tr.Force || len(tr.Tags) != 2 || tr.Tags[0].Match[0].Exact != "gray" || tr.Tags[1].Addresses[0] != "30.5.120.37:20881" {
		t.Fatalf("tag rule %+v", tag.TagRouter)
	}

	conf, err := Parse("org.apache.dubbo.samples.UserService::.configurators", []byte(`configVersion: v3.0
scope: service
key: org.apache.dubbo.samples.UserService
enabled: true
configs:
  - side: consumer
    addresses: [0.0.0.0]
    providerAddresses: ["10.0.0.3:20880"]
    parameters:
      disabled: true
      timeout: 600
      retries: 5
  - addresses: ["10.0.0.4:20880"]
    side: provider
    parameters:
      weight: 10
`))
	if err != nil {
		t.Fatal(err)
	}
	items := conf.Configurators.Items
	if len(items) != 2 || items[0].Side != "consumer" || !*items[0].Disabled || items[0].Timeout != 600*time.Millisecond ||
		!slices.Equal(items[0].Ignored, []string{"retries"}) || *items[1].Weight != 10 || items[1].Side != "provider" {
		t.Fatalf("configurators %+v", items)
	}
}

// TestParseRefusesBadRules: each malformed rule is refused with its
// problem named.
func TestParseRefusesBadRules(t *testing.T) {
	for _, c := range []struct{ key, yaml, want string }{
		{"s::.condition-router", "", "empty rule"},
		{"s::.condition-router", "conditions: [", "not the YAML of a rule"},
		{"s::.condition-router", "configVersion: v3.1\nconditions:\n  - from: {match: a=b}\n", "v3.1"},
		{"s::.condition-router", "configVersion: v9\nconditions: [\"a=b\"]\n", `configVersion "v9"`},
		{"s::.condition-router", "configVersion: v3.0\n", "conditions: none"},
		{"s::.condition-router", "conditions:\n  - method = => host = a\n", `conditions[0]`},
		{"s::.condition-router", "conditions:\n  - method == a => host = b\n", `"==" at offset 7 is not & = != or ,`},
		{"s::.condition-router", "conditions:\n  - method a => host = b\n", "follows a value"},
		{"s::.condition-router", "conditions:\n  - method => host = b\n", `key "method" has no value`},
		{"s::.condition-router", "conditions:\n  - arguments[x] = 1 => host = b\n", "arguments[N]"},
		{"s::.condition-router", "conditions:\n  - arguments[0] = 1~5 => host = b\n", "range values"},
		{"s::.condition-router", "conditions:\n  - = a => host = b\n", "no key before it"},
		{"s::.condition-router", "force: maybe\nconditions: [\"a=b\"]\n", "not the YAML of a rule"},
		{"app.tag-router", "tags:\n  - addresses: [a]\n", "tags[0]: no name"},
		{"app.tag-router", "tags:\n  - name: a\n  - name: a\n", "defined twice"},
		{"app.tag-router", "tags:\n  - name: a\n    match:\n      - key: env\n        value: {regex: \"(\"}\n", "regex"},
		{"app.tag-router", "tags:\n  - name: a\n    match:\n      - key: env\n        value: {}\n", "sets none of"},
		{"app.configurators", "configs:\n  - side: both\n    parameters: {weight: 1}\n", `side "both"`},
		{"app.configurators", "configs:\n  - side: consumer\n", "no parameters"},
		{"app.configurators", "configs:\n  - parameters: {weight: heavy}\n", "weight \"heavy\" is not an integer"},
		{"app.configurators", "configs:\n  - parameters: {disabled: perhaps}\n", "disabled"},
		{"app.configurators", "configs:\n  - parameters: {timeout: -1}\n", "timeout"},
		{"app.configurators", "configs:\n  - parameters: {weight: 1}\n    match: {app: {oneof: [{exact: a}]}}\n", "match"},
		{"app.router", "a: b", "no rule suffix"},
		{"app.configurators", strings.Repeat(" ", MaxRuleBytes+1), "more than"},
	} {
		_, err := Parse(c.key, []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want one saying %q", c.key, c.yaml, err, c.want)
		}
	}
}

// TestParseLinear: a rule of the largest size parses in time linear in
// its size (no backtracking, no alias blow-up).
func TestParseLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("conditions:\n")
	for b.Len() < MaxRuleBytes/2 {
		b.WriteString("  - method = a,b,c,d & arguments[0] = x* => host != 10.0.0.1,10.0.0.2\n")
	}
	_, err := Parse("s::.condition-router", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 64") {
		t.Fatalf("huge rule: %v", err)
	}
	bomb := "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nconditions: *g\n"
	start := time.Now()
	if _, err := Parse("s::.condition-router", []byte(bomb)); err == nil {
		t.Fatal("an alias bomb parsed")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("alias bomb took %s", d)
	}
}
