package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Invoke (wrapped with the route; test with errors.Is).
var (
	// ErrNoProvider: the provider list is empty, or the caller excludes every provider.
	ErrNoProvider = errors.New("no provider available")
	// ErrBreakerOpen: the route's circuit breaker is open, or every
	// provider's is. The gateway answers 503.
	ErrBreakerOpen = errors.New("circuit breaker open")
)

// Mode is what Invoke does when an attempt fails.
type Mode int

const (
	// Failover retries on another provider (Java Dubbo's default cluster).
	Failover Mode = iota
	// Failfast makes a single attempt.
	Failfast
)

// String returns "failover" or "failfast".
func (m Mode) String() string {
	switch m {
	case Failover:
		return "failover"
	case Failfast:
		return "failfast"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "failover" (or "") and "failfast".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "failover":
		return Failover, nil
	case "failfast":
		return Failfast, nil
	}
	return 0, fmt.Errorf("unknown cluster mode %q: want failover or failfast", s)
}

// Class is what a failed attempt means for retries and circuit breakers.
type Class int

const (
	// MaybeExecuted: the provider may have run the call (timeout, connection
	// lost after sending, provider-side error). Retried only when
	// Options.Idempotent; a provider failure. The zero Class.
	MaybeExecuted Class = iota
	// NotExecuted: the provider surely did not run the call (connect failure,
	// overload rejection). Retried on another provider; a provider failure.
	NotExecuted
	// Business: the provider ran the call and answered with an exception.
	// Returned as is, never retried; a success for the breakers.
	Business
	// Canceled: nothing to hold against the provider (the caller went away,
	// the request could not be encoded). Returned as is, not retried, not recorded.
	Canceled
)

// Classifier tells what a failed attempt's error means. The client
// knows: the gateway gives one that understands its errors.
type Classifier func(err error) Class

// DefaultClassifier treats context.Canceled as Canceled and every other
// error as MaybeExecuted.
func DefaultClassifier(err error) Class {
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	return MaybeExecuted
}

// Invoker runs one attempt of a call against provider p.
type Invoker func(ctx context.Context, p *Provider) (any, error)

// DefaultRetries is Java Dubbo's default number of extra attempts.
const DefaultRetries = 2

// Options configures a Cluster.
type Options struct {
	// Route names the cluster in errors, logs and metrics.
	Route string
	// Policy names the load-balancing policy (see NewPolicy); "" is random.
	Policy string
	// HashNodes is consistenthash's virtual nodes per provider. Default 160.
	HashNodes int
	// Mode is Failover (default) or Failfast.
	Mode Mode
	// Retries is Failover's extra attempts, each on a provider not tried
	// yet. nil: 2, as Java Dubbo.
	Retries *int
	// Idempotent says the method may run twice: failover then also retries
	// attempts that may have executed (MaybeExecuted), e.g. timeouts.
	Idempotent bool
	// Classify tells retryable errors from the others; default DefaultClassifier.
	Classify Classifier
	// Breaker configures the circuit breaker of each provider address
	// (zero: none).
	Breaker BreakerOptions
	// RouteBreaker configures the circuit breaker over all of the route's
	// calls (zero: none).
	RouteBreaker BreakerOptions
	// ServiceBreaker configures a circuit breaker per service a call names
	// (Call.Service; zero: none): on a route that reaches many services (a
	// pass-through), one service failing opens its own breaker, never one
	// the others share. Their states are not exported one series each
	// (a registry may hold thousands of services): the open ones are
	// counted per route, and listed by Breakers.
	ServiceBreaker BreakerOptions
	// MaxServiceBreakers bounds the service breakers kept; beyond, the
	// least recently used closed one is dropped (an open one only when
	// every one is open). Default 1024.
	MaxServiceBreakers int
	// Metrics receives the cluster metrics; nil: not exported.
	Metrics *Metrics
	// Logger logs circuit breaker transitions; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// IntN is the random source of the policies; default math/rand/v2.IntN.
	IntN func(n int) int
}

