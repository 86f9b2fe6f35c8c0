package main

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/dubbogw/dubbogw/registry/zookeeper"
)

// TestRegistryGenerator: the nodes the registry subcommand writes are read
// by the gateway's own ZooKeeper registry as the providers they describe
// (none skipped), and -clean removes them all.
func TestRegistryGenerator(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	o := registryOptions{zk: addr, root: fmt.Sprintf("scale-gen-%d", rand.Uint32()), prefix: "com.example.scale.Service",
		appPrefix: "scale-app-", mode: modeInterface, services: 30, providers: 7, batch: 50, timeout: time.Minute}
	n, err := writeRegistry(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := 30 * (2 + 7); n != want {
		t.Errorf("wrote %d nodes, want %d", n, want)
	}
	t.Cleanup(func() {
		o.clean = true
		if _, err := writeRegistry(o); err != nil {
			t.Errorf("clean: %v", err)
		}
	})

	reg, err := zookeeper.New(zookeeper.Options{Addrs: []string{addr}, Root: o.root, Discovery: zookeeper.DiscoveryInterface,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	dir := reg.Subscribe(registry.ServiceKey{Interface: "com.example.scale.Service17"})
	defer dir.Release()
	select {
	case <-dir.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the registry did not answer for a generated service")
	}
	var got []string
	for _, p := range dir.Providers() {
		got = append(got, p.Addr)
	}
	slices.Sort(got)
	var want []string
	for j := range 7 {
		want = append(want, fmt.Sprintf("198.18.0.17:%d", 20880+j))
	}
	if !slices.Equal(got, want) || reg.SkippedURLs() != 0 {
		t.Errorf("providers of a generated service: %v (skipped %d), want %v", got, reg.SkippedURLs(), want)
	}

	o2 := o
	o2.clean = true
	if n, err := writeRegistry(o2); err != nil || n != 30*(2+7) {
		t.Errorf("clean deleted %d nodes (%v), want %d", n, err, 30*(2+7))
	}
	if n, err := writeRegistry(o2); err != nil || n != 0 {
		t.Errorf("a second clean deleted %d nodes (%v), want none", n, err)
	}
}

// TestRegistryGeneratorApplication: the application-level nodes parse as
// the gateway's own parsers read them (instance, remote metadata, provider
// URLs), the gateway's ZooKeeper registry finds every instance of a
// service's application as its providers, with the revision written,
// without any live process, and -clean removes everything. With both
// layouts, the registry merges the two for the same addresses.
func TestRegistryGeneratorApplication(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	for _, mode := range []string{modeApplication, modeBoth} {
		t.Run(mode, func(t *testing.T) {
			o := registryOptions{zk: addr, root: fmt.Sprintf("scale-gen-%d", rand.Uint32()), prefix: "com.example.scale.Service",
				appPrefix: "scale-app-", mode: mode, services: 7, providers: 2, apps: 3, instances: 2, batch: 5, timeout: time.Minute}
			n, err := writeRegistry(o)
			if err != nil {
				t.Fatal(err)
			}
			// 7 mappings; per application its metadata node and 2
			// revisions, its node and 2 instances; with both, 7 x (2 + 2)
			// interface-level nodes.
			want := 7 + 3*(1+2+1+2)
			if mode == modeBoth {
				want += 7 * (2 + 2)
			}
			if n != want {
				t.Errorf("wrote %d nodes, want %d", n, want)
			}
			t.Cleanup(func() {
				c := o
				c.clean = true
				if _, err := writeRegistry(c); err != nil {
					t.Errorf("clean: %v", err)
				}
			})
			checkAppNodes(t, o)

			discovery := zookeeper.DiscoveryApplication
			if mode == modeBoth {
				discovery = zookeeper.DiscoveryAuto
			}
			reg, err := zookeeper.New(zookeeper.Options{Addrs: []string{addr}, Root: o.root, Discovery: discovery,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			// Interface 5 belongs to application 5 % 3 = 2: instances 4 and 5.
			dir := reg.Subscribe(registry.ServiceKey{Interface: "com.example.scale.Service5"})
			defer dir.Release()
			select {
			case <-dir.Ready():
			case <-time.After(30 * time.Second):
				t.Fatal("the registry did not answer for a generated service")
			}
			var got []string
			for _, p := range dir.Providers() {
				got = append(got, p.Addr)
			}
			slices.Sort(got)
			if want := []string{instanceAddr(4), instanceAddr(5)}; !slices.Equal(got, want) || reg.SkippedURLs() != 0 {
				t.Errorf("providers of a generated service: %v (skipped %d), want %v", got, reg.SkippedURLs(), want)
			}
			wantSource := registry.SourceApplication
			if mode == modeBoth {
				wantSource = registry.SourceBoth
			}
			for _, a := range got {
				if origin := dir.Origin(a); origin.Source != wantSource || origin.App != "scale-app-2" || origin.Revision != o.revision(2, 0) {
					t.Errorf("origin of %s: %+v, want source %s, app scale-app-2, revision %s", a, origin, wantSource, o.revision(2, 0))
				}
			}
			if st := reg.Status(); st.Instances != 2 || st.MetadataFailures != 0 {
				t.Errorf("registry status %+v, want 2 instances and no metadata failure", st)
			}

			c := o
			c.clean = true
			if n, err := writeRegistry(c); err != nil || n != want {
				t.Errorf("clean deleted %d nodes (%v), want %d", n, err, want)
			}
			if n, err := writeRegistry(c); err != nil || n != 0 {
				t.Errorf("a second clean deleted %d nodes (%v), want none", n, err)
			}
		})
	}
}

// checkAppNodes reads the application-level nodes back and parses them
// with the registry package's parsers, as the gateway does.
func checkAppNodes(t *testing.T, o registryOptions) {
	t.Helper()
	conn, err := zkConnect(o.zk, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := "/" + o.root
	if o.servicesRootPath() != root {
		t.Errorf("services root %s, want %s (the gateway's rule for a root that is not dubbo)", o.servicesRootPath(), root)
	}
	for i := range o.services {
		data, _, err := conn.Get(root + "/mapping/" + o.iface(i))
		if err != nil || string(data) != fmt.Sprintf("scale-app-%d", i%3) {
			t.Errorf("mapping of interface %d: %q, %v", i, data, err)
		}
	}
	for a := range o.apps {
		app := fmt.Sprintf("scale-app-%d", a)
		children, _, err := conn.Children(root + "/" + app)
		if err != nil || len(children) != 2 {
			t.Fatalf("instances of %s: %v, %v", app, children, err)
		}
		slices.Sort(children)
		for k, child := range children {
			data, _, err := conn.Get(root + "/" + app + "/" + child)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := registry.ParseInstance(data)
			if err != nil {
				t.Fatalf("instance %s of %s: %v\n%s", child, app, err, data)
			}
			wantAddr := instanceAddr(a*2 + k)
			if inst.App != app || inst.Host+":20880" != wantAddr || child != wantAddr || !inst.RevisionKnown() ||
				inst.StorageType != registry.StorageRemote || inst.EndpointPort("dubbo") != 20880 {
				t.Errorf("instance %s of %s: %+v", child, app, inst)
			}
			if addr, err := inst.MetadataServiceAddr(); err != nil || addr != wantAddr {
				t.Errorf("instance %s: MetadataService at %s, %v", child, addr, err)
			}
			for v := range 2 {
				data, _, err := conn.Get(root + "/metadata/" + app + "/" + o.revision(a, v))
				if err != nil {
					t.Fatal(err)
				}
				info, err := registry.ParseMetadataJSON(data)
				if err != nil {
					t.Fatalf("metadata of %s revision %d: %v\n%s", app, v, err, data)
				}
				urls, skipped := info.ProviderURLs(inst)
				var ifaces []string
				for _, u := range urls {
					if u.Addr != wantAddr || u.Params.Get("application") != app {
						t.Errorf("provider URL %+v of %s, want address %s", u, app, wantAddr)
					}
					ifaces = append(ifaces, u.Interface)
				}
				var want []string
				for _, i := range o.appInterfaces(a) {
					want = append(want, o.iface(i))
				}
				slices.Sort(want)
				if info.App != app || info.Revision != o.revision(a, v) || len(skipped) != 0 || !slices.Equal(ifaces, want) {
					t.Errorf("metadata of %s revision %d: app %q revision %q, interfaces %v (skipped %v), want %v",
						app, v, info.App, info.Revision, ifaces, skipped, want)
				}
			}
		}
	}
	if o.revision(0, 0) == o.revision(0, 1) || o.revision(0, 0) == o.revision(1, 0) {
		t.Error("revisions are not distinct per application and variant")
	}
}
