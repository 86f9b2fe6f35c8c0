package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// Application-level discovery (issue 8) against real Apache dubbo-go
// v3.3.0 providers: dubbo-go's default registration (instance and mapping
// only, metadata served by the instance), remote metadata, group and
// version variants, a revision change, an unreachable MetadataService,
// instances joining and leaving under load, a ZooKeeper restart and calls
// to interfaces nobody maps.
//
// Every test but the ZooKeeper restart runs in a registry group of its own
// in the shared ZooKeeper (provider -registry-group G, gateway root G):
// dubbo-go's mapping nodes are persistent and shared by every application
// serving an interface, and its remote metadata nodes are written once per
// revision, so tests sharing /dubbo would read each other's.

// The applications' metadata service is dubbo-go's, so the gateway finds
// the provider only after a metadata fetch; these bound the waits.
const (
	appDiscWait   = 10 * time.Second // a registration or a change to be seen
	appDiscExpiry = 15 * time.Second // a dead provider's ephemeral node to go (its session expires)
	appDiscPoll   = 50 * time.Millisecond
	noSuchPackage = "org.dubbogw.appdisc.nosuch"
)

// TestAppDiscDefaultRegistration: a dubbo-go provider with dubbo-go's own
// defaults (registry-type service, local metadata) writes nothing at
// interface level; the gateway reaches it, through a route and the
// pass-through, with discovery auto (the default) and application, and
// lists it as found at application level with its application and
// revision. With discovery interface the same route has no provider: the
// provider really is registered at application level only.
func TestAppDiscDefaultRegistration(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, conn := registryGroup(t, zkAddr, "default")
	const app = "appdisc-default"
	p := startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "local", App: app})

	// What dubbo-go wrote: an instance and the mapping, no providers node.
	inst := readInstance(t, conn, "/"+group+"/"+app+"/"+p.Addr)
	if inst.storage != "local" || inst.revision == "" {
		t.Fatalf("instance %s: storage %q, revision %q; want local and a revision", p.Addr, inst.storage, inst.revision)
	}
	if apps := mappingApps(t, conn, group, userService); !slices.Contains(apps, app) {
		t.Errorf("mapping of %s names %v, want %s among them", userService, apps, app)
	}
	if children, _, err := conn.Children("/" + group + "/" + userService + "/providers"); err == nil && len(children) > 0 {
		t.Errorf("interface-level providers %v: dubbo-go's default registration writes none", children)
	} else if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}

	for _, discovery := range []string{"auto", "application"} {
		t.Run(discovery, func(t *testing.T) {
			gw := startGateway(t, appGW{zk: zkAddr, group: group, discovery: discovery}.yaml())
			wantJSON(userJSON("7"))(t, gw.do(t, "GET", "/users/7", ""))
			wantJSON(userJSON("8"))(t, gw.do(t, "POST", "/dubbo/"+userService+"/getUser",
				`{"types": ["java.lang.String"], "args": ["8"], "version": "1.0.0"}`))
			checkOnlyProvider(t, gw.admin(t), userService+":"+userVersion, p.Addr, app, inst.revision)
			v := gw.admin(t)
			if r := v.registry(t); r.Applications != 1 || r.Instances != 1 || r.MetadataFetches < 1 || r.MetadataFailures != 0 {
				t.Errorf("registry %+v: want 1 application, 1 instance, metadata fetched without failure", r)
			}
		})
	}

	t.Run("interface", func(t *testing.T) {
		gw := startGateway(t, appGW{zk: zkAddr, group: group, discovery: "interface"}.yaml())
		wantError(http.StatusServiceUnavailable, "NO_PROVIDER", "get-user", "no provider for "+userService+":"+userVersion)(
			t, gw.do(t, "GET", "/users/7", ""))
		if ps, _ := gw.admin(t).providers(userService + ":" + userVersion); len(ps) != 0 {
			t.Errorf("discovery interface found providers %+v", ps)
		}
	})
}

// TestAppDiscRemoteMetadata: a provider registered at application level
// only with its metadata in ZooKeeper (dubbo-go's /<group>/<app>/<revision>,
// no MetadataService) is reachable.
func TestAppDiscRemoteMetadata(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, conn := registryGroup(t, zkAddr, "remote")
	const app = "appdisc-remote"
	p := startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "remote", App: app})
	inst := readInstance(t, conn, "/"+group+"/"+app+"/"+p.Addr)
	if inst.storage != "remote" {
		t.Fatalf("instance %s: storage %q, want remote", p.Addr, inst.storage)
	}
	if ok, _, err := conn.Exists("/" + group + "/" + app + "/" + inst.revision); err != nil || !ok {
		t.Fatalf("remote metadata /%s/%s/%s: exists %v, %v", group, app, inst.revision, ok, err)
	}

	gw := startGateway(t, appGW{zk: zkAddr, group: group}.yaml())
	wantJSON(userJSON("7"))(t, gw.do(t, "GET", "/users/7", ""))
	wantJSON(userJSON("9"))(t, gw.do(t, "POST", "/dubbo/"+userService+"/getUser",
		`{"types": ["java.lang.String"], "args": ["9"], "version": "1.0.0"}`))
	v := gw.admin(t)
	checkOnlyProvider(t, v, userService+":"+userVersion, p.Addr, app, inst.revision)
	if r := v.registry(t); r.MetadataFetches < 1 || r.MetadataFailures != 0 {
		t.Errorf("registry %+v: want metadata fetched without failure", r)
	}
}

