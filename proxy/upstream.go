// Package proxy is the gateway's HTTP upstream: it forwards requests to one
// of a named group of HTTP targets through net/http/httputil.ReverseProxy,
// picking the target per attempt, retrying idempotent requests on another
// target and ejecting targets that keep failing (passive health checking).
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/observe"
)

const (
	// maxReplayBody is the largest request body buffered so that a retry can send it again.
	maxReplayBody = 64 << 10
	// maxDrain bounds how much of a retried response body is read so its connection can be reused.
	maxDrain = 4 << 10
	// copyBufferSize is the size of the buffers copying response bodies.
	copyBufferSize = 32 << 10
)

// Upstream sends requests to the targets of one configured upstream.
// It is safe for concurrent use.
type Upstream struct {
	name         string
	targets      []*target
	policy       policy
	timeout      time.Duration
	preserveHost bool
	transport    *http.Transport
	direct       *directTransport // nil with transport: standard; falls back to transport
	buffers      bufferPool

	retries      int
	retryConnect bool       // retry attempts that failed to connect
	retryStatus  [10]uint64 // bit set of retryable status codes 0..639
	retryMethods []string

	maxFailures           int64 // 0: ejection disabled
	ejection, maxEjection time.Duration
	ejected               atomic.Int32 // targets currently ejected

	closed atomic.Bool
	now    func() time.Time

	metrics     *Metrics
	series      upstreamSeries
	grpcMethods grpcMethods // the methods its gRPC calls are counted under
	log         *slog.Logger
	failures    observe.LogSampler // one WARN a second about failed exchanges, with how many were held back
	errorLog    *log.Logger        // ReverseProxy's own messages, through log
	tracer      trace.Tracer       // nil: no spans
}

// New builds the upstream name from cfg, treating zero values as the defaults
// documented in Config, and refusing what Config.Validate refuses. m may
// be nil (metrics are then not exported); log may be nil (logs are then
// discarded).
func New(name string, cfg *Config, m *Metrics, log *slog.Logger, opts ...Option) (*Upstream, error) {
	if name == "" {
		return nil, errors.New("upstream name is empty")
	}
	if cfg == nil {
		return nil, errors.New("upstream config is missing")
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The defaults of fields left unset, as config writes them; cfg is not
	// modified (Defaults sets the targets' weights in place).
	c := *cfg
	c.Targets = slices.Clone(cfg.Targets)
	c.Defaults()
	cfg = &c
	if err := config.Check("", cfg.Validate); err != nil {
		return nil, err
	}
	u := &Upstream{
		name:         name,
		timeout:      cfg.Timeout.D(),
		preserveHost: cfg.PreserveHost,
		ejection:     cfg.PassiveHealth.Ejection.D(),
		maxEjection:  cfg.PassiveHealth.MaxEjection.D(),
		now:          time.Now,
		metrics:      m,
		log:          log,
		errorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	for _, o := range opts {
		o(u)
	}
	var err error
	if u.policy, err = newPolicy(cfg.Policy, rand.IntN); err != nil {
		return nil, err
	}
	u.parseRetry(&cfg.Retry)
	u.maxFailures = int64(*cfg.PassiveHealth.MaxFailures)
	transport, err := newTransport(cfg)
	if err != nil {
		return nil, err
	}
	if err := u.parseTargets(cfg.Targets); err != nil {
		return nil, err
	}
	u.transport = transport
	if cfg.Transport != TransportStandard && cfg.Protocol != ProtocolHTTP2 {
		u.direct = newDirectTransport(transport, transport.MaxIdleConnsPerHost, transport.MaxConnsPerHost, transport.IdleConnTimeout)
	}
	u.series = m.acquireUpstream(name)
	if u.direct != nil {
		m.direct.add(u.direct, name)
	}
	for _, t := range u.targets {
		m.initTarget(&t.series, name, t.url.String())
		t.series.healthy.Set(1)
	}
	return u, nil
}

// parseTargets builds the targets of a validated configuration.
func (u *Upstream) parseTargets(targets []Target) error {
	for i, tc := range targets {
		tu, err := url.Parse(tc.URL)
		if err != nil {
			return fmt.Errorf("targets[%d].url: %w", i, err)
		}
		key := tu.String()
		weight := tc.Weight
		t := &target{
			url:         tu,
			label:       u.name + " " + key,
			basePath:    strings.TrimSuffix(tu.Path, "/"),
			escapedBase: strings.TrimSuffix(tu.EscapedPath(), "/"),
			rawBase:     tu.RawPath != "",
			weight:      weight,
			backoff:     u.ejection,
		}
		t.spanAttrs = targetAttributes(u.name, t)
		u.targets = append(u.targets, t)
	}
	return nil
}

// parseRetry reads a validated retry configuration.
func (u *Upstream) parseRetry(r *Retry) {
	u.retries = *r.Retries
	for _, s := range r.On {
		if s == RetryOnConnectFailure {
			u.retryConnect = true
			continue
		}
		code, _ := strconv.Atoi(s) // validated: 500..599
		u.retryStatus[code/64] |= 1 << (code % 64)
	}
	u.retryMethods = r.Methods
}

func newTransport(cfg *Config) (*http.Transport, error) {
	p := cfg.Pool
	maxIdle := p.MaxIdlePerTarget
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout.D(), KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy: nil, // never from the environment
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, &connectError{err: err}
			}
			return c, nil
		},
		MaxIdleConnsPerHost:   maxIdle,
		MaxConnsPerHost:       p.MaxPerTarget,
		IdleConnTimeout:       p.IdleTimeout.D(),
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A proxy passes content encodings through instead of negotiating its own.
		DisableCompression: true,
		Protocols:          new(http.Protocols),
	}
	if cfg.Protocol == ProtocolHTTP2 {
		// Prior knowledge for http:// targets, ALPN h2 for https:// ones;
		// a connection that stays silent is probed with PINGs and closed
		// when they go unanswered.
		t.Protocols.SetUnencryptedHTTP2(true)
		t.Protocols.SetHTTP2(true)
		t.HTTP2 = &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second}
	} else {
		t.Protocols.SetHTTP1(true)
	}
	if cfg.TLS.Set() {
		tc, err := cfg.TLS.Build()
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		t.TLSClientConfig = tc
	}
	return t, nil
}

