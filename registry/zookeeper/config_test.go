package zookeeper_test

import (
	"testing"

	_ "github.com/dubbogw/dubbogw/all"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/registry/zookeeper"
)

// TestConfigProblems: the zookeeper registry's rules, as `dubbogw
// validate` reports them.
func TestConfigProblems(t *testing.T) {
	cases := []struct {
		name, yaml, path, reason string
	}{
		{"zookeeper without address", "registries:\n  zk:\n    type: zookeeper\n",
			"registries.zk.address", "required: ZooKeeper's host:port"},
		{"zookeeper bad address", "registries:\n  zk:\n    type: zookeeper\n    address: \"127.0.0.1:2181,nohost\"\n",
			"registries.zk.address", `"nohost" is not host:port`},
		{"zookeeper with providers", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    providers: {a.B: [\"127.0.0.1:1\"]}\n",
			"registries.zk.providers", "providers is a setting of static registries, not of zookeeper ones"},
		{"zookeeper root path", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    root: a/b\n",
			"registries.zk.root", "want one node name"},
		{"zookeeper session", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    session_timeout: 1s\n",
			"registries.zk.session_timeout", "must be at least 2s"},
		{"zookeeper discovery", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    discovery: instance\n",
			"registries.zk.discovery", `unknown mode "instance" (known: auto, interface, application)`},
		{"zookeeper services root", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    services_root: /\n",
			"registries.zk.services_root", "want a ZooKeeper path"},
		{"metadata concurrency", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    metadata: {concurrency: 5000}\n",
			"registries.zk.metadata.concurrency", "between 1 and 1024"},
		{"governance root", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    governance: {enabled: true, root: dubbo/config}\n",
			"registries.zk.governance.root", "want a ZooKeeper path"},
		{"governance group", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    governance: {enabled: true, group: a/b}\n",
			"registries.zk.governance.group", "want one node name"},
		{"zookeeper half auth", "registries:\n  zk:\n    type: zookeeper\n    address: 127.0.0.1:2181\n    username: u\n",
			"registries.zk.username", "username and password go together"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			configtest.Parse(t, tc.yaml, configtest.Want{Path: tc.path, Reason: tc.reason})
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := configtest.Parse(t, "registries:\n  zk: {type: zookeeper, address: \"zookeeper://127.0.0.1:2181,127.0.0.1:2182\"}\n")
	r := c.Registries["zk"]
	zk, ok := r.Spec.(*zookeeper.Config)
	if !ok {
		t.Fatalf("registry spec %T, want *zookeeper.Config", r.Spec)
	}
	if zk.Root != "dubbo" || zk.SessionTimeout != zookeeper.DefaultSessionTimeout || !*zk.Register ||
		zk.Application != "dubbogw" || r.ReleaseAfter != config.DefaultRegistryReleaseAfter || r.StartupWait != config.DefaultRegistryStartupWait ||
		len(zookeeper.Addrs(zk.Address)) != 2 || zk.Governance.Enabled || zk.Governance.Root != "/dubbo/config" || zk.Governance.Group != "dubbo" {
		t.Errorf("zookeeper defaults: %+v %+v", r, zk)
	}
}
