package registry_test

import (
	"testing"

	_ "github.com/dubbogw/dubbogw/all"
	"github.com/dubbogw/dubbogw/config/configtest"
)

// TestStaticConfigProblems: the static registry's rules, and the registry
// type itself, as `dubbogw validate` reports them.
func TestStaticConfigProblems(t *testing.T) {
	cases := []struct {
		name, yaml, path, reason string
	}{
		{"bad provider", "registries:\n  local:\n    providers:\n      a.B: [\"http://127.0.0.1:80\"]\nroutes: []\n",
			`registries.local.providers["a.B"][0]`, `protocol "http" is not supported`},
		{"unknown registry type", "registries:\n  zk:\n    type: etcd\n",
			"registries.zk.type", `unknown registry type "etcd"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			configtest.Parse(t, tc.yaml, configtest.Want{Path: tc.path, Reason: tc.reason})
		})
	}
}
