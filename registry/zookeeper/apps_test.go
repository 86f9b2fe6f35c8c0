package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// Application-level discovery (Dubbo 3's service discovery) against a real
// ZooKeeper. The nodes are written by hand in the shapes dubbo-go v3.3.0 and
// Java Dubbo write (registry/testdata/appdisc, and the facts of issue 8),
// under the test's own root, which is the registry's Root: as under a registry group,
// instances are then /<root>/<app>/<ip:port>, next to dubbo-go's remote
// metadata /<root>/<app>/<revision>; Java's is /<root>/metadata/<app>/<revision>
// and the mappings /<root>/mapping/<interface>. Local metadata comes from a
// fake MetadataService (fakeMetadata): the real one is tested against real
// dubbo-go providers in test/interop.

// instanceSpec is an application instance as dubbo-go v3.3.0 registers it.
type instanceSpec struct {
	app, host string
	port      int    // the node's own port (dubbo-go: its first service URL's)
	dubbo     int    // the dubbo endpoint's port; 0: port
	revision  string // dubbo.metadata.revision
	storage   string // StorageLocal or StorageRemote
}

// id is the instance's id and node name, "ip:port".
func (s instanceSpec) id() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

func (s instanceSpec) dubboPort() int {
	if s.dubbo != 0 {
		return s.dubbo
	}
	return s.port
}

// addr is where the instance's dubbo services are called.
func (s instanceSpec) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.dubboPort())) }

func (s instanceSpec) at(revision string) instanceSpec {
	s.revision = revision
	return s
}

// data is the node's data, byte for byte as dubbo-go writes it (Go's JSON,
// map keys sorted; endpoints and url-params JSON inside strings; url-params
// only with local metadata).
func (s instanceSpec) data() []byte {
	endpoints := mustJSON([]map[string]any{{"port": s.dubboPort(), "protocol": "dubbo"}})
	meta := map[string]string{
		"dubbo.endpoints":                    string(endpoints),
		"dubbo.metadata.revision":            s.revision,
		"dubbo.metadata.storage-type":        s.storage,
		"dubbo.subscribed-services.revision": "0",
		"meta-v":                             "2.0.0",
	}
	if s.storage != registry.StorageRemote {
		meta["dubbo.metadata-service.url-params"] = string(mustJSON(map[string]string{
			"group": s.app, "port": strconv.Itoa(s.dubboPort()), "protocol": "dubbo",
			"release": "3.2.0", "serialization": "hessian2", "version": "1.0.0",
		}))
	}
	return mustJSON(struct {
		Name    string         `json:"name"`
		ID      string         `json:"id"`
		Address string         `json:"address"`
		Port    int            `json:"port"`
		Payload map[string]any `json:"payload"`
	}{s.app, s.id(), s.host, s.port, map[string]any{
		"@class":   "org.apache.dubbo.registry.zookeeper.ZookeeperInstance",
		"id":       s.id(),
		"metadata": meta,
		"name":     s.app,
	}})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// serviceSpec is one service of a revision's metadata.
type serviceSpec struct {
	iface, group, version string
	protocol              string // "": dubbo
	port                  int
	params                map[string]string // beyond those dubbo-go always writes
}

func (s serviceSpec) proto() string {
	if s.protocol == "" {
		return "dubbo"
	}
	return s.protocol
}

// key is Dubbo's key of the service in MetadataInfo.services.
func (s serviceSpec) key() string {
	k := s.iface
	if s.group != "" {
		k = s.group + "/" + k
	}
	if s.version != "" {
		k += ":" + s.version
	}
	return k + ":" + s.proto()
}

// metadataInfo is what the MetadataService of app's revision answers.
func metadataInfo(app, revision string, services ...serviceSpec) *registry.MetadataInfo {
	m := &registry.MetadataInfo{App: app, Revision: revision, Services: make(map[string]*registry.ServiceInfo)}
	for _, s := range services {
		params := map[string]string{"application": app, "cluster": "failover", "loadbalance": "random",
			"methods": "Hello,hello", "release": "dubbo-golang-3.2.0", "serialization": "hessian2"}
		if s.group != "" {
			params["group"] = s.group
		}
		if s.version != "" {
			params["version"] = s.version
		}
		maps.Copy(params, s.params)
		m.Services[s.key()] = &registry.ServiceInfo{Name: s.iface, Group: s.group, Version: s.version, Protocol: s.proto(),
			Port: s.port, Path: s.iface, Params: cluster.NewParams(params)}
	}
	return m
}

// metadataJSON is m as dubbo-go writes it to /<root>/<app>/<revision>: a
// capital "Tag", empty group and version left out, the port a number.
func metadataJSON(m *registry.MetadataInfo) []byte {
	type service struct {
		Name     string            `json:"name"`
		Group    string            `json:"group,omitempty"`
		Version  string            `json:"version,omitempty"`
		Protocol string            `json:"protocol"`
		Port     int               `json:"port"`
		Path     string            `json:"path"`
		Params   map[string]string `json:"params"`
	}
	doc := struct {
		App      string             `json:"app"`
		Revision string             `json:"revision"`
		Tag      string             `json:"Tag"`
		Services map[string]service `json:"services"`
	}{App: m.App, Revision: m.Revision, Services: make(map[string]service)}
	for k, s := range m.Services {
		doc.Services[k] = service{s.Name, s.Group, s.Version, s.Protocol, s.Port, s.Path, s.Params.Map()}
	}
	return mustJSON(doc)
}

// golden is a file of the registry package's testdata/appdisc (the
// documents its parsers are tested against) with the replacements (old,
// new, ...) made.
func golden(t *testing.T, name string, replacements ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "appdisc", name))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer(replacements...).Replace(string(b)))
}

// put writes path with data (creating its parents), as conn's node
// (ephemeral when flags says so); an existing node gets the data.
func (e *zkEnv) put(conn *zk.Conn, path string, data []byte, flags int32) string {
	e.t.Helper()
	e.ensure(path[:strings.LastIndexByte(path, '/')])
	e.retry("writing "+path, func() error {
		_, err := conn.Create(path, data, flags, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(path, data, -1)
		}
		return err
	})
	return path
}

// replace deletes path and creates it again with data in one transaction:
// an instance re-registered (dubbo-go deletes and creates) faster than any
// watcher can look in between.
func (e *zkEnv) replace(path string, data []byte) {
	e.t.Helper()
	e.retry("replacing "+path, func() error {
		_, err := e.admin.Multi(&zk.DeleteRequest{Path: path, Version: -1},
			&zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll)})
		return err
	})
}

func (e *zkEnv) mappingPath(iface string) string { return e.root + "/mapping/" + iface }

// setMapping writes the mapping node of iface: "app1,app2".
func (e *zkEnv) setMapping(iface, apps string) string {
	e.t.Helper()
	return e.put(e.admin, e.mappingPath(iface), []byte(apps), 0)
}

func (e *zkEnv) appPath(app string) string { return e.root + "/" + app }

func (e *zkEnv) instancePath(s instanceSpec) string { return e.appPath(s.app) + "/" + s.id() }

func (e *zkEnv) addInstance(conn *zk.Conn, s instanceSpec, flags int32) string {
	e.t.Helper()
	return e.put(conn, e.instancePath(s), s.data(), flags)
}

