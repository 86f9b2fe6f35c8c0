package gateway

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/admission"
	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/metadataservice"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter"
	"github.com/dubbogw/dubbogw/proxy"
	"github.com/dubbogw/dubbogw/redisclient"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/dubbogw/dubbogw/router"
	"github.com/dubbogw/dubbogw/servertls"
	"github.com/dubbogw/dubbogw/triple"
)

// route is one compiled route: its filter chain ends in its upstream.
type route struct {
	name     string
	cfg      *config.Route
	handler  http.Handler
	maxBody  int64
	metrics  *routeMetrics
	filters  []string
	upstream string
	dubbo    *dubboroute.Handler // set for Dubbo routes; holds directories until closed
	closers  []func()            // filters holding goroutines (auth renewals)
	limiter  admission.Limiter   // the route's in-flight limit; nil: none
	pattern  string              // the http.route span attribute: the path or prefix matched

	allowMatrix bool // ';' path parameters are passed (allow_matrix_params)
	// bodyTimeout bounds reading the request body: the route's timeout
	// (server.body_grace when that is longer).
	bodyTimeout time.Duration
}

// close releases what the route holds: its Dubbo reference and the
// goroutines of its filters.
func (r *route) close() {
	if r.dubbo != nil {
		r.dubbo.Close()
	}
	for _, c := range r.closers {
		c()
	}
}

// table is an immutable snapshot of everything a request needs: built from
// one config, swapped atomically on reload. Requests hold a reference while
// they run, so resources the next table no longer uses are released only
// after the last request on this one finishes.
type table struct {
	cfg        *config.Config
	router     *router.Router[*route]
	routes     []*route
	upstreams  map[string]*proxy.Upstream
	registries map[string]registry.Registry
	references map[string]*registry.References // one per registry, carried with it
	encoders   dubboroute.Encoders             // shared by the Dubbo routes without types of their own
	trusted    []netip.Prefix
	identity   identitySet // headers removed from every request as it enters
	// subjectHeader carries a TLS client's verified certificate subject
	// (tls.client_subject_header; one of identity); "" when off.
	subjectHeader string
	reqIDHeader   string
	trustReqID    bool
	global        admission.Limiter // the gateway-wide in-flight limit
	notFound      *routeMetrics
	bodyGrace     time.Duration // server.body_grace
	minBodyRate   int64         // server.min_body_rate, bytes per second

	// dubboIndex is dubboRoutes' answer, made at its first call.
	dubboIndex     map[string]*registryRoutes
	dubboIndexOnce sync.Once

	// allAnswered latches once every Dubbo route's directory has had its
	// first answer: /readyz stops walking the routes.
	allAnswered atomic.Bool

	refs      atomic.Int64
	retired   atomic.Bool
	drainOnce sync.Once
	drained   chan struct{}
}

// deps are the process-lifetime things a table is built with.
type deps struct {
	log      *slog.Logger
	metrics  *metrics
	upstream *proxy.Metrics
	dubbo    *dubbo.Client // nil in Check: routes are compiled, never called
	triple   *triple.Client
	cluster  *cluster.Metrics
	offline  bool // Check: registries that would connect somewhere are stood in for
	// noWait builds the table without waiting for the registries
	// (awaitProviders): the first table, which Start waits for once the
	// admin listener answers.
	noWait bool

	redis     *redisclient.Client // nil without a redis: section, and in Check
	tracer    trace.Tracer        // nil when tracing is off, and in Check
	registry  prometheus.Registerer
	admission *admission.Metrics // nil in Check
}

