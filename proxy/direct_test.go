package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// rawServer is a loopback TCP server whose connections are served by a test function.
type rawServer struct {
	addr    string
	accepts atomic.Int64
}

// newRawServer serves each accepted connection with serve(conn, index) and
// stops everything at cleanup.
func newRawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader, index int64)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			n := s.accepts.Add(1)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			wg.Go(func() {
				defer c.Close()
				serve(c, bufio.NewReader(c), n)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// readRequest reads one request and its body; false when the connection ended.
func readRequest(br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return req, true
}

// countingBackend is an httptest server counting the connections it accepted.
func countingBackend(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func newTestDirect(t *testing.T, maxIdle, maxOpen int) *directTransport {
	t.Helper()
	std, _ := newTransport(&Config{})
	d := newDirectTransport(std, maxIdle, maxOpen, time.Minute)
	t.Cleanup(d.Close)
	t.Cleanup(std.CloseIdleConnections)
	return d
}

// send does method url through rt under a 5s deadline and reads the body whole.
func send(t *testing.T, rt http.RoundTripper, method, url string, body io.Reader) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return res, string(b)
}

func TestDirectReusesConnection(t *testing.T) {
	srv, conns := countingBackend(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			_, _ = io.WriteString(w, "part1,")
			http.NewResponseController(w).Flush()
			_, _ = io.WriteString(w, "part2")
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		default:
			_, _ = io.WriteString(w, "hello "+r.Method+" "+r.Header.Get("User-Agent"))
		}
	})
	d := newTestDirect(t, 4, 0)
	tests := []struct {
		method, path string
		status       int
		body         string
		chunked      bool
	}{
		{"GET", "/", 200, "hello GET Go-http-client/1.1", false},
		{"HEAD", "/", 200, "", false},
		{"GET", "/204", 204, "", false},
		{"GET", "/304", 304, "", false},
		{"GET", "/chunked", 200, "part1,part2", true},
		{"PUT", "/", 200, "hello PUT Go-http-client/1.1", false},
	}
	for _, tt := range tests {
		var body io.Reader
		if tt.method == "PUT" {
			body = strings.NewReader("payload")
		}
		res, got := send(t, d, tt.method, srv.URL+tt.path, body)
		if res.StatusCode != tt.status || got != tt.body {
			t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, res.StatusCode, got, tt.status, tt.body)
		}
		if chunked := len(res.TransferEncoding) > 0; chunked != tt.chunked {
			t.Errorf("%s %s: chunked %v, want %v", tt.method, tt.path, chunked, tt.chunked)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the target saw %d connections for %d sequential requests, want 1", n, len(tests))
	}
}

func TestDirectClosesWhenAsked(t *testing.T) {
	srv, conns := countingBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		_, _ = io.WriteString(w, strings.Repeat("x", 10000))
	})
	d := newTestDirect(t, 4, 0)

	send(t, d, "GET", srv.URL+"/close", nil) // the target closes
	send(t, d, "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 2 {
		t.Fatalf("connections after Connection: close = %d, want 2", n)
	}

	// A body closed before EOF closes its connection.
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	res, err := d.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(res.Body, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	send(t, d, "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 3 {
		t.Fatalf("connections after a body closed early = %d, want 3", n)
	}

	// A request asking to close is not reused either.
	req, _ = http.NewRequest("GET", srv.URL+"/", nil)
	req.Close = true
	if _, body := send(t, d, "GET", srv.URL+"/", nil); len(body) != 10000 {
		t.Fatalf("body of %d bytes", len(body))
	}
	res, err = d.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	send(t, d, "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 4 {
		t.Fatalf("connections after a request with Close = %d, want 4", n)
	}
}

func TestDirectSkipsInterimResponse(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader, _ int64) {
		if _, ok := readRequest(br); ok {
			_, _ = io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	d := newTestDirect(t, 4, 0)
	res, body := send(t, d, "GET", "http://"+s.addr+"/", nil)
	if res.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q, want the final 200 ok", res.StatusCode, body)
	}
}