// Cluster invokes the calls of one route: it chooses providers with its
// policy, retries per its mode and keeps call statistics and circuit
// breakers. It is safe for concurrent use.
type Cluster struct {
	route      string
	policyName string
	policy     Policy
	stats      *Stats
	attempts   int // at most, per call
	idempotent bool
	classify   Classifier
	breakerOpt BreakerOptions // provider breakers; off when !enabled()
	routeBreak *breaker       // nil when off
	services   *serviceBreakers
	now        func() time.Time
	log        *slog.Logger
	metrics    *Metrics
	series     atomic.Pointer[routeSeries] // made at the first call (series)

	views snapshotCache[*view]
	pool  sync.Pool // *invocation

	mu           sync.Mutex
	breakers     map[string]*breaker // provider breakers by address
	openBreakers atomic.Int64        // provider breakers not closed (policies then check them)
	openServices atomic.Int64        // service breakers not closed, not evicted
	closed       bool

	// The errors Invoke returns without trying a provider, kept in the
	// cluster so that a flood of calls to a dead route allocates nothing.
	errNoProvider, errRouteOpen, errServiceOpen routeError
}

// routeError is a sentinel error said of a route. It is formatted when
// read rather than when the route is made: a gateway of thousands of
// routes would keep three formatted strings per route.
type routeError struct {
	c       *Cluster
	err     error
	service bool // the called service's breaker, not the route's
}

func (e *routeError) Error() string {
	if e.service {
		return "route " + e.c.route + ": the called service's " + e.err.Error()
	}
	return "route " + e.c.route + ": " + e.err.Error()
}

func (e *routeError) Unwrap() error { return e.err }

// New returns the cluster of one route.
func New(opts Options) (*Cluster, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil, MetricsOptions{})
	}
	if opts.Classify == nil {
		opts.Classify = DefaultClassifier
	}
	retries := DefaultRetries
	if opts.Retries != nil {
		retries = *opts.Retries
	}
	if retries < 0 {
		return nil, fmt.Errorf("cluster %s: retries %d is negative", opts.Route, retries)
	}
	attempts := 1
	switch opts.Mode {
	case Failover:
		attempts += retries
	case Failfast:
	default:
		return nil, fmt.Errorf("cluster %s: unknown mode %d", opts.Route, opts.Mode)
	}
	stats := NewStats(StatsOptions{Now: opts.Now})
	policyName := opts.Policy
	if policyName == "" {
		policyName = PolicyRandom
	}
	policy, err := NewPolicy(policyName, PolicyOptions{Stats: stats, HashNodes: opts.HashNodes, IntN: opts.IntN, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", opts.Route, err)
	}
	breakerOpt, err := opts.Breaker.normalize()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: provider breaker: %w", opts.Route, err)
	}
	routeOpt, err := opts.RouteBreaker.normalize()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: route breaker: %w", opts.Route, err)
	}
	serviceOpt, err := opts.ServiceBreaker.normalize()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: service breaker: %w", opts.Route, err)
	}
	c := &Cluster{
		route:      opts.Route,
		policyName: policyName,
		policy:     policy,
		stats:      stats,
		attempts:   attempts,
		idempotent: opts.Idempotent,
		classify:   opts.Classify,
		breakerOpt: breakerOpt,
		now:        opts.Now,
		log:        opts.Logger,
		metrics:    opts.Metrics,
		breakers:   make(map[string]*breaker),
	}
	c.errNoProvider = routeError{c: c, err: ErrNoProvider}
	c.errRouteOpen = routeError{c: c, err: ErrBreakerOpen}
	c.errServiceOpen = routeError{c: c, err: ErrBreakerOpen, service: true}
	c.pool.New = func() any { return new(invocation) }
	c.metrics.acquireRoute(c.route, policyName)
	if breakerOpt.enabled() {
		c.metrics.acquireProviderBreakers(c.route)
	}
	if routeOpt.enabled() {
		c.routeBreak = newBreaker(ScopeRoute, c.route, routeOpt, c.breakerChanged)
		c.metrics.acquireBreaker(c.route, ScopeRoute, c.route)
	}
	if serviceOpt.enabled() {
		c.services = newServiceBreakers(serviceOpt, opts.MaxServiceBreakers)
		c.metrics.acquireServiceBreakers(c.route)
	}
	return c, nil
}