// TestAppDiscPassthroughFirstCall: the first pass-through call to a
// service no route subscribes, on a gateway that has never watched its
// application, reaches the provider: the directory is new and its first
// answer (mapping node, application, instance, metadata fetch) takes a few
// milliseconds; until it comes the directory is pending, not empty, and a
// call should wait for it (bounded), as a starting gateway's routes do,
// rather than answer NO_PROVIDER for a service that has a provider.
func TestAppDiscPassthroughFirstCall(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, _ := registryGroup(t, zkAddr, "first")
	startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "all", Metadata: "local", App: "appdisc-first"})
	for _, discovery := range []string{"application", "auto", "interface"} {
		t.Run(discovery, func(t *testing.T) {
			gw := startGateway(t, appGW{zk: zkAddr, group: group, discovery: discovery, noUserRoute: true}.yaml())
			first := gw.do(t, "POST", "/dubbo/"+greeterService+"/hello", `{"types": ["java.lang.String"], "args": ["Cy"], "group": "blue"}`)
			var later time.Duration
			start := time.Now()
			waitFor(t, appDiscWait, "the pass-through to answer", func() (bool, string) {
				a := gw.do(t, "POST", "/dubbo/"+greeterService+"/hello", `{"types": ["java.lang.String"], "args": ["Cy"], "group": "blue"}`)
				later = time.Since(start)
				return a.status == http.StatusOK, fmt.Sprintf("%d %s", a.status, a.body)
			})
			if first.status != http.StatusOK {
				t.Errorf("first pass-through call to blue/%s: %d %s; the next ones answer 200 within %v: "+
					"the call did not wait for the new directory's first answer (dubboroute/passthrough.go)",
					greeterService, first.status, strings.TrimSpace(string(first.body)), later.Round(time.Millisecond))
			}
		})
	}
}

// TestAppDiscGroupVersion: three applications in one registry group serve
// UserService as 1.0.0, 2.0.0 and g1/1.0.0 (and all three
// GreeterService in group blue): each route's service key lists exactly
// its provider, and its calls reach that provider (the gateway's call
// counter by address grows by exactly the route's calls).
func TestAppDiscGroupVersion(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, _ := registryGroup(t, zkAddr, "gv")
	start := func(app, version, userGroup string) *dubboGoProvider {
		return startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "local",
			App: app, UserVersion: version, UserGroup: userGroup})
	}
	pa := start("appdisc-gv-a", "", "")
	pb := start("appdisc-gv-b", "2.0.0", "")
	pc := start("appdisc-gv-c", "", "g1")

	gw := startGateway(t, appGW{zk: zkAddr, group: group, perProvider: true, routes: []string{
		userRoute("v2", "/v2/users/{id}", "2.0.0", "", "getUser", pathID),
		userRoute("g1", "/g1/users/{id}", "1.0.0", "g1", "getUser", pathID),
		userRoute("v3", "/v3/users/{id}", "3.0.0", "", "getUser", pathID),
		`  - name: hello
    match: {methods: [GET], path: "/hello/{name}"}
    dubbo: {registry: zk, interface: ` + greeterService + `, group: blue, method: hello, params: [{type: java.lang.String, from: path, name: name}]}
`,
	}}.yaml())

	routes := []struct {
		path, key string
		p         *dubboGoProvider
		app       string
	}{
		{"/users/", userService + ":1.0.0", pa, "appdisc-gv-a"},
		{"/v2/users/", userService + ":2.0.0", pb, "appdisc-gv-b"},
		{"/g1/users/", "g1/" + userService + ":1.0.0", pc, "appdisc-gv-c"},
	}
	v := gw.admin(t)
	for _, r := range routes {
		checkOnlyProvider(t, v, r.key, r.p.Addr, r.app, "")
	}
	greeters, _ := v.providers(greeterGroup + "/" + greeterService)
	if got, want := addrs(greeters), sortedOf(pa.Addr, pb.Addr, pc.Addr); !slices.Equal(got, want) {
		t.Errorf("blue/%s providers %v, want %v", greeterService, got, want)
	}
	// The answer names the versions and groups that do have providers,
	// found through the applications' metadata.
	wantError(http.StatusServiceUnavailable, "NO_PROVIDER", "v3", "no provider for "+userService+":3.0.0; the registry has providers of "+
		userService+" for version 1.0.0; version 2.0.0; version 1.0.0, group g1")(t, gw.do(t, "GET", "/v3/users/1", ""))

	// Calls: each route's go to its provider only.
	before := gw.metrics(t)
	const n = 5
	for _, r := range routes {
		for i := range n {
			id := strconv.Itoa(i)
			wantJSON(userJSON(id))(t, gw.do(t, "GET", r.path+id, ""))
		}
	}
	after := gw.metrics(t)
	for _, r := range routes {
		d := metricValue(after, "dubbogw_dubbo_calls_total", "addr", r.p.Addr, "result", "ok") -
			metricValue(before, "dubbogw_dubbo_calls_total", "addr", r.p.Addr, "result", "ok")
		if d != n {
			t.Errorf("%s (%s): %v calls reached it, want %d", r.p.Addr, r.key, d, n)
		}
	}
	for range 3 {
		wantJSON(`"hello Bo from group blue"`)(t, gw.do(t, "GET", "/hello/Bo", ""))
	}
}