// addRemoteMetadata writes m where dubbo-go does, /<root>/<app>/<revision>.
func (e *zkEnv) addRemoteMetadata(m *registry.MetadataInfo) string {
	e.t.Helper()
	return e.put(e.admin, e.appPath(m.App)+"/"+m.Revision, metadataJSON(m), 0)
}

// fakeMetadata plays the MetadataService of instances that keep their
// metadata (storage local): serve answers, and every call is recorded by
// "<instance id>@<revision>".
type fakeMetadata struct {
	serve   func(ctx context.Context, inst *registry.Instance) (*registry.MetadataInfo, error)
	started chan string // when set, told each call as it begins (never blocks)

	mu       sync.Mutex
	calls    map[string][]time.Time
	problems []string
}

func (f *fakeMetadata) fetch(ctx context.Context, inst *registry.Instance) (*registry.MetadataInfo, error) {
	call := inst.ID + "@" + inst.Revision
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[string][]time.Time)
	}
	f.calls[call] = append(f.calls[call], time.Now())
	if _, ok := ctx.Deadline(); !ok {
		f.problems = append(f.problems, call+": a fetch without a deadline")
	}
	want := net.JoinHostPort(inst.Host, strconv.Itoa(inst.EndpointPort("dubbo")))
	if addr, err := inst.MetadataServiceAddr(); addr != want || err != nil {
		f.problems = append(f.problems, fmt.Sprintf("%s: MetadataService at %q (%v), want %s", call, addr, err, want))
	}
	if g := inst.MetadataServiceGroup(); g != inst.App || inst.App == "" {
		f.problems = append(f.problems, fmt.Sprintf("%s: MetadataService group %q, app %q", call, g, inst.App))
	}
	f.mu.Unlock()
	if f.started != nil {
		select {
		case f.started <- call:
		default:
		}
	}
	return f.serve(ctx, inst)
}

// count is the number of calls for "<instance id>@<revision>".
func (f *fakeMetadata) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls[call])
}

func (f *fakeMetadata) times(call string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls[call])
}

func (f *fakeMetadata) callCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		m[k] = len(v)
	}
	return m
}

// check fails the test if a fetch was handed something wrong.
func (f *fakeMetadata) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
}

// serveRevisions answers with revisions[inst.Revision] (the same for every
// instance of the app) and, like dubbo-go for a revision it does not have,
// fails for any other.
func serveRevisions(revisions map[string]*registry.MetadataInfo) func(context.Context, *registry.Instance) (*registry.MetadataInfo, error) {
	return func(_ context.Context, inst *registry.Instance) (*registry.MetadataInfo, error) {
		if m := revisions[inst.Revision]; m != nil {
			return m, nil
		}
		return nil, fmt.Errorf("getMetadataInfo(%q): null", inst.Revision)
	}
}

// hasAddrs reports whether d's providers are exactly want (sorted).
func hasAddrs(d *registry.Directory, want ...string) bool {
	return slices.Equal(addrsOf(d.Providers()), want)
}

func checkAddrs(t *testing.T, d *registry.Directory, want ...string) {
	t.Helper()
	if got := addrsOf(d.Providers()); !slices.Equal(got, want) {
		t.Errorf("%s: providers %v, want %v", d.Key(), got, want)
	}
}

func checkOrigin(t *testing.T, d *registry.Directory, addr string, want registry.ProviderOrigin) {
	t.Helper()
	if got := d.Origin(addr); got != want {
		t.Errorf("%s: origin of %s %+v, want %+v", d.Key(), addr, got, want)
	}
}

// waitStatus waits until the registry's status satisfies cond. Status is
// published at the end of each worker round, after the directories: right
// after a directory changes it can still be the round before's.
func waitStatus(t *testing.T, r *testRegistry, what string, cond func(registry.Status) bool) {
	t.Helper()
	r.waitUntil(t, what, func() bool { return cond(r.Status()) })
}

var probes atomic.Int64

// settle waits until the worker is done with what it was doing: it works
// in order, so once a directory subscribed now has its answer, earlier
// rounds are over. It returns the probe's interface, which stays watched
// for its Grace.
func settle(t *testing.T, r *testRegistry) string {
	t.Helper()
	iface := fmt.Sprintf("com.example.Probe%d", probes.Add(1))
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	waitReady(t, d)
	d.Release()
	return iface
}