// buildTable compiles cfg. Upstreams whose config is unchanged are taken over
// from old (keeping their connection pools and health state); the rest are new.
// On error nothing built is leaked.
func buildTable(cfg *config.Config, old *table, d deps) (_ *table, err error) {
	t := &table{
		cfg:         cfg,
		upstreams:   make(map[string]*proxy.Upstream, len(proxy.UpstreamsOf(cfg))),
		registries:  make(map[string]registry.Registry, len(cfg.Registries)),
		references:  make(map[string]*registry.References, len(cfg.Registries)),
		reqIDHeader: http.CanonicalHeaderKey(cfg.RequestID.Header),
		trustReqID:  cfg.RequestID.TrustIncoming == nil || *cfg.RequestID.TrustIncoming,
		identity:    newIdentitySet(cfg),
		drained:     make(chan struct{}),
		bodyGrace:   cfg.Server.BodyGrace.D(),
	}
	if cfg.Server.MinBodyRate != nil {
		t.minBodyRate = int64(*cfg.Server.MinBodyRate)
	}
	if tc := servertls.Of(cfg); tc != nil && tc.ClientSubjectHeader != "" {
		t.subjectHeader = http.CanonicalHeaderKey(tc.ClientSubjectHeader)
	}
	if t.reqIDHeader == "" {
		t.reqIDHeader = "X-Request-Id"
	}
	defer func() {
		if err != nil {
			t.closeExcept(old) // what this build made; old keeps serving
		}
	}()
	if t.trusted, err = exchange.ParsePrefixes(cfg.Server.TrustedProxies); err != nil {
		return nil, fmt.Errorf("server.trusted_proxies: %w", err)
	}

	upstreams := proxy.UpstreamsOf(cfg)
	names := make([]string, 0, len(upstreams))
	for name := range upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ucfg := upstreams[name]
		if old != nil {
			if prev, ok := old.upstreams[name]; ok && reflect.DeepEqual(proxy.UpstreamsOf(old.cfg)[name], ucfg) {
				t.upstreams[name] = prev
				continue
			}
		}
		u, err := proxy.New(name, ucfg, d.upstream, d.log, proxy.WithTracer(d.tracer))
		if err != nil {
			return nil, fmt.Errorf("upstreams.%s: %w", name, err)
		}
		t.upstreams[name] = u
	}

	rc := dubboroute.ClientOf(cfg).References
	onDemand := registry.OnDemandLimits{PerSecond: rc.NewPerSecond, Max: rc.MaxSubscriptions}
	for _, name := range slices.Sorted(maps.Keys(cfg.Registries)) {
		rcfg := cfg.Registries[name]
		if old != nil {
			if prev, ok := old.registries[name]; ok && reflect.DeepEqual(old.cfg.Registries[name], rcfg) {
				t.registries[name] = prev
				t.references[name] = old.references[name]
				t.references[name].SetLimits(rc.Max, rc.IdleTTL.D())
				t.references[name].SetOnDemandLimits(onDemand)
				continue
			}
		}
		reg, err := newRegistry(rcfg, d)
		if err != nil {
			return nil, fmt.Errorf("registries.%s: %w", name, err)
		}
		t.registries[name] = reg
		refs := registry.NewReferences(reg, rc.Max, rc.IdleTTL.D())
		refs.SetOnDemandLimits(onDemand)
		refs.SetLogger(d.log.With("registry", name))
		t.references[name] = refs
	}

	specs := make([]router.Spec[*route], 0, len(cfg.Routes))
	for i, rc := range cfg.Routes {
		rt, err := buildRoute(cfg, rc, t, old, d)
		if err != nil {
			return nil, fmt.Errorf("routes[%d]%w", i, err)
		}
		t.routes = append(t.routes, rt)
		specs = append(specs, router.Spec[*route]{
			Host: rc.Match.Host, Methods: rc.Match.Methods,
			Path: rc.Match.Path, Prefix: rc.Match.Prefix, Value: rt,
			Predicates: rc.Match.Predicates(), Weight: rc.Match.Weight,
		})
	}
	if t.router, err = router.New(specs); err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	if t.global, err = globalLimiter(cfg, old); err != nil {
		return nil, fmt.Errorf("server.adaptive_concurrency: %w", err)
	}
	if !d.offline && !d.noWait {
		if err := awaitProviders(cfg, t); err != nil {
			return nil, err
		}
	}
	t.notFound = d.metrics.forRoute(noRoute)
	return t, nil
}

