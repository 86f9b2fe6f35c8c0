// Package gateway runs dubbogw: the data-plane and admin listeners, the route
// table (router, filter chains, upstreams) swapped atomically on reload,
// admission control, and the lifecycle (start, reload, drain).
package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/admission"
	_ "github.com/dubbogw/dubbogw/all" // every kind the configuration names
	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/filter/accesslog"
	"github.com/dubbogw/dubbogw/internal/h1"
	"github.com/dubbogw/dubbogw/observe"
	"github.com/dubbogw/dubbogw/proxy"
	"github.com/dubbogw/dubbogw/redisclient"
	"github.com/dubbogw/dubbogw/tracing"
	"github.com/dubbogw/dubbogw/triple"
)

// Options are what a Gateway is made from.
type Options struct {
	// Load returns a validated config; it is called at start and on every reload.
	Load func() (*config.Config, error)
	// WatchPath is the config file polled when reload.watch is on; empty disables watching.
	WatchPath string
	// Source, when set, is where Load reads from when that is not a file
	// (configsource's ZooKeeper node): Start runs its Watch until
	// Shutdown, whatever reload.watch says, and it is told what became
	// of every load.
	Source Source
	// Logger is the process logger; LogLevel, when set, follows log.level on reload.
	Logger   *slog.Logger
	LogLevel *slog.LevelVar
	// Registry receives every metric; a fresh one is made when nil.
	Registry *prometheus.Registry
	// SpanExporter, when set and tracing is enabled, receives every span
	// as it ends instead of the OTLP/HTTP exporter (tests).
	SpanExporter sdktrace.SpanExporter
}

// Source is a configuration source that says when it changed.
type Source interface {
	// Watch calls changed whenever the configuration may have changed,
	// until stop is closed.
	Watch(stop <-chan struct{}, changed func())
	// Loaded is told the outcome of the last Load: nil when its
	// configuration serves now, else why it was refused (a
	// *config.ReadError when nothing could be read).
	Loaded(err error)
	// Describe is what /admin/config shows of the source, as JSON; no
	// secret in it.
	Describe() any
}

// Gateway is one running dubbogw.
type Gateway struct {
	opts      Options
	log       *slog.Logger
	registry  *prometheus.Registry
	metrics   *metrics
	deps      deps
	table     atomic.Pointer[table]
	accessLog atomic.Pointer[accesslog.Logger]
	inFlight  atomic.Int64        // requests on the data plane, for drain logs
	redis     *redisclient.Client // nil without a redis: section
	tracing   *tracing.Provider   // flushed and stopped by Shutdown
	tracer    trace.Tracer        // nil when tracing is off
	admission *admission.Metrics
	ready     atomic.Bool
	answered  atomic.Bool // every route's service had its first answer once (admin.readiness)
	draining  atomic.Bool

	adminAccess  atomic.Pointer[adminAccess] // who the admin listener answers; follows reloads
	adminRefused *prometheus.CounterVec      // dubbogw_admin_refused_total{reason}

	reloadMu sync.Mutex // one reload at a time
	bg       sync.WaitGroup
	stop     chan struct{} // closed by Shutdown: ends background goroutines

	data            dataServer // the plain listener's: the loop (internal/h1) or net/http
	admin, demoHTTP *http.Server
	dataTLS         dataServer // nil without a tls: listener; the loop (internal/h1) or net/http
	demoDubbo       *provider.Server
	dubbo           *dubbo.Client
	triple          *triple.Client
	dataLn, adminLn net.Listener
	tlsLn           net.Listener
	connCounts      *connCounts // the connection caps' counts, both data listeners
	hijacked        connSet
	conns           connStates         // the data plane's connections, for the drain
	edgeLog         observe.LogSampler // bounds the log lines of refused requests
	startCfg        *config.Config
	writeTimeout    time.Duration // server.write_timeout, fixed at Start
	started         time.Time     // New's, for the uptime
	build           observe.BuildInfo
	reloads         reloadLog // for /admin/summary
}

