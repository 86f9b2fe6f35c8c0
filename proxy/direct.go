package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/h1"
)

const (
	// maxDirectBody is the largest request body the direct transport sends:
	// it fits in the socket buffers, so writing it whole before reading the
	// answer cannot block on a target that answers early without reading.
	maxDirectBody = maxReplayBody
	// maxInterimResponses bounds the 1xx answers skipped before the final one.
	maxInterimResponses = 5
	// maxResponseHeaderBytes bounds a response's header, as http.Transport's default does.
	maxResponseHeaderBytes = 10 << 20
)

// errTooManyInterim is the answer of a target that keeps sending 1xx responses.
var errTooManyInterim = errors.New("too many 1xx informational responses")

// aLongTimeAgo is a deadline in the past: it unblocks every read and write of a conn.
var aLongTimeAgo = time.Unix(1, 0)

// directTransport is an http.RoundTripper for plain http:// targets doing
// each HTTP/1.1 exchange on the calling goroutine, over a bounded pool of
// idle connections per target host. Its one goroutine of its own closes
// idle connections once they expire (and forgets hosts with none), until
// Close. Requests it does not handle (see handles) go to fallback.
type directTransport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	fallback    *http.Transport
	maxIdle     int           // idle connections kept per host
	maxOpen     int           // open connections per host; 0: no cap
	idleTimeout time.Duration // an idle connection older than this is closed
	now         func() time.Time

	mu     sync.Mutex
	hosts  map[string]*hostConns // by req.URL.Host
	closed bool

	stopSweep chan struct{} // closed by Close
	swept     chan struct{} // closed when the sweeper has returned
}

// hostConns is the connections of one target host. Its fields are guarded by directTransport.mu.
type hostConns struct {
	addr    string        // host:port to dial
	idle    []*directConn // oldest first
	open    int           // connections open or being dialed
	waiters []chan *directConn
}

// directConn is one connection with its buffers, reused across exchanges.
type directConn struct {
	conn      net.Conn
	host      *hostConns
	br        *bufio.Reader
	bw        *bufio.Writer
	read      int64 // bytes read from conn so far
	readLimit int64 // reads fail beyond this count
	idleSince time.Time
	reused    bool   // carried an exchange before
	interrupt func() // ends the reads and writes under way (made once, not per exchange)
}

var errResponseHeaderTooLarge = fmt.Errorf("response header is larger than %d bytes", maxResponseHeaderBytes)

// Read counts what the buffered reader takes from the connection.
func (c *directConn) Read(p []byte) (int, error) {
	if c.read >= c.readLimit {
		return 0, errResponseHeaderTooLarge
	}
	n, err := c.conn.Read(p)
	c.read += int64(n)
	return n, err
}

func newDirectTransport(fallback *http.Transport, maxIdle, maxOpen int, idleTimeout time.Duration) *directTransport {
	t := &directTransport{
		dial:        fallback.DialContext,
		fallback:    fallback,
		maxIdle:     maxIdle,
		maxOpen:     maxOpen,
		idleTimeout: idleTimeout,
		now:         time.Now,
		hosts:       make(map[string]*hostConns),
		stopSweep:   make(chan struct{}),
		swept:       make(chan struct{}),
	}
	go t.sweep(sweepInterval(idleTimeout))
	return t
}

// sweepInterval is how often idle connections are checked for expiry: a
// quarter of the idle timeout, so one closes at most a quarter late, but
// not more often than every 100 ms nor less than every 30 s.
func sweepInterval(idleTimeout time.Duration) time.Duration {
	return min(max(idleTimeout/4, 100*time.Millisecond), 30*time.Second)
}

// sweep closes expired idle connections every interval until Close.
func (t *directTransport) sweep(every time.Duration) {
	defer close(t.swept)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-t.stopSweep:
			return
		case <-tick.C:
			t.closeExpired()
		}
	}
}

