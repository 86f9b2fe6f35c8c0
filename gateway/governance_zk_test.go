package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
)

// Rule nodes are written where Dubbo Admin writes them: the config
// centre's root /dubbo/config, group dubbo, node <key> (dubbo-go v3.3.0
// config_center/zookeeper/impl.go; Java's ZookeeperDynamicConfiguration),
// under keys of this test's own (random application and interface names),
// deleted when it ends. The YAML is that of Dubbo's documentation
// (dubbo.apache.org overview/core-features/traffic: tag-rule,
// condition-rule, configuration-rule; configVersion v3.0).

// whoProvider is a provider of iface whose method who(String) answers
// "<name>|<dubbo.tag attachment>", after sleeping when the argument is
// "sleep".
func whoProvider(t *testing.T, iface, name string) (string, *provider.Server) {
	t.Helper()
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	s.Register(provider.Service{Interface: iface, Methods: map[string][]provider.Method{
		"who": {{ParamTypes: []string{"java.lang.String"}, Func: func(ctx context.Context, args []any) (any, error) {
			if args[0] == "sleep" {
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
			}
			tag, _ := provider.Attachments(ctx)[governance.TagKey].(string)
			return name + "|" + tag, nil
		}}},
	}})
	addr, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return addr.String(), s
}

// setRule writes a rule node at Dubbo Admin's path, deleted at the end.
func (f *zkFixture) setRule(t *testing.T, key, yaml string) {
	t.Helper()
	p := governance.Path(governance.DefaultRoot, governance.DefaultGroup, key)
	f.ensure(t, governance.DefaultRoot+"/"+governance.DefaultGroup)
	if _, err := f.conn.Set(p, []byte(yaml), -1); errors.Is(err, zk.ErrNoNode) {
		if _, err := f.conn.Create(p, []byte(yaml), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("creating %s: %v", p, err)
		}
		t.Cleanup(func() { _ = f.conn.Delete(p, -1) })
	} else if err != nil {
		t.Fatalf("writing %s: %v", p, err)
	}
}

func (f *zkFixture) deleteRule(t *testing.T, key string) {
	t.Helper()
	if err := f.conn.Delete(governance.Path(governance.DefaultRoot, governance.DefaultGroup, key), -1); err != nil {
		t.Fatalf("deleting rule %s: %v", key, err)
	}
}

// whoCounts calls url n times (with hdr) and counts the answers by
// provider name and tag seen; a non-200 answer is counted by its status.
func whoCounts(t *testing.T, url string, n int, hdr ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for range n {
		a := do(t, "GET", url, nil, hdr...)
		if a.status != 200 {
			out[fmt.Sprint(a.status)]++
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(a.body), &s); err != nil {
			t.Fatalf("answer %q: %v", a.body, err)
		}
		out[s]++
	}
	return out
}

// onlyKeys reports whether m's keys are exactly keys.
func onlyKeys(m map[string]int, keys ...string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if m[k] == 0 {
			return false
		}
	}
	return true
}