// awaitProviders gives the registries up to their startup_wait to answer
// for the services the routes call, so a start or a reload does not serve
// 503s for providers about to be known; then routes with check: true
// must have a provider. A registry that cannot be reached answers at once
// (its directories go stale), so this never waits on a dead ZooKeeper for
// longer than its startup_wait.
func awaitProviders(cfg *config.Config, t *table) error {
	start := time.Now()
	for i, rt := range t.routes {
		dir := rt.dubboDirectory()
		if dir == nil {
			continue
		}
		// One deadline per registry for the whole table, not one per route.
		dr, _ := dubboroute.RouteOf(rt.cfg)
		wait := cfg.Registries[dr.Registry].StartupWait.D()
		if left := time.Until(start.Add(wait)); left > 0 {
			timer := time.NewTimer(left)
			select {
			case <-dir.Ready():
			case <-timer.C:
			}
			timer.Stop()
		}
		if dr.Check && len(dir.Providers()) == 0 {
			return fmt.Errorf("routes[%d].dubbo.check: no provider of %s in registry %q (state %s) after %s",
				i, dir.Key(), dr.Registry, dir.State(), wait)
		}
	}
	return nil
}

// registryRoutes are the Dubbo routes of one registry: the method routes
// by the service key they call, and the pass-through routes (which may
// call any service of it).
type registryRoutes struct {
	byService   map[string][]*route
	passthrough []*route
}

// dubboRoutes indexes the table's Dubbo routes by registry, once: the
// admin's service listing looks up the routes of the services it lists.
func (t *table) dubboRoutes() map[string]*registryRoutes {
	t.dubboIndexOnce.Do(func() {
		t.dubboIndex = map[string]*registryRoutes{}
		for _, rt := range t.routes {
			if rt.dubbo == nil {
				continue
			}
			dr, _ := dubboroute.RouteOf(rt.cfg)
			reg := t.dubboIndex[dr.Registry]
			if reg == nil {
				reg = &registryRoutes{byService: map[string][]*route{}}
				t.dubboIndex[dr.Registry] = reg
			}
			if d := rt.dubboDirectory(); d != nil {
				key := d.Key().String()
				reg.byService[key] = append(reg.byService[key], rt)
			} else {
				reg.passthrough = append(reg.passthrough, rt)
			}
		}
	})
	return t.dubboIndex
}

// dubboDirectory is the directory a Dubbo method route calls, or nil.
func (r *route) dubboDirectory() *registry.Directory {
	if r.dubbo == nil {
		return nil
	}
	return r.dubbo.Directory()
}