// closeExpired closes the idle connections older than idleTimeout, and
// forgets hosts left with no connection (so a target no longer called
// costs nothing).
func (t *directTransport) closeExpired() {
	now := t.now()
	t.mu.Lock()
	var stale []*directConn
	for key, h := range t.hosts {
		stale = append(stale, t.expireLocked(h, now)...)
		if h.open == 0 && len(h.waiters) == 0 {
			delete(t.hosts, key)
		}
	}
	t.mu.Unlock()
	closeConns(stale)
}

// expireLocked takes the expired connections out of h's idle list (oldest
// first) and returns them, to be closed once t.mu is released.
func (t *directTransport) expireLocked(h *hostConns, now time.Time) []*directConn {
	n := 0
	for n < len(h.idle) && now.Sub(h.idle[n].idleSince) > t.idleTimeout {
		n++
	}
	if n == 0 {
		return nil
	}
	stale := slices.Clone(h.idle[:n])
	h.idle = append(h.idle[:0], h.idle[n:]...)
	h.open -= n
	return stale
}

// handles reports whether the direct transport sends req itself. It leaves
// to the standard transport: https, upgrades (the connection outlives the
// exchange), Expect: 100-continue (waiting for the interim answer), request
// trailers, and bodies of unknown length or above maxDirectBody (written whole
// before reading, a streamed or large body could block on a target that
// answers early, and could not be written while the answer is read).
func (t *directTransport) handles(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" || len(req.Header["Expect"]) > 0 ||
		hasToken(req.Header["Connection"], "upgrade") || len(req.Trailer) > 0 {
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	return req.ContentLength > 0 && req.ContentLength <= maxDirectBody && len(req.TransferEncoding) == 0
}

// RoundTrip implements http.RoundTripper.
func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	forceNew := false
	for {
		c, err := t.get(ctx, req.URL, forceNew)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		res, nothingReceived, err := t.exchange(ctx, c, req)
		if err == nil {
			return res, nil
		}
		// A reused connection that failed before any answer was most likely
		// closed by the target while idle: try once more on a new one.
		if forceNew || !c.reused || !nothingReceived || ctx.Err() != nil || !replayable(req) {
			closeBody(req)
			return nil, err
		}
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, fmt.Errorf("%w (getting the body again to retry: %w)", err, gerr)
			}
			retry := new(http.Request)
			*retry = *req
			retry.Body = body
			req = retry
		}
		forceNew = true
	}
}