// New loads the configuration and builds the first route table. Nothing
// listens until Start.
func New(opts Options) (*Gateway, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	g := &Gateway{opts: opts, log: opts.Logger, registry: opts.Registry, stop: make(chan struct{}), started: time.Now(), build: observe.Build(),
		connCounts: newConnCounts()}
	g.metrics = newMetrics(g.registry,
		func() float64 {
			if g.ready.Load() {
				return 1
			}
			return 0
		})
	if err := g.registry.Register(newRegistryCollector(&g.table)); err != nil {
		return nil, fmt.Errorf("registering registry metrics: %w", err)
	}
	var err error
	if g.adminRefused, err = newAdminRefused(g.registry); err != nil {
		return nil, err
	}
	cfg, err := opts.Load()
	if err != nil {
		return nil, err
	}
	access, err := newAdminAccess(cfg)
	if err != nil {
		return nil, err
	}
	g.adminAccess.Store(access)
	if g.tracing, err = tracing.New(cfg.Tracing, tracing.Options{Exporter: opts.SpanExporter, Registerer: g.registry}); err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	g.tracer = g.tracing.Tracer()
	if cfg.Redis.Address != "" {
		if g.redis, err = redisclient.New(cfg.Redis, g.registry, g.log, redisclient.WithTracer(g.tracer)); err != nil {
			_ = g.tracing.Shutdown(context.Background())
			return nil, fmt.Errorf("redis: %w", err)
		}
		// Give Redis a moment, so the first requests are not refused for a
		// connection about to be made; a Redis that is down does not stop
		// the start (its routes answer per their on_store_error policy).
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Redis.DialTimeout.D())
		if err := g.redis.WaitConnected(ctx); err != nil {
			g.log.Warn("redis not connected yet; connecting in the background", "address", cfg.Redis.Address, "error", err)
		}
		cancel()
	}
	g.admission = admission.NewMetrics(g.registry)
	dc := dubboroute.ClientOf(cfg)
	var dubboTLS *tls.Config
	if dc.TLS.Set() {
		if dubboTLS, err = dc.TLS.Build(); err != nil {
			if g.redis != nil {
				g.redis.Close()
			}
			_ = g.tracing.Shutdown(context.Background())
			return nil, fmt.Errorf("dubbo.tls: %w", err)
		}
	}
	g.dubbo = dubbo.New(dubbo.Options{
		TLS:            dubboTLS,
		TLSAll:         dc.TLS.Enabled,
		ConnsPerAddr:   dc.ConnsPerAddr,
		DialTimeout:    dc.DialTimeout.D(),
		Heartbeat:      dc.Heartbeat.D(),
		MaxPayload:     int(dc.MaxPayload),
		MaxPending:     dc.MaxPending,
		Logger:         g.log,
		Registerer:     g.registry,
		PerAddrMetrics: dc.Metrics.PerProvider,
	})
	// Triple providers (tri://) share the dubbo section's bounds.
	g.triple = triple.New(triple.Options{
		TLS:         dubboTLS,
		TLSAll:      dc.TLS.Enabled,
		DialTimeout: dc.DialTimeout.D(),
		Heartbeat:   dc.Heartbeat.D(),
		MaxPayload:  int(dc.MaxPayload),
		MaxPending:  dc.MaxPending,
		Registerer:  g.registry,
	})
	g.deps = deps{log: g.log, metrics: g.metrics, upstream: proxy.NewMetrics(g.registry), dubbo: g.dubbo, triple: g.triple,
		cluster: cluster.NewMetrics(g.registry, cluster.MetricsOptions{PerProvider: dc.Metrics.PerProvider}),
		redis:   g.redis, registry: g.registry, admission: g.admission, tracer: g.tracer}
	first := g.deps
	first.noWait = true // Start waits, once the admin listener answers /livez
	t, err := buildTable(cfg, nil, first)
	if err != nil {
		_ = g.dubbo.Close(context.Background())
		_ = g.triple.Close(context.Background())
		if g.redis != nil {
			g.redis.Close()
		}
		_ = g.tracing.Shutdown(context.Background())
		return nil, err
	}
	al, err := accesslog.New(cfg.AccessLog)
	if err != nil {
		t.closeExcept(nil)
		_ = g.dubbo.Close(context.Background())
		_ = g.triple.Close(context.Background())
		if g.redis != nil {
			g.redis.Close()
		}
		_ = g.tracing.Shutdown(context.Background())
		return nil, err
	}
	g.accessLog.Store(al)
	g.table.Store(t)
	g.observeLimiters(nil, t)
	g.startCfg = cfg
	g.applyLogLevel(cfg)
	g.metrics.routes.Set(float64(len(t.routes)))
	g.metrics.reloadOK.Set(1)
	g.metrics.reloadTime.SetToCurrentTime()
	g.reloads.record(nil, time.Now(), false)
	if opts.Source != nil {
		opts.Source.Loaded(nil)
	}
	return g, nil
}