// connectError is a failure to open a connection to a target: nothing was sent.
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// send sends one attempt through the upstream's transport.
func (u *Upstream) send(req *http.Request) (*http.Response, error) {
	if u.direct != nil {
		return u.direct.RoundTrip(req)
	}
	return u.transport.RoundTrip(req)
}

// Name returns the upstream's name.
func (u *Upstream) Name() string { return u.name }

// Close closes idle connections (and those that become idle after it) and
// deletes the upstream's metric series unless another Upstream of the same
// name still uses them. Requests in flight complete. Close owns no goroutine.
func (u *Upstream) Close() {
	if !u.closed.CompareAndSwap(false, true) {
		return
	}
	u.transport.CloseIdleConnections()
	if u.direct != nil {
		u.direct.Close()
		u.metrics.direct.remove(u.direct)
	}
	for _, t := range u.targets {
		u.metrics.release(u.name, t.series.target)
	}
	u.metrics.release(u.name, "")
}

// HandlerOption configures a Handler.
type HandlerOption func(*handler)

// Upgrades sets the protocols a client may upgrade to through the handler
// (its Upgrade header, tunnelled after the target's 101). A request asking
// for any other protocol, alone or among others, is forwarded as a plain
// request without its Upgrade header, as RFC 9110 section 7.8 lets a server
// ignore it: no tunnel opens. Without this option: websocket only.
func Upgrades(protocols ...string) HandlerOption {
	return func(h *handler) { h.upgrades = protocols }
}

// Handler returns the handler proxying requests to the upstream. timeout
// bounds the whole exchange, or for an upgrade request (WebSocket) only the
// wait for the target's answer; 0 means the upstream's timeout. The request
// path is sent as is, below the target's base path.
func (u *Upstream) Handler(timeout time.Duration, opts ...HandlerOption) http.Handler {
	if timeout <= 0 {
		timeout = u.timeout
	}
	h := &handler{
		u:              u,
		timeout:        timeout,
		timeoutMessage: fmt.Sprintf("upstream %s timed out after %s", u.name, timeout),
		upgrades:       []string{"websocket"},
	}
	for _, o := range opts {
		o(h)
	}
	h.proxy = &httputil.ReverseProxy{
		Rewrite:      u.rewrite,
		Transport:    &roundTripper{u: u, awaitUpgrade: timeout},
		BufferPool:   &u.buffers,
		ErrorLog:     u.errorLog,
		ErrorHandler: h.serveError,
	}
	return h
}

// rewrite prepares an upgrade request, which ReverseProxy still sends (see
// forward.go for the others); the target is chosen per attempt by the roundTripper.
func (u *Upstream) rewrite(pr *httputil.ProxyRequest) {
	forwardedFrom(pr.In).set(pr.In, pr.Out.Header, new(headerValues))
	if !u.preserveHost {
		pr.Out.Host = "" // the transport sends the target's host
	}
}