// Stats returns the call statistics the cluster keeps.
func (c *Cluster) Stats() *Stats { return c.stats }

// outcome is what a call says about the route.
type outcome int

const (
	outcomeSuccess outcome = iota
	outcomeFailure
	outcomeNeutral
)

// Invoke runs a call: it chooses a provider among providers with the policy
// (leaving out those call.Exclude names, those already tried and those
// whose circuit breaker is open), runs inv on it and, per the mode and the
// classification of a failure, retries on another provider. It records the
// call statistics and breaker outcomes.
//
// A successful attempt's value is returned. A Business or Canceled error
// is returned as inv returned it; the last error of failed attempts is
// wrapped with the providers tried when there were several. Without a
// provider to try, Invoke returns ErrNoProvider or ErrBreakerOpen at once.
func (c *Cluster) Invoke(ctx context.Context, providers []*Provider, call *Call, inv Invoker) (any, error) {
	if len(providers) == 0 {
		return nil, &c.errNoProvider
	}
	var service *breaker
	if c.services != nil && call != nil && call.Service != "" {
		service = c.services.get(call.Service, c.now().UnixNano(), c.breakerChanged, c.dropServiceBreaker)
	}
	if c.routeBreak == nil && service == nil {
		v, _, err := c.invoke(ctx, providers, call, inv)
		return v, err
	}
	clk := lazyClock{clock: c.now}
	var rt, st ticket
	if c.routeBreak != nil {
		var ok bool
		if rt, ok = c.routeBreak.allow(&clk); !ok {
			return nil, &c.errRouteOpen
		}
	}
	if service != nil {
		var ok bool
		if st, ok = service.allow(&clk); !ok {
			if c.routeBreak != nil {
				c.routeBreak.release(rt)
			}
			return nil, &c.errServiceOpen // made once: a dead service's flood of calls allocates nothing here
		}
	}
	v, o, err := c.invoke(ctx, providers, call, inv)
	c.settle(c.routeBreak, rt, o)
	c.settle(service, st, o)
	return v, err
}

// settle gives b (nil: none) the outcome of the call its ticket t let through.
func (c *Cluster) settle(b *breaker, t ticket, o outcome) {
	switch {
	case b == nil:
	case o == outcomeNeutral:
		b.release(t)
	default:
		b.record(t, o == outcomeFailure, c.now().UnixNano())
	}
}

// invocation is the per-call state of Invoke, pooled.
type invocation struct {
	call        Call
	excl        exclusion
	exclude     func(*Provider) bool // the caller's Call.Exclude
	lazyDenials int                  // providers the caller's Exclude refused after the policy chose them
	triedBuf    [8]int
	deniedBuf   [8]int
}

