// Package redisclient is the gateway's Redis client. It wraps one rueidis
// client (RESP3, auto-pipelined, with server-assisted client-side caching)
// so that no Redis command can hurt the request path: every command has a
// deadline, a bounded number of commands is pending at once, a circuit
// breaker fails commands at once while Redis keeps failing, and a Redis
// that is down at start is connected in the background while commands fail
// at once with ErrUnavailable.
package redisclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/config"
)

// Errors of commands that never reached Redis. Timeouts satisfy
// errors.Is(err, context.DeadlineExceeded).
var (
	// ErrUnavailable: the client is not connected yet (Redis was down at
	// start), or it is closed.
	ErrUnavailable = errors.New("redis is not connected")
	// ErrBreakerOpen: Redis failed MaxFailures commands in a row; commands
	// fail at once until a probe succeeds.
	ErrBreakerOpen = errors.New("redis circuit breaker is open")
	// ErrOverloaded: MaxPending commands were pending until the deadline.
	ErrOverloaded = errors.New("too many redis commands pending")
)

const (
	// maxPendingLimit bounds MaxPending: the rueidis ring of every
	// connection is sized for it.
	maxPendingLimit = 1 << 16

	// Backoff of the background connection attempts.
	minConnectBackoff = 50 * time.Millisecond
	maxConnectBackoff = 2 * time.Second
)

// Client is the gateway's Redis client, safe for concurrent use. Create it
// with New and stop it with Close.
type Client struct {
	log      *slog.Logger
	timeout  time.Duration // of a command whose context has no sooner deadline
	cacheTTL time.Duration // client-side cache TTL; 0 = no client-side cache
	sem      chan struct{} // one token per pending command: MaxPending
	breaker  breaker
	metrics  *metrics
	tracer   trace.Tracer // nil: no spans

	get, evalsha *commandMetrics
	commands     boundedMap[*commandMetrics] // Do's command names
	scripts      boundedMap[string]          // script text → SHA1

	rc        atomic.Pointer[rueidisClient] // nil until connected
	lastHeard atomic.Int64                  // UnixNano when Redis last sent anything on any connection
	connected atomic.Bool
	closed    atomic.Bool

	connectedCh chan struct{}      // closed once connected
	lifetime    context.Context    // canceled by Close
	stop        context.CancelFunc // cancels lifetime
	connectDone chan struct{}      // closed when the connecting goroutine ends
	closeOnce   sync.Once
}

// rueidisClient holds the interface so that it can sit in an atomic.Pointer.
type rueidisClient struct{ rueidis.Client }

// New validates cfg and returns a client that connects in the background:
// Redis being down is not an error, commands fail with ErrUnavailable until
// the client is connected (WaitConnected waits for it). Zero fields of cfg
// take the defaults of config.Redis. Metrics go to reg (none when nil).
func New(cfg config.Redis, reg prometheus.Registerer, log *slog.Logger, opts ...Option) (*Client, error) {
	opt, s, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		log:         log.With("component", "redis"),
		timeout:     s.timeout,
		cacheTTL:    s.cacheTTL,
		sem:         make(chan struct{}, s.maxPending),
		metrics:     newMetrics(reg),
		connectedCh: make(chan struct{}),
		connectDone: make(chan struct{}),
	}
	for _, o := range opts {
		o(c)
	}
	c.breaker = breaker{maxFailures: int64(s.maxFailures), openFor: s.openFor, onChange: c.breakerChanged}
	c.get = c.metrics.command("get")
	c.evalsha = c.metrics.command("evalsha")
	c.commands.limit, c.scripts.limit = 64, 256
	c.metrics.pendingLimit.Set(float64(s.maxPending))
	c.metrics.breakerState.Set(stateClosed)
	c.metrics.connected.Set(0)
	c.lifetime, c.stop = context.WithCancel(context.Background())
	opt.DialCtxFn = c.dial
	opt.NewCacheStoreFn = newCacheStore(&c.metrics.cache)
	go c.connect(opt)
	return c, nil
}

// settings are the validated values of config.Redis the Client keeps.
type settings struct {
	timeout     time.Duration
	cacheTTL    time.Duration
	maxPending  int
	maxFailures int
	openFor     time.Duration
}