type handler struct {
	u              *Upstream
	timeout        time.Duration
	timeoutMessage string
	proxy          *httputil.ReverseProxy
	upgrades       []string // protocols a client may upgrade to
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if upgradeType(r.Header) != "" {
		if h.allowsUpgrade(r.Header["Upgrade"]) {
			// ReverseProxy closes an upgraded connection when the request context
			// ends: the roundTripper bounds only the wait for the target's answer.
			h.proxy.ServeHTTP(w, r)
			return
		}
		// forward drops Upgrade with the other hop-by-hop headers.
		h.u.log.Debug("upgrade not allowed on this route; serving the request as plain HTTP",
			"upstream", h.u.name, "upgrade", r.Header["Upgrade"])
	}
	h.forward(w, r)
}

// allowsUpgrade reports whether every protocol of an Upgrade header is
// one the handler tunnels.
func (h *handler) allowsUpgrade(values []string) bool {
	n := 0
	for _, v := range values {
		for v != "" {
			var p string
			p, v, _ = strings.Cut(v, ",")
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			n++
			if !h.tunnels(p) {
				return false
			}
		}
	}
	return n > 0
}

func (h *handler) tunnels(protocol string) bool {
	for _, a := range h.upgrades {
		if asciiEqualFold(a, protocol) {
			return true
		}
	}
	return false
}

// serveError answers a request whose exchange with the upstream failed.
func (h *handler) serveError(w http.ResponseWriter, r *http.Request, err error) {
	u := h.u
	targetURL := ""
	var ae *attemptError
	if errors.As(err, &ae) {
		targetURL = ae.target.series.target
		err = ae.err
	}
	ctxErr := r.Context().Err()
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		u.log.Debug("upstream request body too large", "upstream", u.name, "target", targetURL, "error", err)
		exchange.Fail(w, r, exchange.CodeTooLarge,
			"request body is larger than "+strconv.FormatInt(tooLarge.Limit, 10)+" bytes")
	case exchange.BodyFailure(r, err) != nil:
		// The client's body failed (checked before the exchange's own
		// error, which may be the cancellation it caused): its fault,
		// answered 400, 408 or not at all, and logged at debug level only,
		// as clients choose how many they send.
		u.log.Debug("client request body failed", "upstream", u.name, "target", targetURL, "error", exchange.BodyFailure(r, err))
		exchange.WriteBodyError(w, r, err)
	case errors.Is(ctxErr, context.DeadlineExceeded) && clientStillSending(r):
		// The timeout passed while the client was still sending its body:
		// the client's doing, not the target's.
		u.log.Debug("request body not complete within the route's timeout", "upstream", u.name, "target", targetURL, "timeout", h.timeout)
		exchange.WriteBodyError(w, r, &exchange.BodyError{Kind: exchange.BodyTimeout, Err: ctxErr})
	case errors.Is(err, errAwaitUpgrade) || errors.Is(ctxErr, context.DeadlineExceeded):
		if ok, heldBack := u.failures.Allow(u.now()); ok {
			u.log.Warn("upstream timed out", "upstream", u.name, "target", targetURL, "timeout", h.timeout, "error", err, "suppressed", heldBack)
		}
		exchange.Fail(w, r, exchange.CodeTimeout, h.timeoutMessage)
	case errors.Is(ctxErr, context.Canceled):
		// The client went away: nobody reads an answer.
		u.log.Debug("client closed the request", "upstream", u.name, "target", targetURL, "error", err)
		if info := exchange.From(r.Context()); info != nil {
			info.ErrorCode = exchange.CodeClientClosed
		}
	default:
		if ok, heldBack := u.failures.Allow(u.now()); ok {
			u.log.Warn("upstream request failed", "upstream", u.name, "target", targetURL, "error", err, "suppressed", heldBack)
		}
		msg := "upstream " + u.name + ": " + err.Error()
		if targetURL != "" {
			msg = "upstream " + u.name + " target " + targetURL + ": " + err.Error()
		}
		exchange.Fail(w, r, exchange.CodeBadGateway, msg)
	}
}

// bufferPool lends ReverseProxy the buffers it copies response bodies with.
type bufferPool struct{ pool sync.Pool }

// Get implements httputil.BufferPool.
func (b *bufferPool) Get() []byte {
	if buf, ok := b.pool.Get().(*[copyBufferSize]byte); ok {
		return buf[:]
	}
	return make([]byte, copyBufferSize)
}

// Put implements httputil.BufferPool.
func (b *bufferPool) Put(buf []byte) {
	if len(buf) == copyBufferSize {
		b.pool.Put((*[copyBufferSize]byte)(buf))
	}
}
