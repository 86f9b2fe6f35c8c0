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
		services: 30, providers: 7, batch: 50, timeout: time.Minute}
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
