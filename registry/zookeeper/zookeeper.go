// Package zookeeper is the registry.Registry that finds Dubbo providers in
// ZooKeeper: it reads Dubbo's interface-level layout (providers and
// configurators nodes) and Dubbo 3's application-level one (mapping nodes,
// application instances and their metadata), keeps one watch per node
// however many service keys use it, and publishes what it reads as
// registry.Directory snapshots.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// Options configures a ZooKeeper registry.
type Options struct {
	// Addrs are the ZooKeeper servers, "host:port"; at least one.
	Addrs []string
	// Root is the root node, Dubbo's registry group: "dubbo" (the default)
	// reads /dubbo/<interface>/providers, a group "g" reads /g/....
	Root string
	// SessionTimeout is the session timeout asked of ZooKeeper (which
	// clamps it to its own range). Default 30s.
	SessionTimeout time.Duration
	// Timeout bounds one ZooKeeper operation, and how long directories
	// wait for a first session before they are marked stale. Default 5s.
	Timeout time.Duration
	// Grace is how long a directory nobody holds is kept (with its
	// watches) before it is released. Default 30s; negative releases at once.
	Grace time.Duration
	// WatchGC is the least time between two session recycles. ZooKeeper
	// keeps the watches of a released interface until they fire, which for
	// a node that does not exist can be never, and go-zookeeper cannot
	// remove them; so while such orphan watches exist, the registry
	// replaces its session at most once per WatchGC: it opens a new one,
	// moves the live watches and consumer nodes to it, and only then closes
	// the old one, which takes the orphans with it. Providers keep serving
	// throughout. Default 1m; negative never recycles.
	WatchGC time.Duration
	// Register registers the gateway as a consumer of each service key it
	// subscribes to: an ephemeral node under the interface's consumers
	// node, created once the interface's providers node exists (so that a
	// name nobody provides leaves nothing behind in ZooKeeper).
	Register bool
	// Application is the consumer URL's application. Default "dubbogw".
	Application string
	// ConsumerHost is the host in the consumer URL. Default: the local
	// address of the connection to ZooKeeper.
	ConsumerHost string
	// Username and Password, when set, authenticate the session with the
	// digest scheme.
	Username, Password string
	// Discovery says which of Dubbo's registration layouts are read:
	// DiscoveryInterface (the providers nodes under Root), DiscoveryApplication
	// (Dubbo 3's mapping nodes, application instances and their metadata)
	// or DiscoveryAuto (the default: both, merged by address, the
	// application-level data preferred where both have a provider, as
	// Dubbo's application-first migration does).
	Discovery string
	// ServicesRoot is where application instances are registered:
	// <ServicesRoot>/<app>/<ip:port>. Default "/services" with the default
	// Root, else "/<Root>": as in Dubbo (Java and Go), a registry group
	// replaces both roots, and the instances of an application then share
	// /<group>/<app> with its remote metadata nodes.
	ServicesRoot string
	// Metadata fetches the metadata of an instance that keeps it itself
	// (storage "local": its MetadataService); without it such instances
	// are skipped. Metadata stored remotely is read from ZooKeeper.
	Metadata registry.MetadataFetcher
	// MetadataTimeout bounds one fetch from a MetadataService (a remote
	// metadata node is read within Timeout). Default 3s.
	MetadataTimeout time.Duration
	// MetadataConcurrency bounds the fetches under way. Default 8.
	MetadataConcurrency int
	// MetadataCache bounds the metadata entries kept (per instance and
	// revision) beyond those live instances use. Default 1024.
	MetadataCache int
	// Governance, when set, reads Dubbo's governance rules (configurators,
	// tag and condition routers) from the config centre in this ZooKeeper
	// and applies them to the directories (rules.go).
	Governance *GovernanceOptions
	// Redial, when set, is called (on the registry's goroutine; it must not
	// block) with the address of each provider that appears in a
	// directory: new, or registered anew (a restarted process), so that the
	// Dubbo client can dial it now rather than after a reconnect backoff
	// the old process earned.
	Redial func(addr string)
	// Logger logs connection changes, skipped URLs and failed operations.
	// Default slog.Default().
	Logger *slog.Logger
}