// replayable reports whether req may be sent again after the target may have
// received it: it has a body it can send again (GetBody, set when the request
// may be retried), or none and an idempotent method, as http.Transport decides.
func replayable(req *http.Request) bool {
	if req.GetBody != nil {
		return true
	}
	if req.Body != nil && req.Body != http.NoBody {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return len(req.Header["Idempotency-Key"]) > 0 || len(req.Header["X-Idempotency-Key"]) > 0
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// exchange sends req on c and reads the answer's header. On failure it
// closes c and reports whether no byte of an answer had arrived.
func (t *directTransport) exchange(ctx context.Context, c *directConn, req *http.Request) (*http.Response, bool, error) {
	startRead := c.read
	// The deadline goes on the connection (zero: none, clearing the last
	// exchange's); only an end before it needs a watch. A deadlineCtx's
	// own end is its deadline or its parent's: the parent is watched,
	// and no timer is made.
	deadline, _ := ctx.Deadline()
	_ = c.conn.SetDeadline(deadline)
	watched := ctx
	if d, ok := ctx.(*deadlineCtx); ok {
		watched = d.parent
	}
	stop := exchange.AfterFunc(watched, c.interrupt)
	fail := func(err error) (*http.Response, bool, error) {
		stop()
		t.discard(c)
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return nil, c.read == startRead, err
	}
	// The usual request is written by hand (no per-request writer, one
	// flush with its body); anything else by req.Write.
	taken, err := h1.WriteRequest(c.bw, req)
	if !taken {
		err = req.Write(c.bw)
	}
	if err != nil {
		return fail(fmt.Errorf("writing the request: %w", err))
	}
	if err := c.bw.Flush(); err != nil {
		return fail(fmt.Errorf("writing the request: %w", err))
	}
	c.readLimit = c.read + maxResponseHeaderBytes
	var res *http.Response
	for interim := 0; ; interim++ {
		// The plain answer (one Content-Length, the usual fields) is read
		// in place; anything else by net/http, from the same bytes.
		var ok bool
		if res, ok = h1.ReadResponse(c.br, req); !ok {
			var err error
			if res, err = http.ReadResponse(c.br, req); err != nil {
				return fail(fmt.Errorf("reading the response: %w", err))
			}
		}
		if res.StatusCode >= 200 || res.StatusCode < 100 {
			break
		}
		if res.StatusCode == http.StatusSwitchingProtocols {
			return fail(errors.New("target switched protocols without an upgrade request"))
		}
		if interim == maxInterimResponses {
			return fail(errTooManyInterim)
		}
	}
	c.readLimit = 1<<63 - 1
	reusable := !req.Close && !res.Close
	if res.Body == http.NoBody {
		t.finish(c, stop, reusable)
		return res, false, nil
	}
	res.Body = &directBody{t: t, c: c, ctx: ctx, body: res.Body, stop: stop, reusable: reusable}
	return res, false, nil
}

// directBody is a response body: read to EOF, it returns its connection to
// the pool; closed before, it closes the connection.
type directBody struct {
	t        *directTransport
	c        *directConn
	ctx      context.Context
	body     io.ReadCloser
	stop     func() bool
	reusable bool
	done     atomic.Bool
}

func (b *directBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		if b.done.CompareAndSwap(false, true) {
			b.t.finish(b.c, b.stop, b.reusable)
		}
	case err != nil:
		if ctxErr := b.ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		if b.done.CompareAndSwap(false, true) {
			b.stop()
			b.t.discard(b.c)
		}
	}
	return n, err
}

// Close closes the connection unless the body was read to EOF. It does not
// drain the body: that could take as long as the target likes.
func (b *directBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		b.stop()
		b.t.discard(b.c)
	}
	return nil
}

// finish ends an exchange that read its answer whole: c goes back to the
// pool when reusable and nothing else touched it.
func (t *directTransport) finish(c *directConn, stop func() bool, reusable bool) {
	// stop fails when ctx ended: its deadline may be set on c.
	if !stop() || !reusable || c.br.Buffered() > 0 {
		t.discard(c)
		return
	}
	t.put(c)
}

// get returns an idle connection to host or a new one (always new when
// forceNew), waiting under ctx for a free slot when the host is at maxOpen.
func (t *directTransport) get(ctx context.Context, u *url.URL, forceNew bool) (*directConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host := u.Host
	t.mu.Lock()
	h := t.hosts[host]
	if h == nil {
		h = &hostConns{addr: dialAddr(u)}
		t.hosts[host] = h
	}
	var stale []*directConn
	if !forceNew {
		// Between two sweeps, an expired connection is not handed out.
		stale = t.expireLocked(h, t.now())
		if last := len(h.idle) - 1; last >= 0 {
			c := h.idle[last]
			h.idle[last] = nil
			h.idle = h.idle[:last]
			t.mu.Unlock()
			closeConns(stale)
			return c, nil
		}
	}
	if t.maxOpen == 0 || h.open < t.maxOpen {
		h.open++
		t.mu.Unlock()
		closeConns(stale)
		return t.dialConn(ctx, h)
	}
	wait := make(chan *directConn, 1)
	h.waiters = append(h.waiters, wait)
	t.mu.Unlock()
	closeConns(stale)

	select {
	case c := <-wait:
		return t.handedOver(ctx, h, c, forceNew)
	case <-ctx.Done():
		t.mu.Lock()
		for i, w := range h.waiters {
			if w == wait {
				h.waiters = append(h.waiters[:i], h.waiters[i+1:]...)
				t.mu.Unlock()
				return nil, fmt.Errorf("waiting for a connection to %s: %w", h.addr, ctx.Err())
			}
		}
		t.mu.Unlock()
		// Handed something in the meantime: give it back.
		if c := <-wait; c != nil {
			t.put(c)
		} else {
			t.release(h)
		}
		return nil, fmt.Errorf("waiting for a connection to %s: %w", h.addr, ctx.Err())
	}
}

