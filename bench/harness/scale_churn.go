package main

// Churn and propagation. A change is one ZooKeeper write a provider's
// life would make:
//
//   - interface level: a provider node of a service deleted, or created
//     again (a provider stopping or starting);
//   - application level: an instance node's data rewritten with the other
//     revision of its application (a redeploy: the instance's metadata,
//     read from /<root>/metadata/<app>/<revision>, changes);
//   - both layouts: either, at random.
//
// The churn makes changes at a fixed rate on random services (phase 1:
// the gateway's CPU is measured, nothing else asks it anything), then
// goes on while sampled changes are timed (phase 2). A sample is a change
// the sampler makes itself on a service (interface level) or application
// nobody changed in the last second; it then asks
// /admin/services?service=<key>&limit=1 every -poll (or ten times what
// the last answer took, when longer: politePoll) until the change shows
// (the provider gone or back, its source or revision changed), and
// takes the propagation latency as the service's "updated" in that
// answer (when the gateway published the providers that show the
// change, by its own clock, on the same machine) minus when the write
// returned to the sampler. So the poll interval does not quantize it;
// when the gateway published before the write's answer reached the
// sampler, the latency is counted as 0 (and those samples counted).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// Kinds of change.
const (
	changeNode     = iota // an interface-level provider node deleted or created
	changeRevision        // an instance moved to its application's other revision
)

// change is one write, and what the gateway shows once it has seen it.
type change struct {
	kind int
	unit int // what is busy while the change is made: the service, or the application
	i, j int // changeNode: provider j of interface i
	a, k int // changeRevision: instance k of application a
	// present (changeNode) and variant (changeRevision) are the state
	// after the change.
	present bool
	variant int
}

// fleet is the generated registry's state as the changes leave it, and
// the units being changed (by the churn or the sampler), so that two
// changes never overlap on one unit.
type fleet struct {
	lay  registryOptions
	conn *zk.Conn

	mu      sync.Mutex
	rng     *rand.Rand
	busy    map[int]bool
	touched map[int]time.Time
	gone    map[[2]int]bool // interface-level provider nodes deleted
	variant map[int]int     // instance (a*instances+k) -> revision variant, absent: 0
}

func newFleet(lay registryOptions, conn *zk.Conn) *fleet {
	return &fleet{
		lay: lay, conn: conn,
		rng:  rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		busy: map[int]bool{}, touched: map[int]time.Time{},
		gone: map[[2]int]bool{}, variant: map[int]int{},
	}
}

// units is how many units there are: services, or applications when the
// application level is written (a change of an instance shows in every
// service of its application).
func (f *fleet) units() int {
	if f.lay.writesApps() {
		return f.lay.apps
	}
	return f.lay.services
}

// pick chooses a change on a unit nobody is changing, preferring (quiet)
// one not changed within the last second, and marks the unit busy; false
// when every unit tried was busy.
func (f *fleet) pick(quiet bool) (change, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for try := range 64 {
		u := f.rng.IntN(f.units())
		if f.busy[u] || quiet && try < 32 && now.Sub(f.touched[u]) < time.Second {
			continue
		}
		c := change{unit: u}
		switch {
		case f.lay.mode == modeInterface || f.lay.mode == modeBoth && f.rng.IntN(2) == 0:
			c.kind, c.i, c.j = changeNode, u, f.rng.IntN(f.lay.providers)
			if f.lay.writesApps() { // u is an application: one of its interfaces
				c.i = u + f.lay.apps*f.rng.IntN((f.lay.services-u+f.lay.apps-1)/f.lay.apps)
			}
			c.present = f.gone[[2]int{c.i, c.j}]
		default:
			c.kind, c.a, c.k = changeRevision, u, f.rng.IntN(f.lay.instances)
			c.variant = 1 - f.variant[c.a*f.lay.instances+c.k]
		}
		f.busy[u] = true
		return c, true
	}
	return change{}, false
}

// release frees c's unit; applied says whether the write was made.
func (f *fleet) release(c change, applied bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.busy, c.unit)
	f.touched[c.unit] = time.Now()
	if !applied {
		return
	}
	switch c.kind {
	case changeNode:
		if c.present {
			delete(f.gone, [2]int{c.i, c.j})
		} else {
			f.gone[[2]int{c.i, c.j}] = true
		}
	case changeRevision:
		f.variant[c.a*f.lay.instances+c.k] = c.variant
	}
}

