package testenv

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestServicesAnswer proves the test script's Redis and ZooKeeper are real
// servers answering their own protocols on loopback.
func TestServicesAnswer(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		c := dial(t, RedisAddr(t))
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || line != "+PONG\r\n" {
			t.Fatalf("PING answered %q, %v", line, err)
		}
	})
	t.Run("zookeeper", func(t *testing.T) {
		c := dial(t, ZooKeeperAddr(t))
		if _, err := c.Write([]byte("ruok")); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c)
		if err != nil || strings.TrimSpace(string(b)) != "imok" {
			t.Fatalf("ruok answered %q, %v", b, err)
		}
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}