// TestAppDiscRevisionChange: a provider restarted on the same port with a
// new method (ping) has a new revision: the gateway re-reads its metadata
// once and the method answers; before, the provider itself refused it.
func TestAppDiscRevisionChange(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, conn := registryGroup(t, zkAddr, "revision")
	const app = "appdisc-revision"
	port := freeLoopbackPort(t)
	cfg := providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "local", App: app, Port: port}
	p1 := startDubboGoProvider(t, cfg)
	rev1 := readInstance(t, conn, "/"+group+"/"+app+"/"+p1.Addr).revision

	gw := startGateway(t, appGW{zk: zkAddr, group: group, routes: []string{
		userRoute("ping", "/ping", "1.0.0", "", "ping", ""),
	}}.yaml())
	wantJSON(userJSON("1"))(t, gw.do(t, "GET", "/users/1", ""))
	checkOnlyProvider(t, gw.admin(t), userService+":"+userVersion, p1.Addr, app, rev1)
	// The gateway does not check methods against the metadata: the call
	// goes out and dubbo-go's generic filter refuses it.
	a := gw.do(t, "GET", "/ping", "")
	msg := checkError(t, a, http.StatusInternalServerError, "DUBBO_EXCEPTION", "ping")
	if !strings.Contains(msg, `"ping" method is not found`) {
		t.Errorf("ping before the restart: %q, want dubbo-go's method not found", msg)
	}
	t.Logf("ping before the restart: %d %s", a.status, strings.TrimSpace(string(a.body)))
	m0 := gw.metrics(t)

	p1.Stop()
	cfg.ExtraMethod = true
	p2 := startDubboGoProvider(t, cfg)
	rev2 := readInstance(t, conn, "/"+group+"/"+app+"/"+p2.Addr).revision
	if rev2 == rev1 {
		t.Fatalf("revision %s unchanged by the new method", rev2)
	}
	restarted := time.Now()
	userErrors := map[string]int{} // getUser's answers other than 200 meanwhile, by status and code
	waitFor(t, appDiscWait, "ping to answer pong after the restart", func() (bool, string) {
		if u := gw.do(t, "GET", "/users/3", ""); u.status != http.StatusOK {
			var e struct{ Error struct{ Code string } }
			_ = json.Unmarshal(u.body, &e)
			userErrors[strconv.Itoa(u.status)+" "+e.Error.Code]++
		}
		a := gw.do(t, "GET", "/ping", "")
		return a.status == http.StatusOK && strings.TrimSpace(string(a.body)) == `"pong"`, fmt.Sprintf("%d %s", a.status, a.body)
	})
	pongAfter := time.Since(restarted)
	t.Logf("pong %v after the new provider was ready; meanwhile getUser answered %v (polled every %v)",
		pongAfter.Round(time.Millisecond), userErrors, appDiscPoll)
	wantJSON(userJSON("2"))(t, gw.do(t, "GET", "/users/2", ""))
	// The instance keeps serving with its old revision's providers while
	// the new revision's metadata is fetched (ping reaches the process
	// either way): wait for the new revision to show.
	waitFor(t, appDiscWait, "the new revision in /admin/services", func() (bool, string) {
		ps, _ := gw.admin(t).providers(userService + ":" + userVersion)
		return len(ps) == 1 && ps[0].Revision == rev2, fmt.Sprintf("%+v", ps)
	})
	checkOnlyProvider(t, gw.admin(t), userService+":"+userVersion, p2.Addr, app, rev2)

	// One fetch for the new revision; nothing more while nothing changes.
	time.Sleep(1500 * time.Millisecond)
	m1 := gw.metrics(t)
	ok := metricValue(m1, "dubbogw_registry_metadata_fetches_total", "result", "ok") - metricValue(m0, "dubbogw_registry_metadata_fetches_total", "result", "ok")
	failed := metricValue(m1, "dubbogw_registry_metadata_fetches_total", "result", "failed") - metricValue(m0, "dubbogw_registry_metadata_fetches_total", "result", "failed")
	t.Logf("metadata fetches over the restart: %v ok, %v failed", ok, failed)
	if ok < 1 || ok+failed > 3 {
		t.Errorf("metadata fetches over the restart: %v ok, %v failed; want 1 to 3 in all, at least one ok", ok, failed)
	}
	// The new instance is up and listening before it registers, so its
	// first fetch must succeed, although the gateway's connection pool to
	// the address (the old process's connection lost, the dials during the
	// restart refused) is waiting out a reconnect backoff then: the fetch
	// redials instead of failing at once ("not connected (reconnecting)"),
	// which would drop the instance (its new revision's metadata unknown)
	// until a retry a second later.
	if failed != 0 {
		t.Errorf("%v metadata fetches of the restarted instance failed (pong %v after it was ready): "+
			"the fetch gave up on a connection being re-established instead of waiting for it within metadata.timeout",
			failed, pongAfter.Round(time.Millisecond))
	}
	time.Sleep(time.Second)
	if m2 := gw.metrics(t); metricValue(m2, "dubbogw_registry_metadata_fetches_total") != metricValue(m1, "dubbogw_registry_metadata_fetches_total") {
		t.Errorf("metadata fetches go on with nothing changing: %v, then %v a second later",
			metricValue(m1, "dubbogw_registry_metadata_fetches_total"), metricValue(m2, "dubbogw_registry_metadata_fetches_total"))
	}
}

