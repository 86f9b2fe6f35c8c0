package cluster

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLatencyDecay is the default time constant of the latency EWMA.
const DefaultLatencyDecay = 10 * time.Second

// Stats track, per provider address, the calls in flight and a peak EWMA of
// their latency; leastactive and p2c read them. Wrap each call with Start
// and Done. Stats are meant for the calls of one service (a Cluster owns
// one): when a new snapshot is first seen, addresses in neither it nor the
// previous one are forgotten.
type Stats struct {
	decay float64 // EWMA time constant in nanoseconds
	now   func() time.Time
	base  time.Time // nanotime origin

	mu     sync.Mutex
	byAddr map[string]*providerStats
	views  snapshotCache[[]*providerStats]
}

// StatsOptions configures NewStats.
type StatsOptions struct {
	// LatencyDecay is the EWMA time constant: a latency observed LatencyDecay
	// ago weighs 1/e of one observed now. Default 10s.
	LatencyDecay time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// NewStats returns empty Stats.
func NewStats(opts StatsOptions) *Stats {
	if opts.LatencyDecay <= 0 {
		opts.LatencyDecay = DefaultLatencyDecay
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Stats{
		decay:  float64(opts.LatencyDecay),
		now:    opts.Now,
		base:   opts.Now(),
		byAddr: make(map[string]*providerStats),
	}
}

// providerStats are the statistics of one provider address.
type providerStats struct {
	addr     string
	active   atomic.Int64
	measured atomic.Bool
	ewma     atomic.Uint64 // float64 bits: latency in nanoseconds
	stamp    atomic.Int64  // nanotime of the last update
	mu       sync.Mutex    // serialises updates of ewma and stamp
}

// Sample is one call in flight, from Start to Done.
type Sample struct {
	ps    *providerStats
	start int64
}

// Start records a call to p starting. Pass the result to Done when it ends.
func (s *Stats) Start(p *Provider) Sample {
	s.mu.Lock()
	ps := s.entryLocked(p.Addr)
	s.mu.Unlock()
	return s.start(ps)
}

func (s *Stats) start(ps *providerStats) Sample {
	ps.active.Add(1)
	return Sample{ps: ps, start: s.nanotime()}
}

// Done records the end of a call started with Start, whatever its outcome:
// a failure's latency counts too (failures feed the circuit breakers).
func (s *Stats) Done(smp Sample) {
	ps := smp.ps
	if ps == nil {
		return
	}
	now := s.nanotime()
	rtt := float64(max(now-smp.start, 0))
	ps.active.Add(-1)
	ps.mu.Lock()
	ewma := math.Float64frombits(ps.ewma.Load())
	if !ps.measured.Load() || rtt > ewma {
		ewma = rtt // peak: a slow call shows at once
	} else {
		w := math.Exp(-float64(max(now-ps.stamp.Load(), 0)) / s.decay)
		ewma = ewma*w + rtt*(1-w)
	}
	ps.ewma.Store(math.Float64bits(ewma))
	ps.stamp.Store(now)
	ps.measured.Store(true)
	ps.mu.Unlock()
}

// Active returns the calls in flight to addr.
func (s *Stats) Active(addr string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps := s.byAddr[addr]; ps != nil {
		return ps.active.Load()
	}
	return 0
}

// Latency returns the latency EWMA of addr, decayed to now; 0 when none was measured.
func (s *Stats) Latency(addr string) time.Duration {
	s.mu.Lock()
	ps := s.byAddr[addr]
	s.mu.Unlock()
	if ps == nil || !ps.measured.Load() {
		return 0
	}
	return time.Duration(ps.latency(s.nanotime(), s.decay))
}

// nanotime is the clock in nanoseconds since s was made (monotonic with time.Now).
func (s *Stats) nanotime() int64 { return int64(s.now().Sub(s.base)) }

func (s *Stats) entryLocked(addr string) *providerStats {
	ps := s.byAddr[addr]
	if ps == nil {
		ps = &providerStats{addr: addr}
		s.byAddr[addr] = ps
	}
	return ps
}

// view returns the statistics of providers, index by index.
func (s *Stats) view(providers, whole []*Provider) []*providerStats {
	if v, ok := s.views.load(providers); ok {
		return v
	}
	s.views.mu.Lock()
	defer s.views.mu.Unlock()
	if v, ok := s.views.load(providers); ok {
		return v
	}
	prev, _ := s.views.latest()
	v := make([]*providerStats, len(providers))
	s.mu.Lock()
	keep := make(map[*providerStats]bool, len(providers)+len(prev)+len(whole))
	for i, p := range providers {
		v[i] = s.entryLocked(p.Addr)
		keep[v[i]] = true
	}
	for _, ps := range prev {
		keep[ps] = true
	}
	for _, p := range whole {
		if ps := s.byAddr[p.Addr]; ps != nil {
			keep[ps] = true
		}
	}
	for addr, ps := range s.byAddr {
		if !keep[ps] {
			delete(s.byAddr, addr)
		}
	}
	s.mu.Unlock()
	s.views.store(providers, v)
	return v
}

// latency is the EWMA decayed from its last update to now.
func (ps *providerStats) latency(now int64, decay float64) float64 {
	ewma := math.Float64frombits(ps.ewma.Load())
	if dt := now - ps.stamp.Load(); dt > 0 {
		ewma *= math.Exp(-float64(dt) / decay)
	}
	return ewma
}

// unmeasuredPenalty is the cost of each call in flight to a provider whose
// latency is not known yet: far above any real latency, so such a provider
// takes one call at a time until it answers.
const unmeasuredPenalty = 1e15

// cost is what p2c minimises: the decayed latency × (calls in flight + 1).
func (ps *providerStats) cost(now int64, decay float64) float64 {
	active := float64(ps.active.Load())
	if !ps.measured.Load() {
		return unmeasuredPenalty * active
	}
	return ps.latency(now, decay) * (active + 1)
}
