package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RedisServer is a private redis-server on loopback, for tests that must
// freeze, kill or restart Redis, or read its command statistics, without
// disturbing the shared one of RedisAddr.
type RedisServer struct {
	t    testing.TB
	addr string
	cmd  *exec.Cmd
}

// StartRedis runs redis-server on addr ("" = a free loopback port), with no
// persistence, and waits (at most 10 s) until it answers PING. It is
// stopped when the test ends. Like StartZooKeeper, it skips the test
// outside scripts/test.sh when redis-server is missing and fails it under CI.
func StartRedis(t testing.TB, addr string) *RedisServer {
	t.Helper()
	return StartRedisWith(t, addr)
}

// StartRedisWith is StartRedis with more redis-server arguments (a TLS
// port and its files, ACL users); the plain port stays, for readiness and
// for the test's own set-up.
func StartRedisWith(t testing.TB, addr string, args ...string) *RedisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server missing under CI: %v", err)
		}
		t.Skip("redis-server is not installed")
	}
	if addr == "" {
		addr = FreeAddr(t)
	}
	_, port, _ := net.SplitHostPort(addr)
	s := &RedisServer{t: t, addr: addr, cmd: exec.Command("redis-server", append([]string{"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no"}, args...)...)}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := redisPing(addr)
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer within 10s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling an external process: no channel to wait on
	}
}

// FreeAddr returns a loopback address nothing listens on (at the moment).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return s.addr }

// Stop kills the server and waits for it (idempotent; a frozen server too).
func (s *RedisServer) Stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Freeze stops the process (SIGSTOP): connections stay open and nothing is
// answered, as a Redis stalled on a slow disk or a long command. Thaw
// resumes it.
func (s *RedisServer) Freeze() {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("SIGSTOP redis-server: %v", err)
	}
}

// Thaw resumes a frozen server.
func (s *RedisServer) Thaw() {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("SIGCONT redis-server: %v", err)
	}
}

func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}