// handedOver takes what a waiter received: a connection, or nil for a slot to dial in.
func (t *directTransport) handedOver(ctx context.Context, h *hostConns, c *directConn, forceNew bool) (*directConn, error) {
	if c == nil {
		return t.dialConn(ctx, h)
	}
	if !forceNew {
		return c, nil
	}
	// A new connection is needed: trade this one for its slot.
	_ = c.conn.Close()
	return t.dialConn(ctx, h)
}

// dialConn opens a connection to h in a slot already counted in h.open.
func (t *directTransport) dialConn(ctx context.Context, h *hostConns) (*directConn, error) {
	conn, err := t.dial(ctx, "tcp", h.addr)
	if err != nil {
		t.release(h)
		return nil, err // a *connectError: retries depend on it
	}
	c := &directConn{conn: conn, host: h, readLimit: 1<<63 - 1}
	c.interrupt = func() { _ = conn.SetDeadline(aLongTimeAgo) }
	c.br = bufio.NewReader(c)
	c.bw = bufio.NewWriter(conn)
	return c, nil
}

// put returns c to its host's pool, or hands it to a waiter.
func (t *directTransport) put(c *directConn) {
	h := c.host
	c.reused = true
	t.mu.Lock()
	if t.giveWaiter(h, c) {
		return
	}
	if t.closed || len(h.idle) >= t.maxIdle {
		h.open--
		t.mu.Unlock()
		_ = c.conn.Close()
		return
	}
	c.idleSince = t.now()
	h.idle = append(h.idle, c)
	t.mu.Unlock()
}

// discard closes c and frees its slot.
func (t *directTransport) discard(c *directConn) {
	_ = c.conn.Close()
	t.release(c.host)
}

// release frees a slot of h: a waiter gets it to dial in.
func (t *directTransport) release(h *hostConns) {
	t.mu.Lock()
	if t.giveWaiter(h, nil) {
		return
	}
	h.open--
	t.mu.Unlock()
}

// giveWaiter hands c (nil: a free slot to dial in) to h's first waiter,
// if there is one, and reports whether there was. Called with t.mu held;
// when it hands over, it unlocks t.mu first.
func (t *directTransport) giveWaiter(h *hostConns, c *directConn) bool {
	if len(h.waiters) == 0 {
		return false
	}
	wait := h.waiters[0]
	h.waiters = h.waiters[1:]
	t.mu.Unlock()
	wait <- c
	return true
}

// poolStats are the connections of a direct transport, over all its hosts.
type poolStats struct{ open, idle, waiting int }

// stats counts the transport's connections: open (in use, idle or being
// dialed), idle in the pool, and requests waiting for a connection slot.
func (t *directTransport) stats() poolStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	var st poolStats
	for _, h := range t.hosts {
		st.open += h.open
		st.idle += len(h.idle)
		st.waiting += len(h.waiters)
	}
	return st
}

// Close stops the sweeper and closes the idle connections; connections
// returned later are closed too.
func (t *directTransport) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	close(t.stopSweep)
	t.closed = true
	var idle []*directConn
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		h.open -= len(h.idle)
		h.idle = nil
	}
	t.mu.Unlock()
	closeConns(idle)
	<-t.swept
}

func closeConns(conns []*directConn) {
	for _, c := range conns {
		_ = c.conn.Close()
	}
}

// dialAddr returns the host:port of u, with the http port when it has none.
func dialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