// TestZooKeeperAppsRemoteMetadata: application mode, remote metadata from
// Java's path for one application and dubbo-go's for two others; each
// service key gets the right instances, at their dubbo endpoint's port,
// with their origin; one watch per mapping, application and instance.
func TestZooKeeperAppsRemoteMetadata(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const (
		demo     = "org.apache.dubbo.demo.DemoService"
		greeting = "org.apache.dubbo.demo.GreetingService"
		greeter  = "org.dubbogw.interop.GreeterService"
		users    = "org.dubbogw.interop.UserService"
		javaRev  = "5b5c6a1fd3a8c8e35bb6f0c4c9d6a2e1"
		goRev    = "59615343583"
	)
	// Java Dubbo 3: the node's port (50051) is tri's, dubbo's is 20880;
	// metadata at /<root>/metadata/<app>/<revision> (gson's shape, with a
	// tri service to skip).
	e.put(e.admin, e.appPath("demo-provider")+"/192.168.1.10:50051",
		golden(t, "java-instance.json", `"dubbo.metadata.storage-type":"local"`, `"dubbo.metadata.storage-type":"remote"`), 0)
	e.put(e.admin, e.root+"/metadata/demo-provider/"+javaRev, golden(t, "java-metadata-gson.json"), 0)
	// dubbo-go, recorded: two instances of one revision, whose remote
	// metadata (written once, by the first) names the first one's port.
	e.put(e.admin, e.appPath("facts-remote")+"/127.0.0.1:41887", golden(t, "dubbogo-instance-service-remote.json"), 0)
	e.put(e.admin, e.appPath("facts-remote")+"/127.0.0.1:41888", golden(t, "dubbogo-instance-service-remote.json", "41887", "41888"), 0)
	e.put(e.admin, e.appPath("facts-remote")+"/"+goRev, golden(t, "dubbogo-remote-metadata-service-remote.json"), 0)
	// dubbo-go, UserService in group g1 version 2.0.0 only (the same
	// revision: dubbo-go's ignores group and version).
	gv := instanceSpec{app: "facts-gv", host: "127.0.0.1", port: 42287, revision: goRev, storage: registry.StorageRemote}
	e.addInstance(e.admin, gv, 0)
	e.addRemoteMetadata(metadataInfo("facts-gv", goRev, serviceSpec{iface: users, group: "g1", version: "2.0.0", port: 42287}))
	e.setMapping(demo, "demo-provider")
	e.setMapping(greeting, "demo-provider")
	e.setMapping(greeter, "facts-remote")
	e.setMapping(users, "facts-remote,facts-gv")

	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication})
	sub := func(iface, group, version string) *registry.Directory {
		d := r.Subscribe(registry.ServiceKey{Interface: iface, Group: group, Version: version})
		t.Cleanup(d.Release)
		return d
	}
	dDemo := sub(demo, "", "")
	dGreeting := sub(greeting, "greeting", "1.0.0")
	dBlue := sub(greeter, "blue", "")
	dNoGroup := sub(greeter, "", "")
	dUsers1 := sub(users, "", "1.0.0")
	dUsersG1 := sub(users, "g1", "2.0.0")
	all := []*registry.Directory{dDemo, dGreeting, dBlue, dNoGroup, dUsers1, dUsersG1}
	for _, d := range all {
		waitReady(t, d)
		if d.State() != registry.DirOK {
			t.Fatalf("%s: %s", d.Key(), d.State())
		}
	}

	java := registry.ProviderOrigin{Source: registry.SourceApplication, App: "demo-provider", Revision: javaRev}
	// DemoService is offered over dubbo and over tri, at the instance's
	// tri endpoint.
	checkAddrs(t, dDemo, "192.168.1.10:20880", "192.168.1.10:50051")
	checkOrigin(t, dDemo, "192.168.1.10:20880", java)
	checkOrigin(t, dDemo, "192.168.1.10:50051", java)
	for _, p := range dDemo.Providers() {
		if want := p.Addr == "192.168.1.10:50051"; (p.Protocol == cluster.ProtocolTriple) != want {
			t.Errorf("DemoService at %s: protocol %s", p.Addr, p.Protocol)
		}
	}
	checkAddrs(t, dGreeting, "192.168.1.10:20880")
	checkOrigin(t, dGreeting, "192.168.1.10:20880", java)
	if ps := dGreeting.Providers(); len(ps) == 1 && ps[0].Weight != 50 {
		t.Errorf("GreetingService weight %d, want the metadata's 50", ps[0].Weight)
	}
	facts := registry.ProviderOrigin{Source: registry.SourceApplication, App: "facts-remote", Revision: goRev}
	checkAddrs(t, dBlue, "127.0.0.1:41887", "127.0.0.1:41888")
	checkOrigin(t, dBlue, "127.0.0.1:41888", facts)
	checkAddrs(t, dNoGroup) // only group blue is served
	checkAddrs(t, dUsers1, "127.0.0.1:41887", "127.0.0.1:41888")
	checkOrigin(t, dUsers1, "127.0.0.1:41887", facts)
	checkAddrs(t, dUsersG1, "127.0.0.1:42287")
	checkOrigin(t, dUsersG1, "127.0.0.1:42287", registry.ProviderOrigin{Source: registry.SourceApplication, App: "facts-gv", Revision: goRev})
	for _, ds := range r.Directories() {
		if len(ds.Providers) > 0 && ds.Discovery != registry.SourceApplication {
			t.Errorf("admin view of %s: discovery %q, want application", ds.Service, ds.Discovery)
		}
		for _, p := range ds.Providers {
			if p.Source != registry.SourceApplication || p.App == "" || p.Revision == "" {
				t.Errorf("admin view of %s: %+v", ds.Service, p)
			}
		}
	}

	// 4 mappings, 3 applications, 4 instances; remote metadata is read,
	// not watched; one fetch per application and revision (facts-remote's
	// two instances share their node); nothing skipped.
	waitStatus(t, r, "11 watches, 3 applications, 4 instances, 3 fetches, 3 cached", func(st registry.Status) bool {
		return st.Watches == 11 && st.OrphanWatches == 0 && st.Applications == 3 && st.Instances == 4 &&
			st.MetadataFetches == 3 && st.MetadataFailures == 0 && st.MetadataCached == 3 && st.Subscriptions == 6
	})
	if n := r.SkippedURLs(); n != 0 {
		t.Errorf("skipped %d URLs, want 0", n)
	}
	want := []string{
		e.instancePath(gv), e.appPath("demo-provider") + "/192.168.1.10:50051",
		e.appPath("facts-remote") + "/127.0.0.1:41887", e.appPath("facts-remote") + "/127.0.0.1:41888",
		e.mappingPath(demo), e.mappingPath(greeting), e.mappingPath(greeter), e.mappingPath(users),
	}
	slices.Sort(want)
	if got := watchedPaths(t, e.addr, r.sessionID(), e.root+"/"); !slices.Equal(got, want) {
		t.Errorf("ZooKeeper's data watches of the session:\n%v\nwant\n%v", got, want)
	}
	for _, p := range want {
		if n := r.armCount(p); n != 1 {
			t.Errorf("%s armed %d times", p, n)
		}
	}
}

// TestZooKeeperAppsAutoMerge: in auto mode an address found at both levels
// is one provider, from the application-level data; an interface-only one
// keeps its origin; the interface's configurators apply to both.
func TestZooKeeperAppsAutoMerge(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, rev = "com.example.Merged", "m1"
	atBothLevels := e.addProvider(e.admin, iface, "10.8.0.1:20880", "version=1.0.0&weight=50", 0)
	e.addProvider(e.admin, iface, "10.8.0.2:20880", "version=1.0.0", 0)
	both := instanceSpec{app: "merge-app", host: "10.8.0.1", port: 20880, revision: rev, storage: registry.StorageRemote}
	appOnly := instanceSpec{app: "merge-app", host: "10.8.0.3", port: 20880, revision: rev, storage: registry.StorageRemote}
	e.addInstance(e.admin, both, 0)
	e.addInstance(e.admin, appOnly, 0)
	e.addRemoteMetadata(metadataInfo("merge-app", rev,
		serviceSpec{iface: iface, version: "1.0.0", port: 20880, params: map[string]string{"weight": "200"}}))
	e.setMapping(iface, "merge-app")

	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryAuto})
	d := r.Subscribe(registry.ServiceKey{Interface: iface, Version: "1.0.0"})
	defer d.Release()
	waitReady(t, d)
	if got, want := weights(d.Providers()), "10.8.0.1:20880=200 10.8.0.2:20880=100 10.8.0.3:20880=200"; got != want {
		t.Fatalf("providers %s, want %s", got, want)
	}
	app := registry.ProviderOrigin{Source: registry.SourceApplication, App: "merge-app", Revision: rev}
	checkOrigin(t, d, "10.8.0.1:20880", registry.ProviderOrigin{Source: registry.SourceBoth, App: "merge-app", Revision: rev})
	checkOrigin(t, d, "10.8.0.2:20880", registry.ProviderOrigin{Source: registry.SourceInterface})
	checkOrigin(t, d, "10.8.0.3:20880", app)
	ds := r.Directories()
	if len(ds) != 1 || len(ds[0].Providers) != 3 || ds[0].Providers[0].Source != registry.SourceBoth || ds[0].Providers[0].App != "merge-app" ||
		ds[0].Providers[1].Source != registry.SourceInterface || ds[0].Providers[2].Source != registry.SourceApplication || ds[0].Discovery != registry.SourceBoth {
		t.Errorf("admin view %+v", ds)
	}
	// the two listings of the catalog (auto discovery reads them first),
	// providers, configurators, mapping, the application, 2 instances; one
	// fetch of the revision's node, for both instances.
	waitStatus(t, r, "8 watches, 1 application, 2 instances, 1 fetch", func(st registry.Status) bool {
		return st.Watches == 8 && st.Applications == 1 && st.Instances == 2 && st.MetadataFetches == 1
	})

	// Overrides of the interface level apply to application-level providers.
	e.addOverride(iface, "10.8.0.1:20880", "weight=7")
	r.waitUntil(t, "the override applied to the merged provider", func() bool {
		return weights(d.Providers()) == "10.8.0.1:20880=7 10.8.0.2:20880=100 10.8.0.3:20880=200"
	})
	e.addOverride(iface, "10.8.0.3", "disabled=true")
	r.waitUntil(t, "the application-only provider disabled", func() bool {
		return weights(d.Providers()) == "10.8.0.1:20880=7 10.8.0.2:20880=100"
	})
	checkOrigin(t, d, "10.8.0.1:20880", registry.ProviderOrigin{Source: registry.SourceBoth, App: "merge-app", Revision: rev})

	// The interface-level node gone, the address stays, from its instance.
	e.remove(atBothLevels)
	r.waitUntil(t, "10.8.0.1 from its instance only", func() bool {
		return d.Origin("10.8.0.1:20880") == app && weights(d.Providers()) == "10.8.0.1:20880=7 10.8.0.2:20880=100"
	})
}

