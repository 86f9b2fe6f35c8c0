// Package dubbo calls Dubbo providers over the dubbo protocol (TCP,
// hessian2): it keeps a few connections per provider address, multiplexes
// calls over them by request id, and turns an Invocation into a request
// frame and the response frame into a Result or an error.
//
// Connections are shared by every service of a provider. Each has one
// writer goroutine that drains a bounded queue of encoded frames into a
// bufio.Writer, flushing when the queue is empty, so calls under load share
// syscalls; responses are read by the goroutine that owns the connection and
// handed to the waiting call with one channel send. A connection that goes
// quiet gets heartbeats and is closed when nothing has been read for three
// heartbeat intervals; a lost connection is re-dialled in the background
// with jittered exponential backoff while calls to the address fail fast
// with ErrConnect.
package dubbo

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Client. Zero fields take the defaults given, which
// are Java Dubbo's.
type Options struct {
	// ConnsPerAddr is the number of multiplexed connections per provider
	// address. Default 1.
	ConnsPerAddr int
	// DialTimeout bounds one connection attempt. Default 3s.
	DialTimeout time.Duration
	// Heartbeat is the idle interval after which a heartbeat is sent; a
	// connection with nothing read for three intervals is closed. Default 60s.
	Heartbeat time.Duration
	// MaxPayload is the largest frame body sent or accepted. A request over
	// it fails before it is sent; a response over it closes its connection.
	// Default 8 MiB.
	MaxPayload int
	// MaxPending bounds the calls waiting for a response on one connection
	// (and its write queue); beyond it calls fail at once with ErrOverloaded.
	// Default 10000.
	MaxPending int
	// DubboVersion is the protocol version sent in requests. Default "2.0.2".
	DubboVersion string
	// Timeout is the deadline of a call whose context has none. Default 1s.
	Timeout time.Duration
	// Logger receives connection events. Default: discard.
	Logger *slog.Logger
	// Registerer receives the dubbogw_dubbo_* metrics. Nil: not registered.
	Registerer prometheus.Registerer
	// PerAddrMetrics labels the dubbogw_dubbo_* metrics with the provider
	// address (addr): 49 series for each address called, deleted by
	// Forget. Default false: no addr label, every provider counts into
	// the same 49 series, however many the registries list.
	PerAddrMetrics bool
	// TLS is the client configuration of connections to providers over
	// TLS: the CAs their certificates are verified against, a client
	// certificate for providers that ask for one (dubbo-go's always
	// do). Nil: the system's CAs, no client certificate. ServerName,
	// when empty, is the host of the address dialed.
	TLS *tls.Config
	// TLSAll dials every provider over TLS. Otherwise a provider is
	// dialed over TLS when its Target says so (its registry URL's
	// ssl-enabled=true, as Java Dubbo's sslEnabled protocols register).
	TLSAll bool
}