func (c *Cluster) invoke(ctx context.Context, providers []*Provider, call *Call, inv Invoker) (any, outcome, error) {
	whole := call.snapshot()
	v := c.view(providers, whole)
	sv := c.stats.view(providers, whole)
	st := c.pool.Get().(*invocation)
	defer func() {
		*st = invocation{}
		c.pool.Put(st)
	}()
	st.excl = exclusion{
		key:      keyOf(providers),
		breakers: v.breakers,
		tried:    st.triedBuf[:0],
		denied:   st.deniedBuf[:0],
		clk:      lazyClock{clock: c.now},
	}
	if call != nil {
		st.call.Method, st.call.HashKey, st.call.Snapshot, st.exclude = call.Method, call.HashKey, call.Snapshot, call.Exclude
	}

	var lastErr error
	for attempt := 0; attempt < c.attempts; attempt++ {
		if attempt > 0 && ctx.Err() != nil {
			break
		}
		st.excl.clk.reset()
		idx, t, ok := c.pick(providers, v, st)
		if !ok {
			if attempt == 0 {
				return nil, outcomeNeutral, c.unavailable(providers, st)
			}
			break
		}
		if attempt > 0 {
			c.routeSeries().retries.Inc()
		}
		st.excl.tried = append(st.excl.tried, idx)
		smp := c.stats.start(sv[idx])
		res, err := inv(ctx, providers[idx])
		c.stats.Done(smp)
		if err == nil {
			c.recordProvider(v, idx, t, false)
			return res, outcomeSuccess, nil
		}
		switch c.classify(err) {
		case Business:
			c.recordProvider(v, idx, t, false)
			return res, outcomeSuccess, err
		case Canceled:
			if v.breakers != nil {
				v.breakers[idx].release(t)
			}
			return res, outcomeNeutral, err
		case NotExecuted:
			c.recordProvider(v, idx, t, true)
			lastErr = err
		default: // MaybeExecuted
			c.recordProvider(v, idx, t, true)
			lastErr = err
			if !c.idempotent {
				return nil, outcomeFailure, c.failed(providers, st.excl.tried, lastErr)
			}
		}
	}
	return nil, outcomeFailure, c.failed(providers, st.excl.tried, lastErr)
}

// pick chooses the provider of the next attempt and takes its breaker's
// admission.
//
// The policy sees the cluster's exclusions only when there are some (a
// retry, an open breaker), so the common call takes its fast path. The
// caller's Exclude is checked on the chosen provider only, as Dubbo checks
// availability, and handed to the policy after two refusals. A provider
// refused by the caller or by its breaker (another call took its last
// probe slot) is left out and the policy chooses again.
func (c *Cluster) pick(providers []*Provider, v *view, st *invocation) (int, ticket, bool) {
	for {
		st.call.excl = nil
		if len(st.excl.tried) > 0 || len(st.excl.denied) > 0 || c.openBreakers.Load() > 0 {
			st.call.excl = &st.excl
		}
		p := c.policy.Select(providers, &st.call)
		if p == nil {
			return -1, ticket{}, false
		}
		idx := v.indexOf(providers, p)
		if idx < 0 {
			return -1, ticket{}, false // the policy returned a provider not in the snapshot
		}
		if st.exclude != nil && st.call.Exclude == nil && st.exclude(p) {
			st.excl.denied = append(st.excl.denied, idx)
			if st.lazyDenials++; st.lazyDenials >= 2 {
				st.call.Exclude = st.exclude
			}
			continue
		}
		c.routeSeries().selections.Inc()
		if v.breakers == nil {
			return idx, ticket{}, true
		}
		if t, ok := v.breakers[idx].allow(&st.excl.clk); ok {
			return idx, t, true
		}
		st.excl.denied = append(st.excl.denied, idx)
	}
}

func (c *Cluster) recordProvider(v *view, idx int, t ticket, failed bool) {
	if v.breakers != nil {
		v.breakers[idx].record(t, failed, c.now().UnixNano())
	}
}

// unavailable explains why no provider could take a call's first attempt.
func (c *Cluster) unavailable(providers []*Provider, st *invocation) error {
	open := 0
	for i, p := range providers {
		if st.exclude != nil && st.exclude(p) {
			continue
		}
		if b := st.excl.breakerOf(providers, i); b != nil && !b.available(&st.excl.clk) {
			open++
		}
	}
	if open == 0 {
		return &c.errNoProvider
	}
	return fmt.Errorf("route %s: %d of %d providers have an open circuit breaker: %w", c.route, open, len(providers), ErrBreakerOpen)
}

// failed wraps the last error of a call whose attempts all failed.
func (c *Cluster) failed(providers []*Provider, tried []int, last error) error {
	if len(tried) <= 1 {
		return last
	}
	addrs := make([]string, len(tried))
	for i, idx := range tried {
		addrs[i] = providers[idx].Addr
	}
	return fmt.Errorf("route %s: %d attempts failed (providers %s), last: %w", c.route, len(tried), strings.Join(addrs, ", "), last)
}

