//go:build !race

package zookeeper

import "testing"

// TestZooKeeperGovernanceWithin1s: a tag rule, a condition rule and a
// configurator written into ZooKeeper at Dubbo Admin's paths each change
// the selection within a second (measured without the race detector, in
// scripts/test.sh's serial stage; a watch round trip takes milliseconds,
// so the second is a margin two busy cores cannot eat).
func TestZooKeeperGovernanceWithin1s(t *testing.T) {
	for i, d := range governanceWithin1s(t) {
		t.Logf("rule %d applied %s after its write", i, d)
	}
}