// TestAppDiscUnreachableMetadata: an instance whose MetadataService
// cannot be reached (a hand-written copy of a real instance node pointing
// at a closed port) is never used: its fetches fail with a growing
// backoff (1 s, 2 s, ...), not in a loop, and the real instance serves
// throughout.
func TestAppDiscUnreachableMetadata(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, conn := registryGroup(t, zkAddr, "unreachable")
	const app = "appdisc-unreachable"
	p := startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "local", App: app})
	gw := startGateway(t, appGW{zk: zkAddr, group: group, perProvider: true}.yaml())
	wantJSON(userJSON("1"))(t, gw.do(t, "GET", "/users/1", ""))

	// The bad instance: the real node's JSON with every port of it
	// (node name, id, port, endpoints, MetadataService URL params) made a
	// closed loopback port.
	raw, _, err := conn.Get("/" + group + "/" + app + "/" + p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	closed := freeLoopbackPort(t)
	bad := net.JoinHostPort("127.0.0.1", strconv.Itoa(closed))
	var node map[string]any
	if err := json.Unmarshal(raw, &node); err != nil {
		t.Fatalf("instance node %s: %v", raw, err)
	}
	payload, _ := node["payload"].(map[string]any)
	md, _ := payload["metadata"].(map[string]any)
	var params map[string]any
	if s, _ := md["dubbo.metadata-service.url-params"].(string); json.Unmarshal([]byte(s), &params) != nil || params == nil {
		t.Fatalf("instance node without MetadataService URL params: %s", raw)
	}
	params["port"] = strconv.Itoa(closed)
	up, _ := json.Marshal(params)
	node["id"], node["port"], payload["id"] = bad, closed, bad
	md["dubbo.endpoints"] = fmt.Sprintf(`[{"port":%d,"protocol":"dubbo"}]`, closed)
	md["dubbo.metadata-service.url-params"] = string(up)
	md["dubbo.metadata.storage-type"] = "local"
	data, _ := json.Marshal(node)
	m0 := gw.metrics(t)
	failed0 := metricValue(m0, "dubbogw_registry_metadata_fetches_total", "result", "failed")
	written := time.Now()
	if _, err := conn.Create("/"+group+"/"+app+"/"+bad, data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// ~3.5 s of calls: all answered by the real instance, the bad one
	// never listed; its failures counted as they come.
	var failedAt []time.Duration
	last, calls := failed0, 0
	for time.Since(written) < 3500*time.Millisecond {
		calls++
		id := strconv.Itoa(calls)
		wantJSON(userJSON(id))(t, gw.do(t, "GET", "/users/"+id, ""))
		v := gw.admin(t)
		ps, _ := v.providers(userService + ":" + userVersion)
		if got := addrs(ps); !slices.Equal(got, []string{p.Addr}) {
			t.Fatalf("providers %v, want only %s", got, p.Addr)
		}
		if f := metricValue(gw.metrics(t), "dubbogw_registry_metadata_fetches_total", "result", "failed"); f > last {
			for range int(f - last) {
				failedAt = append(failedAt, time.Since(written).Round(10*time.Millisecond))
			}
			last = f
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := gw.admin(t).registry(t)
	dials := metricValue(gw.metrics(t), "dubbogw_dubbo_dial_errors_total", "addr", bad)
	t.Logf("%d calls; metadata fetch failures at %v after the bad node was written; %v dial errors to %s; registry %+v",
		calls, failedAt, dials, bad, r)
	if len(failedAt) < 2 || len(failedAt) > 4 {
		t.Errorf("%d metadata fetch failures in 3.5s (at %v): want 2 to 4 (retries after 1s, 2s)", len(failedAt), failedAt)
	}
	if r.Instances != 2 {
		t.Errorf("%d instances, want 2 (the bad one is read, just not used)", r.Instances)
	}
}

// TestAppDiscChurnUnderLoad: a second instance of the application joins
// while calls run (and gets its share of them), then stops abruptly, as a
// crash: its node stays until its ZooKeeper session expires, and calls
// that reach it meanwhile fail to connect and are retried on the other
// instance (the route is a GET: idempotent, failover retries).
func TestAppDiscChurnUnderLoad(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, _ := registryGroup(t, zkAddr, "churn")
	cfg := providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "local", App: "appdisc-churn"}
	pa := startDubboGoProvider(t, cfg)
	gw := startGateway(t, appGW{zk: zkAddr, group: group, perProvider: true}.yaml())
	wantJSON(userJSON("1"))(t, gw.do(t, "GET", "/users/1", ""))

	load := startLoad(gw.base+"/users/", 4, 2*time.Millisecond, 30*time.Second, 50_000)
	defer load.stop()
	time.Sleep(500 * time.Millisecond)

	pb := startDubboGoProvider(t, cfg)
	joined := time.Now()
	key := userService + ":" + userVersion
	waitFor(t, appDiscWait, "the second instance to be listed", func() (bool, string) {
		ps, _ := gw.admin(t).providers(key)
		return slices.Contains(addrs(ps), pb.Addr), fmt.Sprint(addrs(ps))
	})
	listed := time.Since(joined)
	waitFor(t, appDiscWait, "calls to reach the second instance", func() (bool, string) {
		n := metricValue(gw.metrics(t), "dubbogw_dubbo_calls_total", "addr", pb.Addr, "result", "ok")
		return n >= 50, fmt.Sprintf("%v calls", n)
	})
	time.Sleep(500 * time.Millisecond)

	stopAt := time.Now()
	load.mark(stopAt)
	pb.Stop()
	waitFor(t, appDiscExpiry, "the stopped instance to leave", func() (bool, string) {
		ps, _ := gw.admin(t).providers(key)
		return !slices.Contains(addrs(ps), pb.Addr), fmt.Sprint(addrs(ps))
	})
	left := time.Since(stopAt)
	attemptsLeft := metricValue(gw.metrics(t), "dubbogw_dubbo_calls_total", "addr", pb.Addr)
	time.Sleep(500 * time.Millisecond)
	res := load.stop()
	m := gw.metrics(t)
	if n := metricValue(m, "dubbogw_dubbo_calls_total", "addr", pb.Addr); n != attemptsLeft {
		t.Errorf("%v attempts on the stopped instance once it was unlisted, %v half a second later", attemptsLeft, n)
	}

	t.Logf("load: %d calls in %v (%d before the stop, %d after), %d errors (%d before, %d after the stop): %v",
		res.calls, res.elapsed.Round(time.Millisecond), res.callsBefore, res.calls-res.callsBefore, len(res.errors),
		res.errorsBefore, len(res.errors)-res.errorsBefore, res.sample())
	t.Logf("second instance listed %v after it was ready, unlisted %v after it stopped; its calls: %v ok, %v connect_error, %v connection_lost; first instance: %v ok",
		listed.Round(time.Millisecond), left.Round(time.Millisecond),
		metricValue(m, "dubbogw_dubbo_calls_total", "addr", pb.Addr, "result", "ok"),
		metricValue(m, "dubbogw_dubbo_calls_total", "addr", pb.Addr, "result", "connect_error"),
		metricValue(m, "dubbogw_dubbo_calls_total", "addr", pb.Addr, "result", "connection_lost"),
		metricValue(m, "dubbogw_dubbo_calls_total", "addr", pa.Addr, "result", "ok"))
	if res.calls < 500 {
		t.Errorf("only %d calls: the load did not run", res.calls)
	}
	// Each failed attempt on the stopped instance, connection lost in
	// flight or refused, is retried on the first one, so no call fails.
	if len(res.errors) > 0 {
		t.Errorf("%d calls failed, want none: %v", len(res.errors), res.sample())
	}
}

// TestAppDiscZooKeeperRestart: with a private ZooKeeper and the default
// roots (/dubbo, /services), a provider registered at application level
// keeps serving through a ZooKeeper outage; after the restart the
// gateway's watches come back, and an instance that joins after it is
// seen.
func TestAppDiscZooKeeperRestart(t *testing.T) {
	appDiscZK(t)
	zks := testenv.StartZooKeeper(t)
	cfg := providerConfig{ZK: zks.Addr(), RegistryType: "service", Metadata: "local", App: "appdisc-zkrestart"}
	pa := startDubboGoProvider(t, cfg)
	gw := startGateway(t, appGW{zk: zks.Addr(), registry: []string{"session_timeout: 10s"}}.yaml())
	wantJSON(userJSON("1"))(t, gw.do(t, "GET", "/users/1", ""))
	key := userService + ":" + userVersion
	v := gw.admin(t)
	checkOnlyProvider(t, v, key, pa.Addr, cfg.App, "")
	watches := v.registry(t).Watches // providers, configurators, mapping; the application and its instance
	if watches != 5 {
		t.Errorf("%d watches, want 5 (providers, configurators, mapping, application, instance)", watches)
	}

	zks.Stop()
	stopped := time.Now()
	calls := 0
	for time.Since(stopped) < 2*time.Second {
		calls++
		id := strconv.Itoa(calls)
		wantJSON(userJSON(id))(t, gw.do(t, "GET", "/users/"+id, ""))
		if ps, _ := gw.admin(t).providers(key); !slices.Equal(addrs(ps), []string{pa.Addr}) {
			t.Fatalf("providers %v with ZooKeeper down, want the last known %s", addrs(ps), pa.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := gw.admin(t).registry(t); r.State == "connected" {
		t.Errorf("registry %+v still connected with ZooKeeper down", r)
	}
	zks.Start()
	restarted := time.Now()
	waitFor(t, appDiscExpiry, "the registry to reconnect with its watches", func() (bool, string) {
		wantJSON(userJSON("0"))(t, gw.do(t, "GET", "/users/0", ""))
		r := gw.admin(t).registry(t)
		return r.State == "connected" && !r.Degraded && r.Reconnects >= 1 && r.Watches == watches && r.Instances == 1, fmt.Sprintf("%+v", r)
	})
	t.Logf("%d calls answered with ZooKeeper down; reconnected with %d watches %v after the restart",
		calls, watches, time.Since(restarted).Round(time.Millisecond))

	pb := startDubboGoProvider(t, cfg)
	waitFor(t, appDiscWait, "the instance started after the restart to be listed", func() (bool, string) {
		ps, _ := gw.admin(t).providers(key)
		return slices.Equal(addrs(ps), sortedOf(pa.Addr, pb.Addr)), fmt.Sprint(addrs(ps))
	})
	if r := gw.admin(t).registry(t); r.Watches != watches+1 || r.Instances != 2 {
		t.Errorf("registry %+v: want %d watches (one more instance) and 2 instances", r, watches+1)
	}
	for i := range 10 {
		wantJSON(userJSON(strconv.Itoa(i)))(t, gw.do(t, "GET", "/users/"+strconv.Itoa(i), ""))
	}
}

// TestAppDiscUnknownInterfaces: with application-level discovery,
// pass-through calls to interfaces nobody maps answer 503 NO_PROVIDER
// from the registry's catalog (the children of the mapping node, one
// watch for the whole registry): no subscription, no watch and no
// goroutine per name, round after round.
func TestAppDiscUnknownInterfaces(t *testing.T) {
	zkAddr := appDiscZK(t)
	group, _ := registryGroup(t, zkAddr, "unknown")
	p := startDubboGoProvider(t, providerConfig{ZK: zkAddr, RegistryGroup: group, RegistryType: "service", Metadata: "local", App: "appdisc-unknown"})
	gw := startGateway(t, appGW{zk: zkAddr, group: group, discovery: "application",
		registry: []string{"release_after: 500ms", "watch_gc: 1s"},
		top:      "dubbo: {references: {idle_ttl: 1s}}\n"}.yaml())
	wantJSON(userJSON("1"))(t, gw.do(t, "GET", "/users/1", ""))
	base := gw.admin(t).registry(t)
	if base.Subscriptions != 1 || base.Watches != 3 {
		t.Errorf("registry %+v: want 1 subscription, 3 watches (mapping, application, instance)", base)
	}
	checkOnlyProvider(t, gw.admin(t), userService+":"+userVersion, p.Addr, "appdisc-unknown", "")
	g0 := settledGoroutines(0, 2*time.Second)

	const names, rounds = 24, 3
	var peak int
	for round := range rounds {
		for i := range names {
			iface := noSuchPackage + ".Service" + strconv.Itoa(i+round*names)
			wantError(http.StatusServiceUnavailable, "NO_PROVIDER", "passthrough", "no provider for "+iface)(
				t, gw.do(t, "POST", "/dubbo/"+iface+"/hello", `{"types": ["java.lang.String"], "args": ["x"]}`))
		}
		// The catalog's one watch (the mapping node's children) and
		// nothing per name.
		if r := gw.admin(t).registry(t); r.Subscriptions != base.Subscriptions || r.Watches != base.Watches+1 || r.OrphanWatches != 0 {
			t.Errorf("round %d: registry %+v; want %d subscription(s) and %d watches (one more: the catalog's), no orphan",
				round, r, base.Subscriptions, base.Watches+1)
		}
		peak = max(peak, runtime.NumGoroutine())
	}
	wantJSON(userJSON("2"))(t, gw.do(t, "GET", "/users/2", ""))
	g1 := settledGoroutines(g0+5, 5*time.Second)
	t.Logf("%d rounds of %d unknown interfaces: goroutines %d before, %d at the peak, %d after", rounds, names, g0, peak, g1)
	if peak-g0 > 10 || g1 > g0+5 {
		t.Errorf("goroutines: %d before, %d at the peak, %d after %d calls to unknown interfaces", g0, peak, g1, rounds*names)
	}
	wantJSON(userJSON("3"))(t, gw.do(t, "GET", "/users/3", ""))
}

// --- helpers ---

// appDiscZK is the ZooKeeper of scripts/test.sh, or a skip.
func appDiscZK(t *testing.T) string {
	t.Helper()
	addr := zkAddress(t)
	if addr == "" {
		t.Skip("DUBBOGW_TEST_ZK_ADDR is not set (scripts/test.sh starts a ZooKeeper; set CI to make this a failure)")
	}
	return addr
}

// registryGroup makes a registry group for the test alone and a session
// to look at it; the group's tree is deleted when the test ends (after
// its providers and gateways have stopped).
func registryGroup(t *testing.T, zkAddr, name string) (string, *zk.Conn) {
	t.Helper()
	group := fmt.Sprintf("dubbogw-appdisc-%s-%d-%d", name, os.Getpid(), time.Now().UnixNano()%1_000_000_000)
	conn := connectZK(t, zkAddr)
	t.Cleanup(func() { deleteTree(t, conn, "/"+group, 0) })
	return group, conn
}

// deleteTree deletes path and everything under it (a small tree: a
// registry group of one test).
func deleteTree(t *testing.T, conn *zk.Conn, path string, depth int) {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil || depth > 8 {
		t.Logf("cleaning %s up: %v", path, err)
		return
	}
	for _, c := range children {
		deleteTree(t, conn, path+"/"+c, depth+1)
	}
	if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Logf("cleaning %s up: %v", path, err)
	}
}

// instanceNode is what the tests read of an instance node.
type instanceNode struct {
	revision, storage string
}

func readInstance(t *testing.T, conn *zk.Conn, path string) instanceNode {
	t.Helper()
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("instance node %s: %v", path, err)
	}
	var node struct {
		Payload struct{ Metadata map[string]string }
	}
	if err := json.Unmarshal(data, &node); err != nil {
		t.Fatalf("instance node %s: %v\n%s", path, err, data)
	}
	return instanceNode{revision: node.Payload.Metadata["dubbo.metadata.revision"], storage: node.Payload.Metadata["dubbo.metadata.storage-type"]}
}

func mappingApps(t *testing.T, conn *zk.Conn, group, iface string) []string {
	t.Helper()
	data, _, err := conn.Get("/" + group + "/mapping/" + iface)
	if err != nil {
		t.Fatalf("mapping of %s: %v", iface, err)
	}
	return strings.Split(string(data), ",")
}

// appGW is a gateway configuration: one ZooKeeper registry "zk" (root
// group, or dubbo's default), the route get-user (GET /users/{id} →
// UserService 1.0.0 getUser) and the pass-through (POST
// /dubbo/{interface}/{method}: UserService, GreeterService and the
// interfaces nobody maps), plus routes.
type appGW struct {
	zk, group, discovery string
	registry             []string // more settings of the registry, one per line
	routes               []string // more routes, YAML list items
	top                  string   // more top-level YAML
	noUserRoute          bool     // without the get-user route
	perProvider          bool     // dubbo metrics by provider address (not with a dubbo: in top)
}

const pathID = "params: [{type: java.lang.String, from: path, name: id}]"

func (c appGW) yaml() string {
	var b strings.Builder
	top := c.top
	if c.perProvider {
		top += "dubbo: {metrics: {per_provider: true}}\n"
	}
	fmt.Fprintf(&b, `listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s}
%sregistries:
  zk:
    type: zookeeper
    address: %q
    startup_wait: 5s
`, top, c.zk)
	if c.group != "" {
		fmt.Fprintf(&b, "    root: %s\n", c.group)
	}
	if c.discovery != "" {
		fmt.Fprintf(&b, "    discovery: %s\n", c.discovery)
	}
	for _, l := range c.registry {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	b.WriteString("routes:\n")
	if !c.noUserRoute {
		b.WriteString(userRoute("get-user", "/users/{id}", userVersion, "", "getUser", pathID))
	}
	for _, r := range c.routes {
		b.WriteString(r)
	}
	fmt.Fprintf(&b, `  - name: passthrough
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo: {registry: zk, passthrough: {allow: [%s, %s, %s.*]}}
`, userService, greeterService, noSuchPackage)
	return b.String()
}

// userRoute is a GET route to a UserService method.
func userRoute(name, path, version, group, method, params string) string {
	dubbo := "registry: zk, interface: " + userService + ", version: " + version + ", method: " + method
	if group != "" {
		dubbo += ", group: " + group
	}
	if params != "" {
		dubbo += ", " + params
	}
	return fmt.Sprintf("  - name: %s\n    match: {methods: [GET], path: %q}\n    dubbo: {%s}\n", name, path, dubbo)
}

// userJSON is getUser(id)'s generic answer.
func userJSON(id string) string {
	return fmt.Sprintf(`{"iD": %q, "name": "user-%s", "age": 30, "email": "%s@example.org", "tags": ["a", "b"]}`, id, id, id)
}

// adminView is what the tests read of /admin/services.
type adminView struct {
	Registries []adminRegistry
	Services   []struct {
		Registry, Service, State string
		Providers                []adminProvider
	}
}

type adminRegistry struct {
	Name, State      string
	Degraded         bool
	Subscriptions    int
	Watches          int
	OrphanWatches    int `json:"orphan_watches"`
	Reconnects       uint64
	Applications     int
	Instances        int
	MetadataFetches  uint64 `json:"metadata_fetches"`
	MetadataFailures uint64 `json:"metadata_failures"`
	MetadataCached   int    `json:"metadata_cached"`
}

type adminProvider struct {
	Address, Source, App, Revision string
	Weight                         int
}

func (gw *gatewayUnderTest) admin(t *testing.T) adminView {
	t.Helper()
	a := gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/admin/services", "")
	var v adminView
	if a.status != http.StatusOK {
		t.Fatalf("/admin/services: %d %s", a.status, a.body)
	}
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("/admin/services: %v\n%s", err, a.body)
	}
	return v
}

func (v adminView) registry(t *testing.T) adminRegistry {
	t.Helper()
	if len(v.Registries) != 1 || v.Registries[0].Name != "zk" {
		t.Fatalf("registries %+v, want zk alone", v.Registries)
	}
	return v.Registries[0]
}

// providers are the providers of service key, and whether it is subscribed.
func (v adminView) providers(key string) ([]adminProvider, bool) {
	for _, s := range v.Services {
		if s.Service == key {
			return s.Providers, true
		}
	}
	return nil, false
}

// checkOnlyProvider checks that key's one provider is addr, found at
// application level only, of app, with revision (any, if "").
func checkOnlyProvider(t *testing.T, v adminView, key, addr, app, revision string) {
	t.Helper()
	ps, ok := v.providers(key)
	if !ok {
		t.Errorf("service %s is not subscribed: %+v", key, v.Services)
		return
	}
	if len(ps) != 1 || ps[0].Address != addr {
		t.Errorf("service %s: providers %+v, want %s alone", key, ps, addr)
		return
	}
	if p := ps[0]; p.Source != "application" || p.App != app || p.Revision == "" || revision != "" && p.Revision != revision {
		t.Errorf("service %s: provider %+v; want source application, app %s, revision %q", key, p, app, revision)
	}
}

func addrs(ps []adminProvider) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Address)
	}
	slices.Sort(out)
	return out
}