// buildRoute compiles one route; errors start with the path below routes[i].
func buildRoute(cfg *config.Config, rc *config.Route, t, old *table, d deps) (_ *route, err error) {
	var upstream http.Handler
	var dh *dubboroute.Handler
	var upstreamName string
	if dr, ok := dubboroute.RouteOf(rc); ok {
		client := dubboroute.ClientOf(cfg)
		var err error
		dh, err = dubboroute.New(rc.Name, dr, dubboroute.Deps{
			Client: d.dubbo, Triple: d.triple, References: t.references, Types: client.Types, AllowedClasses: client.AllowedClasses, Log: d.log, ClusterMetrics: d.cluster,
			Tracer: d.tracer, Encoders: &t.encoders,
		})
		if err != nil {
			return nil, fmt.Errorf(".dubbo.%w", err)
		}
		upstream = dh
	} else if hr, ok := proxy.RouteOf(rc); ok {
		u, ok := t.upstreams[hr.Upstream]
		if !ok {
			return nil, fmt.Errorf(".upstream: upstream %q is not defined", hr.Upstream)
		}
		upstreamName = hr.Upstream
		upstream = u.Handler(time.Duration(rc.Timeout), proxy.Upgrades(hr.Upgrades...))
	} else {
		return nil, fmt.Errorf(": route kind %q cannot be built", rc.Kind)
	}
	params := paramNames(rc.Match.Path)
	var chain []filter.Filter
	var names []string
	rt := &route{name: rc.Name, cfg: rc, dubbo: dh, upstream: upstreamName, pattern: routePattern(rc.Match),
		allowMatrix: rc.AllowMatrixParams}
	defer func() {
		if err != nil {
			rt.close()
		}
	}()
	add := func(f filter.Filter, name string) {
		chain, names = append(chain, f), append(names, name)
		if c, ok := f.(interface{ Close() }); ok {
			rt.closers = append(rt.closers, c.Close)
		}
	}
	for j, fc := range cfg.DefaultFilters {
		f, err := buildFilter(fc, params, rc.Name, d)
		if err != nil {
			return nil, fmt.Errorf(" (default_filters[%d].%s): %w", j, fc.Name, err)
		}
		add(f, fc.Name)
	}
	for j, fc := range rc.Filters {
		f, err := buildFilter(fc, params, rc.Name, d)
		if err != nil {
			return nil, fmt.Errorf(".filters[%d].%s: %w", j, fc.Name, err)
		}
		add(f, fc.Name)
	}
	if rt.limiter, err = routeLimiter(rc, old); err != nil {
		return nil, fmt.Errorf(".adaptive_concurrency: %w", err)
	}
	maxBody := int64(rc.MaxBodyBytes)
	if maxBody == 0 {
		maxBody = int64(cfg.Server.MaxBodyBytes)
	}
	rt.handler = filter.Chain(upstream, chain...)
	rt.maxBody = maxBody
	rt.bodyTimeout = rc.Timeout.D()
	rt.metrics = d.metrics.forRoute(rc.Name)
	rt.filters = names
	return rt, nil
}

// globalLimiter is the gateway-wide in-flight limit: server.max_in_flight,
// adaptive when configured. An unchanged configuration keeps the previous
// table's limiter, and with it what an adaptive one has learned.
func globalLimiter(cfg *config.Config, old *table) (admission.Limiter, error) {
	if old != nil && reflect.DeepEqual(old.cfg.Server.MaxInFlight, cfg.Server.MaxInFlight) &&
		reflect.DeepEqual(old.cfg.Server.AdaptiveConcurrency, cfg.Server.AdaptiveConcurrency) {
		return old.global, nil
	}
	limit := 0
	if cfg.Server.MaxInFlight != nil {
		limit = *cfg.Server.MaxInFlight
	}
	if a := cfg.Server.AdaptiveConcurrency; a != nil {
		return admission.NewAdaptive(*a, limit, time.Now)
	}
	return admission.NewStatic(limit), nil
}

// routeLimiter is the route's in-flight limit (nil: none), kept from the
// previous table when the route's limit settings are unchanged.
func routeLimiter(rc *config.Route, old *table) (admission.Limiter, error) {
	if rc.MaxInFlight == 0 && rc.AdaptiveConcurrency == nil {
		return nil, nil
	}
	if old != nil {
		for _, prev := range old.routes {
			if prev.name == rc.Name && prev.limiter != nil && prev.cfg.MaxInFlight == rc.MaxInFlight &&
				reflect.DeepEqual(prev.cfg.AdaptiveConcurrency, rc.AdaptiveConcurrency) {
				return prev.limiter, nil
			}
		}
	}
	if a := rc.AdaptiveConcurrency; a != nil {
		return admission.NewAdaptive(*a, rc.MaxInFlight, time.Now)
	}
	return admission.NewStatic(rc.MaxInFlight), nil
}

