package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countingListener counts the writes on the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// TestPipelinedAnswersOneWrite: requests that arrive together are
// answered with one write, in order.
func TestPipelinedAnswersOneWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.Serve(cl) }()
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 20
	var raw strings.Builder
	for i := 0; i < n; i++ {
		raw.WriteString("GET /" + string(rune('a'+i)) + " HTTP/1.1\r\nHost: a\r\n\r\n")
	}
	if _, err := io.WriteString(c, raw.String()); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(res.Body)
		if want := "/" + string(rune('a'+i)); string(b) != want {
			t.Fatalf("answer %d is %q, want %q", i, b, want)
		}
	}
	// 20 answers of ~120 bytes fit the 4 KiB buffer: one write, or a few
	// if the requests arrived in pieces; never one per answer.
	if w := cl.writes.Load(); w > n/4 {
		t.Errorf("%d pipelined answers took %d writes", n, w)
	}
}

// TestClientLeavingCancelsRequest: a client that closes its connection
// while its request is served cancels the request's context, as with
// net/http's server (a request whose client left stops holding its slot).
func TestClientLeavingCancelsRequest(t *testing.T) {
	cfg := &tls.Config{Certificates: []tls.Certificate{testCertificate(t)}}
	for _, c := range []struct {
		body string
		tls  *tls.Config
	}{{"", nil}, {"hello", nil}, {"", cfg}, {"hello", cfg}} {
		clientLeaves(t, c.body, c.tls)
	}
}

// clientLeaves runs TestClientLeavingCancelsRequest's exchange with
// body, over TLS when cfg is not nil.
func clientLeaves(t *testing.T, body string, cfg *tls.Config) {
	t.Helper()
	cancelled := make(chan struct{})
	started := make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		close(started)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(20 * time.Second):
		}
	}), ReadHeaderTimeout: 5 * time.Second, TLSConfig: cfg}
	addr := startLoop(t, s)
	var c net.Conn
	var err error
	if cfg != nil {
		c, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	head := "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"
	if body != "" {
		head = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n" + body
	}
	io.WriteString(c, head)
	<-started
	c.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatalf("body %q, TLS %v: the request's context was not cancelled when its client left", body, cfg != nil)
	}
}

// TestShutdownDrains: Shutdown closes an idle connection at once, lets
// an active request finish (its answer says Connection: close), and
// Serve returns ErrServerClosed.
func TestShutdownDrains(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "done")
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	addr := ln.Addr().String()

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
	ibr := bufio.NewReader(idle)
	if res, err := http.ReadResponse(ibr, nil); err != nil || res.StatusCode != 200 {
		t.Fatalf("first answer: %v", err)
	} else {
		_, _ = io.ReadAll(res.Body)
	}
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := ibr.ReadByte(); err == nil {
		t.Fatal("the idle connection got bytes instead of a close")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("Shutdown did not close the idle connection")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	_ = busy.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	if !res.Close {
		t.Error("the answer during the drain does not say Connection: close")
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve returned %v, want ErrServerClosed", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts")
	}
}

// TestHijack: a handler takes the connection over, with the bytes the
// client sent after its head, as WebSocket proxying does.
func TestHijack(t *testing.T) {
	var states sync.Map
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		line, _ := brw.ReadString('\n')
		io.WriteString(c, "echo "+line)
	}), ReadHeaderTimeout: 5 * time.Second, ConnState: func(c net.Conn, st http.ConnState) { states.Store(st, true) }}
	addr := startLoop(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nping\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "echo ping\n" {
		t.Fatalf("after the upgrade: %q %v", line, err)
	}
	if _, ok := states.Load(http.StateHijacked); !ok {
		t.Error("ConnState never saw StateHijacked")
	}
}

// TestH2CHandoff: a connection opening with HTTP/2's preface is served
// by the H2C server, requests and all.
func TestH2CHandoff(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) })
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, H2C: &http.Server{Handler: h, Protocols: p}}
	addr := startLoop(t, s)
	cp := new(http.Protocols)
	cp.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: cp}, Timeout: 10 * time.Second}
	for _, proto := range []string{"HTTP/2.0", "HTTP/2.0"} {
		res, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) != proto {
			t.Errorf("served as %q, want %q", b, proto)
		}
	}
	res, err := http.Get("http://" + addr + "/") // HTTP/1.1 on the same server
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "HTTP/1.1" {
		t.Errorf("served as %q, want HTTP/1.1", b)
	}
}

