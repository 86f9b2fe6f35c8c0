package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

// TestDrainServesRequestsOnIdleConnections: a request a client sends on a
// keep-alive connection while the gateway drains is served, with
// Connection: close, never cut: during shutdown.delay, and after it for a
// connection idle for less than shutdown.idle_grace. A raw connection
// stands for a request already on the wire when the gateway decides to
// stop (what a load balancer's pooled connection sends at that instant).
func TestDrainServesRequestsOnIdleConnections(t *testing.T) {
	echo := echoUpstream(t, "echo")
	for _, c := range []struct {
		name     string
		shutdown string
		wait     time.Duration // after Shutdown began, before the second request
	}{
		{"within shutdown.delay", "{delay: 1s, drain_timeout: 10s, idle_grace: 0s}", 200 * time.Millisecond},
		{"within idle_grace after the delay", "{delay: 0s, drain_timeout: 10s, idle_grace: 3s}", 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := startGWRaw(t, fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: %s
upstreams: {u: {targets: [{url: %q}]}}
routes:
  - {name: r, match: {prefix: /}, upstream: u}
`, c.shutdown, echo.URL))
			conn, err := net.Dial("tcp", tg.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(conn)
			get := func(path string) (*http.Response, error) {
				if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: gw\r\n\r\n", path); err != nil {
					return nil, err
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return nil, err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp, err
			}
			if resp, err := get("/before"); err != nil || resp.StatusCode != 200 || resp.Close {
				t.Fatalf("before the drain: %v %v (close %v)", resp, err, resp != nil && resp.Close)
			}

			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				done <- tg.Shutdown(ctx)
			}()
			testenv.WaitFor(t, 10*time.Second, "the drain to begin", tg.draining.Load)
			time.Sleep(c.wait) // the connection sits idle while the drain goes on
			resp, err := get("/during")
			if err != nil {
				t.Fatalf("a request on an idle keep-alive connection during the drain: %v", err)
			}
			if resp.StatusCode != 200 || !resp.Close {
				t.Errorf("during the drain: status %d, close %v; want 200 and Connection: close", resp.StatusCode, resp.Close)
			}
			if err := <-done; err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}

// TestTrackMarksTLSConnectionsInPlace: the TLS listener's connections are
// *tls.Conn over the limiting listener's; their state changes (two per
// request) go to the limited connection's own mark, as plain ones do,
// not through a map lookup keyed by the TLS connection.
func TestTrackMarksTLSConnectionsInPlace(t *testing.T) {
	raw, peer := net.Pipe()
	defer raw.Close()
	defer peer.Close()
	lc := &limitedConn{Conn: raw}
	tc := tls.Server(lc, &tls.Config{})
	var s connStates
	s.track(tc, http.StateNew)
	if v, ok := s.conns.Load(tc); !ok || v.(*connMark) != &lc.mark {
		t.Fatalf("a TLS connection's mark is %v (found %v), want its limited connection's", v, ok)
	}
	s.track(tc, http.StateActive)
	if got := http.ConnState(lc.mark.state.Load()); got != http.StateActive {
		t.Fatalf("state after StateActive: %v", got)
	}
	s.track(tc, http.StateClosed)
	if _, ok := s.conns.Load(tc); ok {
		t.Fatal("a closed TLS connection is still tracked")
	}
}