// staleServer answers one request per connection and then closes it, as a
// target closing an idle keep-alive connection does.
func staleServer(t *testing.T, methods chan<- string) *rawServer {
	return newRawServer(t, func(c net.Conn, br *bufio.Reader, n int64) {
		req, ok := readRequest(br)
		if !ok {
			return
		}
		methods <- req.Method
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
}

func TestDirectRetriesStaleConnection(t *testing.T) {
	methods := make(chan string, 10)
	s := staleServer(t, methods)
	d := newTestDirect(t, 4, 0)
	url := "http://" + s.addr + "/"
	send(t, d, "GET", url, nil)
	testenv.WaitFor(t, 5*time.Second, "the condition", func() bool { return len(methods) == 1 }) // the server handled it and closes
	waitForIdleClosed(t, d)
	res, body := send(t, d, "GET", url, nil)
	if res.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", res.StatusCode, body)
	}
	if n := s.accepts.Load(); n != 2 {
		t.Errorf("accepted %d connections, want 2 (the retry on a new one)", n)
	}
}

// waitForIdleClosed waits, up to 5s, until the peer closed d's idle
// connection (a peek at it returns EOF, which the next exchange then meets).
func waitForIdleClosed(t *testing.T, d *directTransport) {
	t.Helper()
	d.mu.Lock()
	var c *directConn
	for _, h := range d.hosts {
		if len(h.idle) > 0 {
			c = h.idle[0]
		}
	}
	d.mu.Unlock()
	if c == nil {
		t.Fatal("no idle connection")
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.Peek(1); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: %v, want EOF from the server closing it", err)
	}
	_ = c.conn.SetReadDeadline(time.Time{})
}

func TestDirectPostOnStaleConnection(t *testing.T) {
	for _, replayable := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-shot body", true: "GetBody"}[replayable], func(t *testing.T) {
			methods := make(chan string, 10)
			s := staleServer(t, methods)
			d := newTestDirect(t, 4, 0)
			url := "http://" + s.addr + "/"
			send(t, d, "GET", url, nil)
			<-methods
			waitForIdleClosed(t, d)

			req, _ := http.NewRequest("POST", url, strings.NewReader("payload"))
			if !replayable {
				req.GetBody = nil
			}
			res, err := d.RoundTrip(req)
			if !replayable {
				if err == nil {
					res.Body.Close()
					t.Fatal("POST without GetBody was retried on a new connection")
				}
				if n := s.accepts.Load(); n != 1 {
					t.Errorf("accepted %d connections, want 1 (no retry)", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("POST with GetBody: %v, want a retry that succeeds", err)
			}
			res.Body.Close()
			if m := <-methods; m != "POST" || s.accepts.Load() != 2 {
				t.Errorf("retry: method %s on %d connections, want POST on 2", m, s.accepts.Load())
			}
		})
	}
}

func TestDirectCancelMidResponse(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv, conns := countingBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			_, _ = io.WriteString(w, "first")
			http.NewResponseController(w).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	d := newTestDirect(t, 4, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/slow", nil)
	res, err := d.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(res.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("first part %q, %v", buf, err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := res.Body.Read(make([]byte, 10))
		read <- err
	}()
	cancel()
	select {
	case err := <-read:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read still blocked 5s after the context was canceled")
	}
	send(t, d, "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 2 {
		t.Errorf("connections = %d, want 2: the canceled one must not be reused", n)
	}
}

func TestDirectMaxPerTarget(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv, conns := countingBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	d := newTestDirect(t, 4, 1)
	held := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/hold", nil)
		res, err := d.RoundTrip(req)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		held <- err
	}()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the first request did not arrive within 5s")
	}
	// At the cap: a second request waits, bounded by its context.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
	if res, err := d.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			res.Body.Close()
		}
		t.Fatalf("request over the cap: %v, want it to wait until its deadline", err)
	}
	// A waiter gets the connection when the first exchange ends.
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
		res, err := d.RoundTrip(req)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		waiting <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "the condition", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, h := range d.hosts {
			return len(h.waiters) == 1
		}
		return false
	})
	if st := d.stats(); st != (poolStats{open: 1, idle: 0, waiting: 1}) {
		t.Errorf("pool while one request holds the connection and one waits: %+v", st)
	}
	close(release)
	for _, ch := range []chan error{held, waiting} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if st := d.stats(); st != (poolStats{open: 1, idle: 1, waiting: 0}) {
		t.Errorf("pool after both requests: %+v", st)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("connections = %d, want 1 (max_per_target 1)", n)
	}
}

