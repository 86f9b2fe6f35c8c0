// Package registry finds the providers of Dubbo services. A Registry hands
// out Directories, one per service key, shared and reference-counted by every
// route and reference that calls the service; a Directory publishes immutable
// provider snapshots that readers load without locking.
//
// Subscriptions are keyed by the service key (group/interface:version) and
// nothing else — never by a URL carrying a timestamp — so however many routes
// or requests ask for a service, it has exactly one directory: the
// subscription leak of seed incident 000 cannot happen by construction. A
// directory nobody holds any more is released after a grace period, so a
// reload that keeps a service keeps its subscription untouched.
package registry

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/governance"
)

// ServiceKey identifies a Dubbo service.
type ServiceKey struct {
	Interface, Group, Version string
}

// String renders the key as Dubbo does: "group/interface:version", leaving
// out what is empty.
func (k ServiceKey) String() string { return protocol.ServiceKey(k.Group, k.Interface, k.Version) }

// Registry is a source of providers.
type Registry interface {
	// Subscribe returns the directory of key, creating it on first use; every
	// caller must Release it when done. It never waits for the network: a new
	// directory starts empty and fills in when the registry answers (see
	// Directory.Ready).
	Subscribe(key ServiceKey) *Directory
	// Directories reports the live directories, for the admin API and metrics.
	Directories() []DirectoryStatus
	// SelectDirectories reports the directories f selects, and how many
	// match it in all: a page of a large registry, at the cost of a page.
	SelectDirectories(f DirectoryFilter) (page []DirectoryStatus, matched int)
	// Status reports the registry's connection and counts.
	Status() Status
	// Close releases everything the registry holds.
	Close() error
}

// ProviderCounter is a Registry that keeps count of the providers its
// live directories list, as they change: reading the count costs nothing,
// where Directories reads every provider. A provider listed for two
// service keys counts twice.
type ProviderCounter interface {
	ProviderCount() int
}

// Connection states of Status.State.
const (
	StateStatic       = "static"       // no connection to keep
	StateConnecting   = "connecting"   // never connected yet
	StateConnected    = "connected"    // session up, watches live
	StateDisconnected = "disconnected" // lost; last known providers keep serving
	StateClosed       = "closed"
)

// Status describes a registry as a whole.
type Status struct {
	Type  string `json:"type"`
	State string `json:"state"`
	// Degraded is true while the registry cannot be reached: providers are
	// the last known ones and changes are not seen.
	Degraded bool `json:"degraded"`
	// Error is the last connection problem, if any.
	Error string `json:"error,omitempty"`
	// Subscriptions is the number of live directories (service keys).
	Subscriptions int `json:"subscriptions"`
	// Watches is the number of registry watches set for them, and for
	// the catalog of interfaces once it was asked (ZooKeeper: two).
	Watches int `json:"watches"`
	// OrphanWatches are watches still set for subscriptions already
	// released (ZooKeeper: go-zookeeper cannot remove a watch from the
	// server; the registry clears them by moving to a new session).
	OrphanWatches int `json:"orphan_watches"`
	// Reconnects counts connections re-established after a loss, and
	// SessionExpiries sessions lost for good (subscriptions then re-made).
	Reconnects      uint64 `json:"reconnects"`
	SessionExpiries uint64 `json:"session_expiries"`
	// SessionRecycles counts sessions the registry replaced itself, to
	// clear orphan watches.
	SessionRecycles uint64 `json:"session_recycles"`
	// Registered counts consumer nodes the gateway has registered.
	Registered int `json:"registered"`
	// Applications and Instances count the applications watched for
	// application-level discovery and their instances (those whose node
	// could be parsed).
	Applications int `json:"applications,omitempty"`
	Instances    int `json:"instances,omitempty"`
	// MetadataFetches counts fetches of instance metadata, MetadataFailures
	// those that failed; MetadataCached is the entries cached.
	MetadataFetches  uint64 `json:"metadata_fetches,omitempty"`
	MetadataFailures uint64 `json:"metadata_failures,omitempty"`
	MetadataCached   int    `json:"metadata_cached,omitempty"`
	// MetadataInFlight is the fetches under way (at most the registry's
	// metadata concurrency).
	MetadataInFlight int `json:"metadata_in_flight,omitempty"`
	// Rules is the governance rule nodes watched (Dubbo's config centre);
	// RulesRefused counts the rule node data refused as malformed.
	Rules        int    `json:"rules,omitempty"`
	RulesRefused uint64 `json:"rules_refused,omitempty"`
}

