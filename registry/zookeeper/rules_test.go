package zookeeper

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// The rule nodes of these tests are written where Dubbo Admin writes them,
// /dubbo/config/dubbo/<key> (Dubbo's config centre root "/dubbo/config",
// group "dubbo": dubbo-go v3.3.0 config_center/zookeeper/impl.go), under
// keys of their own (random application and interface names), deleted at
// the end. Keys: "<application>.tag-router" (the provider application's:
// cluster/router/tag/router.go Notify), "<application>.configurators" and
// "<application>.condition-router" of the consumer's application,
// "<interface>:<version>:<group>.condition-router" (common/url.go
// ColonSeparatedKey: empty parts kept, "iface::").

// ruleEnv writes rule nodes at the real config centre path.
type ruleEnv struct {
	*zkEnv
	created []string
}

func newRuleEnv(t *testing.T, addr string) *ruleEnv {
	re := &ruleEnv{zkEnv: newZKEnv(t, addr)}
	t.Cleanup(func() {
		for _, p := range re.created {
			_ = re.admin.Delete(p, -1)
		}
	})
	return re
}

// setRule writes key's rule (creating the node the first time).
func (re *ruleEnv) setRule(key, yaml string) {
	re.t.Helper()
	p := governance.Path(governance.DefaultRoot, governance.DefaultGroup, key)
	re.ensure(governance.DefaultRoot + "/" + governance.DefaultGroup)
	re.retry("writing "+p, func() error {
		_, err := re.admin.Set(p, []byte(yaml), -1)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = re.admin.Create(p, []byte(yaml), 0, zk.WorldACL(zk.PermAll))
			if err == nil {
				re.created = append(re.created, p)
			}
		}
		return err
	})
}

func (re *ruleEnv) deleteRule(key string) {
	re.t.Helper()
	re.remove(governance.Path(governance.DefaultRoot, governance.DefaultGroup, key))
}

func uniqueName(prefix string) string { return fmt.Sprintf("%s-%08x", prefix, rand.Uint32()) }

func routed(d *registry.Directory, method, tag string) string {
	return strings.Join(addrsOf(d.Router().Route(d.Providers(), &governance.Request{Method: method, Tag: tag})), " ")
}