// apply makes c's write. The connection is closed when the run's context
// ends, which ends a write under way.
func (f *fleet) apply(c change) error {
	switch c.kind {
	case changeNode:
		path := f.lay.rootPath() + "/" + f.lay.iface(c.i) + "/providers/" + url.QueryEscape(f.lay.providerURL(c.i, c.j))
		if c.present {
			if _, err := f.conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				return fmt.Errorf("create %s: %w", path, err)
			}
			return nil
		}
		if err := f.conn.Delete(path, -1); err != nil {
			return fmt.Errorf("delete %s: %w", path, err)
		}
		return nil
	default:
		path := f.lay.servicesRootPath() + "/" + f.lay.appName(c.a) + "/" + instanceAddr(c.a*f.lay.instances+c.k)
		if _, err := f.conn.Set(path, f.lay.instanceJSON(c.a, c.k, c.variant), -1); err != nil {
			return fmt.Errorf("set %s: %w", path, err)
		}
		return nil
	}
}

// observe says which service shows c, and whether an answer for it does.
func (f *fleet) observe(c change) (service string, shows func(*serviceView) bool) {
	if c.kind == changeNode {
		addr := f.lay.providerAddr(c.i, c.j)
		return f.lay.iface(c.i), func(s *serviceView) bool {
			p := s.provider(addr)
			switch {
			case f.lay.mode == modeBoth && c.present:
				return p != nil && p.Source == "both"
			case f.lay.mode == modeBoth:
				return p != nil && p.Source == "application"
			}
			return (p != nil) == c.present
		}
	}
	addr, rev := instanceAddr(c.a*f.lay.instances+c.k), f.lay.revision(c.a, c.variant)
	return f.lay.iface(c.a), func(s *serviceView) bool { // interface a is application a's first
		p := s.provider(addr)
		return p != nil && p.Revision == rev
	}
}

// churnStats counts the churn's changes.
type churnStats struct {
	mu      sync.Mutex
	changes int // made during the CPU measurement
	total   int // made in all
	skipped int // ticks with every unit tried busy
	rate    float64
}

// propagation is the sampled changes' latencies.
type propagation struct {
	latencies     []time.Duration // "updated" minus the write's return
	seen          []time.Duration // the first answer showing the change minus the write's return
	writes        []time.Duration // the writes' own round trips
	beforeReturn  int             // published before the write's answer arrived: counted as 0
	lost          int             // never showed within sampleTimeout
	beforeWritten int             // "updated" before the write began: not counted (a later answer is awaited)
}

// sampleTimeout bounds the wait for one sampled change to show.
const sampleTimeout = 10 * time.Second

// propQuantile is the q-quantile of the propagation latencies, -1 when
// there is none.
func (r *scaleResult) propQuantile(q float64) time.Duration {
	if r.prop == nil {
		return -1
	}
	return quantile(r.prop.latencies, q)
}

// quantile is the q-quantile (nearest rank) of ds, -1 when empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// churnAndSample runs the churn: phase 1 measures the gateway's CPU over
// o.churnFor, phase 2 samples propagation over o.churnFor.
func (gw *scaleGateway) churnAndSample(ctx context.Context, o *scaleOptions, lay registryOptions, r *scaleResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn, err := zkConnect(o.zk, 30*time.Second)
	if err != nil {
		return fmt.Errorf("the churn's session: %w", err)
	}
	defer conn.Close()
	stopClose := context.AfterFunc(ctx, conn.Close) // bounds every write by the run's deadline
	defer stopClose()
	f := newFleet(lay, conn)
	stats := &churnStats{}
	r.churn = stats

	pid := gw.child.cmd.Process.Pid
	cpu0, err := procCPU(pid)
	if err != nil {
		return err
	}
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	measuring := true
	var churnErr error
	churnDone := make(chan struct{})
	t0 := time.Now()
	go func() { // owned here: stopChurn ends it, churnDone says it has
		defer close(churnDone)
		churnErr = churn(churnCtx, f, o.churnRate, func() {
			stats.mu.Lock()
			defer stats.mu.Unlock()
			stats.total++
			if measuring {
				stats.changes++
			}
		}, func() {
			stats.mu.Lock()
			defer stats.mu.Unlock()
			stats.skipped++
		})
	}()
	stopAll := func() error {
		stopChurn()
		<-churnDone
		if churnErr != nil && !errors.Is(churnErr, context.Canceled) {
			return fmt.Errorf("churn: %w", churnErr)
		}
		return nil
	}

	if err := sleepCtx(ctx, o.churnFor); err != nil {
		_ = stopAll()
		return err
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		_ = stopAll()
		return err
	}
	elapsed := time.Since(t0)
	stats.mu.Lock()
	measuring = false
	stats.rate = float64(stats.changes) / elapsed.Seconds()
	stats.mu.Unlock()
	r.churnCPU = (cpu1 - cpu0).Seconds() / elapsed.Seconds()

	r.prop, err = gw.sample(ctx, f, o)
	return errors.Join(err, stopAll())
}