// GovernanceOptions say where Dubbo's config centre keeps its rules:
// <Root>/<Group>/<key>.
type GovernanceOptions struct {
	// Root is the config centre's root, "/<namespace>/config". Default
	// governance.DefaultRoot ("/dubbo/config").
	Root string
	// Group is the rules' group. Default governance.DefaultGroup ("dubbo").
	Group string
}

// Discovery modes, Options.Discovery.
const (
	DiscoveryInterface   = "interface"
	DiscoveryApplication = "application"
	DiscoveryAuto        = "auto"
)

// Registry is a registry.Registry (and a registry.Catalog) reading
// Dubbo's layouts in ZooKeeper, the interface-level one:
//
//	/<root>/<interface>/providers/<URL-encoded provider URL>
//	/<root>/<interface>/configurators/<URL-encoded override URL>
//	/<root>/<interface>/consumers/<URL-encoded consumer URL>   (Register)
//
// and Dubbo 3's application-level one (see apps.go):
//
//	/<root>/mapping/<interface>            "app1,app2"
//	<services root>/<app>/<ip:port>         the instance, with its metadata's revision
//
// Every service key (group, version) of an interface shares the one watch on
// its providers node, the one on its configurators node and the one on its
// mapping node; an application is watched once for every interface that
// names it; a directory per key is built from them. A single worker goroutine does all the ZooKeeper
// work: Subscribe and the directory callbacks only record what changed and
// nudge it, so no caller ever waits for ZooKeeper, and however often a key
// is asked for, its interface is watched once. Watches of released
// interfaces are cleared by recycling the session (see WatchGC).
type Registry struct {
	opts         Options
	root         string          // "/dubbo"
	servicesRoot string          // "/services"
	ctx          context.Context // ends at Close: metadata fetches use it
	cancel       context.CancelFunc
	log          *slog.Logger
	hooks        zkHooks
	dirs         registry.Directories
	worker       *worker
	current      atomic.Pointer[zkClient] // the client in use, for sessionID

	nudge      chan struct{} // capacity 1: the worker has something to look at
	quit       chan struct{} // closed by Close
	workerDone chan struct{}
	closeOnce  sync.Once

	localHost   atomic.Pointer[string] // local host of the latest connection to ZooKeeper
	unreachable atomic.Bool            // new directories are marked stale at once
	// catalog is what the registry knows of the interfaces registered
	// (catalog.go); catalogWanted starts reading it.
	catalog       atomic.Pointer[zkCatalog]
	catalogWanted atomic.Bool
	closed        atomic.Bool
	skipped       atomic.Uint64
	rulesRefused  atomic.Uint64 // governance rule nodes whose data was refused

	// mu guards what the directory callbacks hand to the worker.
	mu      sync.Mutex
	want    map[string]dirSet   // interface → live directories
	changed map[string]struct{} // interfaces whose directories changed since the worker looked

	statusMu sync.Mutex
	status   registry.Status
}

// Registry serves as a registry, and as the catalog References.OnDemand
// asks before subscribing.
var (
	_ registry.Registry        = (*Registry)(nil)
	_ registry.Catalog         = (*Registry)(nil)
	_ registry.ProviderCounter = (*Registry)(nil)
)

// zkHooks let tests observe the worker; every hook runs on the worker's
// goroutine, except dial.
type zkHooks struct {
	published func(registry.ServiceKey, []*cluster.Provider) // a directory was Set
	armed     func(path string)                              // a watch was set on path
	fired     func(path string)                              // a counted watch on path fired
	stepped   func()                                         // the worker finished a round of work
	recycle   func(stage string, orphans int)                // a session recycle reached stage, with this many orphan watches
	dial      func() error                                   // a client dials ZooKeeper (on the client's goroutine): an error fails the dial
	started   func(inFlight int)                             // an operation started without waiting (session.start): this many are in flight
}

// New starts a ZooKeeper registry. It connects in the background,
// so it fails only on bad options, never because ZooKeeper is down:
// directories created meanwhile are marked stale once Timeout has passed
// without a session, and fill in when ZooKeeper answers.
func New(opts Options) (*Registry, error) {
	return newWithHooks(opts, zkHooks{})
}

