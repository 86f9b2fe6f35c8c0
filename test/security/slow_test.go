package security

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
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

// slowClientAttacks: see index_test.go. Rows 1 (clients that hold slots
// and connections), 7 (broken request bodies) and 12 (upgrades).
var slowClientAttacks = []attack{
	{id: "1a", name: "stalled-body-frees-slot", run: stalledBodyFreesSlot},
	{id: "1b", name: "drip-fed-body-answered", run: dripFedBodyAnswered},
	{id: "1c", name: "unread-response-frees-slot", run: unreadResponseFreesSlot},
	{id: "1d", name: "connections-capped-per-ip-and-in-total", run: connectionsCapped},
	{id: "1e", name: "h2c-streams-capped", run: h2cStreamsCapped},
	{id: "1f", name: "h2c-stalled-streams-free-slots", run: h2cStalledStreamsFreeSlots},
	{id: "1g", name: "h2c-unread-response-frees-slot", run: h2cUnreadResponseFreesSlot},
	{id: "7a", name: "malformed-chunked-body-not-a-target-failure", run: malformedChunkedNotTargetFailure},
	{id: "7b", name: "aborted-body-on-dubbo-route-quiet", run: abortedBodyOnDubboRouteQuiet},
	{id: "12", name: "only-websocket-upgrades-tunnelled", run: onlyWebSocketUpgradesTunnelled},
}

// answerWithin bounds how long a test waits for the gateway's answer to a
// stalled client: far beyond the few seconds the configured deadlines
// allow, far below "as long as the client likes".
const answerWithin = 30 * time.Second

// bodyReader is an HTTP target that reads the whole request body and
// answers 200 "read N".
func bodyReader(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "read %d", n)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// dialFrom connects to addr from the local address ip (any 127.x.y.z on
// Linux loopback), so one machine can be several clients.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readWithin reads one response from c, waiting at most within.
func readWithin(c net.Conn, within time.Duration) rawResponse {
	_ = c.SetReadDeadline(time.Now().Add(within))
	return readRaw(c)
}

// get sends GET path on a new connection and returns the status (0 when no answer came).
func get(t *testing.T, addr, path string) int {
	t.Helper()
	return sendRaw(t, addr, "GET "+path+" HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n", 10*time.Second).status
}

// Row 1: a client declares a body and never sends it. The slot it holds
// is freed within body_grace, with a 408 to the client, so the gateway
// keeps serving everyone else.
func stalledBodyFreesSlot(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
server:
  max_in_flight: 2
  body_grace: 1s
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app, timeout: 60s}
`, bodyReader(t)))
	var conns []net.Conn
	for range 2 { // every slot
		c := dialFrom(t, "127.0.0.1", g.addr)
		if _, err := io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: gw\r\nContent-Length: 100000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		res := readWithin(c, answerWithin)
		if res.err != nil || res.status != http.StatusRequestTimeout {
			t.Fatalf("stalled upload %d: got %d %q (%v), want 408 within %s", i, res.status, res.body, res.err, answerWithin)
		}
		if !strings.Contains(res.body, `"REQUEST_TIMEOUT"`) {
			t.Errorf("stalled upload %d: body %q lacks the JSON error code", i, res.body)
		}
	}
	if st := get(t, g.addr, "/after"); st != http.StatusOK {
		t.Fatalf("GET after the stalled uploads were cut: %d, want 200 (slots freed)", st)
	}
	if n := g.metric(t, "dubbogw_request_body_errors_total", map[string]string{"reason": "too_slow"}); n != 2 {
		t.Errorf("dubbogw_request_body_errors_total{reason=too_slow} = %v, want 2", n)
	}
}

// Row 1: a proxy route fed one byte every 200 ms (far below the minimum
// rate) gets an answer; before, the handler sat in the body's Close for
// as long as the client kept dripping, whatever the route's timeout.
func dripFedBodyAnswered(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
server:
  body_grace: 1s
  min_body_rate: 1KiB
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app, timeout: 10s}
`, bodyReader(t)))
	c := dialFrom(t, "127.0.0.1", g.addr)
	if _, err := io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: gw\r\nContent-Length: 100000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	res := readWithin(c, answerWithin)
	if res.err != nil || res.status != http.StatusRequestTimeout {
		t.Fatalf("drip-fed upload: got %d %q (%v), want 408 within %s", res.status, res.body, res.err, answerWithin)
	}
}