// view is what the cluster derives from one provider snapshot.
type view struct {
	breakers []*breaker        // index by index; nil when provider breakers are off
	index    map[*Provider]int // provider positions, for large snapshots
}

// indexOf returns the position of p in providers, or -1.
func (v *view) indexOf(providers []*Provider, p *Provider) int {
	if v.index != nil {
		if i, ok := v.index[p]; ok {
			return i
		}
		return -1
	}
	return slices.Index(providers, p)
}

// view returns the view of providers, building it on the snapshot's first
// use. Provider breakers are kept by address across snapshots; those of
// addresses in neither this snapshot nor the previous one, nor in whole
// (the snapshot providers was narrowed from, when it was), are dropped.
func (c *Cluster) view(providers, whole []*Provider) *view {
	if v, ok := c.views.load(providers); ok {
		return v
	}
	c.views.mu.Lock()
	defer c.views.mu.Unlock()
	if v, ok := c.views.load(providers); ok {
		return v
	}
	v := &view{}
	if len(providers) > 16 {
		v.index = make(map[*Provider]int, len(providers))
		for i, p := range providers {
			if _, dup := v.index[p]; !dup {
				v.index[p] = i
			}
		}
	}
	if c.breakerOpt.enabled() {
		prev, _ := c.views.latest()
		v.breakers = make([]*breaker, len(providers))
		keep := make(map[string]bool, len(providers)+len(whole))
		c.mu.Lock()
		for i, p := range providers {
			b := c.breakers[p.Addr]
			if b == nil {
				b = newBreaker(ScopeProvider, p.Addr, c.breakerOpt, c.breakerChanged)
				c.breakers[p.Addr] = b
				c.metrics.acquireBreaker(c.route, ScopeProvider, p.Addr)
			}
			v.breakers[i] = b
			keep[p.Addr] = true
		}
		if prev != nil {
			for _, b := range prev.breakers {
				keep[b.key] = true
			}
		}
		for _, p := range whole {
			keep[p.Addr] = true
		}
		for addr, b := range c.breakers {
			if !keep[addr] {
				delete(c.breakers, addr)
				c.detach(b)
				c.metrics.release(c.route, ScopeProvider, addr)
			}
		}
		c.mu.Unlock()
	}
	c.views.store(providers, v)
	return v
}

// detach stops counting and exporting b, a provider breaker dropped from
// the cluster (calls on an old snapshot may still move it).
func (c *Cluster) detach(b *breaker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.detached && b.state() != BreakerClosed {
		c.openBreakers.Add(-1)
		c.metrics.providerBreakerDropped(c.route)
	}
	b.detached = true
}

// dropServiceBreaker stops counting b, a service breaker the bound
// evicted (calls holding it may still move it).
func (c *Cluster) dropServiceBreaker(b *breaker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.detached && b.state() != BreakerClosed {
		c.openServices.Add(-1)
		c.metrics.serviceOpen.WithLabelValues(c.route).Dec()
	}
	b.detached = true
}

// breakerChanged counts, exports and logs a breaker transition. It runs under b.mu.
func (c *Cluster) breakerChanged(b *breaker, from, to BreakerState, now int64) {
	opened, closed := from == BreakerClosed && to != BreakerClosed, from != BreakerClosed && to == BreakerClosed
	switch {
	case b.scope == ScopeProvider && !b.detached && opened:
		c.openBreakers.Add(1)
	case b.scope == ScopeProvider && !b.detached && closed:
		c.openBreakers.Add(-1)
	case b.scope == ScopeService && !b.detached && opened:
		c.openServices.Add(1)
	case b.scope == ScopeService && !b.detached && closed:
		c.openServices.Add(-1)
	}
	switch {
	case b.detached:
		// Dropped: its series are gone or no longer its own.
	case b.scope == ScopeService:
		// One series for all of the route's services: the key is not a label.
		c.metrics.serviceBreakerChanged(c.route, opened, closed, to)
	case b.scope == ScopeProvider:
		// Counted per route; one series per address only if asked for.
		c.metrics.providerBreakerChanged(c.route, b.key, opened, closed, to)
	default:
		c.metrics.breakerChanged(c.route, b.scope, b.key, to)
	}
	attrs := []any{"route", c.route, "scope", b.scope, "key", b.key, "from", from.String(), "to", to.String()}
	if to == BreakerOpen {
		c.log.Warn("circuit breaker opened", append(attrs, "until", time.Unix(0, now+int64(b.opts.CoolDown)).UTC())...)
		return
	}
	c.log.Info("circuit breaker state changed", attrs...)
}