// TestZooKeeperAppsLocalMetadataFetchedOnce: an instance's metadata is
// fetched once per revision however many service keys and interfaces use
// it, and kept across a release; a revision change fetches again, the old
// revision's providers serving until the new metadata is known.
func TestZooKeeperAppsLocalMetadataFetchedOnce(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const a, b, c = "com.example.A", "com.example.B", "com.example.C"
	const app = "local-app"
	inst := instanceSpec{app: app, host: "10.9.0.1", port: 20880, revision: "r1", storage: registry.StorageLocal}
	revisions := map[string]*registry.MetadataInfo{
		"r1": metadataInfo(app, "r1", serviceSpec{iface: a, port: 20880}, serviceSpec{iface: a, group: "x", port: 20880},
			serviceSpec{iface: b, port: 20880}),
		"r2": metadataInfo(app, "r2", serviceSpec{iface: a, port: 20880}, serviceSpec{iface: b, port: 20880},
			serviceSpec{iface: c, port: 20880}),
		"r3": metadataInfo(app, "r3", serviceSpec{iface: a, port: 20880}, serviceSpec{iface: a, group: "y", port: 20880},
			serviceSpec{iface: b, port: 20880}, serviceSpec{iface: c, port: 20880}),
	}
	gate := make(chan struct{})
	meta := &fakeMetadata{started: make(chan string, 16)}
	serve := serveRevisions(revisions)
	meta.serve = func(ctx context.Context, in *registry.Instance) (*registry.MetadataInfo, error) {
		if in.Revision == "r2" {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return serve(ctx, in)
	}
	path := e.addInstance(e.admin, inst, 0)
	for _, iface := range []string{a, b, c} {
		e.setMapping(iface, app)
	}
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		Grace: -1, Metadata: meta.fetch, MetadataTimeout: waitLimit})
	defer meta.check(t)
	addr := inst.addr()

	keys := []registry.ServiceKey{{Interface: a}, {Interface: a, Group: "x"}, {Interface: b}}
	subscribe := func() map[registry.ServiceKey]*registry.Directory {
		dirs := make(map[registry.ServiceKey]*registry.Directory)
		for _, k := range keys {
			dirs[k] = r.Subscribe(k)
		}
		for _, d := range dirs {
			waitReady(t, d)
			checkAddrs(t, d, addr)
		}
		return dirs
	}
	dirs := subscribe()
	dc := r.Subscribe(registry.ServiceKey{Interface: c})
	waitReady(t, dc)
	checkAddrs(t, dc) // the app's r1 does not serve C
	if got := meta.callCounts(); !maps.Equal(got, map[string]int{inst.id() + "@r1": 1}) {
		t.Fatalf("fetches %v, want one for r1", got)
	}

	// Everything released (the application too), then subscribed again:
	// the metadata is still known.
	for _, d := range dirs {
		d.Release()
	}
	dc.Release()
	r.waitUntil(t, "the application dropped", func() bool { st := r.Status(); return st.Applications == 0 && st.Watches == 0 })
	dirs = subscribe()
	defer func() {
		for _, d := range dirs {
			d.Release()
		}
	}()
	dc = r.Subscribe(registry.ServiceKey{Interface: c})
	defer dc.Release()
	ay := r.Subscribe(registry.ServiceKey{Interface: a, Group: "y"})
	defer ay.Release()
	waitReady(t, dc)
	waitReady(t, ay)
	if got := meta.callCounts(); !maps.Equal(got, map[string]int{inst.id() + "@r1": 1}) {
		t.Fatalf("fetches after subscribing again %v, want still one for r1", got)
	}
	waitStatus(t, r, "1 fetch, 1 application, 1 instance", func(st registry.Status) bool {
		return st.MetadataFetches == 1 && st.Applications == 1 && st.Instances == 1
	})

	// r2, re-registered at once: its fetch hangs; meanwhile r1's providers
	// serve, and C (new in r2) has none yet.
	e.replace(path, inst.at("r2").data())
	for call := ""; call != inst.id()+"@r2"; {
		select {
		case call = <-meta.started: // r1's first
		case <-time.After(waitLimit):
			t.Fatal("r2's metadata never fetched")
		}
	}
	settle(t, r)
	for k, d := range dirs {
		if !hasAddrs(d, addr) || d.Origin(addr).Revision != "r1" {
			t.Errorf("%s while r2's metadata is fetched: %v from %+v, want r1's provider", k, addrsOf(d.Providers()), d.Origin(addr))
		}
	}
	checkAddrs(t, dc)
	close(gate)
	r.waitUntil(t, "r2's services published", func() bool {
		return hasAddrs(dc, addr) && hasAddrs(dirs[keys[1]]) && dirs[keys[0]].Origin(addr).Revision == "r2"
	})

	// r3, as a restarting dubbo-go provider does it: a delete, then a create.
	e.remove(path)
	e.addInstance(e.admin, inst.at("r3"), 0)
	r.waitUntil(t, "r3's new service published", func() bool {
		return hasAddrs(ay, addr) && hasAddrs(dc, addr) && dirs[keys[0]].Origin(addr).Revision == "r3"
	})
	want := map[string]int{inst.id() + "@r1": 1, inst.id() + "@r2": 1, inst.id() + "@r3": 1}
	if got := meta.callCounts(); !maps.Equal(got, want) {
		t.Errorf("fetches %v, want %v", got, want)
	}
	waitStatus(t, r, "3 fetches, no failure", func(st registry.Status) bool { return st.MetadataFetches == 3 && st.MetadataFailures == 0 })
}