// Check builds a route table from cfg without listening, so `dubbogw
// validate` catches everything a start would (router conflicts, filter
// configs), then releases it.
func Check(cfg *config.Config) error {
	d := deps{log: slog.New(slog.DiscardHandler), upstream: proxy.NewMetrics(prometheus.NewRegistry()), offline: true}
	d.metrics = newMetrics(prometheus.NewRegistry(), zero)
	if _, err := newAdminAccess(cfg); err != nil {
		return err
	}
	t, err := buildTable(cfg, nil, d)
	if err != nil {
		return err
	}
	t.closeExcept(nil)
	return nil
}

func zero() float64 { return 0 }

// Start binds the admin listener, gives the registries up to their
// startup_wait to answer for the routes' services, then binds the demo
// services and the data listener and reports ready. It returns once
// everything listens. The admin listener comes first so that /livez
// answers (and /readyz says "starting") while the registries are read: a
// liveness probe must not see refused connections from a healthy
// process reading a large registry.
func (g *Gateway) Start(ctx context.Context) error {
	cfg := g.startCfg
	var lc net.ListenConfig
	var err error
	if g.adminLn, err = lc.Listen(ctx, "tcp", cfg.Admin.Listen); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	if exposedWithoutToken(cfg, g.adminAccess.Load()) {
		g.log.Warn("the admin listener is reachable from other machines without a token: set admin.token or admin.token_file",
			"admin_listen", cfg.Admin.Listen)
	}
	g.admin = &http.Server{
		Handler: &adminGuard{access: &g.adminAccess, next: g.adminHandler(cfg), refused: g.adminRefused,
			log: g.log.With("listener", "admin")},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	if err := g.adminTLS(cfg); err != nil {
		return err
	}
	g.serveBackground("admin", g.admin, g.adminLn)

	if err := awaitProviders(cfg, g.table.Load()); err != nil {
		return err
	}

	if cfg.Demo.HTTP != "" {
		ln, err := lc.Listen(ctx, "tcp", cfg.Demo.HTTP)
		if err != nil {
			return fmt.Errorf("demo http service: %w", err)
		}
		g.demoHTTP = &http.Server{Handler: demo.HTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
		g.serveBackground("demo-http", g.demoHTTP, ln)
	}

	if cfg.Demo.Dubbo != "" || cfg.Demo.Triple != "" {
		g.demoDubbo = provider.NewServer(g.log)
		for _, svc := range demo.DubboServices() {
			g.demoDubbo.Register(svc)
		}
	}
	if cfg.Demo.Dubbo != "" {
		addr, err := g.demoDubbo.Listen(ctx, cfg.Demo.Dubbo)
		if err != nil {
			return fmt.Errorf("demo dubbo provider: %w", err)
		}
		g.log.Info("listening", "listener", "demo-dubbo", "addr", addr.String())
	}
	if cfg.Demo.Triple != "" {
		ln, err := lc.Listen(ctx, "tcp", cfg.Demo.Triple)
		if err != nil {
			return fmt.Errorf("demo triple provider: %w", err)
		}
		addr, err := g.demoDubbo.ServeTriple(ln)
		if err != nil {
			return fmt.Errorf("demo triple provider: %w", err)
		}
		g.log.Info("listening", "listener", "demo-triple", "addr", addr.String())
	}

	if g.dataLn, err = lc.Listen(ctx, "tcp", cfg.Listen); err != nil {
		return fmt.Errorf("data listener: %w", err)
	}
	g.dataLn = g.limitConnections(g.dataLn, cfg.Server, refusedResponse)
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if cfg.Server.H2C == nil || *cfg.Server.H2C {
		protocols.SetUnencryptedHTTP2(true)
	}
	g.writeTimeout = cfg.Server.WriteTimeout.D()
	std := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout.D(),
		WriteTimeout:      g.writeTimeout, // renewed by each write (recorder.armWrite)
		IdleTimeout:       cfg.Server.IdleTimeout.D(),
		MaxHeaderBytes:    int(cfg.Server.MaxHeaderBytes),
		Protocols:         protocols,
		ConnState:         g.conns.track,
		HTTP2:             g.http2Config(cfg.Server),
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	g.data = std
	if cfg.Server.Engine != config.EngineNetHTTP {
		loop := g.loopServer(std)
		if protocols.UnencryptedHTTP2() {
			loop.H2C = std // h2c connections are handed to net/http whole
		}
		g.data = loop
	}
	g.serveBackground("data", g.data, g.dataLn)
	if err := g.startTLS(ctx, &lc, cfg); err != nil {
		return err
	}

	if cfg.Reload.Watch && g.opts.WatchPath != "" {
		g.bg.Add(1)
		go g.watch(g.opts.WatchPath, fileSum(g.opts.WatchPath), cfg.Reload.Interval.D())
	}
	if src := g.opts.Source; src != nil {
		g.bg.Go(func() { src.Watch(g.stop, func() { _ = g.Reload(context.Background()) }) })
	}
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		g.forgetGoneProviders(forgetInterval)
	}()
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		g.returnStartupMemory(g.table.Load())
	}()
	g.ready.Store(true)
	g.log.Info("ready", "routes", len(g.table.Load().routes))
	return nil
}

