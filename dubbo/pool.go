package dubbo

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Reconnect backoff: the first retry after a failed dial waits about
// backoffBase, each next one twice as long up to backoffMax, each jittered
// down by up to half so clients restarted together do not dial in step.
// Past longAfter failures in a row (about four minutes of a dead address)
// the wait grows to backoffLong: a registry may list a dead provider for
// as long as its session lives, and a thousand of them dialled every 10 s
// cost a share of a core (issue 19). A provider that registers again is
// redialled at once all the same (Client.Redial).
const (
	backoffBase = 100 * time.Millisecond
	backoffMax  = 10 * time.Second
	longAfter   = 30
	backoffLong = 2 * time.Minute
	// stableAfter is how long a connection must have lived for its loss to
	// be redialled at once rather than after a backoff, so a provider that
	// accepts and drops connections is not dialled in a tight loop.
	stableAfter = time.Second
)

// pool is the connections to one provider address, shared by every
// service of that provider: ConnsPerAddr slots, each kept connected by its
// own goroutine.
type pool struct {
	client  *Client
	addr    string
	secure  bool            // dialed over TLS
	life    context.Context // ends with the Client, or when the pool is forgotten
	stop    context.CancelFunc
	metrics *addrMetrics
	slots   []*slot
	next    atomic.Uint32 // round robin over slots

	readonlyMu sync.Mutex // orders readonly updates
	readonly   atomic.Bool
}

// slot is one connection of a pool: conn while connected, nil otherwise.
type slot struct {
	conn  atomic.Pointer[conn]
	ready chan struct{} // closed once the first dial has succeeded or failed
	// redial (capacity 1) cuts a reconnect backoff short: see Client.Redial.
	redial chan struct{}

	mu      sync.Mutex
	lastErr error // why the slot is not connected
}

func newPool(c *Client, addr string, secure bool) *pool {
	p := &pool{client: c, addr: addr, secure: secure, metrics: c.metrics.forAddr(addr)}
	p.life, p.stop = context.WithCancel(c.life)
	p.slots = make([]*slot, c.opts.ConnsPerAddr)
	for i := range p.slots {
		p.slots[i] = &slot{ready: make(chan struct{}), redial: make(chan struct{}, 1)}
	}
	return p
}

// start launches the goroutines keeping the slots connected; they are
// counted in the Client's WaitGroup and stop when the Client stops.
func (p *pool) start() {
	for _, s := range p.slots {
		p.client.wg.Add(1)
		go func() {
			defer p.client.wg.Done()
			p.maintain(s)
		}()
	}
}

// pick returns a connected connection, round robin. While the first dials
// are under way it waits for them (until ctx ends); after that a pool with
// nothing connected fails at once with ErrConnect.
func (p *pool) pick(ctx context.Context) (*conn, error) {
	n := uint32(len(p.slots))
	start := uint32(0)
	if n > 1 {
		start = p.next.Add(1)
	}
	for i := range n {
		if cn := p.slots[(start+i)%n].conn.Load(); cn != nil && cn.usable() {
			return cn, nil
		}
	}
	var lastErr error
	for i := range n {
		s := p.slots[(start+i)%n]
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("connecting: %w", ctx.Err())
		}
		if cn := s.conn.Load(); cn != nil && cn.usable() {
			return cn, nil
		}
		if err := s.err(); err != nil {
			lastErr = err
		}
	}
	if p.life.Err() != nil {
		return nil, ErrClosed
	}
	if lastErr == nil {
		return nil, ErrConnect
	}
	return nil, fmt.Errorf("%w (reconnecting; last error: %v)", ErrConnect, lastErr)
}

func (s *slot) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

func (s *slot) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// maintain keeps slot s connected until the Client stops: it dials, serves
// the connection until it breaks, and dials again, with backoff after
// failures.
func (p *pool) maintain(s *slot) {
	c := p.client
	log := c.log.With("addr", p.addr)
	markReady := sync.OnceFunc(func() { close(s.ready) })
	defer markReady()
	failures := 0
	for attempt := 0; ; attempt++ {
		cn, err := p.dial()
		if err != nil {
			if p.life.Err() != nil {
				return
			}
			s.setErr(err)
			p.metrics.dialErrors.Inc()
			failures++
			if failures == 1 {
				log.Warn("dubbo: cannot connect to provider", "error", err)
			} else {
				log.Debug("dubbo: cannot connect to provider", "error", err, "failures", failures)
			}
			markReady()
			if !sleep(p.life, backoff(failures), s.redial) {
				return
			}
			continue
		}
		if attempt > 0 {
			p.metrics.reconnects.Inc()
		}
		p.connected()
		s.conn.Store(cn)
		p.metrics.connections.Inc()
		markReady()
		log.Info("dubbo: connected to provider", "local", cn.nc.LocalAddr().String())
		since := time.Now()
		err = cn.serve()
		s.setErr(err) // before the slot empties: a call finding it empty finds why
		s.conn.Store(nil)
		p.metrics.connections.Dec()
		if p.life.Err() != nil {
			return
		}
		log.Warn("dubbo: connection to provider lost", "error", err)
		if time.Since(since) >= stableAfter {
			failures = 0
			continue
		}
		failures++
		if !sleep(p.life, backoff(failures), s.redial) {
			return
		}
	}
}

// dial connects to the provider, over TLS when the pool is secure (the
// handshake within the same DialTimeout as the TCP connection).
func (p *pool) dial() (*conn, error) {
	d := &net.Dialer{Timeout: p.client.opts.DialTimeout}
	if !p.secure {
		nc, err := d.DialContext(p.life, "tcp", p.addr)
		if err != nil {
			return nil, err
		}
		return newConn(p, nc), nil
	}
	ctx, cancel := context.WithTimeout(p.life, p.client.opts.DialTimeout)
	defer cancel()
	td := &tls.Dialer{NetDialer: d, Config: p.client.opts.TLS}
	nc, err := td.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return newConn(p, nc), nil
}

// backoff returns the wait before the next dial after failures in a row.
func backoff(failures int) time.Duration {
	d := backoffMax
	switch shift := failures - 1; {
	case failures > longAfter:
		d = backoffLong
	case shift < 16:
		d = min(backoffBase<<shift, backoffMax)
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or until wake says to stop waiting, or until life ends
// (false).
func sleep(life context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wake:
		return true
	case <-life.Done():
		return false
	}
}

// setReadonly records a readonly (or writable) event received on cn.
func (p *pool) setReadonly(cn *conn, readonly bool) {
	p.readonlyMu.Lock()
	defer p.readonlyMu.Unlock()
	cn.readonly.Store(readonly)
	if readonly {
		p.readonly.Store(true)
		return
	}
	p.readonly.Store(p.anyReadonly())
}

// connected clears the pool's readonly mark when a new connection is about
// to be used and no live connection of the pool is readonly: the provider
// restarted.
// A readonly connection that closes leaves the mark, as its provider is
// going away.
func (p *pool) connected() {
	p.readonlyMu.Lock()
	defer p.readonlyMu.Unlock()
	p.readonly.Store(p.anyReadonly())
}

func (p *pool) anyReadonly() bool {
	for _, s := range p.slots {
		if cn := s.conn.Load(); cn != nil && cn.usable() && cn.readonly.Load() {
			return true
		}
	}
	return false
}