// TestZooKeeperAppsMetadataFailureBackoff: an instance whose metadata
// cannot be fetched is not selected, its failures are counted and retried
// after 1 s then 2 s (no hot loop), while another instance of the
// application serves; once a fetch succeeds it is selected.
func TestZooKeeperAppsMetadataFailureBackoff(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, app = "com.example.Flaky", "flaky-app"
	bad := instanceSpec{app: app, host: "10.10.0.1", port: 20880, revision: "f1", storage: registry.StorageLocal}
	good := instanceSpec{app: app, host: "10.10.0.2", port: 20880, revision: "f1", storage: registry.StorageLocal}
	info := metadataInfo(app, "f1", serviceSpec{iface: iface, port: 20880})
	var badCalls atomic.Int64
	meta := &fakeMetadata{serve: func(_ context.Context, in *registry.Instance) (*registry.MetadataInfo, error) {
		if in.ID == bad.id() && badCalls.Add(1) <= 2 {
			return nil, errors.New("dial tcp 10.10.0.1:20880: connect: connection refused")
		}
		return info, nil
	}}
	e.addInstance(e.admin, bad, 0)
	e.addInstance(e.admin, good, 0)
	e.setMapping(iface, app)
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication, Metadata: meta.fetch})
	defer meta.check(t)
	key := registry.ServiceKey{Interface: iface}
	d := r.Subscribe(key)
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, good.addr())
	waitStatus(t, r, "a failure counted, 2 instances", func(st registry.Status) bool { return st.MetadataFailures >= 1 && st.Instances == 2 })

	r.waitUntil(t, "the instance selected once its metadata is fetched", func() bool { return hasAddrs(d, bad.addr(), good.addr()) })
	times := meta.times(bad.id() + "@f1")
	if len(times) != 3 {
		t.Fatalf("%d fetches of the failing instance's metadata, want 3 (2 failures, then the success)", len(times))
	}
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second} {
		if gap := times[i+1].Sub(times[i]); gap < backoff-50*time.Millisecond || gap > backoff+1500*time.Millisecond {
			t.Errorf("retry %d came %s after the failure, want about %s", i+1, gap, backoff)
		}
	}
	waitStatus(t, r, "4 fetches of which 2 failed", func(st registry.Status) bool { return st.MetadataFetches == 4 && st.MetadataFailures == 2 })
	if n := meta.count(good.id() + "@f1"); n != 1 {
		t.Errorf("the good instance's metadata fetched %d times", n)
	}
	for _, p := range r.publications() {
		if p.key == key && !slices.Contains(p.addrs, good.addr()) {
			t.Errorf("published without the good instance: %v", p.addrs)
		}
	}
}

// TestZooKeeperAppsFirstPublicationWaitsForMetadata: a new directory is not
// answered while its only instance's metadata is being fetched, and is
// once the fetch is done, or has timed out.
func TestZooKeeperAppsFirstPublicationWaitsForMetadata(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, app = "com.example.Slow", "slow-app"
	inst := instanceSpec{app: app, host: "10.11.0.1", port: 20880, revision: "s1", storage: registry.StorageLocal}
	e.addInstance(e.admin, inst, 0)
	e.setMapping(iface, app)
	info := metadataInfo(app, "s1", serviceSpec{iface: iface, port: 20880})

	t.Run("released", func(t *testing.T) {
		gate := make(chan struct{})
		meta := &fakeMetadata{started: make(chan string, 1), serve: func(ctx context.Context, _ *registry.Instance) (*registry.MetadataInfo, error) {
			select {
			case <-gate:
				return info, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
		r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
			Metadata: meta.fetch, MetadataTimeout: waitLimit})
		defer meta.check(t)
		key := registry.ServiceKey{Interface: iface}
		d := r.Subscribe(key)
		defer d.Release()
		select {
		case <-meta.started:
		case <-time.After(waitLimit):
			t.Fatal("no metadata fetch")
		}
		settle(t, r)
		select {
		case <-d.Ready():
			t.Fatalf("ready (%s, %v) while the metadata is being fetched", d.State(), addrsOf(d.Providers()))
		default:
		}
		if n := r.Status().MetadataInFlight; n != 1 {
			t.Errorf("%d metadata fetches in flight while one is blocked; want 1", n)
		}
		close(gate)
		waitReady(t, d)
		checkAddrs(t, d, inst.addr())
		r.waitUntil(t, "no fetch in flight", func() bool { return r.Status().MetadataInFlight == 0 })
		for _, p := range r.publications() {
			if p.key == key {
				if !slices.Equal(p.addrs, []string{inst.addr()}) {
					t.Errorf("first publication %v, want the instance", p.addrs)
				}
				break
			}
		}
	})

	t.Run("timed out", func(t *testing.T) {
		var left atomic.Int64 // the time the first fetch had, in ns
		meta := &fakeMetadata{serve: func(ctx context.Context, _ *registry.Instance) (*registry.MetadataInfo, error) {
			if dl, ok := ctx.Deadline(); ok {
				left.CompareAndSwap(0, int64(time.Until(dl)))
			}
			<-ctx.Done() // never answers
			return nil, ctx.Err()
		}}
		r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
			Metadata: meta.fetch, MetadataTimeout: 200 * time.Millisecond})
		defer meta.check(t)
		start := time.Now()
		d := r.Subscribe(registry.ServiceKey{Interface: iface})
		defer d.Release()
		waitReady(t, d)
		took := time.Since(start)
		if took < 200*time.Millisecond || took > 2500*time.Millisecond {
			t.Errorf("ready after %s, want about the metadata timeout (200ms)", took)
		}
		// From MetadataTimeout, less what the scheduler took to start the
		// fetch (more than 150 ms of it only on a machine stalled).
		if l := time.Duration(left.Load()); l <= 50*time.Millisecond || l > 200*time.Millisecond {
			t.Errorf("the fetch had %s, want MetadataTimeout (200ms)", l)
		}
		if d.State() != registry.DirOK || len(d.Providers()) != 0 {
			t.Errorf("directory %s %v: want ok, no provider", d.State(), addrsOf(d.Providers()))
		}
		waitStatus(t, r, "a failure counted", func(st registry.Status) bool { return st.MetadataFailures >= 1 && st.Instances == 1 })
	})
}

// TestZooKeeperAppsInstancesJoinAndLeave: providers follow instances as
// they come and go (ephemeral nodes of provider sessions, deleted or gone
// with their session), with one watch per instance; an application no
// longer mapped is no longer watched, its orphan watches cleared by a
// session recycle.
func TestZooKeeperAppsInstancesJoinAndLeave(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, app, rev = "com.example.Churned", "churn-app", "c1"
	var log recycleLog
	r := startRegistryWith(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		WatchGC: 200 * time.Millisecond}, zkHooks{recycle: log.hook})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d) // no mapping yet: answered, empty
	checkAddrs(t, d)
	waitStatus(t, r, "the mapping watched", func(st registry.Status) bool { return st.Watches == 1 && st.Applications == 0 })

	p1, p2 := connectZK(t, e.addr), connectZK(t, e.addr) // two providers' sessions
	inst := func(i int) instanceSpec {
		return instanceSpec{app: app, host: "10.13.0." + strconv.Itoa(i), port: 50050 + i, dubbo: 20880 + i, revision: rev, storage: registry.StorageRemote}
	}
	// The metadata names no instance's port: each has its own dubbo endpoint.
	e.addRemoteMetadata(metadataInfo(app, rev, serviceSpec{iface: iface, port: 20999}))
	nodes := map[int]string{}
	nodes[1] = e.addInstance(p1, inst(1), zk.FlagEphemeral)
	nodes[2] = e.addInstance(p1, inst(2), zk.FlagEphemeral)
	nodes[3] = e.addInstance(p2, inst(3), zk.FlagEphemeral)
	e.setMapping(iface, app) // created now: its exists watch fires
	expect := func(what string, ids ...int) {
		t.Helper()
		var want []string
		for _, i := range ids {
			want = append(want, inst(i).addr())
		}
		slices.Sort(want)
		r.waitUntil(t, what, func() bool {
			st := r.Status()
			return hasAddrs(d, want...) && st.Watches == 2+len(ids) && st.Instances == len(ids) && st.OrphanWatches == 0
		})
	}
	expect("three instances", 1, 2, 3)
	checkOrigin(t, d, inst(2).addr(), registry.ProviderOrigin{Source: registry.SourceApplication, App: app, Revision: rev})

	nodes[4] = e.addInstance(p2, inst(4), zk.FlagEphemeral)
	expect("a fourth joined", 1, 2, 3, 4)
	e.remove(nodes[1])
	expect("one deleted", 2, 3, 4)
	p2.Close()
	expect("a provider session's instances gone with it", 2)
	if st := r.Status(); st.Applications != 1 || st.MetadataFetches != 1 || st.MetadataFailures != 0 {
		t.Errorf("status %+v, want 1 application, one fetch (its revision's node, stored in ZooKeeper, serves every instance)", st)
	}

	// The application no longer mapped: its watches (the application's and
	// its instance's) are dropped, then cleared by a recycle.
	cleared := log.clearedWatches()
	e.setMapping(iface, "")
	r.waitUntil(t, "the application dropped and its watches cleared", func() bool {
		st := r.Status()
		return len(d.Providers()) == 0 && st.Applications == 0 && st.Instances == 0 && st.Watches == 1 &&
			st.OrphanWatches == 0 && log.clearedWatches() >= cleared+2
	})
	testenv.WaitFor(t, waitLimit, "ZooKeeper watching the mapping only", func() bool {
		return slices.Equal(watchedPaths(t, e.addr, r.sessionID(), e.root+"/"), []string{e.mappingPath(iface)})
	})
	if d.State() != registry.DirOK {
		t.Errorf("directory %s", d.State())
	}
}