func newWithHooks(opts Options, hooks zkHooks) (*Registry, error) {
	if len(opts.Addrs) == 0 {
		return nil, errors.New("zookeeper registry: no address")
	}
	for _, a := range opts.Addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("zookeeper registry: address %q: want host:port", a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("zookeeper registry: address %q: bad port", a)
		}
	}
	root := strings.Trim(opts.Root, "/")
	if root == "" {
		root = "dubbo"
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Grace == 0 {
		opts.Grace = 30 * time.Second
	}
	if opts.WatchGC == 0 {
		opts.WatchGC = time.Minute
	}
	if opts.Application == "" {
		opts.Application = "dubbogw"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	switch opts.Discovery {
	case "":
		opts.Discovery = DiscoveryAuto
	case DiscoveryInterface, DiscoveryApplication, DiscoveryAuto:
	default:
		return nil, fmt.Errorf("zookeeper registry: discovery %q: want interface, application or auto", opts.Discovery)
	}
	servicesRoot := "/" + strings.Trim(opts.ServicesRoot, "/")
	switch {
	case servicesRoot != "/":
	case root == "dubbo":
		servicesRoot = "/services"
	default:
		servicesRoot = "/" + root // a registry group replaces both roots, as Dubbo does
	}
	if opts.MetadataTimeout <= 0 {
		opts.MetadataTimeout = 3 * time.Second
	}
	if opts.MetadataConcurrency <= 0 {
		opts.MetadataConcurrency = 8
	}
	if opts.MetadataCache <= 0 {
		opts.MetadataCache = 1024
	}
	if g := opts.Governance; g != nil {
		cp := *g
		if cp.Root == "" {
			cp.Root = governance.DefaultRoot
		}
		if cp.Group == "" {
			cp.Group = governance.DefaultGroup
		}
		cp.Root = "/" + strings.Trim(cp.Root, "/")
		opts.Governance = &cp
	}
	ctx, cancel := context.WithCancel(context.Background())
	z := &Registry{
		opts:         opts,
		root:         "/" + root,
		servicesRoot: servicesRoot,
		ctx:          ctx,
		cancel:       cancel,
		log:          opts.Logger.With("registry", "zookeeper"),
		hooks:        hooks,
		nudge:        make(chan struct{}, 1),
		quit:         make(chan struct{}),
		workerDone:   make(chan struct{}),
		want:         make(map[string]dirSet),
		changed:      make(map[string]struct{}),
		status:       registry.Status{Type: "zookeeper", State: registry.StateConnecting},
	}
	z.catalog.Store(newZKCatalog())
	z.dirs.Grace = opts.Grace
	z.dirs.OnFirst = z.onFirst
	z.dirs.OnLast = z.onLast
	client, err := z.connect()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("zookeeper registry: %w", err)
	}
	z.current.Store(client)
	z.worker = newWorker(z, client)
	go z.worker.run()
	return z, nil
}

// connect starts a client, which connects and keeps a session in the
// background.
func (z *Registry) connect() (*zkClient, error) {
	c := &zkClient{}
	conn, events, err := zk.Connect(z.opts.Addrs, z.opts.SessionTimeout,
		zk.WithHostProvider(&zk.UnresolvedHosts{}),
		zk.WithDialer(z.dial),
		zk.WithEventCallback(func(ev zk.Event) {
			c.onEvent(ev)
			z.poke()
		}),
		zk.WithoutWatchChannels(), // events come from the callback: no channel kept per watch
		// Reads are asynchronous and answered ErrSendQueueFull when the
		// send queue is full: it holds every operation the worker may
		// have in flight, and the few it waits for.
		zk.WithSendQueueSize(2*maxInFlight),
		zk.WithLogger(zk.SlogLogger{Log: z.log}),
		zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("starting the ZooKeeper client: %w", err)
	}
	c.conn, c.events = conn, events
	return c, nil
}

// awaitClient waits, at most Timeout, until a closed client's goroutines
// have ended (the client closes its event channel then).
func (z *Registry) awaitClient(c *zkClient) {
	deadline := time.NewTimer(z.opts.Timeout)
	defer deadline.Stop()
	for {
		select {
		case _, open := <-c.events:
			if !open {
				return
			}
		case <-deadline.C:
			z.log.Warn("ZooKeeper client still running after Close", "waited", z.opts.Timeout)
			return
		}
	}
}

