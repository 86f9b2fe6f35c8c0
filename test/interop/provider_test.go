package interop

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// dubboGoProvider is a running dubbogoprovider process: Apache dubbo-go
// v3.3.0 serving the services of dubbogoprovider/service.go. It runs in its
// own process so that its allocations stay out of the benchmarks' figures,
// its package state (dubbo-go's config can be loaded once per process)
// stays out of the test binary, and the race detector judges our code, not
// dubbo-go's.
type dubboGoProvider struct {
	Addr    string // 127.0.0.1:port
	TriAddr string // with providerConfig.Tri: the Triple server's 127.0.0.1:port
	logs    *syncBuffer
	stop    func() // closes the provider's stdin and waits for it to exit
	pid     int    // the provider process's
}

// providerConfig is what the provider is started with; zero fields take
// the command's defaults (see dubbogoprovider/main.go).
type providerConfig struct {
	ZK             string // ZooKeeper to register in; "" for none
	Heartbeat      string // getty heartbeat period toward consumers
	SessionTimeout string // getty closes a consumer connection silent this long

	RegistryType  string // -registry-type: interface, service or all (the command's default)
	RegistryGroup string // -registry-group: the ZooKeeper root instead of /dubbo and /services
	Metadata      string // -metadata: local or remote (the command's default)
	App           string // -app: the application name
	UserVersion   string // -user-version: UserService's version
	UserGroup     string // -user-group: UserService's group
	Tag           string // -tag: UserService's static tag (dubbo.tag)
	ExtraMethod   bool   // -extra-method: UserService.ping(), a new revision
	Port          int    // -port on 127.0.0.1; 0 for a free one
	// TLS: -tls-cert, -tls-key and -tls-ca (PEM files): the provider
	// serves TLS and requires a client certificate.
	TLSCert, TLSKey, TLSCA string
	// Tri (-tri) also exports the services over Triple (h2c), on TriPort
	// (-tri-port; 0 for a free one).
	Tri     bool
	TriPort int
	// IDLDescriptorOut (-idl-descriptor-out), with Tri: where the IDL
	// service's FileDescriptorSet is written.
	IDLDescriptorOut string
}

// providerBinary builds dubbogoprovider once per test process.
var providerBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain removes the provider binary built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if providerBinary.dir != "" {
		_ = os.RemoveAll(providerBinary.dir)
	}
	os.Exit(code)
}

// buildDubboGoProvider builds dubbogoprovider on the first call (the go
// command caches the build) and returns the binary's path.
func buildDubboGoProvider(tb testing.TB) string {
	tb.Helper()
	b := &providerBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "dubbogoprovider-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "dubbogoprovider")
		buildCtx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		build := exec.CommandContext(buildCtx, goTool(), "build", "-o", b.path, "./dubbogoprovider")
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if b.err != nil {
		tb.Fatalf("building the dubbo-go provider: %v", b.err)
	}
	return b.path
}

// startDubboGoProvider starts dubbogoprovider (built once per process);
// the test's cleanup stops it, if Stop has not.
func startDubboGoProvider(tb testing.TB, cfg providerConfig) *dubboGoProvider {
	tb.Helper()
	bin := buildDubboGoProvider(tb)

	args := []string{"-log-level", "warn"}
	if cfg.ZK != "" {
		args = append(args, "-zk", cfg.ZK)
	}
	if cfg.Heartbeat != "" {
		args = append(args, "-heartbeat", cfg.Heartbeat)
	}
	if cfg.SessionTimeout != "" {
		args = append(args, "-session-timeout", cfg.SessionTimeout)
	}
	for _, f := range [][2]string{
		{"-registry-type", cfg.RegistryType}, {"-registry-group", cfg.RegistryGroup}, {"-metadata", cfg.Metadata},
		{"-app", cfg.App}, {"-user-version", cfg.UserVersion}, {"-user-group", cfg.UserGroup},
		{"-tls-cert", cfg.TLSCert}, {"-tls-key", cfg.TLSKey}, {"-tls-ca", cfg.TLSCA},
		{"-idl-descriptor-out", cfg.IDLDescriptorOut}, {"-tag", cfg.Tag},
	} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	if cfg.ExtraMethod {
		args = append(args, "-extra-method")
	}
	if cfg.Port != 0 {
		args = append(args, "-port", strconv.Itoa(cfg.Port))
	}
	if cfg.Tri {
		args = append(args, "-tri")
		if cfg.TriPort != 0 {
			args = append(args, "-tri-port", strconv.Itoa(cfg.TriPort))
		}
	}
	p := &dubboGoProvider{logs: &syncBuffer{}}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = p.logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting the dubbo-go provider: %v", err)
	}
	p.pid = cmd.Process.Pid
	exited := make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		// dubbo-go logs to stdout too, lines of any length (a dropped
		// response is logged whole): read it all, or the provider blocks
		// on a full pipe.
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready "); ok {
				ready <- addr
				break
			}
			p.logs.Write([]byte(line))
			if err != nil {
				break
			}
		}
		_, _ = io.Copy(p.logs, r)
		_ = cmd.Wait()
		close(exited)
	}()
	var stopOnce sync.Once
	p.stop = func() {
		stopOnce.Do(func() {
			stdin.Close() // the provider exits when its stdin closes
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
	}
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() {
			tb.Logf("dubbo-go provider output:\n%s", p.logs.String())
		}
	})

	select {
	case line := <-ready:
		p.Addr, p.TriAddr, _ = strings.Cut(line, " tri ")
	case <-exited:
		tb.Fatalf("the dubbo-go provider exited before it was ready:\n%s", p.logs.String())
	case <-time.After(90 * time.Second):
		tb.Fatalf("the dubbo-go provider was not ready after 90s:\n%s", p.logs.String())
	}
	return p
}

// Stop closes the provider's standard input, on which it exits at once
// (no graceful shutdown: its ZooKeeper session, and so its ephemeral
// nodes, outlive it until the session expires), and waits for it to exit.
func (p *dubboGoProvider) Stop() { p.stop() }

// goTool is the go command that runs the tests (go test puts its GOROOT/bin
// first in the test's PATH).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// zkAddress is the ZooKeeper scripts/test.sh started, or "" when there is
// none. Under CI a missing ZooKeeper fails the test instead.
func zkAddress(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv("DUBBOGW_TEST_ZK_ADDR")
	if addr == "" && os.Getenv("CI") != "" {
		tb.Fatal("DUBBOGW_TEST_ZK_ADDR is not set (CI is set, so a missing ZooKeeper is a failure; scripts/test.sh starts one)")
	}
	return addr
}

// syncBuffer collects a process's output from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// processCPU is the user and system CPU time process pid has used
// (/proc/<pid>/stat, in the kernel's clock ticks of 10 ms; "self" for
// this one), for benchmarks that say where a call's CPU goes.
func processCPU(tb testing.TB, pid string) time.Duration {
	tb.Helper()
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		tb.Fatalf("reading the CPU time of process %s: %v", pid, err)
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("process %s: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
