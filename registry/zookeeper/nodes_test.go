package zookeeper

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/registry"
)

const testIface = "com.example.UserService"

func providerChild(addr, query string) string {
	return url.QueryEscape("dubbo://" + addr + "/" + testIface + "?" + query)
}

func overrideChild(hostport, query string) string {
	return url.QueryEscape("override://" + hostport + "/" + testIface + "?" + query)
}

func TestParseProviderNode(t *testing.T) {
	cases := []struct {
		name   string
		child  string
		usable bool
		reason string // substring of the reason; "" = silently ignored when not usable
	}{
		{"plain", providerChild("10.0.0.1:20880", "version=1.0.0&weight=50"), true, ""},
		{"hessian2", providerChild("10.0.0.1:20880", "serialization=hessian2"), true, ""},
		{"prefers hessian2", providerChild("10.0.0.1:20880", "serialization=fastjson2&prefer.serialization=fastjson2,%20hessian2"), true, ""},
		{"category providers", providerChild("10.0.0.1:20880", "category=providers"), true, ""},
		{"empty marker", url.QueryEscape("empty://10.0.0.1/" + testIface + "?category=providers"), false, ""},
		{"triple", url.QueryEscape("tri://10.0.0.1:20880/" + testIface + "?serialization=hessian2"), true, ""},
		{"triple IDL", url.QueryEscape("tri://10.0.0.1:20880/" + testIface + "?serialization=protobuf"), true, ""},
		{"dubbo protobuf", providerChild("10.0.0.1:20880", "serialization=protobuf"), false, `serialization "protobuf"`},
		{"other protocol", url.QueryEscape("rest://10.0.0.1:8080/" + testIface), false, `protocol "rest"`},
		{"other category", providerChild("10.0.0.1:20880", "category=routers"), false, `category "routers"`},
		{"other serialization", providerChild("10.0.0.1:20880", "serialization=kryo&prefer.serialization=kryo,fastjson2"), false, `serialization "kryo"`},
		{"not encoded", "dubbo%zz", false, "not URL-encoded"},
		{"no port", url.QueryEscape("dubbo://10.0.0.1/" + testIface), false, "host:port"},
		{"bad weight", providerChild("10.0.0.1:20880", "weight=heavy"), false, "weight"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, reason := parseProviderNode(c.child)
			if (n != nil) != c.usable {
				t.Fatalf("usable = %v (reason %q), want %v", n != nil, reason, c.usable)
			}
			if c.usable {
				if reason != "" || n.addr() != "10.0.0.1:20880" || n.provider.Addr != "10.0.0.1:20880" {
					t.Fatalf("parsed %+v, reason %q", n, reason)
				}
				if want := strings.HasPrefix(c.child, "tri"); (n.provider.Protocol == cluster.ProtocolTriple) != want {
					t.Fatalf("protocol %v for %s", n.provider.Protocol, c.child)
				}
				return
			}
			if c.reason == "" && reason != "" || !strings.Contains(reason, c.reason) {
				t.Fatalf("reason %q, want one containing %q", reason, c.reason)
			}
		})
	}
}

func TestParseOverrideNode(t *testing.T) {
	o, reason := parseOverrideNode(testIface, overrideChild("0.0.0.0", "category=configurators&weight=10"))
	if o == nil || !o.anyHost || !o.setsWeight || o.weight != 10 || o.setsDisabled {
		t.Fatalf("any-host weight: %+v %q", o, reason)
	}
	o, _ = parseOverrideNode(testIface, overrideChild("10.0.0.1:20881", "disabled=true&version=1.0.0&group=g"))
	if o == nil || o.anyHost || o.host != "10.0.0.1" || o.port != "20881" || !o.disabled || o.version != "1.0.0" || o.group != "g" {
		t.Fatalf("host:port disabled: %+v", o)
	}
	o, _ = parseOverrideNode(testIface, overrideChild("10.0.0.1", "disabled=false"))
	if o == nil || !o.setsDisabled || o.disabled {
		t.Fatalf("disabled=false re-enables: %+v", o)
	}
	for _, quiet := range []string{
		overrideChild("0.0.0.0", "weight=10&enabled=false"),
		overrideChild("0.0.0.0", "weight=10&side=consumer"),
		overrideChild("0.0.0.0", "timeout=1000"),
	} {
		if o, reason := parseOverrideNode(testIface, quiet); o != nil || reason != "" {
			t.Errorf("%s: got %+v %q, want ignored silently", quiet, o, reason)
		}
	}
	for _, bad := range []string{
		overrideChild("0.0.0.0", "weight=much"),
		url.QueryEscape("absent://0.0.0.0/" + testIface + "?weight=1"),
		url.QueryEscape("override://0.0.0.0/com.example.Other?weight=1"),
		url.QueryEscape("override:///" + testIface + "?weight=1"),
		"override%zz",
	} {
		if o, reason := parseOverrideNode(testIface, bad); o != nil || reason == "" {
			t.Errorf("%s: got %+v %q, want a reason", bad, o, reason)
		}
	}
}