// compile checks cfg, applies the defaults and builds the rueidis options.
func compile(cfg config.Redis) (rueidis.ClientOption, settings, error) {
	var opt rueidis.ClientOption
	var s settings
	var addrs []string
	for a := range strings.SplitSeq(cfg.Address, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return opt, s, fmt.Errorf("redis address %q is not host:port", a)
		}
		addrs = append(addrs, a)
	}
	cfg.Defaults() // the fields left unset, as config writes them (cfg is a copy)
	dialTimeout := cfg.DialTimeout.D()
	s.timeout = cfg.Timeout.D()
	pipelines := cfg.Pipelines
	s.maxPending = cfg.MaxPending
	s.maxFailures = cfg.Breaker.MaxFailures
	s.openFor = cfg.Breaker.OpenFor.D()
	cacheBytes := int64(cfg.ClientCache.MaxBytes)
	cacheOn := *cfg.ClientCache.Enabled
	if cacheOn {
		s.cacheTTL = cfg.ClientCache.TTL.D()
	}
	switch {
	case dialTimeout < 0 || s.timeout < 0 || s.openFor < 0 || s.cacheTTL < 0:
		return opt, s, errors.New("redis durations must not be negative")
	case cfg.DB < 0:
		return opt, s, fmt.Errorf("redis db must not be negative, got %d", cfg.DB)
	case cfg.DB != 0 && len(addrs) > 1:
		return opt, s, errors.New("redis db must be 0 for a cluster (several addresses)")
	case pipelines < 1 || pipelines > 1<<rueidis.MaxPipelineMultiplex || pipelines&(pipelines-1) != 0:
		return opt, s, fmt.Errorf("redis pipelines must be a power of two from 1 to %d, got %d", 1<<rueidis.MaxPipelineMultiplex, pipelines)
	case s.maxPending < 1 || s.maxPending > maxPendingLimit:
		return opt, s, fmt.Errorf("redis max_pending must be from 1 to %d, got %d", maxPendingLimit, s.maxPending)
	case s.maxFailures < 1:
		return opt, s, fmt.Errorf("redis breaker max_failures must be at least 1, got %d", s.maxFailures)
	case cacheBytes < 1 || cacheBytes > 1<<40:
		return opt, s, fmt.Errorf("redis client_cache max_bytes must be from 1 byte to 1TiB, got %d", cacheBytes)
	}

	// Commands are spread at random over a node's connections; each
	// connection's ring holds its share of MaxPending with room to spare,
	// so that queuing a command never blocks (a full rueidis ring would
	// ignore the deadline).
	perConn := s.maxPending/pipelines + s.maxPending/(4*pipelines) + 64
	password := cfg.Password
	if cfg.PasswordFile != "" {
		var err error
		if password, err = config.ReadSecretFile(cfg.PasswordFile); err != nil {
			return opt, s, fmt.Errorf("redis password_file: %w", err)
		}
	}
	var tlsConfig *tls.Config
	if cfg.TLS.Enabled {
		var err error
		if tlsConfig, err = cfg.TLS.Build(); err != nil {
			return opt, s, fmt.Errorf("redis tls: %w", err)
		}
	}
	opt = rueidis.ClientOption{
		InitAddress:       addrs,
		ForceSingleClient: len(addrs) == 1,
		Username:          cfg.Username,
		Password:          password,
		TLSConfig:         tlsConfig, // handed to dial, which speaks it
		SelectDB:          cfg.DB,
		ClientName:        "dubbogw",
		Dialer:            net.Dialer{Timeout: dialTimeout, KeepAlive: time.Second},
		// A connection that cannot answer a PING within this time is
		// closed; rueidis then reconnects on the next command.
		ConnWriteTimeout:  max(dialTimeout, 10*s.timeout),
		PipelineMultiplex: pipelineMultiplex(pipelines),
		RingScaleEachConn: max(8, bits.Len(uint(perConn-1))),
		BlockingPoolSize:  64,
		CacheSizeEachConn: int(cacheBytes),
		DisableCache:      !cacheOn,
		// A command that failed is not sent again: its deadline is the
		// caller's, and the breaker needs to see the failure.
		DisableRetry: true,
		// Always through the pipeline: a deadline then abandons the reply
		// instead of closing the connection (and dropping its cache).
		AlwaysPipelining: true,
	}
	return opt, s, nil
}

// pipelineMultiplex is rueidis's PipelineMultiplex for a number of
// connections (a power of two): their log2, except that one connection is
// -1 (0 would let rueidis pick by GOMAXPROCS).
func pipelineMultiplex(connections int) int {
	if connections == 1 {
		return -1
	}
	return bits.Len(uint(connections)) - 1
}

// dial connects to one Redis address; Close cancels it. The connection
// tells the client whenever Redis sends something (heard).
func (c *Client) dial(ctx context.Context, addr string, d *net.Dialer, tlsConfig *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.lifetime, cancel)
	defer stop()
	if d.Timeout > 0 {
		var cancelDial context.CancelFunc
		ctx, cancelDial = context.WithTimeout(ctx, d.Timeout) // the handshake too
		defer cancelDial()
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		cfg := tlsConfig
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with redis %s: %w", addr, err)
		}
		conn = tc
	}
	return &heardConn{Conn: conn, heard: c.heard}, nil
}

