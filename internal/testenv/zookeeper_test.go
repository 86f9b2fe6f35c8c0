package testenv

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestZooKeeperServerStopsAndStartsOnTheSamePort(t *testing.T) {
	s := StartZooKeeper(t)
	if got, err := FourLetterWord(s.Addr(), "srvr"); err != nil || !strings.Contains(got, "Mode: standalone") {
		t.Fatalf("srvr answered %q, %v", got, err)
	}

	s.Stop()
	if c, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second); err == nil {
		c.Close()
		t.Fatal("a stopped ZooKeeper still accepts connections")
	}
	s.Stop() // a second Stop is a no-op

	s.Start()
	if got, err := FourLetterWord(s.Addr(), "ruok"); err != nil || got != "imok" {
		t.Fatalf("after restart, ruok answered %q, %v", got, err)
	}
}