// snapshotOf parses children and overrides and builds key's snapshot.
func snapshotOf(t *testing.T, key registry.ServiceKey, children, overrideChildren []string) []*cluster.Provider {
	t.Helper()
	var nodes []*providerNode
	for _, c := range children {
		if n, _ := parseProviderNode(c); n != nil {
			nodes = append(nodes, n)
		}
	}
	sortProviderNodes(nodes)
	var overrides []*override
	for _, c := range overrideChildren {
		if o, _ := parseOverrideNode(testIface, c); o != nil {
			overrides = append(overrides, o)
		}
	}
	sortOverrides(overrides)
	return buildSnapshot(key, nodes, overrides, nil, nil, map[overridden]*cluster.Provider{})
}

func weights(ps []*cluster.Provider) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Addr + "=" + strconv.Itoa(p.Weight))
	}
	return b.String()
}

func TestBuildSnapshotFiltersSortsAndDeduplicates(t *testing.T) {
	children := []string{
		providerChild("10.0.0.2:20880", "version=1.0.0&weight=50"),
		providerChild("10.0.0.1:20880", "version=1.0.0&application=b"),
		providerChild("10.0.0.1:20880", "version=1.0.0&application=a"), // same address: one of the two
		providerChild("10.0.0.3:20880", "version=1.0.0&group=g1"),
		providerChild("10.0.0.4:20880", "version=2.0.0"),
		providerChild("10.0.0.5:20880", "version=1.0.0&disabled=true"),
	}
	cases := []struct {
		key  registry.ServiceKey
		want string
	}{
		{registry.ServiceKey{Interface: testIface, Version: "1.0.0"}, "10.0.0.1:20880=100 10.0.0.2:20880=50"},
		{registry.ServiceKey{Interface: testIface, Group: "g1", Version: "1.0.0"}, "10.0.0.3:20880=100"},
		{registry.ServiceKey{Interface: testIface, Group: "g0,g1", Version: "*"}, "10.0.0.3:20880=100"},
		{registry.ServiceKey{Interface: testIface, Group: "*", Version: "*"}, "10.0.0.1:20880=100 10.0.0.2:20880=50 10.0.0.3:20880=100 10.0.0.4:20880=100"},
		{registry.ServiceKey{Interface: testIface, Version: "3.0.0"}, ""},
	}
	for _, c := range cases {
		got := snapshotOf(t, c.key, children, nil)
		if weights(got) != c.want {
			t.Errorf("%s: %q, want %q", c.key, weights(got), c.want)
		}
	}
	// The duplicate address is always won by the same URL: the newest
	// (timestamp), else the first by parameters, whatever the listing order.
	key := registry.ServiceKey{Interface: testIface, Version: "1.0.0"}
	for range 2 {
		got := snapshotOf(t, key, children, nil)
		if got[0].Params.Get("application") != "a" {
			t.Errorf("duplicate address won by application=%s, want a", got[0].Params.Get("application"))
		}
		slices.Reverse(children)
	}
	restarted := []string{
		providerChild("10.0.0.1:20880", "version=1.0.0&application=a&timestamp=1700000000000"),
		providerChild("10.0.0.1:20880", "version=1.0.0&application=b&timestamp=1700000005000"),
	}
	for range 2 {
		got := snapshotOf(t, key, restarted, nil)
		if len(got) != 1 || got[0].Params.Get("application") != "b" {
			t.Errorf("restarted provider: got %v, want only the newest (application=b)", got)
		}
		slices.Reverse(restarted)
	}
}