// returnStartupMemory waits until the registries have answered once for
// every Dubbo route of t (startup's reads are over), then has the runtime
// collect and return to the operating system what those reads left
// behind. On a large registry they allocate several times what the
// gateway keeps (listings, decoded URLs, a response per node), and the
// heap goal set by the last collection during startup would keep that
// memory resident: an idle gateway allocates too little to reach it, so
// 5,000 services would hold ~180 MB where they need ~70. Once: a reload
// adds few services.
func (g *Gateway) returnStartupMemory(t *table) {
	start := time.Now()
	for _, rt := range t.routes {
		d := rt.dubboDirectory()
		if d == nil {
			continue
		}
		select {
		case <-d.Ready():
		case <-g.stop:
			return
		}
	}
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g.log.Info("startup reads done: memory they left behind returned to the system",
		"after", time.Since(start).Round(time.Millisecond), "heap_bytes", ms.HeapAlloc, "sys_bytes", ms.Sys-ms.HeapReleased)
}

// loopServer is the loop serving HTTP/1.1 with std's handler, limits
// and timeouts.
func (g *Gateway) loopServer(std *http.Server) *h1.Server {
	return &h1.Server{
		Handler:           std.Handler,
		ReadHeaderTimeout: std.ReadHeaderTimeout,
		WriteTimeout:      std.WriteTimeout,
		IdleTimeout:       std.IdleTimeout,
		MaxHeaderBytes:    std.MaxHeaderBytes,
		ConnState:         std.ConnState,
		Log:               g.log,
	}
}

// dataServer is what serves a listener: *http.Server or *h1.Server.
type dataServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

func (g *Gateway) serveBackground(name string, srv dataServer, ln net.Listener) {
	g.log.Info("listening", "listener", name, "addr", ln.Addr().String())
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("listener failed", "listener", name, "error", err)
		}
	}()
}

// Addr is the data listener's address (after Start).
func (g *Gateway) Addr() string { return g.dataLn.Addr().String() }