// churnMaxLag is how far behind its schedule the churn may fall (writes
// slower than the rate) before it gives up catching up.
const churnMaxLag = time.Second

// churn makes one change every 1/rate until ctx ends: change n is due at
// n/rate from the start, and one that is late is made at once, so that
// slow writes do not lower the rate unless they last (beyond
// churnMaxLag, the schedule moves on); done is called after each change
// made, busy when every unit tried was busy.
func churn(ctx context.Context, f *fleet, rate float64, done, busy func()) error {
	interval := time.Duration(float64(time.Second) / rate)
	due := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		due = due.Add(interval)
		if lag := time.Since(due); lag > churnMaxLag {
			due = time.Now()
		}
		timer.Reset(time.Until(due))
		c, ok := f.pick(false)
		if !ok {
			busy()
			continue
		}
		err := f.apply(c)
		f.release(c, err == nil)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		done()
	}
}

// sample times up to o.samples changes, one every o.churnFor/o.samples
// (at least 50 ms), for o.churnFor at most.
func (gw *scaleGateway) sample(ctx context.Context, f *fleet, o *scaleOptions) (*propagation, error) {
	p := &propagation{}
	every := max(o.churnFor/time.Duration(o.samples), 50*time.Millisecond)
	end := time.Now().Add(o.churnFor)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for len(p.latencies)+p.lost < o.samples && time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-ticker.C:
		}
		c, ok := f.pick(true)
		if !ok {
			continue
		}
		err := gw.sampleOne(ctx, f, c, o.poll, p)
		f.release(c, err == nil || !errors.Is(err, errWriteFailed))
		if err != nil {
			return p, err
		}
	}
	if len(p.latencies) == 0 {
		return p, fmt.Errorf("no propagation sample (%d lost)", p.lost)
	}
	return p, nil
}

// errWriteFailed marks a sample whose write was not made.
var errWriteFailed = errors.New("the sampled write failed")

// sampleOne makes c and waits for the gateway to show it.
func (gw *scaleGateway) sampleOne(ctx context.Context, f *fleet, c change, poll time.Duration, p *propagation) error {
	service, shows := f.observe(c)
	began := time.Now()
	if err := f.apply(c); err != nil {
		return fmt.Errorf("%w: %w", errWriteFailed, err)
	}
	returned := time.Now()
	p.writes = append(p.writes, returned.Sub(began))
	q := url.Values{"service": {service}, "limit": {"1"}}
	deadline := time.NewTimer(sampleTimeout)
	defer deadline.Stop()
	for {
		asked := time.Now()
		a, _, err := gw.servicesPage(ctx, "/admin/services", q)
		seen := time.Now()
		if err != nil {
			return fmt.Errorf("asking for %s: %w", service, err)
		}
		if len(a.Services) == 1 && a.Services[0].Service == service && shows(&a.Services[0]) {
			switch updated := a.Services[0].Updated; {
			case updated.IsZero():
				p.latencies = append(p.latencies, seen.Sub(returned))
			case updated.Before(began):
				// Shows the change, published before it was made: the
				// state was already so. Not a sample.
				p.beforeWritten++
				return nil
			case updated.Before(returned):
				p.beforeReturn++
				p.latencies = append(p.latencies, 0)
			default:
				p.latencies = append(p.latencies, updated.Sub(returned))
			}
			p.seen = append(p.seen, seen.Sub(returned))
			return nil
		}
		timer := time.NewTimer(politePoll(poll, seen.Sub(asked)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-deadline.C:
			timer.Stop()
			p.lost++
			return nil
		case <-timer.C:
		}
	}
}
