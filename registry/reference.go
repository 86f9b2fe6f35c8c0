package registry

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// RefKey identifies a reference: a service and the call settings bound to
// it, as Dubbo caches its ReferenceConfigs.
type RefKey struct {
	Service ServiceKey
	Timeout time.Duration
}

// Reference binds a service key and call settings to the service's
// directory. It is what a consumer needs to call a service; the gateway
// keeps one per RefKey, never one per request.
type Reference struct {
	Key RefKey
	// Dir is the service's directory. It stays readable (its last
	// snapshot) after the reference is evicted.
	Dir *Directory

	el     *list.Element
	pins   int
	cached bool // taken with Get at least once: kept when unpinned
	last   time.Time
}

// References is a bounded cache of the references made on one registry.
// Routes pin theirs for as long as they live; references made on demand
// (the generic pass-through) are kept while used and evicted when more
// than Max are unpinned, least recently used first, or when idle for
// IdleTTL. Eviction releases the reference's directory, which lets the
// registry drop the subscription (after its grace period when crowded
// out, at once when idle): repeated calls to services nobody serves cost
// one reference and one subscription each, and nothing more.
//
// References made on demand go through OnDemand, which adds what a client
// choosing the names must not be able to grow: a registry that knows its
// interfaces (Catalog) answers for a name nobody registered without any
// subscription, and the subscriptions made on demand are capped per second
// and in total (OnDemandLimits).
type References struct {
	reg Registry
	log *slog.Logger
	now func() time.Time // the clock of the per-second limit (tests stop it)

	mu       sync.Mutex
	max      int
	idle     time.Duration
	refs     map[RefKey]*Reference
	services map[ServiceKey]int // references per service key
	unpinned list.List          // of *Reference, most recently used at the front
	sweep    *time.Timer
	sweepAt  time.Time // when sweep fires; zero when stopped
	closed   bool
	onDemand map[*Directory]struct{} // subscriptions OnDemand made, until the registry drops them
	limits   OnDemandLimits
	tokens   float64 // for new on-demand subscriptions, up to limits.PerSecond
	refilled time.Time
	unlogged [refusalReasons]uint64 // refusals since the last log line
	lastLog  time.Time
	refusals [refusalReasons]atomic.Uint64
}

// Default limits of a References cache.
const (
	DefaultMaxReferences                   = 1024
	DefaultReferenceIdle                   = 10 * time.Minute
	DefaultOnDemandPerSecond               = 100
	DefaultOnDemandMax                     = 2048
	refusalLogInterval                     = 10 * time.Second
	minSweepInterval                       = 10 * time.Millisecond
	refusalReasons                         = 3
	refusedAbsent, refusedRate, refusedMax = 0, 1, 2
)

// OnDemandLimits bound the subscriptions OnDemand makes: services the
// clients of the generic pass-through name, which nobody else holds.
type OnDemandLimits struct {
	// PerSecond new subscriptions at most (a burst of as many). ≤ 0: the
	// default, 100.
	PerSecond int
	// Max subscriptions made on demand live at once: held by a reference,
	// or waiting out the registry's grace period. ≤ 0: the default, 2048.
	Max int
}

// Why OnDemand refuses a reference.
var (
	// ErrNotRegistered: the registry knows nothing is registered under
	// the interface (Catalog): no provider, and no subscription made.
	ErrNotRegistered = errors.New("nothing is registered under the interface")
	// ErrSubscribeRate: OnDemandLimits.PerSecond new subscriptions were
	// made within the last second.
	ErrSubscribeRate = errors.New("too many new services asked for in the last second")
	// ErrSubscribeMax: OnDemandLimits.Max subscriptions made on demand are
	// live.
	ErrSubscribeMax = errors.New("too many services asked for on demand are subscribed")
)

// Refusals counts what OnDemand refused, by reason.
type Refusals struct {
	NotRegistered uint64 // ErrNotRegistered
	Rate          uint64 // ErrSubscribeRate
	Max           uint64 // ErrSubscribeMax
}

// NewReferences makes the reference cache of reg. max ≤ 0 and idle ≤ 0
// take the defaults.
func NewReferences(reg Registry, max int, idle time.Duration) *References {
	c := &References{reg: reg, log: slog.Default(), now: time.Now, refs: make(map[RefKey]*Reference),
		services: make(map[ServiceKey]int), onDemand: make(map[*Directory]struct{})}
	c.SetLimits(max, idle)
	c.SetOnDemandLimits(OnDemandLimits{})
	return c
}

// SetLogger sets where refusals of OnDemand are logged (at most one line
// per 10 s). Default slog.Default().
func (c *References) SetLogger(log *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = log
}

