package testenv

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// zkServerScript is the Debian package's launcher; its start-foreground
// execs java with the package's classpath, so the process we start is the
// server itself.
const zkServerScript = "/usr/share/zookeeper/bin/zkServer.sh"

// ZooKeeperTickTime is the tick of servers StartZooKeeper runs: sessions
// may be as short as two ticks (1s) and at most twenty (10s).
const ZooKeeperTickTime = 500 * time.Millisecond

// ZooKeeperServer is a private standalone ZooKeeper server on loopback
// that a test can Stop and Start again on the same port and data
// directory, as a restart or a crash of ZooKeeper looks to its clients.
type ZooKeeperServer struct {
	t    testing.TB
	addr string
	dir  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	output *lockedBuffer
}

// StartZooKeeper runs a private ZooKeeper server from the Debian package,
// with its own data directory under t.TempDir(), and waits until it
// answers. It is stopped when the test ends. Like ZooKeeperAddr, it skips
// the test outside scripts/test.sh (which installs the package) and fails
// it under CI when the package is missing.
func StartZooKeeper(t testing.TB) *ZooKeeperServer {
	t.Helper()
	ZooKeeperAddr(t)
	if _, err := os.Stat(zkServerScript); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("ZooKeeper package missing under CI: %v", err)
		}
		t.Skipf("ZooKeeper package missing: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`tickTime=%d
dataDir=%s
clientPort=%s
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,stat,srvr,mntr,wchs,wchc,wchp,cons
maxClientCnxns=200
`, ZooKeeperTickTime.Milliseconds(), filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatalf("writing zoo.cfg: %v", err)
	}
	s := &ZooKeeperServer{t: t, addr: addr, dir: dir}
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// Addr is the server's host:port; it stays the same across restarts.
func (s *ZooKeeperServer) Addr() string { return s.addr }

// Start starts the server (again) and waits until it serves requests
// ("ruok" answers before that; "srvr" tells).
func (s *ZooKeeperServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatal("ZooKeeper is already running")
	}
	cmd := exec.Command(zkServerScript, "start-foreground", filepath.Join(s.dir, "zoo.cfg"))
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "JMXDISABLE=true", "ZOO_LOG_DIR="+s.dir)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting ZooKeeper: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited, s.output = cmd, exited, out

	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, _ := FourLetterWord(s.addr, "srvr"); strings.Contains(st, "Mode: ") {
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("ZooKeeper exited while starting:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ZooKeeper on %s did not serve within 30s:\n%s", s.addr, out.String())
		}
	}
}

// Stop kills the server (as a crash would: no goodbye to clients, sessions
// stay in the data directory) and waits for it to exit. Stopping a stopped
// server does nothing.
func (s *ZooKeeperServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Errorf("ZooKeeper (pid %d) did not exit within 30s of SIGKILL", s.cmd.Process.Pid)
	}
	s.cmd = nil
}

// FourLetterWord sends a ZooKeeper four-letter command ("ruok", "wchc",
// ...) to addr and returns the answer; the exchange is bounded by 5s.
func FourLetterWord(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// lockedBuffer collects a process's output, written and read concurrently.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