// newRegistry builds a registry from its config. Offline (dubbogw
// validate), a registry that would connect somewhere stands in an empty
// static one.
func newRegistry(c *config.Registry, d deps) (registry.Registry, error) {
	spec, ok := c.Spec.(registry.Spec)
	if !ok {
		return nil, fmt.Errorf("type: registry type %q cannot be built", c.Type)
	}
	deps := registry.Deps{Log: d.log, ReleaseAfter: c.ReleaseAfter.D(), Offline: d.offline}
	if d.dubbo != nil {
		deps.Metadata, deps.Redial = metadataservice.Fetcher(d.dubbo), d.dubbo.Redial
	}
	return spec.Build(deps)
}

// buildFilter builds the one filter an entry names, for route.
func buildFilter(fc config.Filter, params []string, route string, d deps) (filter.Filter, error) {
	spec, ok := fc.Spec.(filter.Spec)
	if !ok {
		return nil, fmt.Errorf("filter %q has no Build: its package registered it with config.RegisterFilter, not filter.Register", fc.Name)
	}
	return spec.Build(filter.Deps{Route: route, Params: params, Redis: d.redis, Metrics: d.registry, Log: d.log, Offline: d.offline})
}

// routePattern is the low-cardinality template of the paths a route
// matches, for the http.route span attribute: its path pattern, or its
// prefix followed by "/*".
func routePattern(m config.Match) string {
	if m.Path != "" {
		return m.Path
	}
	return strings.TrimSuffix(m.Prefix, "/") + "/*"
}

// paramNames lists the {name} and {name...} parameters of a path pattern.
func paramNames(pattern string) []string {
	names, _ := router.PatternParams(pattern) // checked when the config was
	return names
}

// acquire takes a reference on the active table, retrying if a reload
// swapped it between the load and the increment.
func acquire(p *atomic.Pointer[table]) *table {
	for {
		t := p.Load()
		t.refs.Add(1)
		if p.Load() == t {
			return t
		}
		t.release()
	}
}

func (t *table) release() {
	if t.refs.Add(-1) == 0 && t.retired.Load() {
		t.drainOnce.Do(func() { close(t.drained) })
	}
}

// closeExcept closes what t holds and keep (nil: nothing) does not: its
// upstreams and registries (with their references) that keep does not
// share, and all its routes (a route belongs to one table). It is the one
// teardown: of a table that failed to build (keep: the one serving), of
// one that will not be served, of a replaced one once drained (keep: its
// successor), and at shutdown (keep: nil).
func (t *table) closeExcept(keep *table) {
	for name, u := range t.upstreams {
		if keep == nil || keep.upstreams[name] != u {
			u.Close()
		}
	}
	for _, r := range t.routes {
		r.close()
	}
	for name, reg := range t.registries {
		if keep == nil || keep.registries[name] != reg {
			t.references[name].Close()
			_ = reg.Close()
		}
	}
}

// retire marks t replaced; drained closes once its last request finishes.
func (t *table) retire() {
	t.retired.Store(true)
	if t.refs.Load() == 0 {
		t.drainOnce.Do(func() { close(t.drained) })
	}
}

// releaseAfterDrain closes the upstreams of old that next does not use, once
// old's last request is done (or after limit, so a stuck request cannot pin them).
func releaseAfterDrain(old, next *table, limit time.Duration, m *metrics, log *slog.Logger) {
	var goneRoutes []string
	for _, r := range old.routes {
		if next == nil || !next.hasRoute(r.name) {
			goneRoutes = append(goneRoutes, r.name)
		}
	}
	old.retire()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-old.drained:
	case <-timer.C:
		log.Warn("releasing an old route table with requests still running", "in_flight", old.refs.Load(), "after", limit)
	}
	old.closeExcept(next)
	for _, name := range goneRoutes {
		m.forget(name)
	}
}

func (t *table) hasRoute(name string) bool {
	for _, r := range t.routes {
		if r.name == name {
			return true
		}
	}
	return false
}