// Directory states, as DirectoryStatus.State reports them.
const (
	DirPending = "pending" // the registry has not answered yet
	DirOK      = "ok"      // providers (possibly none) are current
	DirStale   = "stale"   // the registry is unreachable: last known providers
)

// DirectoryStatus describes one directory.
type DirectoryStatus struct {
	Service string    `json:"service"`
	State   string    `json:"state"`
	Refs    int       `json:"references"`
	Updated time.Time `json:"updated,omitzero"`
	// Discovery says where the providers were found, for a registry
	// reading both layouts: "interface", "application", or "both" when
	// some came from each (or one from both); empty otherwise.
	Discovery string           `json:"discovery,omitempty"`
	Providers []ProviderStatus `json:"providers"`
	// Rules are the Dubbo governance rules read for the service (a
	// registry reading Dubbo's config centre): applied, or refused.
	Rules []RuleStatus `json:"rules,omitempty"`
}

// RuleStatus describes one Dubbo governance rule node a directory's
// selection depends on.
type RuleStatus struct {
	Key  string `json:"key"`  // the node's name, e.g. "shop.tag-router"
	Kind string `json:"kind"` // configurators, tag-router, condition-router
	// State is "applied", "disabled" (enabled: false), "absent" (no
	// node) or "refused" (the node's data is not a rule this gateway
	// applies: Error says why; the last good rule of the node, if any,
	// keeps applying: Applied says so).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Ignored names what the rule says that this gateway does not apply
	// (a configurator's other parameters: retries, loadbalance...).
	Ignored string    `json:"ignored,omitempty"`
	Applied bool      `json:"applied"`
	Changed time.Time `json:"changed,omitzero"` // when the node's data last changed
}

// Governance is what a registry's governance rules make of one service:
// the router narrowing its providers per call (nil: none), and the rules
// read, for the admin API.
type Governance struct {
	Router *governance.Router
	Rules  []RuleStatus
}

// ProviderStatus describes one provider of a directory.
type ProviderStatus struct {
	Addr     string `json:"address"`
	Protocol string `json:"protocol"` // dubbo or tri
	Weight   int    `json:"weight"`
	// Timeout is a configurator's timeout for calls to this provider.
	Timeout string `json:"timeout,omitempty"`
	ProviderOrigin
}

// Where a provider was found, as ProviderOrigin.Source says it.
const (
	SourceInterface   = "interface"   // an interface-level providers node
	SourceApplication = "application" // an application instance and its metadata
	SourceBoth        = "both"        // both, the application-level data preferred
)