// TestZooKeeperGovernanceRules: rules written at Dubbo Admin's paths, in
// its formats, change the directory's selection; a malformed rule is
// refused (named in the status, counted) while the last good one keeps
// applying; deleting rules restores the plain selection; the rule nodes'
// watches are released with the service.
func TestZooKeeperGovernanceRules(t *testing.T) {
	re := newRuleEnv(t, testenv.ZooKeeperAddr(t))
	iface, app, gw := uniqueName("com.example.Gov"), uniqueName("shop"), uniqueName("gw")
	for _, p := range []struct{ addr, extra string }{{"10.0.0.1:20880", ""}, {"10.0.0.2:20880", "&dubbo.tag=gray"}, {"10.0.0.3:20880", ""}} {
		re.addProvider(re.admin, iface, p.addr, "application="+app+p.extra, 0)
	}
	r := startRegistry(t, Options{Addrs: []string{re.addr}, Root: re.group, Application: gw, ConsumerHost: "10.9.9.9",
		Grace: -1, Governance: &GovernanceOptions{}})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	waitReady(t, d)
	expect := func(what, method, tag, want string) {
		t.Helper()
		r.waitUntil(t, what, func() bool { return routed(d, method, tag) == want })
	}
	// Static tags: an untagged request never reaches the gray provider.
	expect("static tags", "find", "", "10.0.0.1:20880 10.0.0.3:20880")
	expect("static tag gray", "find", "gray", "10.0.0.2:20880")

	// Condition router of the service ("iface::", scope service, v3.0):
	// excludes a host for one method.
	condKey := governance.ServiceKey(iface, "", "") + ".condition-router"
	re.setRule(condKey, "configVersion: v3.0\nscope: service\nforce: false\nruntime: true\nenabled: true\nkey: "+iface+"\nconditions:\n  - method = find* => host != 10.0.0.1\n")
	expect("condition excludes a host for find*", "findAll", "", "10.0.0.3:20880")
	expect("condition leaves other methods", "save", "", "10.0.0.1:20880 10.0.0.3:20880")
	re.setRule(condKey, "configVersion: v3.0\nscope: service\nforce: false\nkey: "+iface+"\nconditions:\n  - method = find* => host = 10.0.0.77\n")
	expect("an empty result is ignored without force", "findAll", "", "10.0.0.1:20880 10.0.0.3:20880")
	re.setRule(condKey, "configVersion: v3.0\nscope: service\nforce: true\nkey: "+iface+"\nconditions:\n  - method = find* => host = 10.0.0.77\n")
	expect("with force, the empty result holds", "findAll", "", "")
	re.setRule(condKey, "configVersion: v3.0\nscope: service\nforce: false\nkey: "+iface+"\nconditions:\n  - method = find* => host != 10.0.0.1\n")
	expect("condition back", "findAll", "", "10.0.0.3:20880")

	// A malformed rule: refused, counted, named; the last good one applies.
	refusedBefore := r.Status().RulesRefused
	re.setRule(condKey, "configVersion: v3.0\nconditions:\n  - method == find => host = x\n")
	r.waitUntil(t, "the malformed rule refused", func() bool {
		for _, st := range d.Governance().Rules {
			if st.Key == condKey && st.State == "refused" && strings.Contains(st.Error, `"=="`) && st.Applied {
				return true
			}
		}
		return false
	})
	if r.Status().RulesRefused != refusedBefore+1 {
		t.Fatalf("refusals counted: %d, want %d", r.Status().RulesRefused, refusedBefore+1)
	}
	if got := routed(d, "findAll", ""); got != "10.0.0.3:20880" {
		t.Fatalf("the last good condition rule no longer applies: %q", got)
	}

	// Tag router of the provider application (dubbo.apache.org
	// overview/core-features/traffic/tag-rule, v3.0).
	tagKey := app + ".tag-router"
	re.setRule(tagKey, "configVersion: v3.0\nforce: false\nenabled: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\"10.0.0.3:20880\"]\n")
	expect("tag canary", "save", "canary", "10.0.0.3:20880")
	expect("untagged leaves out the canary", "save", "", "10.0.0.1:20880")
	expect("missing tag falls back without force", "save", "missing", "10.0.0.1:20880")
	re.setRule(tagKey, "configVersion: v3.0\nforce: true\nenabled: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\"10.0.0.3:20880\"]\n  - name: empty\n    addresses: [\"10.0.0.99:1\"]\n")
	expect("force: none", "save", "empty", "")
	expect("force: tagged still served", "save", "canary", "10.0.0.3:20880")

	// A consumer-side configurator of the gateway's application disables
	// a provider for the gateway (dubbo.apache.org configuration-rule;
	// addresses: the consumer's host).
	confKey := gw + ".configurators"
	re.setRule(confKey, "configVersion: v3.0\nscope: application\nkey: "+gw+"\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [\"10.9.9.9\"]\n    providerAddresses: [\"10.0.0.3:20880\"]\n    parameters:\n      disabled: true\n      retries: 5\n")
	r.waitUntil(t, "configurator disables 10.0.0.3", func() bool {
		return strings.Join(addrsOf(d.Providers()), " ") == "10.0.0.1:20880 10.0.0.2:20880"
	})
	if st := d.Governance().Rules; !slices.ContainsFunc(st, func(s registry.RuleStatus) bool { return s.Key == confKey && s.Ignored == "retries" }) {
		t.Errorf("the configurator's ignored parameter is not shown: %+v", st)
	}
	re.setRule(confKey, "configVersion: v3.0\nscope: application\nkey: "+gw+"\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [\"10.8.8.8\"]\n    providerAddresses: [\"10.0.0.3:20880\"]\n    parameters:\n      disabled: true\n")
	r.waitUntil(t, "a configurator for another consumer does not apply", func() bool { return len(d.Providers()) == 3 })

	// Application condition routers: the gateway's own (scope application,
	// key: the consumer's application, as Dubbo's AppStateRouter reads it)
	// and the providers' (Dubbo 3's ProviderAppStateRouter).
	re.deleteRule(condKey)
	re.deleteRule(tagKey)
	expect("service and tag rules deleted", "save", "", "10.0.0.1:20880 10.0.0.3:20880")
	gwCond, appCond := gw+".condition-router", app+".condition-router"
	re.setRule(gwCond, "configVersion: v3.0\nscope: application\nkey: "+gw+"\nconditions:\n  - application = "+gw+" => host != 10.0.0.3\n")
	expect("the gateway application's condition", "save", "", "10.0.0.1:20880")
	re.setRule(appCond, "configVersion: v3.0\nscope: application\nkey: "+app+"\nforce: true\nconditions:\n  - method = save => host = 10.0.0.2\n")
	expect("the provider application's condition, with force", "save", "", "")
	expect("the provider application's condition, other method", "find", "", "10.0.0.1:20880")
	re.deleteRule(appCond)
	re.deleteRule(gwCond)

	// Deleting the rules restores the plain selection.
	expect("rules deleted: static tags again", "findAll", "", "10.0.0.1:20880 10.0.0.3:20880")
	expect("rules deleted: static tag", "findAll", "gray", "10.0.0.2:20880")

	// The rule nodes watched: the gateway's two, the service's two, the
	// provider application's two; none once the service is released.
	if n := r.Status().Rules; n != 6 {
		t.Fatalf("rule nodes watched: %d, want 6", n)
	}
	d.Release()
	r.waitUntil(t, "rule nodes released", func() bool { return r.Status().Rules == 0 })
}