// heardConn is a connection to Redis that reports every read that brought
// bytes: whether Redis is alive is judged by what it sends, not by whether
// a caller's goroutine ran before its deadline.
type heardConn struct {
	net.Conn
	heard func()
}

func (h *heardConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if n > 0 {
		h.heard()
	}
	return n, err
}

// heard records that Redis sent something; an open breaker then lets the
// next command probe at once instead of waiting out open_for.
func (c *Client) heard() {
	c.lastHeard.Store(time.Now().UnixNano())
	c.breaker.probeSoon()
}

// silentSince reports whether Redis has sent nothing since t.
func (c *Client) silentSince(t time.Time) bool {
	return c.lastHeard.Load() < t.UnixNano()
}

// connect creates the rueidis client, retrying with backoff while Redis
// cannot be reached, until it succeeds or Close is called.
func (c *Client) connect(opt rueidis.ClientOption) {
	defer close(c.connectDone)
	backoff := minConnectBackoff
	for attempt := 1; ; attempt++ {
		rc, err := rueidis.NewClient(opt)
		if err == nil {
			c.rc.Store(&rueidisClient{rc})
			c.setConnected(true)
			close(c.connectedCh)
			c.log.Info("redis connected", "address", strings.Join(opt.InitAddress, ","), "attempts", attempt)
			return
		}
		if rc != nil {
			rc.Close()
		}
		if c.lifetime.Err() != nil {
			return
		}
		level := slog.LevelDebug
		if attempt == 1 {
			level = slog.LevelWarn
		}
		c.log.Log(c.lifetime, level, "redis unreachable, connecting in the background; commands fail until then",
			"address", strings.Join(opt.InitAddress, ","), "attempt", attempt, "error", err)
		wait := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(wait)
		select {
		case <-c.lifetime.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxConnectBackoff)
	}
}

// WaitConnected waits until the client is connected, ctx is done or the
// client is closed.
func (c *Client) WaitConnected(ctx context.Context) error {
	select {
	case <-c.connectedCh:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for redis to connect: %w", ctx.Err())
	case <-c.lifetime.Done():
		return fmt.Errorf("waiting for redis to connect: %w", ErrUnavailable)
	}
}

// Healthy reports whether commands can be expected to work: the client is
// connected and the breaker closed.
func (c *Client) Healthy() bool {
	return !c.closed.Load() && c.connected.Load() && c.breaker.closed()
}

// State is the client's connection and breaker, for the admin summary.
type State struct {
	Connected bool `json:"connected"`
	// Breaker is "closed", "open" or "half_open" (a probe may go through).
	Breaker string `json:"breaker"`
}

// State reports whether the client is connected and its breaker's state.
func (c *Client) State() State {
	st := State{Connected: !c.closed.Load() && c.connected.Load(), Breaker: "closed"}
	switch c.breaker.state.Load() {
	case stateOpen:
		st.Breaker = "open"
	case stateProbing:
		st.Breaker = "half_open"
	}
	return st
}

// Timeout is the deadline the client gives a command whose context has no
// sooner one.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Close stops connecting, fails new commands with ErrUnavailable and
// closes the connections once the pending commands are done (each within
// its deadline).
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.stop()
		<-c.connectDone
		if rc := c.rc.Load(); rc != nil {
			rc.Close()
		}
		c.setConnected(false)
	})
}

// setConnected records whether Redis is reachable, logging changes.
func (c *Client) setConnected(v bool) {
	if c.connected.Load() == v || c.connected.Swap(v) == v {
		return
	}
	if v {
		c.metrics.connected.Set(1)
		return
	}
	c.metrics.connected.Set(0)
	if !c.closed.Load() {
		c.log.Warn("redis connection lost; rueidis reconnects on the next command")
	}
}

func (c *Client) breakerChanged(state int32) {
	c.metrics.breakerState.Set(float64(state))
	switch state {
	case stateOpen:
		c.log.Warn("redis circuit breaker open: commands fail at once", "open_for", c.breaker.openFor)
	case stateClosed:
		c.log.Info("redis circuit breaker closed")
	}
}

// boundedMap is a concurrent string-keyed cache of at most limit entries;
// beyond, values are computed again each time.
type boundedMap[V any] struct {
	m     sync.Map
	n     atomic.Int32
	limit int32
}

func (b *boundedMap[V]) get(key string, compute func(string) V) V {
	if v, ok := b.m.Load(key); ok {
		return v.(V)
	}
	v := compute(key)
	if b.n.Load() < b.limit {
		if _, loaded := b.m.LoadOrStore(key, v); !loaded {
			b.n.Add(1)
		}
	}
	return v
}