// AdminAddr is the admin listener's address (after Start).
func (g *Gateway) AdminAddr() string { return g.adminLn.Addr().String() }

// Reload loads the configuration again; a valid one replaces the route table
// atomically (requests in flight finish on the table they started with), a
// bad one is refused and the current one keeps serving.
func (g *Gateway) Reload(ctx context.Context) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	err := g.reload()
	g.reloads.record(err, time.Now(), true)
	if g.opts.Source != nil {
		g.opts.Source.Loaded(err)
	}
	if err != nil {
		g.metrics.reloads.WithLabelValues(reloadResult(err)).Inc()
		g.metrics.reloadOK.Set(0)
		g.log.Error("configuration reload refused; the previous configuration keeps serving", "error", err)
		return err
	}
	g.metrics.reloads.WithLabelValues("success").Inc()
	g.metrics.reloadOK.Set(1)
	g.metrics.reloadTime.SetToCurrentTime()
	return nil
}

func (g *Gateway) reload() error {
	cfg, err := g.opts.Load()
	if err != nil {
		return err
	}
	access, err := newAdminAccess(cfg)
	if err != nil {
		return err
	}
	old := g.table.Load()
	t, err := buildTable(cfg, old, g.deps)
	if err != nil {
		return err
	}
	var prevLog *accesslog.Logger // closed once the old table's requests are done
	if cfg.AccessLog.Output != old.cfg.AccessLog.Output || !sameBool(cfg.AccessLog.Enabled, old.cfg.AccessLog.Enabled) {
		al, err := accesslog.New(cfg.AccessLog)
		if err != nil {
			t.closeExcept(old)
			return err
		}
		prevLog = g.accessLog.Swap(al)
	}
	for _, w := range restartOnly(old.cfg, cfg) {
		g.log.Warn("this setting changes only on restart", "key", w)
	}
	g.table.Store(t)
	g.adminAccess.Store(access)
	g.observeLimiters(old, t)
	g.applyLogLevel(cfg)
	g.metrics.routes.Set(float64(len(t.routes)))
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		releaseAfterDrain(old, t, cfg.Shutdown.DrainTimeout.D(), g.metrics, g.log)
		_ = prevLog.Close()
	}()
	g.log.Info("configuration reloaded", "routes", len(t.routes), "upstreams", len(t.upstreams))
	return nil
}

// reloadResult is the result label of a reload that did not succeed:
// "failure" when nothing could be read (a file missing, ZooKeeper out of
// reach), "rejected" when what was read is refused for its problems.
func reloadResult(err error) string {
	var re *config.ReadError
	if errors.As(err, &re) {
		return "failure"
	}
	return "rejected"
}

