package gateway

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
)

// Why a connection was refused at accept: the metric's reason label.
const (
	rejectPerIP = "per_ip"
	rejectTotal = "total"
)

// refusedBody is the answer of a connection over a cap. It is written
// before any request is read: HTTP/1.1 clients see a 503 with the
// gateway's JSON error, others a closed connection.
const refusedBody = `{"error":{"code":"` + exchange.CodeConnectionLimit + `","message":"too many connections; retry later"}}` + "\n"

var refusedResponse = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n" +
	"X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
	strconv.Itoa(len(refusedBody)) + "\r\n\r\n" + refusedBody)

// tlsRefusal is the answer of a connection over a cap on the TLS
// listener: a TLS fatal alert record, internal_error (80), which a TLS
// client reports as such ("remote error: tls: internal error"), where the
// plain 503 would read as a protocol error. Sent before the ClientHello is
// read: the refusal costs no handshake. (TLS has no alert for "busy".)
var tlsRefusal = []byte{21, 3, 1, 0, 2, 2, 80} // alert, TLS 1.0 record, length 2, fatal, internal_error

// refuseWriteTimeout bounds writing the refusal: a fresh connection's
// socket buffer takes it at once, the bound is for safety only.
const refuseWriteTimeout = time.Second

// rejectLogEvery bounds the warnings about refused connections: one per
// interval, with the number refused since the last one.
const rejectLogEvery = 10 * time.Second

// limitListener caps the data listener's connections: in total, and per
// client address (an IPv4 address, an IPv6 /64, which one client
// usually holds whole) except for trusted proxies, whose connections
// carry many clients. A connection counts from Accept until its Close,
// upgraded (hijacked) ones included. One over a cap is answered 503 and
// closed at once, in the accept loop: it costs no goroutine.
type limitListener struct {
	net.Listener
	maxTotal, maxPerIP int           // 0: no cap
	writeSlack         time.Duration // for each connection's write deadline (limitedConn.SetWriteDeadline)
	exempt             func(netip.Addr) bool
	log                *slog.Logger
	open               prometheus.Gauge
	rejected           [2]prometheus.Counter // per_ip, total
	counts             *connCounts           // shared by the plain and the TLS listener
	refusal            []byte                // refusedResponse, or tlsRefusal on the TLS listener

	lastLog  atomic.Int64 // unix nanoseconds of the last warning
	unlogged atomic.Int64 // refusals since
}

// connCounts are the open connections the caps count: one set for the
// gateway, so that a client's connections to the plain and the TLS
// listener count together.
type connCounts struct {
	mu    sync.Mutex
	total int
	perIP map[netip.Prefix]int
}

func newConnCounts() *connCounts { return &connCounts{perIP: make(map[netip.Prefix]int)} }

func newLimitListener(ln net.Listener, counts *connCounts, refusal []byte, maxTotal, maxPerIP int, writeSlack time.Duration, exempt func(netip.Addr) bool, m *metrics, log *slog.Logger) *limitListener {
	return &limitListener{
		Listener: ln, maxTotal: maxTotal, maxPerIP: maxPerIP, writeSlack: writeSlack, exempt: exempt, log: log, refusal: refusal,
		open:     m.connections,
		rejected: [2]prometheus.Counter{m.connRejected.WithLabelValues(rejectPerIP), m.connRejected.WithLabelValues(rejectTotal)},
		counts:   counts,
	}
}

// Accept returns the next connection within the caps, refusing the others
// on the way. Its errors are the listener's.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip, key, keyed := clientKey(c.RemoteAddr())
		if keyed && l.exempt != nil && l.exempt(ip) {
			keyed = false
		}
		reason := l.admit(key, keyed)
		if reason == "" {
			l.open.Inc()
			return &limitedConn{Conn: c, l: l, key: key, keyed: keyed, writeSlack: l.writeSlack}, nil
		}
		l.refuse(c, reason)
	}
}

// admit counts a new connection of key, or says which cap refuses it.
func (l *limitListener) admit(key netip.Prefix, keyed bool) string {
	c := l.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.maxTotal > 0 && c.total >= l.maxTotal {
		return rejectTotal
	}
	if keyed && l.maxPerIP > 0 {
		if c.perIP[key] >= l.maxPerIP {
			return rejectPerIP
		}
		c.perIP[key]++
	}
	c.total++
	return ""
}

// release uncounts a closed connection.
func (l *limitListener) release(key netip.Prefix, keyed bool) {
	c := l.counts
	c.mu.Lock()
	c.total--
	if keyed && l.maxPerIP > 0 {
		if n := c.perIP[key] - 1; n > 0 {
			c.perIP[key] = n
		} else {
			delete(c.perIP, key)
		}
	}
	c.mu.Unlock()
	l.open.Dec()
}