// SetOnDemandLimits changes the bounds of OnDemand (on reload); zero
// fields take the defaults.
func (c *References) SetOnDemandLimits(l OnDemandLimits) {
	if l.PerSecond <= 0 {
		l.PerSecond = DefaultOnDemandPerSecond
	}
	if l.Max <= 0 {
		l.Max = DefaultOnDemandMax
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refilled.IsZero() || c.tokens > float64(l.PerSecond) {
		c.tokens = float64(l.PerSecond)
	}
	c.limits = l
}

// SetLimits changes the bounds (on reload); the cache shrinks at once if
// needed.
func (c *References) SetLimits(max int, idle time.Duration) {
	if max <= 0 {
		max = DefaultMaxReferences
	}
	if idle <= 0 {
		idle = DefaultReferenceIdle
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max, c.idle = max, idle
	c.trim()
	c.scheduleSweep()
}

// Get returns k's reference, making it on first use, and marks it used.
// It never blocks on the network. After Close it returns nil.
func (c *References) Get(k RefKey) *Reference {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	r := c.lookup(k)
	r.cached = true
	if r.pins == 0 {
		c.unpinned.MoveToFront(r.el)
		c.trim()
	}
	return r
}

// OnDemand returns k's reference for a client that named the service
// (the generic pass-through), as Get does, unless the service has no
// reference yet and
//
//   - the registry knows nothing is registered under its interface
//     (ErrNotRegistered, answered from memory: no subscription is made);
//   - or OnDemandLimits forbid another subscription now (ErrSubscribeRate,
//     ErrSubscribeMax).
//
// While the registry's catalog is not known yet it waits for it, at most
// until ctx is done, then subscribes as Get does: a registry that cannot
// tell never makes a registered service look absent. After Close it
// returns nil and no error.
func (c *References) OnDemand(ctx context.Context, k RefKey) (*Reference, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil
	}
	if _, ok := c.refs[k]; ok || c.services[k.Service] > 0 {
		// Subscribed already: the catalog has nothing to add.
		defer c.mu.Unlock()
		r := c.lookup(k)
		r.cached = true
		if r.pins == 0 {
			c.unpinned.MoveToFront(r.el)
			c.trim()
		}
		return r, nil
	}
	c.mu.Unlock()
	if cat, ok := c.reg.(Catalog); ok && presence(ctx, cat, k.Service.Interface) == PresenceAbsent {
		// A client's typo or a probe: counted, not logged.
		c.refusals[refusedAbsent].Add(1)
		return nil, fmt.Errorf("%s: %w", k.Service.Interface, ErrNotRegistered)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil
	}
	_, had := c.refs[k]
	subscribes := !had && c.services[k.Service] == 0
	if subscribes {
		if err := c.admit(); err != nil {
			return nil, err
		}
	}
	r := c.lookup(k)
	if subscribes {
		c.onDemand[r.Dir] = struct{}{}
	}
	r.cached = true
	if r.pins == 0 {
		c.unpinned.MoveToFront(r.el)
		c.trim()
	}
	return r, nil
}

// presence asks cat about iface, waiting (at most until ctx is done) while
// the catalog is being read.
func presence(ctx context.Context, cat Catalog, iface string) Presence {
	for {
		p, wait := cat.Lookup(iface)
		if p != PresenceUnknown || wait == nil {
			return p
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return PresenceUnknown
		}
	}
}

// admit takes a new on-demand subscription out of the limits, or says why
// not; the lock is held.
func (c *References) admit() error {
	now := c.now()
	rate := float64(c.limits.PerSecond)
	if !c.refilled.IsZero() {
		c.tokens = min(rate, c.tokens+now.Sub(c.refilled).Seconds()*rate)
	}
	c.refilled = now
	if c.tokens < 1 {
		c.refuse(refusedRate)
		return fmt.Errorf("%w (limit %d per second)", ErrSubscribeRate, c.limits.PerSecond)
	}
	c.tokens--
	if len(c.onDemand) >= c.limits.Max {
		c.pruneOnDemand()
		if len(c.onDemand) >= c.limits.Max {
			c.refuse(refusedMax)
			return fmt.Errorf("%w (limit %d)", ErrSubscribeMax, c.limits.Max)
		}
	}
	return nil
}

// pruneOnDemand forgets the on-demand subscriptions the registry dropped;
// the lock is held.
func (c *References) pruneOnDemand() {
	for d := range c.onDemand {
		if !d.Live() {
			delete(c.onDemand, d)
		}
	}
}

// refuse counts a refusal over the limits and logs the refusals not
// logged yet, at most once per refusalLogInterval; the lock is held.
func (c *References) refuse(reason int) {
	c.refusals[reason].Add(1)
	c.unlogged[reason]++
	now := c.now()
	if now.Sub(c.lastLog) < refusalLogInterval {
		return
	}
	c.lastLog = now
	c.log.Warn("the pass-through refused to subscribe to new services: over its limits",
		"refused_rate", c.unlogged[refusedRate], "refused_max", c.unlogged[refusedMax],
		"per_second", c.limits.PerSecond, "max", c.limits.Max, "live", len(c.onDemand),
		"next_log_after", refusalLogInterval)
	c.unlogged = [refusalReasons]uint64{}
}

// Refusals counts what OnDemand refused since the cache was made.
func (c *References) Refusals() Refusals {
	return Refusals{NotRegistered: c.refusals[refusedAbsent].Load(), Rate: c.refusals[refusedRate].Load(),
		Max: c.refusals[refusedMax].Load()}
}

// OnDemandSubscriptions is the number of subscriptions OnDemand made that
// the registry still keeps.
func (c *References) OnDemandSubscriptions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pruneOnDemand()
	return len(c.onDemand)
}