// TestZooKeeperGovernanceOff: without Options.Governance no rule node is
// read and a directory has no router.
func TestZooKeeperGovernanceOff(t *testing.T) {
	re := newRuleEnv(t, testenv.ZooKeeperAddr(t))
	iface, app := uniqueName("com.example.GovOff"), uniqueName("shop")
	re.addProvider(re.admin, iface, "10.0.0.1:20880", "application="+app, 0)
	re.addProvider(re.admin, iface, "10.0.0.2:20880", "application="+app+"&dubbo.tag=gray", 0)
	re.setRule(app+".tag-router", "tags:\n  - name: canary\n    addresses: [\"10.0.0.1:20880\"]\n")
	r := startRegistry(t, Options{Addrs: []string{re.addr}, Root: re.group})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	r.waitUntil(t, "two providers", func() bool { return len(d.Providers()) == 2 })
	if d.Router() != nil || r.Status().Rules != 0 {
		t.Fatalf("governance off: router %v, rule nodes %d", d.Router(), r.Status().Rules)
	}
}

// waitRouted waits, without the test's generous limit, for d's selection
// to become want, and returns how long it took.
func waitRouted(t *testing.T, d *registry.Directory, method, tag, want string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for routed(d, method, tag) != want {
		if time.Since(start) > limit {
			t.Fatalf("selection for %s/%q is %q after %s, want %q", method, tag, routed(d, method, tag), limit, want)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// governanceWithin1s writes a tag rule, a condition rule and a
// configurator in turn, each timed from the write to the changed
// selection, which must take under a second.
func governanceWithin1s(t *testing.T) []time.Duration {
	re := newRuleEnv(t, testenv.ZooKeeperAddr(t))
	iface, app, gw := uniqueName("com.example.GovTimed"), uniqueName("shop"), uniqueName("gw")
	for _, a := range []string{"10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880"} {
		re.addProvider(re.admin, iface, a, "application="+app, 0)
	}
	r := startRegistry(t, Options{Addrs: []string{re.addr}, Root: re.group, Application: gw, ConsumerHost: "10.9.9.9",
		Governance: &GovernanceOptions{}})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	r.waitUntil(t, "three providers", func() bool { return len(d.Providers()) == 3 })
	var took []time.Duration
	timed := func(write func(), method, tag, want string) {
		start := time.Now()
		write()
		waitRouted(t, d, method, tag, want, time.Second)
		took = append(took, time.Since(start))
	}
	timed(func() {
		re.setRule(app+".tag-router", "configVersion: v3.0\nforce: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\"10.0.0.3:20880\"]\n")
	}, "find", "canary", "10.0.0.3:20880")
	timed(func() {
		re.setRule(governance.ServiceKey(iface, "", "")+".condition-router", "configVersion: v3.0\nscope: service\nkey: "+iface+"\nconditions:\n  - method = find => host != 10.0.0.1\n")
	}, "find", "", "10.0.0.2:20880")
	timed(func() {
		re.setRule(gw+".configurators", "configVersion: v3.0\nscope: application\nkey: "+gw+"\nconfigs:\n  - side: consumer\n    providerAddresses: [\"10.0.0.2:20880\"]\n    parameters:\n      disabled: true\n")
	}, "save", "", "10.0.0.1:20880")
	return took
}

// TestZooKeeperGovernanceRestart: while ZooKeeper is down the last rules
// keep applying; once it is back a rule changed meanwhile (here: before
// the reconnection is noticed) applies, and the directories are current
// again (a rule node re-read with the same data does not hold them back).
func TestZooKeeperGovernanceRestart(t *testing.T) {
	server := testenv.StartZooKeeper(t)
	re := newRuleEnv(t, server.Addr())
	iface, app := uniqueName("com.example.GovRestart"), uniqueName("shop")
	for _, a := range []string{"10.0.0.1:20880", "10.0.0.2:20880"} {
		re.addProvider(re.admin, iface, a, "application="+app, 0)
	}
	tagKey := app + ".tag-router"
	re.setRule(tagKey, "configVersion: v3.0\nforce: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\"10.0.0.2:20880\"]\n")
	r := startRegistry(t, Options{Addrs: []string{server.Addr()}, Root: re.group, SessionTimeout: 4 * time.Second, Timeout: time.Second,
		Governance: &GovernanceOptions{}})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	r.waitUntil(t, "canary rule", func() bool { return routed(d, "m", "canary") == "10.0.0.2:20880" })

	server.Stop()
	r.waitUntil(t, "stale", func() bool { return d.State() == registry.DirStale })
	if got := routed(d, "m", "canary"); got != "10.0.0.2:20880" {
		t.Fatalf("while ZooKeeper is down the rule no longer applies: %q", got)
	}
	server.Start()
	re.reconnectAdmin()
	re.setRule(tagKey, "configVersion: v3.0\nforce: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\"10.0.0.1:20880\"]\n")
	r.waitUntil(t, "the rule changed while reconnecting applies, the directory current", func() bool {
		return d.State() == registry.DirOK && routed(d, "m", "canary") == "10.0.0.1:20880"
	})

	// Again, with no change: the rule nodes read the same data.
	server.Stop()
	r.waitUntil(t, "stale again", func() bool { return d.State() == registry.DirStale })
	server.Start()
	r.waitUntil(t, "current again, the rule unchanged", func() bool {
		return d.State() == registry.DirOK && routed(d, "m", "canary") == "10.0.0.1:20880"
	})
}