// Breakers reports the state of the route's breaker (first, when enabled)
// and of each provider breaker, by address.
func (c *Cluster) Breakers() []BreakerStatus {
	now := c.now().UnixNano()
	var out []BreakerStatus
	if c.routeBreak != nil {
		out = append(out, c.routeBreak.status(now))
	}
	if c.services != nil {
		out = append(out, c.services.statuses(now)...)
	}
	c.mu.Lock()
	bs := make([]*breaker, 0, len(c.breakers))
	for _, b := range c.breakers {
		bs = append(bs, b)
	}
	c.mu.Unlock()
	slices.SortFunc(bs, func(a, b *breaker) int { return strings.Compare(a.key, b.key) })
	for _, b := range bs {
		out = append(out, b.status(now))
	}
	return out
}

// Close deletes the cluster's metric series (those not shared with another
// cluster of the same route). Call it once no Invoke is running; calling
// it again does nothing.
func (c *Cluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for addr, b := range c.breakers {
		c.detach(b) // an open one leaves the route's count
		c.metrics.release(c.route, ScopeProvider, addr)
	}
	clear(c.breakers)
	if c.breakerOpt.enabled() {
		c.metrics.release(c.route, scopeProviders, "")
	}
	if c.routeBreak != nil {
		c.metrics.release(c.route, ScopeRoute, c.route)
	}
	if c.services != nil {
		// Its open ones leave the route's count, which a reload's new
		// cluster of the route may go on using.
		c.services.dropAll(c.dropServiceBreaker)
		c.metrics.release(c.route, ScopeService, "")
	}
	c.metrics.release(c.route, "", "")
	c.metrics.release(c.route, scopePolicy, c.policyName)
}

// exclusion is what Cluster.Invoke adds to a Call's exclusions: the
// providers already tried, those refused after being chosen (by the
// caller's Exclude or their breaker), and those whose breaker is open.
type exclusion struct {
	key      snapshotKey
	breakers []*breaker
	tried    []int
	denied   []int
	clk      lazyClock
}

func (e *exclusion) excludes(providers []*Provider, i int) bool {
	if keyOf(providers) != e.key {
		return false // not the snapshot being invoked: nothing known about it
	}
	if slices.Contains(e.tried, i) || slices.Contains(e.denied, i) {
		return true
	}
	if e.breakers != nil {
		b := e.breakers[i]
		return b.state() != BreakerClosed && !b.available(&e.clk)
	}
	return false
}

// breakerOf returns the breaker of providers[i], or nil.
func (e *exclusion) breakerOf(providers []*Provider, i int) *breaker {
	if e.breakers == nil || keyOf(providers) != e.key {
		return nil
	}
	return e.breakers[i]
}

// lazyClock reads its clock once, on first need, as unix nanoseconds.
type lazyClock struct {
	clock func() time.Time
	now   int64
	read  bool
}

func (l *lazyClock) get() int64 {
	if !l.read {
		l.now, l.read = l.clock().UnixNano(), true
	}
	return l.now
}

func (l *lazyClock) reset() { l.read = false }

// routeSeries returns the route's retry and selection series, made at the
// first call: a route nobody calls exports none. Two calls racing to make
// them resolve the same series.
func (c *Cluster) routeSeries() *routeSeries {
	if s := c.series.Load(); s != nil {
		return s
	}
	s := c.metrics.routeSeries(c.route, c.policyName)
	c.series.Store(s)
	return s
}
