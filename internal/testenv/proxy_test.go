package testenv

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer answers each line with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func TestProxyPauseCutsAndRefusesThenResumes(t *testing.T) {
	p := StartProxy(t, echoServer(t))

	before := dial(t, p.Addr())
	if got, err := roundTrip(before, "one"); err != nil || got != "one" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}

	p.Pause()
	// The open connection was cut: reading ends (EOF or reset), within the deadline.
	_ = before.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := before.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection still open after Pause")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection not cut by Pause: read timed out")
	}
	// A new connection is accepted and closed at once.
	during := dial(t, p.Addr())
	if _, err := roundTrip(during, "two"); err == nil {
		t.Fatal("paused proxy forwarded a new connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("paused proxy left a new connection hanging instead of closing it")
	}

	p.Resume()
	after := dial(t, p.Addr())
	if got, err := roundTrip(after, "three"); err != nil || got != "three" {
		t.Fatalf("after Resume: %q, %v", got, err)
	}
}

func TestProxyToDeadTargetClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := StartProxy(t, dead)
	c := dial(t, p.Addr())
	_, err = c.Read(make([]byte, 1))
	if err == nil || !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read from a proxy to nowhere: %v, want EOF or reset", err)
	}
}

// TestProxyDelay: with a delay set, each reply comes at least that late;
// replies sent close together are not queued behind each other's delays;
// back to 0, replies are prompt again.
func TestProxyDelay(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	c := dial(t, p.Addr())
	p.SetDelay(200 * time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(c, "slow"); err != nil || got != "slow" {
		t.Fatalf("%q, %v", got, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("a reply came after %v with a 200ms delay", d)
	}
	// Five lines at once: all replies arrive about one delay later, not
	// five (a longer delay, so that one and five are seconds apart).
	p.SetDelay(500 * time.Millisecond)
	start = time.Now()
	if _, err := c.Write([]byte("a\nb\nc\nd\ne\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for range 5 {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 500*time.Millisecond || d >= 2*time.Second {
		t.Errorf("five pipelined replies took %v; want one delay (500ms), not five (2.5s)", d)
	}
	p.SetDelay(0)
	if got, err := roundTrip(c, "fast"); err != nil || got != "fast" {
		t.Fatalf("%q, %v", got, err)
	}
}