func TestBuildSnapshotAppliesOverrides(t *testing.T) {
	key := registry.ServiceKey{Interface: testIface, Version: "1.0.0"}
	children := []string{
		providerChild("10.0.0.1:20880", "version=1.0.0"),
		providerChild("10.0.0.1:20881", "version=1.0.0"),
		providerChild("10.0.0.2:20880", "version=1.0.0"),
	}
	cases := []struct {
		name      string
		overrides []string
		want      string
	}{
		{"none", nil, "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=100"},
		{"every host", []string{overrideChild("0.0.0.0", "weight=10")}, "10.0.0.1:20880=10 10.0.0.1:20881=10 10.0.0.2:20880=10"},
		{"host", []string{overrideChild("10.0.0.1", "weight=7")}, "10.0.0.1:20880=7 10.0.0.1:20881=7 10.0.0.2:20880=100"},
		{"host and port", []string{overrideChild("10.0.0.1:20881", "weight=7")}, "10.0.0.1:20880=100 10.0.0.1:20881=7 10.0.0.2:20880=100"},
		{"disabled", []string{overrideChild("10.0.0.1:20881", "disabled=true")}, "10.0.0.1:20880=100 10.0.0.2:20880=100"},
		{"specific host wins over every host, whatever the names", []string{
			overrideChild("10.0.0.2", "weight=300"), overrideChild("0.0.0.0", "weight=10"),
		}, "10.0.0.1:20880=10 10.0.0.1:20881=10 10.0.0.2:20880=300"},
		{"re-enabled by host", []string{
			overrideChild("0.0.0.0", "disabled=true"), overrideChild("10.0.0.2", "disabled=false"),
		}, "10.0.0.2:20880=100"},
		{"enabled=false skipped", []string{overrideChild("0.0.0.0", "weight=1&enabled=false")}, "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=100"},
		{"other version skipped", []string{overrideChild("0.0.0.0", "weight=1&version=9.9.9")}, "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=100"},
		{"matching version applied", []string{overrideChild("0.0.0.0", "weight=1&version=1.0.0")}, "10.0.0.1:20880=1 10.0.0.1:20881=1 10.0.0.2:20880=1"},
		{"other group skipped", []string{overrideChild("0.0.0.0", "weight=1&group=g")}, "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=100"},
		{"other host untouched", []string{overrideChild("10.0.0.9", "disabled=true")}, "10.0.0.1:20880=100 10.0.0.1:20881=100 10.0.0.2:20880=100"},
	}
	for _, c := range cases {
		got := snapshotOf(t, key, children, c.overrides)
		if weights(got) != c.want {
			t.Errorf("%s: %q, want %q", c.name, weights(got), c.want)
		}
	}
}

func TestBuildSnapshotKeepsProviderPointers(t *testing.T) {
	key := registry.ServiceKey{Interface: testIface}
	children := []string{providerChild("10.0.0.1:20880", ""), providerChild("10.0.0.2:20880", "")}
	var nodes []*providerNode
	for _, c := range children {
		n, _ := parseProviderNode(c)
		nodes = append(nodes, n)
	}
	same, _ := parseOverrideNode(testIface, overrideChild("10.0.0.1", "weight=100"))
	heavy, _ := parseOverrideNode(testIface, overrideChild("10.0.0.2", "weight=300"))

	first := map[overridden]*cluster.Provider{}
	a := buildSnapshot(key, nodes, []*override{same, heavy}, nil, nil, first)
	if a[0] != nodes[0].provider {
		t.Error("an override that changes nothing copied the provider")
	}
	if a[1] == nodes[1].provider || a[1].Weight != 300 || nodes[1].provider.Weight != 100 {
		t.Errorf("reweighted provider: %+v (base %+v)", a[1], nodes[1].provider)
	}
	second := map[overridden]*cluster.Provider{}
	b := buildSnapshot(key, nodes, []*override{same, heavy}, nil, first, second)
	if b[0] != a[0] || b[1] != a[1] {
		t.Error("an unchanged snapshot got new providers")
	}
	// Two keys built in the same round share the reweighted provider.
	b2 := buildSnapshot(registry.ServiceKey{Interface: testIface, Group: "*", Version: "*"}, nodes, []*override{heavy}, nil, first, second)
	if b2[1] != a[1] || len(second) != 1 {
		t.Errorf("second key: %p vs %p, %d reweighted", b2[1], a[1], len(second))
	}
}

func TestConsumerURL(t *testing.T) {
	got := consumerURL("10.1.2.3", registry.ServiceKey{Interface: testIface, Group: "g 1", Version: "1.0.0"}, "dubbogw", 1700000000000, 42)
	want := "consumer://10.1.2.3/" + testIface + "?application=dubbogw&category=consumers&check=false&dubbo=2.0.2&interface=" + testIface +
		"&side=consumer&timestamp=1700000000000&pid=42&version=1.0.0&group=g+1"
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if got := consumerURL("::1", registry.ServiceKey{Interface: testIface}, "app", 1, 2); !strings.HasPrefix(got, "consumer://[::1]/") || strings.Contains(got, "version=") || strings.Contains(got, "group=") {
		t.Errorf("IPv6, no version or group: %s", got)
	}
}