func sortedOf(s ...string) []string {
	slices.Sort(s)
	return s
}

// metrics is the gateway's /metrics text.
func (gw *gatewayUnderTest) metrics(t *testing.T) string {
	t.Helper()
	a := gw.doURL(t, "GET", "http://"+gw.AdminAddr()+"/metrics", "")
	if a.status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", a.status, a.body)
	}
	return string(a.body)
}

// metricValue sums the samples of metric name (a counter or gauge, no
// suffix) that carry every label given as name, value pairs.
func metricValue(text, name string, labels ...string) float64 {
	var sum float64
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(rest, labels[i]+`="`+labels[i+1]+`"`) {
				match = false
			}
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if !match || len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// waitFor polls cond until it holds, for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %s", d, what, detail)
		}
		time.Sleep(appDiscPoll)
	}
}

// settledGoroutines waits, at most d, for the goroutine count to be at
// most want (or, with want 0, to stop falling) and returns it.
func settledGoroutines(want int, d time.Duration) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if want > 0 && m <= want || want == 0 && m >= n {
			return m
		}
		n = m
	}
	return n
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// load is a bounded load on a route: workers each send GET base+<n> in
// a loop, pace apart, until stop, for at most maxTime and maxCalls in all.
type load struct {
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu        sync.Mutex
	start     time.Time
	markAt    time.Time
	calls     int
	callsMark int
	errors    []loadError
	errsMark  int
	result    *loadResult
}