func sameBool(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// restartOnly names the settings that changed but take effect only on restart.
func restartOnly(old, cfg *config.Config) []string {
	var out []string
	if old.Listen != cfg.Listen {
		out = append(out, "listen")
	}
	if old.Admin.Listen != cfg.Admin.Listen || old.Admin.Pprof != cfg.Admin.Pprof {
		out = append(out, "admin (listen, pprof; its token and allowed hosts do apply)")
	}
	if old.Demo != cfg.Demo {
		out = append(out, "demo")
	}
	if !reflect.DeepEqual(old.Redis, cfg.Redis) {
		out = append(out, "redis")
	}
	if !reflect.DeepEqual(clientPart(*dubboroute.ClientOf(old)), clientPart(*dubboroute.ClientOf(cfg))) {
		out = append(out, "dubbo (client settings; dubbo.types and dubbo.references do apply)")
	}
	if old.Server.ReadHeaderTimeout != cfg.Server.ReadHeaderTimeout || old.Server.IdleTimeout != cfg.Server.IdleTimeout ||
		old.Server.MaxHeaderBytes != cfg.Server.MaxHeaderBytes || !sameBool(old.Server.H2C, cfg.Server.H2C) ||
		old.Server.Engine != cfg.Server.Engine {
		out = append(out, "server (timeouts, max_header_bytes, h2c, engine)")
	}
	if !listenerLimitsEqual(old.Server, cfg.Server) {
		out = append(out, "server (write_timeout, max_connections, max_connections_per_ip, max_concurrent_streams)")
	}
	if !reflect.DeepEqual(tlsListener(old), tlsListener(cfg)) {
		out = append(out, "tls (listen, certificates and client auth; the certificate and CA files are reloaded on change, client_subject_header does apply)")
	}
	if old.Reload != cfg.Reload {
		out = append(out, "reload")
	}
	if !reflect.DeepEqual(old.Tracing, cfg.Tracing) {
		out = append(out, "tracing")
	}
	return out
}

// clientPart is the part of the Dubbo settings the long-lived client is built from.
func clientPart(d dubboroute.Client) dubboroute.Client {
	d.Types = nil
	d.References = dubboroute.References{}
	return d
}

func (g *Gateway) applyLogLevel(cfg *config.Config) {
	if g.opts.LogLevel == nil {
		return
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(cfg.Log.Level)); err == nil {
		g.opts.LogLevel.Set(l)
	}
}

// Shutdown drains the gateway: readiness goes false and every response
// says Connection: close (HTTP/2: GOAWAY); the configured delay lets load
// balancers notice; keep-alive connections idle for less than
// shutdown.idle_grace get that long (a request a client just sent on one
// is served, not reset); then the data listener and idle connections
// close and in-flight requests finish within the drain timeout; then
// upstreams, demo services and finally the admin listener close.
func (g *Gateway) Shutdown(ctx context.Context) error {
	if !g.draining.CompareAndSwap(false, true) {
		return errors.New("shutdown already in progress")
	}
	g.ready.Store(false)
	cfg := g.table.Load().cfg
	var delay time.Duration
	if cfg.Shutdown.Delay != nil {
		delay = cfg.Shutdown.Delay.D()
	}
	g.log.Info("draining", "delay", delay.String(), "drain_timeout", cfg.Shutdown.DrainTimeout.D().String(), "in_flight", g.inFlight.Load())
	close(g.stop)
	var errs []error
	if g.data != nil {
		// Not SetKeepAlivesEnabled(false): it closes idle connections at
		// once, racing requests already on their way. ServeHTTP answers
		// Connection: close while draining instead.
		sleep(ctx, delay)
		dctx, cancel := context.WithTimeout(ctx, cfg.Shutdown.DrainTimeout.D())
		var grace time.Duration
		if cfg.Shutdown.IdleGrace != nil {
			grace = cfg.Shutdown.IdleGrace.D()
		}
		g.conns.waitIdleGrace(dctx, grace)
		if err := g.shutdownData(dctx); err != nil {
			g.log.Warn("drain deadline passed; closing remaining connections", "in_flight", g.inFlight.Load())
			_ = g.data.Close()
			if g.dataTLS != nil {
				_ = g.dataTLS.Close()
			}
			errs = append(errs, fmt.Errorf("draining: %w", err))
		}
		// Upgraded (WebSocket) connections are not tracked by Shutdown: give
		// them the rest of the drain time, then close them.
		if n := g.hijacked.wait(dctx); n > 0 {
			g.log.Warn("closing upgraded connections at the drain deadline", "connections", n)
		}
		cancel()
	}
	t := g.table.Load()
	t.retire()
	t.closeExcept(nil)
	// Dubbo connections close after their last response.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := g.dubbo.Close(cctx); err != nil {
		errs = append(errs, fmt.Errorf("closing dubbo client: %w", err))
	}
	if err := g.triple.Close(cctx); err != nil {
		errs = append(errs, fmt.Errorf("closing triple client: %w", err))
	}
	cancel()
	if g.redis != nil {
		g.redis.Close() // after the routes' filters, which stopped their renewals
	}
	if g.demoHTTP != nil {
		_ = g.demoHTTP.Close()
	}
	if g.demoDubbo != nil {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = g.demoDubbo.Close(dctx)
		cancel()
	}
	if g.admin != nil {
		actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = g.admin.Shutdown(actx)
		cancel()
	}
	g.bg.Wait()
	// The spans of the drained requests go out within the drain timeout.
	tctx, cancel := context.WithTimeout(ctx, cfg.Shutdown.DrainTimeout.D())
	if err := g.tracing.Shutdown(tctx); err != nil {
		errs = append(errs, err)
	}
	cancel()
	_ = g.accessLog.Load().Close()
	g.log.Info("stopped")
	return errors.Join(errs...)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// watch polls the config file and reloads when its content changes.
func (g *Gateway) watch(path string, last [32]byte, every time.Duration) {
	defer g.bg.Done()
	if every <= 0 {
		every = 2 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
			sum := fileSum(path)
			if sum == last || sum == ([32]byte{}) {
				continue
			}
			last = sum
			g.log.Info("configuration file changed; reloading", "path", path)
			_ = g.Reload(context.Background())
		}
	}
}

