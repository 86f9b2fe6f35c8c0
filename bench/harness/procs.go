package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the harness started and must stop.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // set before done is closed
}

// readyLine is the first line a child prints on stdout; the rest is discarded.
type readyLine struct {
	mu    sync.Mutex
	buf   []byte
	found bool
	line  chan string // buffered 1: receives the first line once
}

func newReadyLine() *readyLine { return &readyLine{line: make(chan string, 1)} }

func (r *readyLine) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.found {
		return len(p), nil
	}
	if len(r.buf)+len(p) > 1<<20 {
		return 0, errors.New("ready line longer than 1 MiB")
	}
	r.buf = append(r.buf, p...)
	if i := bytes.IndexByte(r.buf, '\n'); i >= 0 {
		r.found = true
		r.line <- string(r.buf[:i])
		r.buf = nil
	}
	return len(p), nil
}

// startChild starts argv with stderr (and stdout unless ready is given)
// going to dir/name.log. The process runs until stop.
func startChild(dir, name string, ready io.Writer, argv ...string) (*child, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = logFile
	cmd.Stdout = logFile
	if ready != nil {
		cmd.Stdout = ready
	}
	cmd.Dir = dir
	detach(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, argv[0], err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// startReporting starts a harness subcommand and waits (at most timeout)
// for its "ready ..." line, returning what follows "ready ".
func startReporting(dir, name string, timeout time.Duration, argv ...string) (*child, string, error) {
	ready := newReadyLine()
	c, err := startChild(dir, name, ready, argv...)
	if err != nil {
		return nil, "", err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line := <-ready.line:
		rest, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			c.stop()
			return nil, "", fmt.Errorf("starting %s: it printed %q, want \"ready ...\"", name, line)
		}
		return c, rest, nil
	case <-c.done:
		return nil, "", fmt.Errorf("starting %s: it exited (%v); see %s", name, c.err, filepath.Join(dir, name+".log"))
	case <-timer.C:
		c.stop()
		return nil, "", fmt.Errorf("starting %s: not ready within %v", name, timeout)
	}
}

// stopGrace is how long a child gets to exit after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// stop sends SIGTERM to the child's process group, then SIGKILL after
// stopGrace, and waits for the child to exit.
func (c *child) stop() {
	pgid := c.cmd.Process.Pid
	select {
	case <-c.done:
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // anything it left behind
		return
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// freePort returns a loopback port nothing listens on right now. Another
// process may take it before the caller binds it: the caller's readiness
// check catches that.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// pollInterval is the pause between readiness checks.
const pollInterval = 50 * time.Millisecond

// waitFor calls check until it returns nil, the child exits, or timeout
// passes.
func waitFor(ctx context.Context, c *child, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: not ready within %v: %w", what, timeout, err)
		case <-c.done:
			return fmt.Errorf("waiting for %s: it exited (%v)", what, c.err)
		case <-ticker.C:
		}
	}
}

// httpGet GETs url with a deadline and returns the status and body.
func httpGet(ctx context.Context, client *http.Client, url string, header ...string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", fmt.Errorf("building GET %s: %w", url, err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return 0, "", fmt.Errorf("reading GET %s: %w", url, err)
	}
	return res.StatusCode, string(body), nil
}

// redisCommand sends one command to Redis and returns the first line of
// the reply, with a deadline.
func redisCommand(ctx context.Context, addr string, args ...string) (string, error) {
	var d net.Dialer
	dialCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := d.DialContext(dialCtx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("connecting to Redis at %s: %w", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", fmt.Errorf("sending %s to Redis: %w", args[0], err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading Redis's answer to %s: %w", args[0], err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