// TestZooKeeperAppsUnknownInterfacesDoNotGrow replays seed incident 000 for
// application-level discovery: interfaces nobody maps, asked for and
// released, leave one watch each while live and nothing once a recycle has
// run, nor goroutines.
func TestZooKeeperAppsUnknownInterfacesDoNotGrow(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		Grace: -1, WatchGC: 200 * time.Millisecond, Timeout: time.Second})
	live := r.Subscribe(registry.ServiceKey{Interface: "com.example.Live"})
	defer live.Release()
	waitReady(t, live)
	r.waitUntil(t, "the live interface watched", func() bool { return r.Status().Watches == 1 })
	baseline := runtime.NumGoroutine()

	for i := range 50 {
		key := registry.ServiceKey{Interface: fmt.Sprintf("com.example.Unknown%02d", i), Version: "1.0.0"}
		held := []*registry.Directory{r.Subscribe(key), r.Subscribe(key), r.Subscribe(registry.ServiceKey{Interface: key.Interface, Group: "g"})}
		for _, d := range held {
			waitReady(t, d)
		}
		if st := r.Status(); st.Watches > 2 || st.Applications != 0 {
			t.Fatalf("%s: status %+v, want at most one watch per live interface", key.Interface, st)
		}
		for _, d := range held {
			d.Release()
		}
	}
	r.waitUntil(t, "orphans cleared", func() bool {
		st := r.Status()
		return st.Watches == 1 && st.OrphanWatches == 0 && st.SessionRecycles > 0 && st.Subscriptions == 1
	})
	testenv.WaitFor(t, waitLimit, "ZooKeeper watching the live mapping only", func() bool {
		return slices.Equal(watchedPaths(t, e.addr, r.sessionID(), e.root+"/"), []string{e.mappingPath("com.example.Live")})
	})
	if exists, _, err := e.admin.Exists(e.root); err != nil || exists {
		t.Errorf("the gateway wrote under its root (%v)", err)
	}
	waitGoroutines(t, baseline)
	if live.State() != registry.DirOK {
		t.Errorf("live directory %s", live.State())
	}
}

// TestZooKeeperAppsZooKeeperRestart restarts ZooKeeper while application-
// level providers are known: they keep serving (stale), and once it is back
// the watches are exactly those needed, a change made meanwhile is seen, and
// known metadata is not fetched again.
func TestZooKeeperAppsZooKeeperRestart(t *testing.T) {
	server := testenv.StartZooKeeper(t) // alone on it: child watches can be counted
	e := newZKEnv(t, server.Addr())
	const iface, app, rev = "com.example.Restarted", "restart-app", "z1"
	meta := &fakeMetadata{serve: serveRevisions(map[string]*registry.MetadataInfo{rev: metadataInfo(app, rev, serviceSpec{iface: iface, port: 20880})})}
	inst := func(i int) instanceSpec {
		return instanceSpec{app: app, host: "10.14.0." + strconv.Itoa(i), port: 20880, revision: rev, storage: registry.StorageLocal}
	}
	// Persistent: the instances are not what restarts here.
	i1 := e.addInstance(e.admin, inst(1), 0)
	e.addInstance(e.admin, inst(2), 0)
	e.setMapping(iface, app)
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		SessionTimeout: 4 * time.Second, Timeout: time.Second, Metadata: meta.fetch})
	defer meta.check(t)
	key := registry.ServiceKey{Interface: iface}
	d := r.Subscribe(key)
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, inst(1).addr(), inst(2).addr())

	server.Stop()
	r.waitUntil(t, "degraded", func() bool {
		st := r.Status()
		return st.Degraded && st.State == registry.StateDisconnected && d.State() == registry.DirStale
	})
	checkAddrs(t, d, inst(1).addr(), inst(2).addr())

	server.Start()
	e.reconnectAdmin()
	e.addInstance(e.admin, inst(3), 0)
	e.remove(i1)
	// The deleted instance's node may keep an orphan exists watch (read
	// between its deletion and the application's new listing), which a
	// recycle would clear (WatchGC is 1m here); nothing else.
	r.waitUntil(t, "current again", func() bool {
		st := r.Status()
		return st.State == registry.StateConnected && !st.Degraded && d.State() == registry.DirOK && hasAddrs(d, inst(2).addr(), inst(3).addr()) &&
			st.Watches == 4 && st.OrphanWatches <= 1 && st.Instances == 2 && st.Applications == 1
	})
	want := []string{e.instancePath(inst(2)), e.instancePath(inst(3)), e.mappingPath(iface)}
	slices.Sort(want)
	orphan := append(slices.Clone(want), i1)
	slices.Sort(orphan)
	testenv.WaitFor(t, waitLimit, "ZooKeeper holding exactly the registry's watches", func() bool {
		got := watchedPaths(t, e.addr, r.sessionID(), e.root+"/")
		orphans := r.Status().OrphanWatches
		return (orphans == 0 && slices.Equal(got, want) || orphans == 1 && slices.Equal(got, orphan)) && childWatchCount(t, e.addr) == 1
	})
	for _, p := range r.publications() {
		if p.key == key && len(p.addrs) == 0 {
			t.Errorf("published with no providers across the restart")
		}
	}
	wantCalls := map[string]int{inst(1).id() + "@" + rev: 1, inst(2).id() + "@" + rev: 1, inst(3).id() + "@" + rev: 1}
	if got := meta.callCounts(); !maps.Equal(got, wantCalls) {
		t.Errorf("fetches %v, want %v (nothing fetched again)", got, wantCalls)
	}
}