func (o Options) withDefaults() Options {
	if o.ConnsPerAddr <= 0 {
		o.ConnsPerAddr = 1
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 60 * time.Second
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = protocol.DefaultMaxPayload
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10000
	}
	if o.DubboVersion == "" {
		o.DubboVersion = protocol.DefaultDubboVersion
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Client calls Dubbo providers. It is safe for concurrent use; create one
// per process and Close it on shutdown.
type Client struct {
	opts        Options
	log         *slog.Logger
	metrics     *metrics
	descriptors descriptorCache

	buffers  sync.Pool // *buffer: request frames and response bodies
	encoders sync.Pool // *requestEncoder
	decoders sync.Pool // *hessian.Decoder
	calls    sync.Pool // *call

	// life ends when Close gives up waiting: it stops dials, backoff waits
	// and connections. wg counts the goroutines maintaining connections.
	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex // serialises pool creation against Close
	pools atomic.Pointer[map[string]addrPools]

	closed    atomic.Bool
	inflight  atomic.Int64
	drained   chan struct{}
	drainOnce sync.Once
}

// New returns a Client. It connects to a provider on the first call to it.
func New(opts Options) *Client {
	opts = opts.withDefaults()
	c := &Client{
		opts:        opts,
		log:         opts.Logger,
		metrics:     newMetrics(opts.Registerer, opts.PerAddrMetrics),
		descriptors: descriptorCache{m: make(map[string]string)},
		drained:     make(chan struct{}),
	}
	c.life, c.stop = context.WithCancel(context.Background())
	c.buffers.New = func() any { return &buffer{b: make([]byte, 0, 512)} }
	c.encoders.New = func() any { return newRequestEncoder() }
	c.decoders.New = func() any {
		d := hessian.NewDecoder(nil)
		d.SetLimits(hessian.Limits{MaxBytes: opts.MaxPayload})
		return d
	}
	c.calls.New = func() any { return &call{done: make(chan struct{}, 1)} }
	empty := map[string]addrPools{}
	c.pools.Store(&empty)
	return c
}

// Invoke calls inv on the provider at addr ("host:port") and waits for its
// response until ctx ends. The deadline of ctx (Options.Timeout when it has
// none) is also sent to the provider as the "timeout" attachment.
//
// Errors: *BusinessError when the method threw, *StatusError when the
// provider answered with an error status, and otherwise an error wrapping
// one of ErrConnect, ErrConnectionLost, ErrOverloaded, ErrClosed,
// ErrPayloadTooLarge or the context's error, naming the call and the address.
func (c *Client) Invoke(ctx context.Context, addr string, inv *Invocation) (*Result, error) {
	return c.InvokeTarget(ctx, Target{Addr: addr}, inv)
}

// Target is a provider to call: its address, and whether it is dialed
// over TLS (always, with Options.TLSAll).
type Target struct {
	Addr string // host:port
	TLS  bool
}

// InvokeTarget is Invoke on a provider that may speak TLS. An address
// called both ways (a provider registered again with ssl-enabled
// toggled, or its MetadataService called in plaintext) has a pool of
// connections for each.
func (c *Client) InvokeTarget(ctx context.Context, t Target, inv *Invocation) (*Result, error) {
	addr := t.Addr
	if !c.enter() {
		return nil, callError(addr, inv, ErrClosed)
	}
	defer c.leave()
	p, err := c.pool(addr, t.TLS || c.opts.TLSAll)
	if err != nil {
		return nil, callError(addr, inv, err)
	}
	start := time.Now()
	res, o, err := c.invoke(ctx, p, inv)
	p.metrics.observe(o, time.Since(start))
	return res, err
}

// Readonly reports whether the provider at addr said it is shutting down
// (the readonly event): a cluster should stop selecting it. Calls to it
// still work. It turns false when a new connection to addr is made.
func (c *Client) Readonly(addr string) bool {
	ps := (*c.pools.Load())[addr]
	return ps.plain != nil && ps.plain.readonly.Load() || ps.secure != nil && ps.secure.readonly.Load()
}

// addrPools are the connections to one address: in plaintext, over TLS,
// or both (a provider's MetadataService may be called in plaintext while
// its services are called over TLS: neither disturbs the other's).
type addrPools struct{ plain, secure *pool }

func (ps addrPools) of(secure bool) *pool {
	if secure {
		return ps.secure
	}
	return ps.plain
}

func (ps addrPools) with(p *pool) addrPools {
	if p.secure {
		ps.secure = p
	} else {
		ps.plain = p
	}
	return ps
}

func (ps addrPools) each(f func(*pool)) {
	for _, p := range []*pool{ps.plain, ps.secure} {
		if p != nil {
			f(p)
		}
	}
}

// Close stops the Client: new calls fail with ErrClosed at once, calls in
// flight get their responses until ctx ends, then the ones left fail with
// ErrClosed and every connection and goroutine of the Client is closed.
// The error is ctx's when calls had to be failed.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed.Store(true)
	c.mu.Unlock()
	if c.inflight.Load() == 0 {
		c.markDrained()
	}
	var err error
	select {
	case <-c.drained: // checked first: an expired ctx must not hide a drained client
	default:
		select {
		case <-c.drained:
		case <-ctx.Done():
			err = fmt.Errorf("dubbo client: closing with %d calls in flight, failed with ErrClosed: %w", c.inflight.Load(), ctx.Err())
		}
	}
	c.stop()
	c.wg.Wait()
	return err
}

// enter counts a call in flight unless the Client is closed. A call counted
// before Close sets closed is waited for; one counted after backs out.
func (c *Client) enter() bool {
	c.inflight.Add(1)
	if c.closed.Load() {
		c.leave()
		return false
	}
	return true
}

func (c *Client) leave() {
	if c.inflight.Add(-1) == 0 && c.closed.Load() {
		c.markDrained()
	}
}

func (c *Client) markDrained() { c.drainOnce.Do(func() { close(c.drained) }) }

// pool returns the connections of addr, over TLS when secure, creating
// them on first use. The map is copied on write so calls look it up
// without a lock.
func (c *Client) pool(addr string, secure bool) (*pool, error) {
	if p := (*c.pools.Load())[addr].of(secure); p != nil {
		return p, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("bad provider address: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	old := *c.pools.Load()
	if p := old[addr].of(secure); p != nil {
		return p, nil
	}
	p := newPool(c, addr, secure)
	pools := make(map[string]addrPools, len(old)+1)
	maps.Copy(pools, old)
	pools[addr] = old[addr].with(p)
	c.pools.Store(&pools)
	p.start()
	return p, nil
}

// Addrs lists the provider addresses the Client holds connections (or
// reconnect loops) for.
func (c *Client) Addrs() []string {
	return slices.Sorted(maps.Keys(*c.pools.Load()))
}

// Forget closes everything the Client holds for addr: its connections
// (calls still pending on them fail with ErrClosed) and its reconnect
// loop. A registry that saw the provider go away calls it, so a removed
// provider is not redialled for ever; a later call to addr connects anew.
func (c *Client) Forget(addr string) {
	c.mu.Lock()
	old := *c.pools.Load()
	ps, ok := old[addr]
	if !ok {
		c.mu.Unlock()
		return
	}
	pools := maps.Clone(old)
	delete(pools, addr)
	c.pools.Store(&pools)
	c.mu.Unlock()
	ps.each(func(p *pool) {
		p.stop()
		p.metrics.forget()
	})
}

// Redial makes the connections to addr that are waiting out a reconnect
// backoff dial again now. A registry that sees a provider register again
// at an address (a restart on the same port) calls it, so the first calls
// to the new process do not wait for a backoff earned by the old one. It
// does nothing for an address the Client holds nothing for, and dials at
// most once per call and connection.
func (c *Client) Redial(addr string) {
	(*c.pools.Load())[addr].each(func(p *pool) {
		for _, s := range p.slots {
			select {
			case s.redial <- struct{}{}:
			default:
			}
		}
	})
}

// callError names the call and the address in err.
func callError(addr string, inv *Invocation, err error) error {
	return fmt.Errorf("dubbo call %s.%s at %s: %w", inv.Interface, inv.Method, addr, err)
}

// buffer is a pooled byte slice: a request frame on its way to the writer,
// or a response body on its way to the caller.
type buffer struct{ b []byte }

// maxPooledBuffer is the largest buffer put back into the pool, so one huge
// payload does not stay pinned.
const maxPooledBuffer = 64 << 10

func (c *Client) getBuffer() *buffer { return c.buffers.Get().(*buffer) }

func (c *Client) putBuffer(b *buffer) {
	if b == nil || cap(b.b) > maxPooledBuffer {
		return
	}
	b.b = b.b[:0]
	c.buffers.Put(b)
}

// call is a request waiting for its response. Whoever removes it from its
// connection's pending map fills hdr and body, or err, then sends on done.
type call struct {
	done chan struct{} // capacity 1: the one send never blocks
	hdr  protocol.Header
	body *buffer
	err  error
}

func (c *Client) getCall() *call { return c.calls.Get().(*call) }

func (c *Client) putCall(cl *call) {
	cl.hdr, cl.body, cl.err = protocol.Header{}, nil, nil
	c.calls.Put(cl)
}