// TestZooKeeperGovernance: rules written into ZooKeeper at Dubbo Admin's
// paths and in its formats change which provider serves the gateway's
// calls: static tags, the request's tag (header, route constant, sent to
// the provider as dubbo.tag), a condition rule excluding a host for one
// argument, a consumer-side configurator disabling a provider for the
// gateway, a tag rule with force; a malformed rule is refused and shown in
// /admin/services and the metrics while the last good one applies.
func TestZooKeeperGovernance(t *testing.T) {
	f := newZKFixture(t)
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	iface, app, gw := "org.example.gov.Who"+suffix, "shop-"+suffix, "gw-"+suffix
	addrA, _ := whoProvider(t, iface, "a")
	addrB, _ := whoProvider(t, iface, "b")
	addrC, _ := whoProvider(t, iface, "c")
	f.provide(t, iface, addrA, "&application="+app)
	f.provide(t, iface, addrB, "&application="+app+"&dubbo.tag=gray")
	f.provide(t, iface, addrC, "&application="+app)
	tg := startGW(t, fmt.Sprintf(`
registries:
  zk:
    type: zookeeper
    address: %q
    root: %s
    application: %s
    governance: {enabled: true}
routes:
  - name: who
    match: {methods: [GET], path: "/who/{id}"}
    timeout: 3s
    dubbo:
      registry: zk
      interface: %s
      method: who
      retries: 0
      params: [{type: java.lang.String, from: path, name: id}]
  - name: who-gray
    match: {methods: [GET], path: "/gray/{id}"}
    dubbo:
      registry: zk
      interface: %s
      method: who
      tag: gray
      params: [{type: java.lang.String, from: path, name: id}]
`, f.addr, f.root, gw, iface, iface))
	who := tg.base + "/who/1"
	waitCounts := func(what string, url string, hdr []string, keys ...string) {
		t.Helper()
		var got map[string]int
		testenv.WaitFor(t, 20*time.Second, what, func() bool {
			got = whoCounts(t, url, 30, hdr...)
			return onlyKeys(got, keys...)
		})
	}

	// Static tags: untagged calls never reach b; tagged ones only b, with
	// the tag sent as attachment dubbo.tag.
	waitCounts("untagged calls to a and c", who, nil, "a|", "c|")
	waitCounts("X-Dubbo-Tag: gray to b", who, []string{"X-Dubbo-Tag", "gray"}, "b|gray")
	waitCounts("the route's constant tag to b", tg.base+"/gray/1", nil, "b|gray")
	if a := do(t, "GET", who, nil, "X-Dubbo-Tag", "gray; drop"); a.status != 400 {
		t.Fatalf("a malformed tag: %d %s", a.status, a.body)
	}

	// A condition rule of the service excludes a for arguments vip*.
	condKey := governance.ServiceKey(iface, "", "") + ".condition-router"
	f.setRule(t, condKey, "configVersion: v3.0\nscope: service\nforce: false\nruntime: true\nenabled: true\nkey: "+iface+
		"\nconditions:\n  - method = who & arguments[0] = vip* => address != "+addrA+"\n")
	waitCounts("vip calls leave out a", tg.base+"/who/vip-1", nil, "c|")
	waitCounts("other calls still reach a and c", who, nil, "a|", "c|")

	// A consumer-side configurator of the gateway's application disables c
	// for the gateway.
	f.setRule(t, gw+".configurators", "configVersion: v3.0\nscope: application\nkey: "+gw+"\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    providerAddresses: [\""+addrC+"\"]\n    parameters:\n      disabled: true\n")
	waitCounts("c disabled for the gateway", who, nil, "a|")
	waitCounts("vip: the condition's empty result is ignored without force", tg.base+"/who/vip-1", nil, "a|")
	// A configurator's timeout bounds the calls to its provider (the
	// route's is 3s; the provider sleeps a second).
	f.setRule(t, gw+".configurators", "configVersion: v3.0\nscope: application\nkey: "+gw+"\nenabled: true\nconfigs:\n  - side: consumer\n    providerAddresses: [\""+addrC+"\"]\n    parameters:\n      disabled: true\n  - side: consumer\n    parameters:\n      timeout: 100\n")
	testenv.WaitFor(t, 20*time.Second, "the configurator's timeout", func() bool {
		start := time.Now()
		a := do(t, "GET", tg.base+"/who/sleep", nil)
		return a.status == 504 && time.Since(start) < 900*time.Millisecond
	})
	f.deleteRule(t, gw+".configurators")
	waitCounts("c back", who, nil, "a|", "c|")

	// The provider application's tag rule: canary is c, by address.
	tagKey := app + ".tag-router"
	f.setRule(t, tagKey, "configVersion: v3.0\nforce: false\nenabled: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\""+addrC+"\"]\n")
	waitCounts("canary to c", who, []string{"X-Dubbo-Tag", "canary"}, "c|canary")
	waitCounts("untagged leaves out the canary", who, nil, "a|")
	waitCounts("an unknown tag falls back without force", who, []string{"X-Dubbo-Tag", "blue"}, "a|blue")
	f.setRule(t, tagKey, "configVersion: v3.0\nforce: true\nenabled: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\""+addrC+"\"]\n")
	waitCounts("an unknown tag with force: no provider", who, []string{"X-Dubbo-Tag", "blue"}, "503")

	// A malformed rule: refused, shown, counted; the last good one applies.
	f.setRule(t, tagKey, "configVersion: v3.0\ntags:\n  - addresses: [\""+addrC+"\"]\n")
	var services struct {
		Services []struct {
			Service string
			Rules   []struct {
				Key, Kind, State, Error string
				Applied                 bool
			}
		}
	}
	testenv.WaitFor(t, 20*time.Second, "the refused rule in /admin/services", func() bool {
		if err := json.Unmarshal([]byte(do(t, "GET", tg.admin+"/admin/services", nil).body), &services); err != nil {
			t.Fatal(err)
		}
		for _, s := range services.Services {
			for _, r := range s.Rules {
				if r.Key == tagKey && r.State == "refused" && strings.Contains(r.Error, "no name") && r.Applied {
					return true
				}
			}
		}
		return false
	})
	waitCounts("the last good tag rule still applies", who, []string{"X-Dubbo-Tag", "canary"}, "c|canary")
	m := do(t, "GET", tg.admin+"/metrics", nil).body
	for _, want := range []string{`dubbogw_registry_rules_refused_total{registry="zk"} 1`, `dubbogw_registry_rules{registry="zk"} 6`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// The dashboard shows the service's rules, the refused one marked.
	browser := startBrowser(t)
	browser.call("Page.navigate", map[string]any{"url": tg.admin + "/admin/ui"})
	browser.waitFor("the services table", `document.querySelector('#services tbody') ? 'ok' : ''`, func(v string) bool { return v == "ok" })
	browser.eval(`(() => { document.getElementById('services-view').scrollIntoView(); return ''; })()`)
	browser.waitFor("the refused rule on the dashboard",
		`[...document.querySelectorAll('#services tbody td.bad')].map((td) => td.textContent).join(' | ')`,
		func(v string) bool {
			return strings.Contains(v, tagKey+" refused: tags[0]: no name") && strings.Contains(v, condKey+" applied")
		})
}