// TestZooKeeperAppsRegistryGroupLayout: under a registry group, an
// application's node holds its instances and its remote metadata nodes
// (named by revision); the latter are neither instances nor skipped.
func TestZooKeeperAppsRegistryGroupLayout(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const (
		app     = "facts-rgapp"
		users   = "org.dubbogw.interop.UserService"
		greeter = "org.dubbogw.interop.GreeterService"
	)
	instance := e.put(e.admin, e.appPath(app)+"/127.0.0.1:33009", golden(t, "dubbogo-instance-registry-group.json"), 0)
	e.put(e.admin, e.appPath(app)+"/59615343583", golden(t, "dubbogo-remote-metadata-registry-group.json"), 0)
	e.put(e.admin, e.appPath(app)+"/12345", // an older revision's, left behind
		golden(t, "dubbogo-remote-metadata-registry-group.json", `"revision":"59615343583"`, `"revision":"12345"`), 0)
	e.setMapping(users, app)
	e.setMapping(greeter, app)

	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication})
	du := r.Subscribe(registry.ServiceKey{Interface: users, Version: "1.0.0"})
	defer du.Release()
	dg := r.Subscribe(registry.ServiceKey{Interface: greeter, Group: "blue"})
	defer dg.Release()
	waitReady(t, du)
	waitReady(t, dg)
	origin := registry.ProviderOrigin{Source: registry.SourceApplication, App: app, Revision: "59615343583"}
	for _, d := range []*registry.Directory{du, dg} {
		checkAddrs(t, d, "127.0.0.1:33009")
		checkOrigin(t, d, "127.0.0.1:33009", origin)
	}
	check := func(when string, probes ...string) {
		t.Helper()
		waitStatus(t, r, fmt.Sprintf("%s: %d watches (2 mappings, the app, its instance, %d probes), 1 instance", when, 4+len(probes), len(probes)),
			func(st registry.Status) bool {
				return st.Watches == 4+len(probes) && st.Instances == 1 && st.Applications == 1 &&
					st.MetadataFetches == 1 && st.MetadataFailures == 0
			})
		if n := r.SkippedURLs(); n != 0 {
			t.Errorf("%s: %d skipped", when, n)
		}
		want := []string{instance, e.mappingPath(greeter), e.mappingPath(users)}
		for _, p := range probes {
			want = append(want, e.mappingPath(p))
		}
		slices.Sort(want)
		if got := watchedPaths(t, e.addr, r.sessionID(), e.root+"/"); !slices.Equal(got, want) {
			t.Errorf("%s: ZooKeeper watches %v, want %v", when, got, want)
		}
	}
	check("at start")

	// A new revision's metadata appears next to the instance (a provider
	// restarting with a new method writes it before its instance).
	e.put(e.admin, e.appPath(app)+"/64845956253",
		golden(t, "dubbogo-remote-metadata-registry-group.json", `"revision":"59615343583"`, `"revision":"64845956253"`), 0)
	r.waitUntil(t, "the application listed again", func() bool { return r.fireCount(e.appPath(app)) == 1 })
	probe := settle(t, r)
	check("after a metadata sibling appeared", probe)
	checkAddrs(t, du, "127.0.0.1:33009")
}

// TestZooKeeperAppsHostileNodes: garbage in mappings, instance nodes and
// remote metadata is skipped, counted, and does not stop the good ones.
func TestZooKeeperAppsHostileNodes(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.Hostile"
	good := instanceSpec{app: "good-app", host: "10.15.0.1", port: 20880, revision: "h1", storage: registry.StorageRemote}
	e.addInstance(e.admin, good, 0)
	e.addRemoteMetadata(metadataInfo("good-app", "h1", serviceSpec{iface: iface, port: 20880}))
	garbled := e.put(e.admin, e.appPath("good-app")+"/10.15.0.2:20880", []byte(`{"name":"good-app","address":`), 0)
	e.put(e.admin, e.appPath("good-app")+"/10.15.0.3:20880", nil, 0)
	badMeta := instanceSpec{app: "badmeta-app", host: "10.15.0.4", port: 20880, revision: "h1", storage: registry.StorageRemote}
	e.addInstance(e.admin, badMeta, 0)
	e.put(e.admin, e.appPath("badmeta-app")+"/h1", []byte(`{"app":"badmeta-app","revision":"h1","services":{`), 0)
	// Empty names, blanks, names that cannot be nodes, duplicates, and an
	// application that does not exist (dubbo-go never cleans mappings).
	e.setMapping(iface, ",, ,bad/name,..,good-app, good-app ,ghost-app,badmeta-app,\x00,")

	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, good.addr())
	// 3 applications; 3 + 1 instance nodes, of which 2 parse.
	waitStatus(t, r, "3 applications, 2 instances, 8 watches, a metadata failure", func(st registry.Status) bool {
		return st.Applications == 3 && st.Instances == 2 && st.Watches == 8 && st.MetadataFailures >= 1
	})
	if n := r.SkippedURLs(); n != 2 {
		t.Errorf("%d skipped, want 2 (the garbled and the empty instance)", n)
	}

	// Repaired, the garbled instance is read again and selected.
	fixed := good
	fixed.host = "10.15.0.2"
	e.put(e.admin, garbled, fixed.data(), 0)
	r.waitUntil(t, "the repaired instance selected", func() bool { return hasAddrs(d, good.addr(), fixed.addr()) })
	waitStatus(t, r, "3 instances", func(st registry.Status) bool { return st.Instances == 3 })
	if n := r.SkippedURLs(); n != 2 {
		t.Errorf("after the repair: %d skipped, want still 2", n)
	}
}

// TestZooKeeperAppsUnreadableApplication: a mapping names two
// applications, one of whose node the gateway may not read (an ACL of
// another tenant). Like an interface-level node that cannot be read, it
// must not keep the interface's first answer waiting forever: Ready closes
// within a few operation timeouts, and the readable application's
// instance is served.
func TestZooKeeperAppsUnreadableApplication(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.HalfLocked"
	good := instanceSpec{app: "open-app", host: "10.19.0.1", port: 20880, revision: "u1", storage: registry.StorageRemote}
	e.addInstance(e.admin, good, 0)
	e.addRemoteMetadata(metadataInfo("open-app", "u1", serviceSpec{iface: iface, port: 20880}))
	if err := e.admin.AddAuth("digest", []byte("owner:secret")); err != nil {
		t.Fatal(err)
	}
	e.ensure(e.root)
	if _, err := e.admin.Create(e.appPath("locked-app"), nil, 0, zk.DigestACL(zk.PermAll, "owner", "secret")); err != nil {
		t.Fatal(err)
	}
	e.setMapping(iface, "locked-app,open-app")
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		Timeout: time.Second})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	select {
	case <-d.Ready():
	case <-time.After(5 * time.Second):
		t.Fatalf("not ready 5s after subscribing (Timeout 1s): status %+v", r.Status())
	}
	r.waitUntil(t, "the readable application's instance served", func() bool { return hasAddrs(d, good.addr()) })
}