// ProviderOrigin says where a registry found a provider; registries that
// have only one kind of source leave it empty.
type ProviderOrigin struct {
	Source string `json:"source,omitempty"`
	// App and Revision name the application instance's metadata, for the
	// sources application and both.
	App      string `json:"app,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// Directory is the current provider list of one service.
type Directory struct {
	key       ServiceKey
	providers atomic.Pointer[[]*cluster.Provider]
	origin    atomic.Pointer[directoryOrigins] // for the admin API
	offered   atomic.Pointer[[]ServiceKey]     // see Offered
	gov       atomic.Pointer[Governance]       // nil: no governance rules
	updated   atomic.Int64                     // unix nanoseconds of the last set
	stale     atomic.Bool
	dropped   atomic.Bool // the registry let it go: no longer updated
	readyOnce sync.Once
	ready     chan struct{}
	release   func(d *Directory, now bool)

	// counted is the count of providers of the set that made d (nil: none);
	// countMu orders the changes of d's snapshot and its drop, so that a
	// snapshot counts exactly while d is live.
	counted *atomic.Int64
	countMu sync.Mutex
}

func newDirectory(key ServiceKey, release func(*Directory, bool)) *Directory {
	return &Directory{key: key, release: release, ready: make(chan struct{})}
}

// Key is the directory's service key.
func (d *Directory) Key() ServiceKey { return d.key }

// Providers returns the current snapshot; callers must not modify it.
func (d *Directory) Providers() []*cluster.Provider {
	if p := d.providers.Load(); p != nil {
		return *p
	}
	return nil
}

// Ready is closed once the registry has answered for the directory for the
// first time (with providers or with none), or has given up for now
// (unreachable). Waiting on it is how start-up and reloads avoid answering
// 503 for services whose providers are about to be known.
func (d *Directory) Ready() <-chan struct{} { return d.ready }

// Updated is when the provider list was last set; zero before the first.
func (d *Directory) Updated() time.Time {
	if n := d.updated.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// State is DirPending, DirOK or DirStale.
func (d *Directory) State() string {
	switch {
	case d.stale.Load():
		return DirStale
	case d.updated.Load() == 0:
		return DirPending
	}
	return DirOK
}

// Release gives the caller's reference back. The subscription is kept
// for the registry's grace period after its last holder, so that a holder
// coming back (a reload keeping the service) finds it untouched.
func (d *Directory) Release() { d.release(d, false) }

// ReleaseNow gives the caller's reference back and, when it was the last,
// lets the subscription go at once, without the grace period: for a
// holder that knows nobody used it for long (an idle on-demand reference).
func (d *Directory) ReleaseNow() { d.release(d, true) }

// Live reports whether the registry still keeps the directory: false once
// its subscription was released (a new Subscribe then makes another).
func (d *Directory) Live() bool { return !d.dropped.Load() }

// Set publishes a new snapshot (which the directory now owns) and marks
// the directory current and ready.
func (d *Directory) Set(ps []*cluster.Provider) {
	d.store(ps)
	d.updated.Store(time.Now().UnixNano())
	d.stale.Store(false)
	d.markReady()
}

// SetWithOrigins is Set for a registry that says where it found each
// provider: origins maps a provider's address to its origin, and a
// provider not in it came from others (the directory owns origins too).
// Only the exceptions are listed, so that a registry where most providers
// come from one place keeps no map for most directories. A registry with
// a single kind of source calls Set instead.
func (d *Directory) SetWithOrigins(ps []*cluster.Provider, origins map[string]ProviderOrigin, others ProviderOrigin) {
	d.origin.Store(&directoryOrigins{byAddr: origins, others: others})
	d.Set(ps)
}

// MaxOffered bounds what Offered lists.
const MaxOffered = 8

// SetOffered records, for a directory without providers, the other keys
// of its interface that have some (at most MaxOffered, sorted; nil for
// none, or when the directory has providers). Call it before Set.
func (d *Directory) SetOffered(keys []ServiceKey) {
	if len(keys) == 0 {
		d.offered.Store(nil)
		return
	}
	d.offered.Store(&keys)
}

// SetGovernance publishes the service's governance (nil: none).
func (d *Directory) SetGovernance(g *Governance) { d.gov.Store(g) }

// Governance returns what SetGovernance published last, nil for none.
func (d *Directory) Governance() *Governance { return d.gov.Load() }

// Router returns the router of the service's governance rules: nil (which
// routes nothing) without rules.
func (d *Directory) Router() *governance.Router {
	if g := d.gov.Load(); g != nil {
		return g.Router
	}
	return nil
}

// Offered lists, while the directory has no provider, the keys of the
// same interface that have some, as its registry last saw them: the
// versions and groups a client that named another one could call. Nil
// when the registry does not say.
func (d *Directory) Offered() []ServiceKey {
	if p := d.offered.Load(); p != nil {
		return *p
	}
	return nil
}

// directoryOrigins are what SetWithOrigins published.
type directoryOrigins struct {
	byAddr map[string]ProviderOrigin
	others ProviderOrigin
}

// Origin says where the registry found the provider at addr (empty when
// the registry does not say).
func (d *Directory) Origin(addr string) ProviderOrigin {
	o := d.origin.Load()
	if o == nil {
		return ProviderOrigin{}
	}
	if v, ok := o.byAddr[addr]; ok {
		return v
	}
	return o.others
}

// Origins are what SetWithOrigins last published (nil and empty when the
// registry does not say); callers must not modify the map. A registry
// compares them with the origins it would set, to publish nothing when
// nothing changed.
func (d *Directory) Origins() (byAddr map[string]ProviderOrigin, others ProviderOrigin) {
	if o := d.origin.Load(); o != nil {
		return o.byAddr, o.others
	}
	return nil, ProviderOrigin{}
}

// MarkStale says the registry cannot be reached: the last known providers
// stay, and a directory still waiting for its first answer stops waiting.
func (d *Directory) MarkStale() {
	d.stale.Store(true)
	d.markReady()
}

func (d *Directory) markReady() { d.readyOnce.Do(func() { close(d.ready) }) }

// store publishes ps and counts the change of its length while d is live.
func (d *Directory) store(ps []*cluster.Provider) {
	if d.counted == nil {
		d.providers.Store(&ps)
		return
	}
	d.countMu.Lock()
	defer d.countMu.Unlock()
	old := d.providers.Swap(&ps)
	if !d.dropped.Load() {
		d.counted.Add(int64(len(ps) - lenOf(old)))
	}
}

// drop marks d no longer kept by its registry, and uncounts its providers.
func (d *Directory) drop() {
	if d.counted == nil {
		d.dropped.Store(true)
		return
	}
	d.countMu.Lock()
	defer d.countMu.Unlock()
	if !d.dropped.Swap(true) {
		d.counted.Add(-int64(lenOf(d.providers.Load())))
	}
}

func lenOf(ps *[]*cluster.Provider) int {
	if ps == nil {
		return 0
	}
	return len(*ps)
}

// Directories is the ref-counted set of directories a registry shares, one
// per service key. A registry implementation supplies OnFirst (start
// watching a key) and OnLast (stop): OnFirst runs when a key gets its
// directory, OnLast when the directory has had no holder for Grace. Both
// run with the set's lock held, so for one key they strictly alternate;
// they must not block or call back into the set.
type Directories struct {
	Grace   time.Duration
	OnFirst func(*Directory)
	OnLast  func(*Directory)

	mu        sync.Mutex
	dirs      map[ServiceKey]*dirEntry
	closed    bool
	providers atomic.Int64 // listed by the live directories
}

type dirEntry struct {
	dir   *Directory
	refs  int
	timer *time.Timer // pending release, when refs is 0
}

// Acquire returns key's directory, creating it on first use.
func (s *Directories) Acquire(key ServiceKey) *Directory {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirs == nil {
		s.dirs = make(map[ServiceKey]*dirEntry)
	}
	if e, ok := s.dirs[key]; ok {
		e.refs++
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
		return e.dir
	}
	d := newDirectory(key, s.release)
	d.counted = &s.providers
	s.dirs[key] = &dirEntry{dir: d, refs: 1}
	if !s.closed && s.OnFirst != nil {
		s.OnFirst(d)
	}
	return d
}

func (s *Directories) release(d *Directory, now bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.dirs[d.key]
	if !ok || e.dir != d || e.refs <= 0 {
		return
	}
	if e.refs--; e.refs > 0 {
		return
	}
	if now || s.Grace <= 0 || s.closed {
		s.drop(e)
		return
	}
	var t *time.Timer
	t = time.AfterFunc(s.Grace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if cur, ok := s.dirs[d.key]; ok && cur == e && e.refs == 0 && e.timer == t {
			s.drop(e)
		}
	})
	e.timer = t
}

// drop removes e; the lock is held.
func (s *Directories) drop(e *dirEntry) {
	delete(s.dirs, e.dir.key)
	e.dir.drop()
	if !s.closed && s.OnLast != nil {
		s.OnLast(e.dir)
	}
}

// Each calls f on every live directory with the lock held (f must not block
// or call back into the set).
func (s *Directories) Each(f func(*Directory)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.dirs {
		f(e.dir)
	}
}

// Len is the number of live directories, including those waiting out
// their grace period.
func (s *Directories) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dirs)
}

// ProviderCount is the number of providers the live directories list (a
// provider of two service keys counts twice); it is kept as they change,
// so reading it costs nothing.
func (s *Directories) ProviderCount() int { return int(s.providers.Load()) }

// Close stops pending releases; OnFirst and OnLast are not called again.
func (s *Directories) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, e := range s.dirs {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
}

// Status reports the live directories, sorted by service.
func (s *Directories) Status() []DirectoryStatus {
	page, _ := s.Select(DirectoryFilter{})
	return page
}

// DirectoryFilter selects directories for a status listing, so that a
// listing of a large registry costs what it returns.
type DirectoryFilter struct {
	// Service, when set, selects that service key only.
	Service string
	// Prefix, when set, selects the service keys starting with it.
	Prefix string
	// After selects the service keys after it (the last of the previous page).
	After string
	// Limit is the most statuses returned; 0: no limit.
	Limit int
}

// Select reports the directories f selects, sorted by service key: at most
// f.Limit after f.After, and how many match Service and Prefix in all.
// Only the returned ones are described (their providers read), and only
// the f.Limit first keys are kept while the keys are scanned, so its cost
// is one pass over the keys, which allocates nothing for most, plus what
// it returns.
func (s *Directories) Select(f DirectoryFilter) (page []DirectoryStatus, matched int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first firstKeys
	if f.Limit > 0 {
		first.limit = f.Limit
		first.keys = make([]keyedEntry, 0, min(f.Limit, len(s.dirs)))
	}
	for _, e := range s.dirs {
		k := e.dir.key.String() // no copy unless the key has a group or a version
		if f.Service != "" && k != f.Service || !strings.HasPrefix(k, f.Prefix) {
			continue
		}
		matched++
		if f.After == "" || k > f.After {
			first.offer(keyedEntry{k, e})
		}
	}
	sel := first.keys
	slices.SortFunc(sel, func(a, b keyedEntry) int { return strings.Compare(a.key, b.key) })
	page = make([]DirectoryStatus, 0, len(sel))
	for _, k := range sel {
		page = append(page, describe(k.key, k.e))
	}
	return page, matched
}

type keyedEntry struct {
	key string
	e   *dirEntry
}

// firstKeys keeps the limit smallest keys offered (all of them when limit
// is 0), in a max-heap: the largest kept is keys[0], replaced by a smaller
// one.
type firstKeys struct {
	limit int
	keys  []keyedEntry
}

func (h *firstKeys) offer(k keyedEntry) {
	if h.limit == 0 || len(h.keys) < h.limit {
		h.keys = append(h.keys, k)
		if h.limit > 0 { // sift up
			for i := len(h.keys) - 1; i > 0; {
				parent := (i - 1) / 2
				if h.keys[parent].key >= h.keys[i].key {
					break
				}
				h.keys[parent], h.keys[i] = h.keys[i], h.keys[parent]
				i = parent
			}
		}
		return
	}
	if k.key >= h.keys[0].key {
		return
	}
	h.keys[0] = k // sift down
	for i := 0; ; {
		largest, l, r := i, 2*i+1, 2*i+2
		if l < len(h.keys) && h.keys[l].key > h.keys[largest].key {
			largest = l
		}
		if r < len(h.keys) && h.keys[r].key > h.keys[largest].key {
			largest = r
		}
		if largest == i {
			return
		}
		h.keys[i], h.keys[largest] = h.keys[largest], h.keys[i]
		i = largest
	}
}

// describe is the status of one directory.
func describe(key string, e *dirEntry) DirectoryStatus {
	providers := e.dir.Providers()
	st := DirectoryStatus{Service: key, State: e.dir.State(), Refs: e.refs,
		Updated: e.dir.Updated(), Providers: make([]ProviderStatus, 0, len(providers))}
	for _, p := range providers {
		o := e.dir.Origin(p.Addr)
		st.Providers = append(st.Providers, ProviderStatus{Addr: p.Addr, Protocol: p.Protocol.String(), Weight: p.Weight,
			ProviderOrigin: o})
		if p.Timeout > 0 {
			st.Providers[len(st.Providers)-1].Timeout = p.Timeout.String()
		}
		switch {
		case o.Source == "" || st.Discovery == o.Source:
		case st.Discovery == "":
			st.Discovery = o.Source
		default:
			st.Discovery = SourceBoth
		}
	}
	if g := e.dir.Governance(); g != nil {
		st.Rules = g.Rules
	}
	return st
}