// refuse answers c 503 and closes it, counts it, and warns at most once
// per rejectLogEvery.
func (l *limitListener) refuse(c net.Conn, reason string) {
	if reason == rejectPerIP { // counted first: once closed, the client may look
		l.rejected[0].Inc()
	} else {
		l.rejected[1].Inc()
	}
	_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	_, _ = c.Write(l.refusal)
	_ = c.Close()
	n := l.unlogged.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(rejectLogEvery) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.unlogged.Add(-n)
	l.log.Warn("connections refused at the connection cap", "refused", n, "last_reason", reason,
		"last_client", c.RemoteAddr().String(), "max_connections", l.maxTotal, "max_connections_per_ip", l.maxPerIP)
}

// clientKey returns the peer's IP and the key a per-client cap counts it
// under: the IPv4 address, or the /64 of an IPv6 one. keyed is false when
// the peer has no IP address (a test's pipe).
func clientKey(addr net.Addr) (ip netip.Addr, key netip.Prefix, keyed bool) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, netip.Prefix{}, false
	}
	ip = ta.AddrPort().Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	key, err := ip.Prefix(bits)
	return ip, key, err == nil
}

// limitedConn is an accepted connection, counted until its first Close.
type limitedConn struct {
	net.Conn
	l     *limitListener
	key   netip.Prefix
	keyed bool
	once  sync.Once
	mark  connMark // its state, for the drain (connStates)

	// writeSlack: a write deadline asked for that is later than the one set
	// by less than this is not set (see SetWriteDeadline); 0: always set.
	writeSlack time.Duration
	deadlineMu sync.Mutex
	writeBy    int64 // the write deadline set, UnixNano; 0: none
}

// SetWriteDeadline sets the write deadline, unless t is later than the
// one already set by less than writeSlack: net/http asks for now +
// write_timeout at every request on a keep-alive connection, and each
// setting is a timer update. With a slack of a quarter of write_timeout,
// a write still has at least three quarters of it (the deadline kept is
// at most that much earlier than asked), a client that reads nothing
// still blocks a write no longer than write_timeout, and a busy
// connection updates its timer about once per quarter of write_timeout
// rather than once per request. Earlier and cleared deadlines are always
// set.
func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
		if c.writeSlack > 0 && c.writeBy != 0 && ns >= c.writeBy && ns-c.writeBy < int64(c.writeSlack) {
			return nil
		}
	}
	c.writeBy = ns
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines, as the connection's own does.
func (c *limitedConn) SetDeadline(t time.Time) error {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	c.writeBy = 0
	if !t.IsZero() {
		c.writeBy = t.UnixNano()
	}
	return c.Conn.SetDeadline(t)
}

// CloseWrite half-closes the connection, as net/http does before closing
// one it answered last, so the client reads the answer, not a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// ReadFrom lets net/http copy a response body with the connection's own
// ReadFrom (sendfile, splice), as on a connection it accepted itself.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key, c.keyed) })
	return err
}

// limitConnections wraps a data listener (plain or TLS) in the connection
// caps of s, counted for both together; a connection over a cap is sent
// refusal and closed.
// Trusted proxies are looked up in the current route table, so a reload
// that changes server.trusted_proxies applies to the next connection.
func (g *Gateway) limitConnections(ln net.Listener, s config.Server, refusal []byte) net.Listener {
	var maxTotal, maxPerIP int
	if s.MaxConnections != nil {
		maxTotal = *s.MaxConnections
	}
	if s.MaxConnectionsPerIP != nil {
		maxPerIP = *s.MaxConnectionsPerIP
	}
	return newLimitListener(ln, g.connCounts, refusal, maxTotal, maxPerIP, s.WriteTimeout.D()/4, g.trustedPeer, g.metrics, g.log)
}

// trustedPeer reports whether ip is one of server.trusted_proxies.
func (g *Gateway) trustedPeer(ip netip.Addr) bool {
	for _, p := range g.table.Load().trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// http2Config caps the streams of one HTTP/2 connection (so the per-IP
// connection cap bounds the streams of a client), closes a connection
// whose client reads nothing for write_timeout, and counts protocol
// errors.
func (g *Gateway) http2Config(s config.Server) *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams: s.MaxConcurrentStreams,
		WriteByteTimeout:     s.WriteTimeout.D(),
		CountError:           func(errType string) { g.metrics.h2Errors.WithLabelValues(errType).Inc() },
	}
}

// listenerLimitsEqual reports whether the settings fixed at Start with the
// data listener are the same in a and b.
func listenerLimitsEqual(a, b config.Server) bool {
	return a.WriteTimeout == b.WriteTimeout && a.MaxConcurrentStreams == b.MaxConcurrentStreams &&
		reflect.DeepEqual(a.MaxConnections, b.MaxConnections) && reflect.DeepEqual(a.MaxConnectionsPerIP, b.MaxConnectionsPerIP)
}