func (z *Registry) interfaceLevel() bool   { return z.opts.Discovery != DiscoveryApplication }
func (z *Registry) applicationLevel() bool { return z.opts.Discovery != DiscoveryInterface }

// sessionID is the session of the client in use.
func (z *Registry) sessionID() int64 { return z.current.Load().conn.SessionID() }

// Subscribe returns key's directory, creating it on first use. It only
// records the key and nudges the worker: it never waits for ZooKeeper.
func (z *Registry) Subscribe(key registry.ServiceKey) *registry.Directory {
	d := z.dirs.Acquire(key)
	if z.closed.Load() {
		d.MarkStale()
	}
	return d
}

// Directories reports the live directories.
func (z *Registry) Directories() []registry.DirectoryStatus { return z.dirs.Status() }

// ProviderCount is the number of providers the live directories list,
// kept as they change.
func (z *Registry) ProviderCount() int { return z.dirs.ProviderCount() }

// SelectDirectories lists the directories f selects.
func (z *Registry) SelectDirectories(f registry.DirectoryFilter) ([]registry.DirectoryStatus, int) {
	return z.dirs.Select(f)
}

// Status reports the connection and the counts of subscriptions, watches
// (live and orphan), session recycles and consumer registrations.
func (z *Registry) Status() registry.Status {
	z.statusMu.Lock()
	st := z.status
	z.statusMu.Unlock()
	st.Subscriptions = z.dirs.Len()
	return st
}

// SkippedURLs counts the provider and override URLs ignored because the
// gateway cannot use them (another protocol or serialization, malformed);
// each is logged once, when it first appears.
func (z *Registry) SkippedURLs() uint64 { return z.skipped.Load() }

// Close closes the session, so ZooKeeper removes the gateway's consumer
// nodes, and stops every goroutine the registry started. Directories keep
// their last providers.
func (z *Registry) Close() error {
	z.closeOnce.Do(func() {
		z.closed.Store(true)
		z.dirs.Close()
		z.cancel()
		close(z.quit)
		<-z.workerDone
		// Closing the clients (the one in use, and the one a recycle was
		// readying) ends every call still in them (go-zookeeper answers them
		// ErrConnectionClosed), so the helpers return; a helper closing a
		// client a recycle replaced waits for it.
		clients := z.worker.session.clients()
		for _, c := range clients {
			c.conn.Close()
		}
		z.worker.session.helpers.Wait()
		for _, c := range clients {
			z.awaitClient(c)
		}
		z.statusMu.Lock()
		z.status.State = registry.StateClosed
		z.status.Watches = 0
		z.status.OrphanWatches = 0
		z.status.Registered = 0
		z.statusMu.Unlock()
	})
	return nil
}

// onFirst runs when key gets a directory (with the directories' lock held).
func (z *Registry) onFirst(d *registry.Directory) {
	key := d.Key()
	z.mu.Lock()
	z.want[key.Interface] = z.want[key.Interface].with(d)
	z.changed[key.Interface] = struct{}{}
	z.mu.Unlock()
	if z.unreachable.Load() {
		d.MarkStale() // answer "no provider" now rather than wait for a session
	}
	z.poke()
}

// onLast runs when key's directory is released (with the directories'
// lock held).
func (z *Registry) onLast(d *registry.Directory) {
	key := d.Key()
	z.mu.Lock()
	if ds := z.want[key.Interface]; ds.get(key) == d {
		if ds = ds.without(d); len(ds) == 0 {
			delete(z.want, key.Interface)
		} else {
			z.want[key.Interface] = ds
		}
	}
	z.changed[key.Interface] = struct{}{}
	z.mu.Unlock()
	z.poke()
}

func (z *Registry) poke() {
	select {
	case z.nudge <- struct{}{}:
	default:
	}
}

// dial connects to a ZooKeeper server and remembers the local address, the
// default host of consumer URLs.
func (z *Registry) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if z.hooks.dial != nil {
		if err := z.hooks.dial(); err != nil {
			return nil, err
		}
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	if host, _, err := net.SplitHostPort(c.LocalAddr().String()); err == nil {
		z.localHost.Store(&host)
	}
	return c, nil
}