// Row 1: a client asks for a large response and never reads it. The
// write deadline frees its slot; before, the handler blocked in Write
// for ever, past the route's timeout.
func unreadResponseFreesSlot(t *testing.T) {
	chunk := make([]byte, 32<<10)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			_, _ = io.WriteString(w, "small")
			return
		}
		for range 2048 { // 64 MiB: more than every socket buffer on the way
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	g := startGateway(t, fmt.Sprintf(`
server:
  max_in_flight: 1
  write_timeout: 1s
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app, timeout: 120s}
`, big.URL))
	c := dialFrom(t, "127.0.0.1", g.addr)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing: the gateway's writes block once the
	// socket buffers are full, holding the only slot until the write
	// deadline cuts the connection.
	testenv.WaitFor(t, answerWithin, "a request served while a client does not read its response", func() bool {
		time.Sleep(50 * time.Millisecond)
		return get(t, g.addr, "/small") == http.StatusOK
	})
}

// Row 1, over h2c: a stream whose response the client never reads (it
// grants no flow-control window) frees its slot once its write deadline
// passes: write_timeout after the latest time the route could answer.
func h2cUnreadResponseFreesSlot(t *testing.T) {
	chunk := make([]byte, 32<<10)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			_, _ = io.WriteString(w, "small")
			return
		}
		for range 2048 { // 64 MiB: more than the client's flow-control windows
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	g := startGateway(t, fmt.Sprintf(`
server:
  max_in_flight: 1
  write_timeout: 1s
  body_grace: 1s
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app, timeout: 2s}
`, big.URL))
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: protocols}
	defer tr.CloseIdleConnections()
	// No client timeout: the client holds the stream until the test ends.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/big", nil)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close() // read nothing: the client's windows fill up
	if res.ProtoMajor != 2 {
		t.Fatalf("answered over HTTP/%d, want 2", res.ProtoMajor)
	}
	testenv.WaitFor(t, answerWithin, "a request served while an h2c client does not read its response", func() bool {
		time.Sleep(50 * time.Millisecond)
		return get(t, g.addr, "/small") == http.StatusOK
	})
}

// Row 1: connections are capped per client IP and in total; the ones
// over a cap get a 503 and are closed, counted by reason; a closed
// connection makes room again.
func connectionsCapped(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
server:
  max_connections: 6
  max_connections_per_ip: 4
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app}
`, bodyReader(t)))
	served := func(c net.Conn) bool {
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
			return false
		}
		return readWithin(c, 10*time.Second).status == http.StatusOK
	}
	// refused reads what the gateway says to a connection over a cap,
	// before sending anything (a request sent first may be lost to the
	// reset of a socket closed with unread data).
	refused := func(c net.Conn) {
		t.Helper()
		res := readWithin(c, 10*time.Second)
		if res.status != http.StatusServiceUnavailable || !strings.Contains(res.body, `"CONNECTION_LIMIT"`) {
			t.Fatalf("connection over the cap: got %d %q (%v), want 503 CONNECTION_LIMIT", res.status, res.body, res.err)
		}
	}
	var first []net.Conn
	for i := range 4 {
		c := dialFrom(t, "127.0.0.1", g.addr)
		if !served(c) {
			t.Fatalf("connection %d of 127.0.0.1 (within the cap) not served", i)
		}
		first = append(first, c)
	}
	refused(dialFrom(t, "127.0.0.1", g.addr))
	for i := range 2 {
		if !served(dialFrom(t, "127.0.0.2", g.addr)) {
			t.Fatalf("connection %d of 127.0.0.2 (within both caps) not served", i)
		}
	}
	refused(dialFrom(t, "127.0.0.3", g.addr))
	if n := g.metric(t, "dubbogw_connections_rejected_total", map[string]string{"reason": "per_ip"}); n != 1 {
		t.Errorf("rejected{reason=per_ip} = %v, want 1", n)
	}
	if n := g.metric(t, "dubbogw_connections_rejected_total", map[string]string{"reason": "total"}); n != 1 {
		t.Errorf("rejected{reason=total} = %v, want 1", n)
	}
	if n := g.metric(t, "dubbogw_connections", nil); n != 6 {
		t.Errorf("dubbogw_connections = %v, want 6", n)
	}
	first[0].Close()
	testenv.WaitFor(t, answerWithin, "a connection of 127.0.0.1 served once one of its four closed", func() bool {
		c := dialFrom(t, "127.0.0.1", g.addr)
		defer c.Close()
		return served(c)
	})
}

// h2Settings reads the server's first SETTINGS frame on an h2c
// (prior-knowledge) connection and returns its parameters by id.
func h2Settings(t *testing.T, addr string) map[uint16]uint32 {
	t.Helper()
	c := dialFrom(t, "127.0.0.1", addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// The client preface, then an empty SETTINGS frame.
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			t.Fatalf("reading the server's frames: %v", err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatalf("reading a frame: %v", err)
		}
		const frameSettings, flagAck = 0x4, 0x1
		if hdr[3] != frameSettings || hdr[4]&flagAck != 0 {
			continue
		}
		out := map[uint16]uint32{}
		for i := 0; i+6 <= len(payload); i += 6 {
			out[binary.BigEndian.Uint16(payload[i:])] = binary.BigEndian.Uint32(payload[i+2:])
		}
		return out
	}
}

// Row 1: an h2c connection may not open more streams than the default
// cap (100; Go's own default was 250), so the per-IP connection cap
// bounds the streams of one client.
func h2cStreamsCapped(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app}
`, bodyReader(t)))
	const settingsMaxConcurrentStreams = 0x3
	s := h2Settings(t, g.addr)
	if got, ok := s[settingsMaxConcurrentStreams]; !ok || got != 100 {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS = %d (sent: %v), want 100", got, ok)
	}
}