// TestZooKeeperAppsSkippedInstanceCountedOnce: an instance node that cannot
// be parsed is counted (and logged) once, as skipped provider URLs are,
// not again each time the registry reads it unchanged (here, when a
// session recycle re-reads every node).
func TestZooKeeperAppsSkippedInstanceCountedOnce(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface = "com.example.Garbled"
	good := instanceSpec{app: "skip-app", host: "10.16.0.1", port: 20880, revision: "k1", storage: registry.StorageRemote}
	e.addInstance(e.admin, good, 0)
	e.addRemoteMetadata(metadataInfo("skip-app", "k1", serviceSpec{iface: iface, port: 20880}))
	e.put(e.admin, e.appPath("skip-app")+"/10.16.0.2:20880", []byte("{not json"), 0)
	e.setMapping(iface, "skip-app")
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		Grace: -1, WatchGC: 100 * time.Millisecond})
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, good.addr())
	if n := r.SkippedURLs(); n != 1 {
		t.Fatalf("skipped %d, want 1", n)
	}
	orphan := r.Subscribe(registry.ServiceKey{Interface: "com.example.Released"})
	waitReady(t, orphan)
	orphan.Release()
	r.waitUntil(t, "recycled", func() bool { st := r.Status(); return st.SessionRecycles > 0 && st.OrphanWatches == 0 })
	if n := r.SkippedURLs(); n != 1 {
		t.Errorf("skipped %d after a recycle re-read the unchanged instance node, want still 1", n)
	}
	checkAddrs(t, d, good.addr())
}

// TestZooKeeperAppsNoRevisionNotFetched: an instance whose revision says it
// exports nothing (Dubbo's "0", dubbo-go's "N/A"; see RevisionKnown) has
// no metadata to fetch: no call, no failure counted, nothing to wait for.
func TestZooKeeperAppsNoRevisionNotFetched(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, app = "com.example.Partly", "partly-app"
	served := instanceSpec{app: app, host: "10.17.0.1", port: 20880, revision: "p1", storage: registry.StorageLocal}
	java := instanceSpec{app: app, host: "10.17.0.2", port: 20880, revision: "0", storage: registry.StorageLocal}
	golang := instanceSpec{app: app, host: "10.17.0.3", port: 20880, revision: "N/A", storage: registry.StorageRemote}
	for _, in := range []instanceSpec{served, java, golang} {
		e.addInstance(e.admin, in, 0)
	}
	e.setMapping(iface, app)
	meta := &fakeMetadata{serve: serveRevisions(map[string]*registry.MetadataInfo{"p1": metadataInfo(app, "p1", serviceSpec{iface: iface, port: 20880})})}
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication, Metadata: meta.fetch})
	defer meta.check(t)
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, served.addr())
	settle(t, r)
	if got := meta.callCounts(); !maps.Equal(got, map[string]int{served.id() + "@p1": 1}) {
		t.Errorf("MetadataService calls %v, want only %s@p1", got, served.id())
	}
	if st := r.Status(); st.MetadataFailures != 0 || st.Instances != 3 {
		t.Errorf("status %+v: want 3 instances and no metadata failure", st)
	}
}

// TestZooKeeperAppsMetadataCacheBounded churns an instance's revision with
// MetadataCache 2 (Options: "entries kept ... beyond those live
// instances use"): the 2 entries used last beyond the 2 in use stay, so a
// revision used shortly before is not fetched again, one used long ago is,
// and the cache never holds more.
func TestZooKeeperAppsMetadataCacheBounded(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, app = "com.example.Cached", "cache-app"
	meta := &fakeMetadata{serve: func(_ context.Context, in *registry.Instance) (*registry.MetadataInfo, error) {
		return metadataInfo(app, in.Revision, serviceSpec{iface: iface, port: 20880}), nil
	}}
	churned := instanceSpec{app: app, host: "10.18.0.1", port: 20880, revision: "r0", storage: registry.StorageLocal}
	steady := instanceSpec{app: app, host: "10.18.0.2", port: 20880, revision: "r0", storage: registry.StorageLocal}
	path := e.addInstance(e.admin, churned, 0)
	e.addInstance(e.admin, steady, 0)
	e.setMapping(iface, app)
	const inUse, cache = 2, 2
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		Metadata: meta.fetch, MetadataCache: cache})
	defer meta.check(t)
	d := r.Subscribe(registry.ServiceKey{Interface: iface})
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, churned.addr(), steady.addr())

	most := 0
	to := func(rev string) {
		t.Helper()
		e.replace(path, churned.at(rev).data())
		r.waitUntil(t, "revision "+rev+" in use", func() bool {
			most = max(most, r.Status().MetadataCached)
			return d.Origin(churned.addr()).Revision == rev
		})
		most = max(most, r.Status().MetadataCached)
	}
	calls := func(rev string) int { return meta.count(churned.id() + "@" + rev) }
	for _, rev := range []string{"r1", "r2", "r3", "r4", "r5"} {
		to(rev)
	}
	// In use: r5 and the steady r0; kept: r4 and r3; evicted: r0, r1, r2.
	to("r3")
	if n := calls("r3"); n != 1 {
		t.Errorf("r3 fetched %d times, want 1: it was one of the %d entries used last beyond the %d in use", n, cache, inUse)
	}
	to("r1") // used long ago: evicted
	if n := calls("r1"); n != 2 {
		t.Errorf("r1 fetched %d times, want 2: evicted after 4 newer revisions, with room for %d beyond those in use", n, cache)
	}
	if most > cache+inUse {
		t.Errorf("the cache held %d entries, want at most %d (%d beyond the %d in use)", most, cache+inUse, cache, inUse)
	}
	if n := meta.count(steady.id() + "@r0"); n != 1 {
		t.Errorf("the steady instance's metadata fetched %d times", n)
	}
}

// TestZooKeeperAppsReRegistrationKeepsProviders: a provider re-registering
// its instance (delete, then create, as dubbo-go does when it restarts or
// reconnects) never leaves the service without providers, while an
// instance that really leaves is dropped once the listing says so.
func TestZooKeeperAppsReRegistrationKeepsProviders(t *testing.T) {
	e := newZKEnv(t, testenv.ZooKeeperAddr(t))
	const iface, app = "com.example.Rereg", "rereg-app"
	inst := instanceSpec{app: app, host: "10.12.0.1", port: 20880, revision: "r1", storage: registry.StorageLocal}
	meta := &fakeMetadata{started: make(chan string, 16),
		serve: serveRevisions(map[string]*registry.MetadataInfo{"r1": metadataInfo(app, "r1", serviceSpec{iface: iface, port: 20880})})}
	path := e.addInstance(e.admin, inst, 0)
	e.setMapping(iface, app)
	r := startRegistry(t, Options{Addrs: []string{e.addr}, Root: e.group, Discovery: DiscoveryApplication,
		Metadata: meta.fetch, MetadataTimeout: waitLimit})
	key := registry.ServiceKey{Interface: iface}
	d := r.Subscribe(key)
	defer d.Release()
	waitReady(t, d)
	checkAddrs(t, d, inst.addr())

	for i := range 20 {
		e.remove(path)
		path = e.addInstance(e.admin, inst, 0)
		if i%5 == 0 {
			settle(t, r)
		}
	}
	settle(t, r)
	checkAddrs(t, d, inst.addr())
	for _, p := range r.publications() {
		if p.key == key && len(p.addrs) == 0 {
			t.Fatalf("published no provider during re-registrations: %v", r.publications())
		}
	}

	e.remove(path) // gone for good
	r.waitUntil(t, "the instance dropped", func() bool { return len(d.Providers()) == 0 })
}