// Pin returns k's reference held until Unpin: never evicted meanwhile.
// After Close it returns nil.
func (c *References) Pin(k RefKey) *Reference {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	r := c.lookup(k)
	if r.pins == 0 {
		c.unpinned.Remove(r.el)
		r.el = nil
	}
	r.pins++
	return r
}

// Unpin gives back a reference taken with Pin. Unpinned, a reference that
// Get also handed out becomes an ordinary cached one, evicted when idle or
// crowded out; one only routes used is released at once (a route removed
// by a reload releases its subscription).
func (c *References) Unpin(r *Reference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || r.pins == 0 || c.refs[r.Key] != r {
		return
	}
	if r.pins--; r.pins > 0 {
		return
	}
	if !r.cached {
		c.remove(r)
		r.Dir.Release()
		return
	}
	r.last = time.Now()
	r.el = c.unpinned.PushFront(r)
	c.trim()
	c.scheduleSweep()
}

// lookup finds or makes k's reference; the lock is held.
func (c *References) lookup(k RefKey) *Reference {
	now := time.Now()
	if r, ok := c.refs[k]; ok {
		r.last = now
		return r
	}
	r := &Reference{Key: k, Dir: c.reg.Subscribe(k.Service), last: now}
	r.el = c.unpinned.PushFront(r)
	c.refs[k] = r
	c.services[k.Service]++
	c.scheduleSweep()
	return r
}

// remove forgets r; the lock is held.
func (c *References) remove(r *Reference) {
	delete(c.refs, r.Key)
	if c.services[r.Key.Service]--; c.services[r.Key.Service] <= 0 {
		delete(c.services, r.Key.Service)
	}
}

// scheduleSweep makes the idle sweep run when the least recently used
// unpinned reference reaches the idle TTL (unless it runs sooner); the
// lock is held.
func (c *References) scheduleSweep() {
	back := c.unpinned.Back()
	if back == nil || c.closed {
		return
	}
	at := back.Value.(*Reference).last.Add(c.idle)
	if !c.sweepAt.IsZero() && !c.sweepAt.After(at) {
		return
	}
	c.sweepAt = at
	wait := max(time.Until(at), minSweepInterval)
	if c.sweep == nil {
		c.sweep = time.AfterFunc(wait, c.sweepIdle)
		return
	}
	c.sweep.Reset(wait)
}

// trim evicts unpinned references beyond max; the lock is held.
func (c *References) trim() {
	for c.unpinned.Len() > c.max {
		c.evict(c.unpinned.Back().Value.(*Reference))
	}
}

// evict drops an unpinned reference crowded out by newer ones: its
// directory is released with the registry's grace period.
func (c *References) evict(r *Reference) {
	c.unpinned.Remove(r.el)
	r.el = nil
	c.remove(r)
	r.Dir.Release()
}

// sweepIdle evicts unpinned references idle for the TTL, releasing their
// subscriptions at once (nobody used them for that long: no grace period
// on top), and schedules itself for the next one.
func (c *References) sweepIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepAt = time.Time{}
	if c.closed {
		return
	}
	cutoff := time.Now().Add(-c.idle)
	for el := c.unpinned.Back(); el != nil; {
		r := el.Value.(*Reference)
		if r.last.After(cutoff) {
			break // the rest were used more recently
		}
		el = el.Prev()
		c.unpinned.Remove(r.el)
		r.el = nil
		c.remove(r)
		r.Dir.ReleaseNow()
	}
	c.scheduleSweep()
}

// Len is the number of references, pinned or not.
func (c *References) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refs)
}

// Close releases every reference; Get and Pin return nil afterwards.
func (c *References) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.sweep != nil {
		c.sweep.Stop()
	}
	for _, r := range c.refs {
		r.Dir.Release()
	}
	c.refs = nil
	c.services = nil
	c.onDemand = nil
	c.unpinned.Init()
}
