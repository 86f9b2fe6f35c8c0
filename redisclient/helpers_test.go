package redisclient_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// redisServer is a private redis-server on a loopback port, for tests that
// stop, freeze or restart Redis; it is killed when the test ends.
type redisServer struct {
	t    testing.TB
	addr string
	cmd  *exec.Cmd
}

// freeAddr returns a loopback address nothing listens on (at the moment).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startRedis starts a private redis-server on addr ("" = a free port) and
// waits until it answers PING.
func startRedis(t testing.TB, addr string) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	if addr == "" {
		addr = freeAddr(t)
	}
	_, port, _ := net.SplitHostPort(addr)
	s := &redisServer{t: t, addr: addr, cmd: exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(addr); err == nil {
			return s
		} else if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer within 10s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling an external process: no channel to wait on
	}
}

func ping(addr string) error {
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

// Stop kills the server and waits for it (idempotent).
func (s *redisServer) Stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen server must be able to die
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Freeze stops the process (SIGSTOP): connections stay open, nothing is
// answered. Thaw resumes it.
func (s *redisServer) Freeze() {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("SIGSTOP redis-server: %v", err)
	}
}

func (s *redisServer) Thaw() {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("SIGCONT redis-server: %v", err)
	}
}

// rawClient is a plain rueidis client (no client-side cache) to set up and
// inspect keys beside the client under test.
func rawClient(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatalf("raw redis client to %s: %v", addr, err)
	}
	t.Cleanup(rc.Close)
	return rc
}

func must(t testing.TB, r rueidis.RedisResult) {
	t.Helper()
	if err := r.Error(); err != nil {
		t.Fatalf("redis: %v", err)
	}
}

// keyPrefix is unique per test so that tests sharing the dev Redis never
// see each other's keys.
func keyPrefix(t testing.TB) string {
	return fmt.Sprintf("dubbogw-test:%s:%d:", t.Name(), time.Now().UnixNano())
}

// metricValue returns the value of the series name{labels} in reg: a
// counter's or gauge's value, a histogram's sample count; -1 when absent.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			default:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// waitFor polls cond until it holds or within passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