// TestTimeouts: the header deadline ends a connection trickling its
// head, the idle deadline one that sends nothing after an answer.
func TestTimeouts(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
	addr := startLoop(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c)
		closed <- time.Since(start)
	}()
	for _, b := range []byte("GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ") {
		if _, err := c.Write([]byte{b}); err != nil {
			break
		}
		select {
		case d := <-closed:
			if d < 300*time.Millisecond {
				t.Fatalf("closed after %s, before the header deadline", d)
			}
			goto idle
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("a head trickled for longer than the header deadline was still read")
idle:
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c2)
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := br.ReadByte(); err == nil || time.Since(t0) > 5*time.Second {
		t.Fatalf("an idle connection was kept %s (err %v); idle timeout 300ms", time.Since(t0), err)
	}
}

// flakyListener fails its first Accept calls with EMFILE, as a process
// out of file descriptors sees.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptOutOfDescriptors: running out of file descriptors for a
// while does not stop the server (a client opening connections until
// the process has none left must not end the data plane).
func TestAcceptOutOfDescriptors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: ln}
	fl.fails.Store(3)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") }),
		ReadHeaderTimeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler)}
	served := make(chan error, 1)
	go func() { served <- s.Serve(fl) }()
	defer s.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	res, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("after EMFILE: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "up" {
		t.Fatalf("got %q", b)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v", err)
	default:
	}
}

// TestIdleConnectionKeepsNoLargeBuffers: after a head near the limit,
// an idle keep-alive connection holds no more than keepBytes of it.
func TestIdleConnectionKeepsNoLargeBuffers(t *testing.T) {
	c := &conn{s: &Server{}}
	c.big = make([]byte, 0, 64<<10)
	c.head.buf = make([]byte, 0, 64<<10)
	c.head.Fields = make([]Field, 0, 20000)
	c.shrink()
	if cap(c.big) > keepBytes || cap(c.head.buf) > keepBytes || cap(c.head.Fields)*48 > keepBytes {
		t.Fatalf("kept %d, %d bytes and %d fields", cap(c.big), cap(c.head.buf), cap(c.head.Fields))
	}
	small := make([]byte, 0, 1024)
	c.head.buf = small
	c.shrink()
	if cap(c.head.buf) != 1024 {
		t.Error("a small buffer was dropped: every request would allocate it again")
	}
}

// TestWatchLeavesConnectionUsable: a handler that runs past watchAfter
// has the connection read in the background; once it answers, the
// aborted read leaves the connection as it was, plain or TLS, and the
// next request on it is served.
func TestWatchLeavesConnectionUsable(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(6 * watchAfter)
		io.WriteString(w, r.URL.Path)
	})
	cfg := &tls.Config{Certificates: []tls.Certificate{testCertificate(t)}}
	for _, srvCfg := range []*tls.Config{nil, cfg} {
		addr := startLoop(t, &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, TLSConfig: srvCfg})
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxConnsPerHost: 1}
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		scheme := "http"
		if srvCfg != nil {
			scheme = "https"
		}
		reused := 0
		for i := range 3 {
			var got string
			res, err := client.Do(withConnTrace(t, scheme+"://"+addr+fmt.Sprintf("/r%d", i), &reused))
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				got = string(b)
			}
			if err != nil || got != fmt.Sprintf("/r%d", i) {
				t.Fatalf("TLS %v, request %d: %q, %v", srvCfg != nil, i, got, err)
			}
		}
		tr.CloseIdleConnections()
		if reused != 2 {
			t.Errorf("TLS %v: %d of 3 requests reused the connection, want 2", srvCfg != nil, reused)
		}
	}
}

// withConnTrace is a GET of url that counts in reused whether it went on
// a connection used before.
func withConnTrace(t *testing.T, url string, reused *int) *http.Request {
	t.Helper()
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Reused {
			*reused++
		}
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestSlowHandlerOutlivesHeadDeadline: the deadline that bounds reading a
// head does not bound the handler of a request without a body, though
// the loop leaves it set (a request without a body reads nothing more):
// a handler running six times the header timeout, for a first request
// and for a pipelined one whose head was read with the first, keeps its
// context and answers.
func TestSlowHandlerOutlivesHeadDeadline(t *testing.T) {
	const timeout = 50 * time.Millisecond
	errs := make(chan error, 2)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(6 * timeout)
		errs <- r.Context().Err()
		_, _ = io.WriteString(w, r.URL.Path)
	}), ReadHeaderTimeout: timeout, IdleTimeout: timeout}
	addr := startLoop(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for _, want := range []string{"/1", "/2"} {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to %s: %v", want, err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || string(body) != want {
			t.Fatalf("%s: %d %q", want, res.StatusCode, body)
		}
		if err := <-errs; err != nil {
			t.Fatalf("%s: the request's context ended while its client waited: %v", want, err)
		}
	}
}