// Row 1, over h2c: streams that declare a body and never send it are cut
// after body_grace like HTTP/1.1 requests; their slots serve others.
func h2cStalledStreamsFreeSlots(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
server:
  max_in_flight: 4
  body_grace: 1s
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app, timeout: 60s}
`, bodyReader(t)))
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: protocols}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: answerWithin}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var timedOut atomic.Int32
	errs := make(chan error, 4)
	for range 4 {
		pr, pw := io.Pipe()
		defer pw.Close() // never written: the body stalls
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/upload", pr)
		req.ContentLength = 100000
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			res.Body.Close()
			if res.ProtoMajor != 2 {
				errs <- fmt.Errorf("answered over HTTP/%d, want 2", res.ProtoMajor)
				return
			}
			if res.StatusCode == http.StatusRequestTimeout {
				timedOut.Add(1)
				return
			}
			errs <- fmt.Errorf("status %d, want 408", res.StatusCode)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("stalled h2c stream: %v", err)
	}
	if t.Failed() {
		return
	}
	if st := get(t, g.addr, "/after"); st != http.StatusOK {
		t.Fatalf("GET after the stalled streams were cut: %d, want 200", st)
	}
}

// Row 7: a malformed chunked body is the client's error (400), never a
// failure of the target: six in a row (more than max_failures) eject
// nothing, and log no warning each.
func malformedChunkedNotTargetFailure(t *testing.T) {
	target := bodyReader(t)
	g := startGateway(t, fmt.Sprintf(`
upstreams:
  app: {targets: [{url: %q}], passive_health: {max_failures: 5}}
routes:
  - {name: app, match: {prefix: /}, upstream: app}
`, target))
	for i := range 6 {
		res := sendRaw(t, g.addr, "POST /upload HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", answerWithin)
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, `"BAD_REQUEST"`) {
			t.Fatalf("malformed chunked body %d: got %d %q (%v), want 400 BAD_REQUEST", i, res.status, res.body, res.err)
		}
	}
	if n := g.metric(t, "dubbogw_upstream_ejections_total", map[string]string{"upstream": "app"}); n != 0 {
		t.Errorf("the target was ejected %v times by the clients' broken bodies", n)
	}
	if n := g.metric(t, "dubbogw_upstream_target_healthy", map[string]string{"upstream": "app"}); n != 1 {
		t.Errorf("dubbogw_upstream_target_healthy = %v, want 1", n)
	}
	if n := g.metric(t, "dubbogw_request_body_errors_total", map[string]string{"reason": "malformed"}); n != 6 {
		t.Errorf("dubbogw_request_body_errors_total{reason=malformed} = %v, want 6", n)
	}
	if n := g.logs.count(`"level":"WARN"`); n != 0 {
		t.Errorf("%d warnings logged for the clients' broken bodies:\n%s", n, g.logs.String())
	}
}

// Row 7: bodies cut short on a Dubbo route are answered 400 and counted,
// without a warning per request, and nothing reaches the provider.
func abortedBodyOnDubboRouteQuiet(t *testing.T) {
	addr, rec := demoProvider(t)
	g := startGateway(t, fmt.Sprintf(`
