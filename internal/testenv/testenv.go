// Package testenv gives integration tests the real services they run
// against: the addresses of those scripts/test.sh starts on loopback (Redis,
// ZooKeeper), a private ZooKeeper a test can restart, and a TCP proxy a test
// can pause to make a service unreachable. Outside that script such tests
// skip; under CI (CI=true) a missing service fails them instead, so a broken
// test script cannot pass by skipping.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// RedisAddr returns the test Redis server's host:port.
func RedisAddr(t testing.TB) string { return addr(t, "DUBBOGW_TEST_REDIS_ADDR", "Redis") }

// ZooKeeperAddr returns the test ZooKeeper server's host:port.
func ZooKeeperAddr(t testing.TB) string { return addr(t, "DUBBOGW_TEST_ZK_ADDR", "ZooKeeper") }

func addr(t testing.TB, env, what string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set under CI: scripts/test.sh must start %s", env, what)
	}
	t.Skipf("%s not set: run ./scripts/test.sh to start %s on loopback", env, what)
	return ""
}

// WaitFor polls cond, which nothing signals (a server's state, a metric),
// every 5 ms until it holds, and fails the test if it does not within
// within.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ClosedAddr returns a loopback host:port nothing listens on (a port just
// closed): a provider or upstream whose connections are refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Tool returns the path of a program scripts/test.sh installs (curl,
// node): outside CI a missing one skips the test, under CI it fails it.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed under CI: scripts/test.sh must install it", name)
	}
	t.Skipf("%s not installed: run ./scripts/test.sh", name)
	return ""
}
