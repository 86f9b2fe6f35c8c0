package interop

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbogw/dubbogw/governance"
)

// TestGovernanceDubboGo: Dubbo's governance rules, written into ZooKeeper
// where Dubbo Admin writes them (/dubbo/config/dubbo/<key>: dubbo-go
// v3.3.0 config_center/zookeeper/impl.go, root /dubbo/config, group
// dubbo), choose among real dubbo-go v3.3.0 providers: a static tag
// (dubbo-go's ServiceConfig.Tag, the dubbo.tag parameter of the URL it
// registers), the provider application's tag router
// ("<application>.tag-router": cluster/router/tag/router.go Notify reads
// the providers' application) and the service's condition router
// ("<interface>:<version>:<group>.condition-router": common/url.go
// ColonSeparatedKey) and a consumer-side configurator of the gateway's
// application ("<application>.configurators"), in the YAML of Dubbo's
// documentation (dubbo.apache.org overview/core-features/traffic:
// tag-rule, condition-rule, configuration-rule; configVersion v3.0).
// Which provider served each call is read from the gateway's
// per-provider call counts.
func TestGovernanceDubboGo(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, conn := registryGroup(t, zkAddr, "gov")
	suffix := fmt.Sprintf("%08x", rand.Uint32())
	app, version, gwApp := "gov-shop-"+suffix, "gov-"+suffix, "gov-gw-"+suffix
	start := func(tag string) string {
		return startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "interface",
			App: app, UserVersion: version, Tag: tag}).Addr
	}
	p1, p2, gray := start(""), start(""), start("gray")
	gw := startGateway(t, fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
registries:
  zk: {type: zookeeper, address: %q, root: %s, application: %s, discovery: interface, startup_wait: 10s, governance: {enabled: true}}
dubbo:
  metrics: {per_provider: true}
routes:
  - name: get-user
    match: {methods: [GET], path: "/users/{id}"}
    dubbo: {registry: zk, interface: %s, version: %s, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
  - name: greet
    match: {methods: [GET], path: "/greet"}
    dubbo: {registry: zk, interface: %s, version: %s, method: greet}
`, zkAddr, group, gwApp, userService, version, userService, version))

	rules := ruleWriter{t: t, conn: conn}
	served := func(what, path string, header []string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			before := callsByAddr(t, gw)
			failed := 0
			for range 20 {
				if a := gw.do(t, "GET", path, "", header...); a.status != 200 {
					failed++
				}
			}
			got := diffCalls(before, callsByAddr(t, gw))
			if failed == 0 && sameAddrs(got, want) || len(want) == 0 && failed == 20 && len(got) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: calls served by %v (%d failed), want %v", what, got, failed, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Static tags: dubbo-go's tagged provider takes tagged calls only.
	served("untagged calls", "/users/1", nil, p1, p2)
	served("tag gray", "/users/1", []string{"X-Dubbo-Tag", "gray"}, gray)
	served("an unknown tag falls back to the untagged", "/users/1", []string{"X-Dubbo-Tag", "blue"}, p1, p2)

	// The service's condition router excludes a host for one method.
	condKey := governance.ServiceKey(userService, version, "") + ".condition-router"
	rules.set(condKey, "configVersion: v3.0\nscope: service\nforce: false\nruntime: true\nenabled: true\nkey: "+userService+
		"\nconditions:\n  - method = getUser => address != "+p1+"\n")
	served("getUser leaves out p1", "/users/1", nil, p2)
	served("greet still reaches both", "/greet", nil, p1, p2)
	rules.set(condKey, "configVersion: v3.0\nscope: service\nforce: false\nruntime: true\nenabled: true\nkey: "+userService+
		"\nconditions:\n  - method = getUser & arguments[0] = vip* => address = "+p1+"\n")
	served("vip users to p1", "/users/vip-7", nil, p1)
	served("other users to both", "/users/7", nil, p1, p2)
	rules.remove(condKey)

	// A consumer-side configurator of the gateway's application
	// ("<application>.configurators": the consumer's, dubbo-go
	// config_center/configurator/override.go matches side consumer against
	// the consumer) disables p1 for the gateway.
	confKey := gwApp + ".configurators"
	rules.set(confKey, "configVersion: v3.0\nscope: application\nkey: "+gwApp+"\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    providerAddresses: [\""+p1+"\"]\n    parameters:\n      disabled: true\n")
	served("p1 disabled for the gateway", "/greet", nil, p2)
	rules.remove(confKey)
	served("p1 back", "/greet", nil, p1, p2)

	// The provider application's tag router: canary is p2, by address.
	tagKey := app + ".tag-router"
	rules.set(tagKey, "configVersion: v3.0\nforce: false\nenabled: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\""+p2+"\"]\n")
	served("canary to p2", "/users/1", []string{"X-Dubbo-Tag", "canary"}, p2)
	served("untagged leaves out the canary and the static tag", "/users/1", nil, p1)
	served("the static tag still applies", "/users/1", []string{"X-Dubbo-Tag", "gray"}, gray)
	served("an unknown tag falls back without force", "/users/1", []string{"X-Dubbo-Tag", "blue"}, p1)
	rules.set(tagKey, "configVersion: v3.0\nforce: true\nenabled: true\nkey: "+app+"\ntags:\n  - name: canary\n    addresses: [\""+p2+"\"]\n  - name: blue\n    addresses: [\"127.0.0.1:1\"]\n")
	served("force: a tag without provider gets none", "/users/1", []string{"X-Dubbo-Tag", "blue"})
}

// ruleWriter writes rule nodes at Dubbo Admin's paths, deleting them when
// the test ends.
type ruleWriter struct {
	t    *testing.T
	conn *zk.Conn
}

func (w ruleWriter) set(key, yaml string) {
	w.t.Helper()
	for _, p := range []string{"/dubbo", governance.DefaultRoot, governance.DefaultRoot + "/" + governance.DefaultGroup} {
		if _, err := w.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			w.t.Fatalf("creating %s: %v", p, err)
		}
	}
	p := governance.Path(governance.DefaultRoot, governance.DefaultGroup, key)
	if _, err := w.conn.Set(p, []byte(yaml), -1); errors.Is(err, zk.ErrNoNode) {
		if _, err := w.conn.Create(p, []byte(yaml), 0, zk.WorldACL(zk.PermAll)); err != nil {
			w.t.Fatalf("creating %s: %v", p, err)
		}
		w.t.Cleanup(func() { _ = w.conn.Delete(p, -1) })
	} else if err != nil {
		w.t.Fatalf("writing %s: %v", p, err)
	}
}

func (w ruleWriter) remove(key string) {
	w.t.Helper()
	if err := w.conn.Delete(governance.Path(governance.DefaultRoot, governance.DefaultGroup, key), -1); err != nil {
		w.t.Fatalf("deleting rule %s: %v", key, err)
	}
}

var callsLine = regexp.MustCompile(`(?m)^dubbogw_dubbo_calls_total\{addr="([^"]+)",result="ok"\} (\d+)$`)

// callsByAddr reads the gateway's successful calls per provider address.
func callsByAddr(t *testing.T, gw *gatewayUnderTest) map[string]int {
	t.Helper()
	a := gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/metrics", "")
	out := map[string]int{}
	for _, m := range callsLine.FindAllStringSubmatch(string(a.body), -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	return out
}

// diffCalls is the addresses whose count grew from before to after.
func diffCalls(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for addr, n := range after {
		if d := n - before[addr]; d > 0 {
			out[addr] = d
		}
	}
	return out
}

func sameAddrs(got map[string]int, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, a := range want {
		if got[a] == 0 {
			return false
		}
	}
	return true
}