// TestProviderNodeMatch: a parsed node keeps what selection reads of its
// URL (interface, group, version, disabled) interned, shared with every
// node of the same service, and the provider holds the other parameters;
// it matches its key as the URL does, and a disabled one none.
func TestProviderNodeMatch(t *testing.T) {
	parse := func(query string) *providerNode {
		t.Helper()
		n, reason := parseProviderNode(url.QueryEscape("dubbo://10.0.0.1:20880/com.example.A?" + query))
		if n == nil {
			t.Fatal(reason)
		}
		return n
	}
	n := parse("group=g&version=1.0&disabled=false&methods=a,b&application=app&weight=5")
	if want := (nodeMatch{iface: "com.example.A", group: "g", version: "1.0"}); n.match.Value() != want {
		t.Fatalf("match %+v, want %+v", n.match.Value(), want)
	}
	key := registry.ServiceKey{Interface: "com.example.A", Group: "g", Version: "1.0"}
	if !n.matches(key) || n.matches(registry.ServiceKey{Interface: "com.example.B", Group: "g", Version: "1.0"}) {
		t.Fatal("the node does not match as its URL does")
	}
	if n.provider.Params.Get("methods") != "a,b" || n.provider.Weight != 5 || n.addr() != "10.0.0.1:20880" {
		t.Fatalf("provider %+v lost parameters", n.provider)
	}
	if other := parse("group=g&version=1.0&methods=c&pid=7"); other.match != n.match {
		t.Error("two nodes of one service do not share their match")
	}
	for _, q := range []string{"group=g&version=1.0&disabled=true", "group=g&version=1.0&enabled=false"} {
		if d := parse(q); d.matches(key) || !d.match.Value().disabled {
			t.Errorf("%s: matches its key", q)
		}
	}
}

// TestProviderOrigins: a directory's origins are the most common origin
// of its providers and a map of the exceptions only (none when all were
// found alike), and together they say for each provider what a map of
// all would: application, interface or both (the same address in both).
func TestProviderOrigins(t *testing.T) {
	key := registry.ServiceKey{Interface: testIface}
	node := func(addr string, origin *nodeOrigin) *providerNode {
		n, reason := parseProviderNode(providerChild(addr, "application=x"))
		if n == nil {
			t.Fatal(reason)
		}
		n.origin = origin
		return n
	}
	r1 := &nodeOrigin{app: "a", instance: "i1", revision: "r1"}
	r2 := &nodeOrigin{app: "a", instance: "i2", revision: "r2"}
	app := func(o *nodeOrigin) registry.ProviderOrigin {
		return registry.ProviderOrigin{Source: registry.SourceApplication, App: o.app, Revision: o.revision}
	}
	iface := registry.ProviderOrigin{Source: registry.SourceInterface}
	cases := []struct {
		name  string
		nodes []*providerNode
		want  map[string]registry.ProviderOrigin
		maps  int // entries in the exceptions map
	}{
		{"interface only", []*providerNode{node("10.0.0.1:1", nil), node("10.0.0.2:1", nil)},
			map[string]registry.ProviderOrigin{"10.0.0.1:1": iface, "10.0.0.2:1": iface}, 0},
		{"one revision", []*providerNode{node("10.0.0.1:1", r1), node("10.0.0.2:1", r1), node("10.0.0.3:1", r1)},
			map[string]registry.ProviderOrigin{"10.0.0.1:1": app(r1), "10.0.0.2:1": app(r1), "10.0.0.3:1": app(r1)}, 0},
		{"a rolling upgrade", []*providerNode{node("10.0.0.1:1", r1), node("10.0.0.2:1", r2), node("10.0.0.3:1", r1), node("10.0.0.4:1", nil)},
			map[string]registry.ProviderOrigin{"10.0.0.1:1": app(r1), "10.0.0.2:1": app(r2), "10.0.0.3:1": app(r1), "10.0.0.4:1": iface}, 2},
		{"both", []*providerNode{node("10.0.0.1:1", r1), node("10.0.0.1:1", nil), node("10.0.0.2:1", nil), node("10.0.0.3:1", nil)},
			map[string]registry.ProviderOrigin{"10.0.0.1:1": {Source: registry.SourceBoth, App: "a", Revision: "r1"}, "10.0.0.2:1": iface, "10.0.0.3:1": iface}, 1},
	}
	for _, c := range cases {
		sortProviderNodes(c.nodes)
		exceptions, others := providerOrigins(key, c.nodes)
		if len(exceptions) != c.maps {
			t.Errorf("%s: exceptions %v (others %+v), want %d", c.name, exceptions, others, c.maps)
		}
		d := (&registry.Directories{}).Acquire(key)
		d.SetWithOrigins(nil, exceptions, others)
		for addr, want := range c.want {
			if got := d.Origin(addr); got != want {
				t.Errorf("%s: origin of %s %+v, want %+v", c.name, addr, got, want)
			}
		}
	}
}