func fileSum(path string) [32]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}
	}
	return sha256.Sum256(b)
}

// connSet tracks hijacked (upgraded) data-plane connections, which
// http.Server.Shutdown does not wait for.
type connSet struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

// add registers c until it is closed.
func (s *connSet) add(c net.Conn) net.Conn {
	tc := &trackedConn{Conn: c, set: s}
	s.mu.Lock()
	if s.conns == nil {
		s.conns = make(map[*trackedConn]struct{})
	}
	s.conns[tc] = struct{}{}
	s.mu.Unlock()
	return tc
}

func (s *connSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// wait returns once every tracked connection is closed by its users, or, when
// ctx ends first, closes the rest and returns how many it closed.
func (s *connSet) wait(ctx context.Context) int {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.count() > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.mu.Lock()
			rest := s.conns
			s.conns = nil
			s.mu.Unlock()
			for c := range rest {
				_ = c.Conn.Close()
			}
			return len(rest)
		}
	}
	return 0
}

type trackedConn struct {
	net.Conn
	set  *connSet
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.conns, c)
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
}

// forgetInterval is how often the Dubbo client's addresses are checked
// against the registries: an address no directory has listed for two
// checks in a row is forgotten.
const forgetInterval = 30 * time.Second

// forgetGoneProviders closes the Dubbo connections (and reconnect loops)
// of providers that left every registry, until the gateway stops. Waiting
// for a second check lets calls still running on a just-removed provider
// finish first.
func (g *Gateway) forgetGoneProviders(every time.Duration) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	gone := map[string]bool{} // unlisted at the previous check
	for {
		select {
		case <-g.stop:
			return
		case <-ticker.C:
		}
		gone = g.forgetUnlisted(gone)
	}
}

// forgetUnlisted forgets the addresses unlisted now and at the previous
// check (prev), and returns the ones unlisted now.
func (g *Gateway) forgetUnlisted(prev map[string]bool) map[string]bool {
	listed := map[string]bool{}
	t := g.table.Load()
	for _, reg := range t.registries {
		for _, d := range reg.Directories() {
			for _, p := range d.Providers {
				listed[p.Addr] = true
			}
		}
	}
	now := map[string]bool{}
	for _, c := range []interface {
		Addrs() []string
		Forget(string)
	}{g.dubbo, g.triple} {
		for _, addr := range c.Addrs() {
			if listed[addr] {
				continue
			}
			if prev[addr] {
				g.log.Info("closing the connections of a provider no registry lists any more", "addr", addr)
				c.Forget(addr)
				continue
			}
			now[addr] = true
		}
	}
	return now
}

// observeLimiters exports the in-flight limits of t (global and per
// route) and stops exporting those of routes old had and t has not.
func (g *Gateway) observeLimiters(old, t *table) {
	g.admission.Observe(admission.ScopeGlobal, t.global)
	for _, rt := range t.routes {
		if rt.limiter != nil {
			g.admission.Observe(rt.name, rt.limiter)
		} else {
			g.admission.Forget(rt.name)
		}
	}
	if old == nil {
		return
	}
	for _, rt := range old.routes {
		if !t.hasRoute(rt.name) {
			g.admission.Forget(rt.name)
		}
	}
}
