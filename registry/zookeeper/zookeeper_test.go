package zookeeper

import (
	"testing"
)

func TestNewZooKeeperRejectsBadOptions(t *testing.T) {
	for _, addrs := range [][]string{nil, {"nohost"}, {":2181"}, {"h:port"}, {"h:0"}} {
		if _, err := New(Options{Addrs: addrs}); err == nil {
			t.Errorf("addrs %q accepted", addrs)
		}
	}
}