func TestDirectIdleTimeout(t *testing.T) {
	srv, conns := countingBackend(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	d := newTestDirect(t, 4, 0)
	clock := testenv.NewFakeClock()
	d.now = clock.Now
	send(t, d, "GET", srv.URL+"/", nil)
	clock.Advance(30 * time.Second)
	send(t, d, "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 1 {
		t.Fatalf("connections = %d, want 1 within the idle timeout", n)
	}
	clock.Advance(61 * time.Second)
	send(t, d, "GET", srv.URL+"/", nil)
	if n := conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2: an idle connection past the timeout is not reused", n)
	}
}

func TestDirectCloseClosesReturnedConnections(t *testing.T) {
	srv, _ := countingBackend(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	d := newTestDirect(t, 4, 0)
	send(t, d, "GET", srv.URL+"/", nil)
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	res, err := d.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.hosts {
		if len(h.idle) != 0 || h.open != 0 {
			t.Errorf("after Close: %d idle, %d open, want none", len(h.idle), h.open)
		}
	}
}

func TestDirectLeavesRiskyRequestsToStandard(t *testing.T) {
	d := newTestDirect(t, 4, 0)
	mk := func(method, url string, body io.Reader, h map[string]string) *http.Request {
		req, _ := http.NewRequest(method, url, body)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		return req
	}
	tests := []struct {
		name string
		req  *http.Request
		want bool
	}{
		{"plain GET", mk("GET", "http://a:1/", nil, nil), true},
		{"small body", mk("POST", "http://a:1/", strings.NewReader("x"), nil), true},
		{"https", mk("GET", "https://a:1/", nil, nil), false},
		{"upgrade", mk("GET", "http://a:1/", nil, map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}), false},
		{"expect", mk("POST", "http://a:1/", strings.NewReader("x"), map[string]string{"Expect": "100-continue"}), false},
		{"streamed body", mk("POST", "http://a:1/", io.MultiReader(strings.NewReader("x")), nil), false},
		{"large body", mk("POST", "http://a:1/", strings.NewReader(strings.Repeat("x", maxDirectBody+1)), nil), false},
	}
	for _, tt := range tests {
		if got := d.handles(tt.req); got != tt.want {
			t.Errorf("%s: handles = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDirectPoolMetric: the pool of an upstream using transport: direct is
// exported as dubbogw_upstream_direct_connections, and leaves with Close.
func TestDirectPoolMetric(t *testing.T) {
	srv, _ := countingBackend(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	tu := newTestUpstream(t, TransportDirect, "pooled", &Config{Targets: []Target{{URL: srv.URL}}})
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	res, err := tu.direct.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	for state, want := range map[string]float64{"open": 1, "idle": 1, "waiting": 0} {
		if got, ok := tu.metric(t, "dubbogw_upstream_direct_connections", map[string]string{"upstream": "pooled", "state": state}); !ok || got != want {
			t.Errorf("%s connections = %v (present %v), want %v", state, got, ok, want)
		}
	}
	tu.Close()
	if _, ok := tu.metric(t, "dubbogw_upstream_direct_connections", map[string]string{"upstream": "pooled"}); ok {
		t.Error("a closed upstream's pool is still exported")
	}
}

// TestDirectSweepClosesExpiredIdle: with no further traffic, an idle
// connection is closed once it expires (by the transport's sweeper, not at
// the next request), the target sees it closed, the host is forgotten,
// and Close stops the sweeper.
func TestDirectSweepClosesExpiredIdle(t *testing.T) {
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	std, _ := newTransport(&Config{})
	t.Cleanup(std.CloseIdleConnections)
	d := newDirectTransport(std, 4, 0, 200*time.Millisecond)
	send(t, d, "GET", srv.URL+"/", nil)
	if st := d.stats(); st != (poolStats{open: 1, idle: 1}) {
		t.Fatalf("pool after a request: %+v", st)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("the idle connection is still open 5s after it expired: %+v", d.stats())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d.mu.Lock()
		hosts := len(d.hosts)
		d.mu.Unlock()
		if hosts == 0 && d.stats() == (poolStats{}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d hosts, pool %+v after the sweep", hosts, d.stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { d.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: the sweeper did not stop")
	}
	select {
	case <-d.swept:
	default:
		t.Fatal("the sweeper is still running after Close")
	}
}