type loadError struct {
	at   time.Duration // since the mark (negative: before)
	what string
}

type loadResult struct {
	calls, callsBefore int
	errors             []loadError
	errorsBefore       int
	elapsed            time.Duration
}

func (r *loadResult) sample() []loadError { return r.errors[:min(len(r.errors), 10)] }

func startLoad(base string, workers int, pace, maxTime time.Duration, maxCalls int) *load {
	ctx, cancel := context.WithTimeout(context.Background(), maxTime)
	l := &load{cancel: cancel, start: time.Now()}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for w := range workers {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			defer client.CloseIdleConnections()
			for i := 0; ctx.Err() == nil; i++ {
				l.mu.Lock()
				if l.calls >= maxCalls {
					l.mu.Unlock()
					return
				}
				l.calls++
				l.mu.Unlock()
				id := strconv.Itoa(w*1_000_000 + i)
				what := l.call(ctx, client, base+id, id)
				time.Sleep(pace) // a few thousand calls a second at most: the machine is shared
				if what == "" || ctx.Err() != nil && strings.Contains(what, "context") {
					continue
				}
				l.mu.Lock()
				at := time.Since(l.start)
				if !l.markAt.IsZero() {
					at = time.Since(l.markAt)
				}
				l.errors = append(l.errors, loadError{at: at.Round(time.Millisecond), what: what})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// call sends one request and says what went wrong, "" for a right answer.
func (l *load) call(ctx context.Context, client *http.Client, url, id string) string {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"user-`+id+`"`) {
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return ""
}

// mark records the time errors are dated from, and the counts until then.
func (l *load) mark(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.markAt, l.callsMark, l.errsMark = at, l.calls, len(l.errors)
}

// stop ends the load (once) and returns what it met.
func (l *load) stop() *loadResult {
	l.cancel()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.result == nil {
		l.result = &loadResult{calls: l.calls, callsBefore: l.callsMark, errors: slices.Clone(l.errors),
			errorsBefore: l.errsMark, elapsed: time.Since(l.start)}
		if l.markAt.IsZero() {
			l.result.callsBefore, l.result.errorsBefore = l.calls, len(l.errors)
		}
	}
	return l.result
}