registries:
  demo: {type: static, providers: {com.example.demo.UserService: [%q]}}
routes:
  - name: create-user
    match: {methods: [POST], path: /api/users}
    dubbo:
      registry: demo
      interface: com.example.demo.UserService
      method: createUser
      params: [{type: com.example.demo.User}]
`, addr))
	const n = 10
	for i := range n {
		c := dialFrom(t, "127.0.0.1", g.addr)
		if _, err := io.WriteString(c, "POST /api/users HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":\"7\","); err != nil {
			t.Fatal(err)
		}
		_ = c.(*net.TCPConn).CloseWrite() // the body ends 90 bytes early
		res := readWithin(c, answerWithin)
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, `"BAD_REQUEST"`) {
			t.Fatalf("truncated body %d: got %d %q (%v), want 400 BAD_REQUEST", i, res.status, res.body, res.err)
		}
	}
	if got := g.metric(t, "dubbogw_request_body_errors_total", map[string]string{"reason": "truncated"}); got != n {
		t.Errorf("dubbogw_request_body_errors_total{reason=truncated} = %v, want %d", got, n)
	}
	if w := g.logs.count(`"level":"WARN"`); w != 0 {
		t.Errorf("%d warnings logged for %d truncated bodies:\n%s", w, n, g.logs.String())
	}
	if rec.contains("createUser") {
		t.Error("a call with a truncated body reached the provider")
	}
}

// Row 12: an Upgrade other than websocket (h2c here) is not forwarded:
// the request is served as plain HTTP/1.1 (RFC 9110 section 7.8 lets a
// server ignore Upgrade), so no tunnel opens past the filters; WebSocket
// upgrades still pass.
func onlyWebSocketUpgradesTunnelled(t *testing.T) {
	var sawUpgrade atomic.Value
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := r.Header.Get("Upgrade")
		sawUpgrade.Store(up + "|" + r.Header.Get("Http2-Settings"))
		if up == "" {
			_, _ = io.WriteString(w, "plain")
			return
		}
		// A target that accepts any upgrade and then echoes: a tunnel.
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", up)
		_ = brw.Flush()
		_, _ = io.Copy(c, brw)
	}))
	t.Cleanup(target.Close)
	g := startGateway(t, fmt.Sprintf(`
upstreams:
  app: {targets: [{url: %q}]}
routes:
  - {name: app, match: {prefix: /}, upstream: app}
`, target.URL))
	res := sendRaw(t, g.addr, "GET /x HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"+
		"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", answerWithin)
	if res.status != http.StatusOK || res.body != "plain" {
		t.Fatalf("Upgrade: h2c: got %d %q (%v), want the plain 200 answer", res.status, res.body, res.err)
	}
	if got, _ := sawUpgrade.Load().(string); got != "|" {
		t.Errorf("the target saw Upgrade|HTTP2-Settings = %q, want neither", got)
	}
	for _, up := range []string{"websocket, h2c", "foo"} {
		res = sendRaw(t, g.addr, "GET /x HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: "+up+"\r\n\r\n", answerWithin)
		if res.status != http.StatusOK || res.body != "plain" {
			t.Fatalf("Upgrade: %s: got %d %q (%v), want the plain 200 answer", up, res.status, res.body, res.err)
		}
	}
	ws := sendRaw(t, g.addr, "GET /ws HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", answerWithin)
	if ws.status != http.StatusSwitchingProtocols {
		t.Fatalf("Upgrade: websocket: got %d (%v), want 101", ws.status, ws.err)
	}
}
