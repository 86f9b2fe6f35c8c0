package gateway

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/internal/testenv"
)

func TestClientKey(t *testing.T) {
	for _, c := range []struct{ addr, key string }{
		{"192.0.2.7:1234", "192.0.2.7/32"},
		{"[::ffff:192.0.2.7]:1234", "192.0.2.7/32"},
		{"[2001:db8:1:2:3:4:5:6]:1234", "2001:db8:1:2::/64"}, // one client holds a /64
		{"[2001:db8:1:2:ffff::1]:1", "2001:db8:1:2::/64"},
	} {
		ta, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, key, ok := clientKey(ta); !ok || key.String() != c.key {
			t.Errorf("clientKey(%s) = %v, %v; want %s", c.addr, key, ok, c.key)
		}
	}
	if _, _, ok := clientKey(&net.UnixAddr{Name: "x"}); ok {
		t.Error("a peer without an IP address is keyed")
	}
}

// TestTrustedProxiesAreNotCappedPerIP: a load balancer's connections carry
// many clients; only the total cap applies to them.
func TestTrustedProxiesAreNotCappedPerIP(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := newMetrics(reg, zero)
	exempt := func(ip netip.Addr) bool { return ip == netip.MustParseAddr("127.0.0.1") }
	ln := newLimitListener(inner, newConnCounts(), refusedResponse, 3, 1, 0, exempt, m, slog.New(slog.DiscardHandler))
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	for i := range 3 {
		select {
		case c := <-accepted:
			defer c.Close()
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d of a trusted proxy not accepted (per-IP cap 1)", i)
		}
	}
	// The fourth is over the total cap: answered 503 and closed.
	_ = clients[3].SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(clients[3])
	if !strings.HasPrefix(string(b), "HTTP/1.1 503 ") || !strings.Contains(string(b), "CONNECTION_LIMIT") {
		t.Fatalf("connection over the total cap read %q", b)
	}
	if n := testenv.MetricValue(t, reg, "dubbogw_connections_rejected_total", map[string]string{"reason": "total"}); n != 1 {
		t.Errorf("rejected{reason=total} = %v, want 1", n)
	}
	if n := testenv.MetricValue(t, reg, "dubbogw_connections", nil); n != 3 {
		t.Errorf("dubbogw_connections = %v, want 3", n)
	}
}

// deadlineConn records the write deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error { c.set = append(c.set, t); return nil }
func (c *deadlineConn) SetDeadline(t time.Time) error      { c.set = append(c.set, t); return nil }

// TestWriteDeadlineSlack: a later write deadline within the slack of the
// one set is not set again (net/http asks for one per request); earlier,
// cleared and farther ones are.
func TestWriteDeadlineSlack(t *testing.T) {
	inner := &deadlineConn{}
	c := &limitedConn{Conn: inner, writeSlack: 10 * time.Second}
	t0 := time.Unix(1_000_000, 0)
	steps := []struct {
		at   time.Time
		sets bool
	}{
		{t0.Add(40 * time.Second), true},         // the first
		{t0.Add(41 * time.Second), false},        // 1 s later: within the slack
		{t0.Add(49 * time.Second), false},        // 9 s later
		{t0.Add(50 * time.Second), true},         // 10 s later: set
		{t0.Add(45 * time.Second), true},         // earlier: always set
		{time.Time{}, true},                      // cleared
		{t0.Add(45500 * time.Millisecond), true}, // none was set
	}
	for i, s := range steps {
		before := len(inner.set)
		if err := c.SetWriteDeadline(s.at); err != nil {
			t.Fatal(err)
		}
		if got := len(inner.set) > before; got != s.sets {
			t.Errorf("step %d (%v): set %v, want %v", i, s.at, got, s.sets)
		}
	}
	_ = c.SetDeadline(t0.Add(30 * time.Second)) // both deadlines: the write one is known
	before := len(inner.set)
	_ = c.SetWriteDeadline(t0.Add(35 * time.Second))
	if len(inner.set) != before {
		t.Error("a write deadline within the slack of SetDeadline's was set again")
	}
	none := &limitedConn{Conn: &deadlineConn{}}
	_ = none.SetWriteDeadline(t0.Add(40 * time.Second))
	_ = none.SetWriteDeadline(t0.Add(41 * time.Second))
	if n := len(none.Conn.(*deadlineConn).set); n != 2 {
		t.Errorf("without a slack %d deadlines were set, want 2", n)
	}
}

// TestRefusalReachesAClientThatSentFirst: a client whose request (or
// ClientHello) is already in the gateway's socket when it is refused still
// reads the whole refusal, although the close, with that request unread,
// resets the connection.
func TestRefusalReachesAClientThatSentFirst(t *testing.T) {
	for _, refusal := range [][]byte{refusedResponse, tlsRefusal} {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m := newMetrics(prometheus.NewRegistry(), zero)
		ln := newLimitListener(inner, newConnCounts(), refusal, 1, 0, 0, nil, m, slog.New(slog.DiscardHandler))
		holder, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		var clients []net.Conn
		for range 10 {
			c, err := net.Dial("tcp", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		time.Sleep(200 * time.Millisecond) // the requests are in the gateway's sockets before it accepts
		go func() {
			if c, err := ln.Accept(); err == nil { // refuses the ten, then waits
				c.Close()
			}
		}()
		for i, c := range clients {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := io.ReadAll(c)
			if string(b) != string(refusal) {
				t.Errorf("client %d read %q (%v), want the refusal", i, b, err)
			}
			c.Close()
		}
		ln.Close()
		held.Close()
		holder.Close()
	}
}
