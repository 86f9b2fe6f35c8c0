package zookeeper

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/go-zookeeper/zk"
)

// How operations are bounded. go-zookeeper's calls take no context and can
// block: a request queued while the client is disconnected waits for a
// connection (the client fails it with ErrNoServer after each round of
// failed dials, ErrConnectionClosed when a connection drops, or when Close
// is called), and a connection to a server that accepts but never answers
// holds requests for up to ten receive timeouts. So the worker runs each
// operation on a helper goroutine and waits at most Timeout for it. An
// operation it gave up on is not retried while it is still in the client —
// the helper hands its late result to the worker when it returns, which it
// does at the latest when the connection drops or the registry closes — so
// there is never a second watch call outstanding on a path.
//
// go-zookeeper cannot remove a watch, so a released interface's watches stay
// set (orphans) until they fire, which for a node that does not exist can be
// never. Left alone, clients naming ever new interfaces would grow them
// without bound; so while there are any, the worker recycles the session at
// most once per WatchGC, make-before-break: it opens a second client, waits
// for its session, arms the live interfaces' watches and lists them on it,
// moves the consumer nodes to it, and only then switches to it and closes
// the old client, whose session takes the orphans (and their client-side
// channels) with it. An orphan holds no goroutine meanwhile: the helper
// waiting for its event ends when the node is dropped, and one starts
// again if the node is watched again before the watch fires. Directories keep their snapshots
// throughout: nothing is marked stale, and a listing that did not change
// publishes nothing.

// Kinds of watched nodes, pathWatch.kind.
const (
	nodeProviders     = iota // children of /<root>/<interface>/providers
	nodeConfigurators        // children of /<root>/<interface>/configurators
	nodeMapping              // data of /<root>/mapping/<interface>: the applications serving it
	nodeApp                  // children of <services>/<app>: the application's instances
	nodeInstance             // data of <services>/<app>/<instance>: one instance
	nodeRoot                 // children of /<root>: the interfaces registered (the catalog)
	nodeMappingRoot          // children of /<root>/mapping: the interfaces mapped to applications (the catalog)
)

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// zkWorker is the goroutine that does all of a registry's ZooKeeper work,
// one operation at a time (each on a helper goroutine it waits for, as
// explained above). Everything in it is owned by that goroutine, except
// helpers, which Close waits on (and the clients, which Close closes once
// the worker has returned).
type zkWorker struct {
	z       *Registry
	client  *zkClient // the client in use
	hooks   zkHooks
	late    chan lateResult // results of operations the worker stopped waiting for
	fired   chan firedWatch // watch events
	helpers sync.WaitGroup  // goroutines running an operation or waiting for its watch

	ifaces    map[string]*ifaceState
	apps      map[string]*appState  // applications named by the mapping nodes of live interfaces
	watches   map[string]*pathWatch // by path, also those of released nodes until they fire
	consumers map[registry.ServiceKey]*consumerNode
	dirty     map[*ifaceState]struct{} // interfaces to publish again
	cat       *catalogState            // nil until the catalog is first wanted

	meta         map[metaKey]*metaEntry // instance metadata by instance and revision, bounded
	metaInUse    int                    // entries of meta some live instance uses
	metaDone     chan metaResult        // fetches' results
	fetching     int                    // fetches under way
	metaFetches  uint64
	metaFailures uint64

	established   uint64 // sessionEvents.established last handled
	sessionID     int64
	connected     bool
	everConnected bool
	authed        bool
	authBusy      bool
	reconnects    uint64
	expiries      uint64
	lastErr       string
	backoff       time.Duration
	retry         *time.Timer
	retryAt       time.Time // when retry fires, zero when stopped

	next         *zkClient // a client a session recycle is readying, or nil
	nextDeadline time.Time // when the recycle gives up waiting for next's session
	lastRecycle  time.Time // when the last recycle started (the worker, before the first)
	recycles     uint64
	gc           *time.Timer // wakes the worker when a recycle is due, or its wait is over
}

// ifaceState is what the worker knows of one interface with live directories.
type ifaceState struct {
	name string
	dirs map[registry.ServiceKey]*registry.Directory
	// paths are the nodes read for the interface: providers and
	// configurators (interface-level discovery), mapping (application
	// level), as the registry's discovery mode says.
	paths     []*pathWatch
	mapping   *pathWatch // nil without application-level discovery
	failed    bool       // the last read of one of paths failed: directories are stale
	published bool       // directories were set once: later changes publish at once
	// hasProviders is true once a listing found the providers node: only
	// then are consumer nodes registered under the interface.
	hasProviders bool
	// apps are the applications the mapping node names, sorted.
	apps []string

	providerNodes map[string]*providerNode // by child name; nil for a skipped child
	nodes         []*providerNode          // the usable ones, by address
	overrideNodes map[string]*override     // by child name; nil for one that does not apply
	overrides     []*override              // the applicable ones, in application order
	reweighted    map[overridden]*cluster.Provider
}

// pathWatch is one node the worker reads and watches. go-zookeeper cannot
// remove a watch from the server: when a node is no longer needed its
// watch is "dropped" by no longer re-arming it — the record stays until the
// watch fires, its event is ignored, and a new subscription meanwhile
// reuses it.
//
// An armed record that is not live is an orphan: a session recycle clears it.
type pathWatch struct {
	path  string
	kind  int
	owner string // the interface (providers, configurators, mapping) or the application (app, instance)
	child string // the instance's node name (instance)
	live  bool   // a state holds it: read it when needed, re-arm it when it fires
	armed bool   // a watch is set (in the client in use and on the server)
	busy  bool   // an operation on the path is in the client (still, if the worker gave up on it)
	token uint64 // identifies the watch call armed last
	// ch is the armed watch's channel, and stop, while a helper forwards
	// its event, closes to end that helper: a dropped node's watch stays
	// set (go-zookeeper cannot remove it) but holds no goroutine; watching
	// the node again starts a helper on ch again.
	ch   <-chan zk.Event
	stop chan struct{}
	need bool // the node must be read (again)
	read bool // the node was read since the session was last (re)established
	// failed says the last read failed (it is retried at retry): a
	// first publication does not wait for such a node.
	failed bool
	retry  time.Time
}

// consumerNode is the gateway's registration as a consumer of one key.
type consumerNode struct {
	key        registry.ServiceKey
	path       string // fixed at the first registration, re-used after a session expiry
	want       bool
	registered bool
	busy       bool // an operation is in the client (still, if the worker gave up on it)
	creating   bool // the operation in flight creates (rather than deletes)
	retry      time.Time
}

// opResult is what one ZooKeeper operation returns to the worker.
type opResult struct {
	children []string
	data     []byte
	exists   bool            // a read found the node
	watch    <-chan zk.Event // set when the operation set a watch
	err      error
}

type lateResult struct {
	target any // *pathWatch, *consumerNode, authOp or recycleOp
	token  uint64
	res    opResult
}

// firedWatch says that the watch armed for pathWatch as token fired: the
// node changed, or the client dropped the watch (session expired).
type firedWatch struct {
	watch *pathWatch
	token uint64
}

// authOp marks the late result of adding credentials.
type authOp struct{}

// recycleOp marks the late result of an operation on the client a
// session recycle was readying: the recycle was abandoned, nothing to do.
type recycleOp struct{}

func newZKWorker(z *Registry, client *zkClient) *zkWorker {
	return &zkWorker{
		z:         z,
		client:    client,
		hooks:     z.hooks,
		late:      make(chan lateResult),
		fired:     make(chan firedWatch),
		ifaces:    make(map[string]*ifaceState),
		apps:      make(map[string]*appState),
		watches:   make(map[string]*pathWatch),
		consumers: make(map[registry.ServiceKey]*consumerNode),
		dirty:     make(map[*ifaceState]struct{}),
		meta:      make(map[metaKey]*metaEntry),
		metaDone:  make(chan metaResult),
		backoff:   minBackoff,
	}
}

func (w *zkWorker) run() {
	defer close(w.z.workerDone)
	firstSession := time.NewTimer(w.z.opts.Timeout)
	defer firstSession.Stop()
	w.retry = time.NewTimer(time.Hour)
	w.retry.Stop()
	defer w.retry.Stop()
	w.gc = time.NewTimer(time.Hour)
	w.gc.Stop()
	defer w.gc.Stop()
	w.lastRecycle = time.Now()
	for {
		w.step()
		select {
		case <-w.z.quit:
			return
		case <-w.z.nudge:
		case r := <-w.late:
			w.onLate(r)
		case f := <-w.fired:
			w.onFired(f)
		case m := <-w.metaDone:
			w.onMetadata(m)
		case <-firstSession.C:
			w.onNoFirstSession()
		case <-w.retry.C:
			w.retryAt = time.Time{}
		case <-w.gc.C:
		}
	}
}

// clients are the clients the worker holds: the one in use and the one a
// recycle is readying. Close calls it once the worker has returned.
func (w *zkWorker) clients() []*zkClient {
	if w.next != nil {
		return []*zkClient{w.client, w.next}
	}
	return []*zkClient{w.client}
}

// step brings everything up to date as far as it can without waiting for
// anything but the operations it runs.
func (w *zkWorker) step() {
	w.syncSession()
	w.syncSubscriptions()
	w.syncCatalog()
	if w.connected {
		w.work()
		now := time.Now()
		for _, a := range w.apps {
			w.dropMissing(a, now)
		}
		w.fetchDue()
	}
	w.collectOrphans()
	// The status goes out before the directories and the catalog it
	// describes: whoever sees a provider or a catalog change through
	// them then reads a status at least as new (the watch that change
	// re-armed, the subscription it served), never the step before.
	w.publishStatus()
	w.publishDirty()
	w.publishCatalog()
	if w.hooks.stepped != nil {
		w.hooks.stepped()
	}
}

// syncSession follows the client's session: a session (re-)established, a
// new session after expiry, or the connection lost.
func (w *zkWorker) syncSession() {
	ev := w.client.sessionEvents()
	up := ev.state == zk.StateHasSession
	if up && ev.established != w.established {
		w.established = ev.established
		sid := w.client.conn.SessionID()
		if w.everConnected {
			w.reconnects++
		}
		if w.sessionID != 0 && sid != w.sessionID {
			w.expiries++
			w.newSession()
			w.z.log.Warn("ZooKeeper session expired: a new session re-arms watches and re-registers",
				"old_session", fmt.Sprintf("%#x", w.sessionID), "session", fmt.Sprintf("%#x", sid))
		} else {
			w.z.log.Info("connected to ZooKeeper", "session", fmt.Sprintf("%#x", sid), "server", w.client.conn.Server())
		}
		w.sessionID = sid
		w.connected, w.everConnected = true, true
		w.z.unreachable.Store(false)
		w.lastErr = ""
		// The client re-sends its watches on a reconnection (SetWatches),
		// and the server fires those whose node changed meanwhile; but the
		// client only logs it when that request fails. Read everything once.
		for _, pw := range w.watches {
			if pw.live {
				pw.need, pw.retry = true, time.Time{}
			}
		}
		return
	}
	if !up && w.connected {
		w.connected = false
		w.z.unreachable.Store(true)
		w.lastErr = "connection to ZooKeeper lost (" + ev.state.String() + ")"
		w.z.log.Warn("lost ZooKeeper: serving the last known providers", "state", ev.state.String())
		for _, pw := range w.watches {
			if pw.live {
				pw.need, pw.read = true, false
			}
		}
		for _, s := range w.ifaces {
			s.markStale()
		}
	}
}

// newSession forgets what the expired session held: its watches (which
// the client has invalidated) and its ephemeral consumer nodes.
func (w *zkWorker) newSession() {
	for _, pw := range w.watches {
		if pw.armed && !pw.busy {
			pw.armed = false
			pw.token++ // the invalidated watch's event is now ignored
			w.forget(pw)
		}
	}
	for _, c := range w.consumers {
		if !c.busy {
			c.registered = false
		}
	}
}

// onNoFirstSession runs Timeout after start: without a session by then,
// directories stop waiting for one.
func (w *zkWorker) onNoFirstSession() {
	if w.everConnected {
		return
	}
	w.z.unreachable.Store(true)
	w.lastErr = fmt.Sprintf("no ZooKeeper session within %s", w.z.opts.Timeout)
	w.z.log.Warn("ZooKeeper unreachable: directories answer no provider until it is", "addrs", w.z.opts.Addrs)
	for _, s := range w.ifaces {
		s.markStale()
	}
	w.publishStatus()
}

// syncSubscriptions takes the directories created and released since the
// last look.
func (w *zkWorker) syncSubscriptions() {
	w.z.mu.Lock()
	if len(w.z.changed) == 0 {
		w.z.mu.Unlock()
		return
	}
	changed := make(map[string]map[registry.ServiceKey]*registry.Directory, len(w.z.changed))
	for name := range w.z.changed {
		changed[name] = maps.Clone(w.z.want[name])
	}
	clear(w.z.changed)
	w.z.mu.Unlock()
	for name, want := range changed {
		w.reconcile(name, want)
	}
}

// reconcile makes interface name's state hold exactly the directories in want.
func (w *zkWorker) reconcile(name string, want map[registry.ServiceKey]*registry.Directory) {
	s := w.ifaces[name]
	if s == nil && len(want) > 0 {
		if !validNodeName(name) {
			w.z.log.Warn("interface name cannot be a ZooKeeper node: it has no providers", "interface", name)
			for _, d := range want {
				d.Set(nil)
			}
			return
		}
		s = w.newIface(name)
	}
	if s == nil {
		return
	}
	for key, d := range s.dirs {
		if want[key] != d {
			delete(s.dirs, key)
			w.unregister(key)
		}
	}
	added := false
	for key, d := range want {
		if s.dirs[key] == d {
			continue
		}
		s.dirs[key] = d
		w.register(key)
		added = true
		if s.failed || !w.connected && w.z.unreachable.Load() {
			d.MarkStale()
		}
	}
	if len(s.dirs) == 0 {
		w.dropIface(s)
		return
	}
	if added && w.connected && !s.failed {
		if w.settled(s) {
			w.publish(s) // the new directories answer at once, before any read
		} else {
			w.dirty[s] = struct{}{}
		}
	}
}

func validNodeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

func (w *zkWorker) newIface(name string) *ifaceState {
	s := &ifaceState{
		name:          name,
		dirs:          make(map[registry.ServiceKey]*registry.Directory),
		providerNodes: make(map[string]*providerNode),
		overrideNodes: make(map[string]*override),
	}
	if w.z.interfaceLevel() {
		s.paths = append(s.paths,
			w.watch(w.z.root+"/"+name+"/providers", nodeProviders, name, ""),
			w.watch(w.z.root+"/"+name+"/configurators", nodeConfigurators, name, ""))
	}
	if w.z.applicationLevel() {
		s.mapping = w.watch(w.z.root+"/mapping/"+name, nodeMapping, name, "")
		s.paths = append(s.paths, s.mapping)
	}
	w.ifaces[name] = s
	return s
}

// watch returns the live record of path, which must be read: a new one, or
// the record a released node left (its watch may still be armed).
func (w *zkWorker) watch(path string, kind int, owner, child string) *pathWatch {
	pw := w.watches[path]
	if pw == nil {
		pw = &pathWatch{path: path}
		w.watches[path] = pw
	}
	pw.kind, pw.owner, pw.child = kind, owner, child
	pw.live, pw.need, pw.read, pw.retry = true, true, false, time.Time{}
	w.resumeForward(pw) // its watch, set before the node was dropped, may still fire
	w.z.poke()          // read it, also when the worker is not in work (a recycle)
	return pw
}

// unwatch drops a node nobody needs any more: its watch is no longer
// re-armed, and the helper forwarding its event ends (see pathWatch).
func (w *zkWorker) unwatch(pw *pathWatch) {
	pw.live, pw.need, pw.read = false, false, false
	w.stopForward(pw)
	w.forget(pw)
}

// stopForward ends the helper forwarding pw's watch event, if any.
func (w *zkWorker) stopForward(pw *pathWatch) {
	if pw.stop != nil {
		close(pw.stop)
		pw.stop = nil
	}
}

// resumeForward starts a helper forwarding the event of pw's armed watch
// when none does (it was stopped when the node was dropped).
func (w *zkWorker) resumeForward(pw *pathWatch) {
	if !pw.armed || pw.stop != nil || pw.ch == nil {
		return
	}
	stop, token, ch := make(chan struct{}), pw.token, pw.ch
	pw.stop = stop
	w.helpers.Add(1)
	go func() {
		defer w.helpers.Done()
		w.forward(pw, token, ch, stop)
	}()
}

// dropIface stops watching a released interface.
func (w *zkWorker) dropIface(s *ifaceState) {
	for _, pw := range s.paths {
		w.unwatch(pw)
	}
	w.setApps(s, nil)
	delete(w.dirty, s)
	delete(w.ifaces, s.name)
}

// forget removes a watch record nobody needs and nothing is pending on.
func (w *zkWorker) forget(pw *pathWatch) {
	if !pw.live && !pw.armed && !pw.busy && w.watches[pw.path] == pw {
		delete(w.watches, pw.path)
	}
}

func (w *zkWorker) register(key registry.ServiceKey) {
	if !w.z.opts.Register {
		return
	}
	c := w.consumers[key]
	if c == nil {
		c = &consumerNode{key: key}
		w.consumers[key] = c
	}
	c.want = true
}

func (w *zkWorker) unregister(key registry.ServiceKey) {
	if c := w.consumers[key]; c != nil {
		c.want = false
	}
}

// work runs the operations pending, while connected: credentials, reads
// and consumer nodes. An item that fails is retried after a backoff; a
// failure of the connection itself ends the round.
func (w *zkWorker) work() {
	now := time.Now()
	var next time.Time // the earliest retry due
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	failed := false
	fail := func(err error) {
		failed = true
		w.lastErr = err.Error()
		w.z.log.Warn("ZooKeeper operation failed", "err", err, "retry_in", w.backoff)
	}
	defer func() {
		if failed {
			w.backoff = min(w.backoff*2, maxBackoff)
		} else if next.IsZero() {
			w.backoff = minBackoff
			w.lastErr = ""
		}
		if !next.IsZero() {
			w.wakeAt(next)
		}
	}()

	if !w.authed {
		if err := w.authenticate(); err != nil {
			fail(err)
			later(now.Add(w.backoff))
			return
		}
		if !w.authed {
			return // still in the client; its late result wakes the worker
		}
	}
	// Reading a node can make others needed (a mapping names an
	// application, an application lists instances): read until none is
	// left but those waiting out a backoff or still in the client.
	for more := true; more; {
		more = false
		for _, pw := range w.watches {
			if !pw.live || !pw.need || pw.busy {
				continue
			}
			if now.Before(pw.retry) {
				later(pw.retry)
				continue
			}
			more = true
			if err := w.read(pw); err != nil {
				fail(err)
				pw.retry, pw.failed = now.Add(w.backoff), true
				later(pw.retry)
				w.readFailed(pw)
				if isConnectionError(err) {
					return
				}
			}
		}
	}
	for key, c := range w.consumers {
		if c.busy {
			continue
		}
		if now.Before(c.retry) {
			later(c.retry)
			continue
		}
		var err error
		switch {
		case c.want && !c.registered:
			if s := w.ifaces[key.Interface]; s == nil || !s.hasProviders {
				continue // the providers node's watch wakes the worker when it appears
			}
			err = w.createConsumer(c)
		case !c.want && c.registered:
			err = w.deleteConsumer(c)
		case !c.want:
			delete(w.consumers, key)
		}
		if err != nil {
			fail(err)
			c.retry = now.Add(w.backoff)
			later(c.retry)
			if isConnectionError(err) {
				return
			}
		}
	}
}

var errGaveUp = errors.New("no answer within the timeout")

func isConnectionError(err error) bool {
	return errors.Is(err, errGaveUp) || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing)
}

// authenticate adds the digest credentials once; the client re-sends them
// on every reconnection itself.
func (w *zkWorker) authenticate() error {
	if w.z.opts.Username == "" && w.z.opts.Password == "" {
		w.authed = true
		return nil
	}
	if w.authBusy {
		return nil
	}
	conn, cred := w.client.conn, []byte(w.z.opts.Username+":"+w.z.opts.Password)
	w.authBusy = true
	r, ok := w.call(authOp{}, nil, 0, nil, func() opResult { return opResult{err: conn.AddAuth("digest", cred)} })
	if !ok {
		return fmt.Errorf("adding digest credentials: %w", errGaveUp)
	}
	w.authBusy = false
	if r.err != nil {
		return fmt.Errorf("adding digest credentials: %w", r.err)
	}
	w.authed = true
	return nil
}

// read reads pw's node (its children or its data; nothing when it does
// not exist), arming its watch when none is set, and takes the result.
func (w *zkWorker) read(pw *pathWatch) error {
	conn, path, arm := w.client.conn, pw.path, !pw.armed
	var stop chan struct{}
	if arm {
		pw.token++
		w.stopForward(pw) // a helper still waiting for an invalidated watch's event
		stop = make(chan struct{})
		pw.stop = stop
	}
	token := pw.token
	pw.busy = true
	r, ok := w.call(pw, pw, token, stop, readOp(conn, path, pw.kind, arm))
	if !ok {
		return fmt.Errorf("reading %s: %w", path, errGaveUp)
	}
	pw.busy = false
	w.adopt(pw, token, r)
	if r.err != nil {
		return fmt.Errorf("reading %s: %w", path, r.err)
	}
	pw.need, pw.read, pw.failed = false, true, false
	w.take(pw, r)
	return nil
}

// readOp is the operation that reads path's children or data, as its
// kind says, setting a watch when arm is true.
func readOp(conn *zk.Conn, path string, kind int, arm bool) func() opResult {
	data := kind == nodeMapping || kind == nodeInstance
	switch {
	case kind == nodeInstance && arm:
		// An instance node that is gone is not watched for its return:
		// the application's listing says when it comes back, and an
		// exists watch on it would be an orphan once it is dropped.
		return func() opResult { return watchDataIfExists(conn, path) }
	case data && arm:
		return func() opResult { return watchData(conn, path) }
	case data:
		return func() opResult { return getData(conn, path) }
	case arm:
		return func() opResult { return watchChildren(conn, path) }
	}
	return func() opResult { return listChildren(conn, path) }
}

// readFailed marks the directories that depend on a node that could not be
// read stale. Nodes of applications are not read for one interface alone:
// their directories keep what they have while the read is retried.
func (w *zkWorker) readFailed(pw *pathWatch) {
	if s := w.ifaces[pw.owner]; s != nil && pw.kind <= nodeMapping {
		s.failed = true
		s.markStale()
	}
}

// take takes what a read of pw's node found.
func (w *zkWorker) take(pw *pathWatch, r opResult) {
	switch pw.kind {
	case nodeProviders:
		if s := w.ifaces[pw.owner]; s != nil {
			s.hasProviders = r.exists
			w.setProviders(s, r.children)
			w.dirty[s] = struct{}{}
		}
	case nodeConfigurators:
		if s := w.ifaces[pw.owner]; s != nil {
			w.setOverrides(s, r.children)
			w.dirty[s] = struct{}{}
		}
	case nodeMapping:
		if s := w.ifaces[pw.owner]; s != nil {
			w.setApps(s, parseMapping(r.data))
			w.dirty[s] = struct{}{}
		}
	case nodeApp:
		if a := w.apps[pw.owner]; a != nil {
			w.setInstances(a, r.children)
		}
	case nodeInstance:
		if a := w.apps[pw.owner]; a != nil {
			if in := a.instances[pw.child]; in != nil {
				w.setInstance(a, in, r.data, r.exists)
			}
		}
	case nodeRoot, nodeMappingRoot:
		w.takeListing(pw, r.children)
	}
}

// watchData reads path's data and sets a watch: a data watch when the node
// exists (it fires on a change or the deletion), an exists watch (which
// fires on its creation) when it does not.
func watchData(conn *zk.Conn, path string) opResult {
	return readOrAwait(conn, path, func() (opResult, error) {
		data, _, ch, err := conn.GetW(path)
		return opResult{data: data, exists: true, watch: ch}, err
	})
}

// readOrAwait reads path with readW, which sets a watch when the node
// exists; when it does not, it sets an exists watch instead, which fires
// on the node's creation.
func readOrAwait(conn *zk.Conn, path string, readW func() (opResult, error)) opResult {
	for range 3 {
		r, err := readW()
		if err == nil {
			return r
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return opResult{err: err}
		}
		exists, _, ch, err := conn.ExistsW(path)
		if err != nil {
			return opResult{err: err}
		}
		if !exists {
			return opResult{watch: ch}
		}
		// Created between the two calls. ExistsW then set a data watch,
		// which fires only if the node's data changes or it is deleted; it
		// is left unread (the client buffers its one event and drops the
		// channel). Read again, for the watch readW sets.
	}
	return opResult{err: fmt.Errorf("%s keeps appearing and disappearing", path)}
}

// watchDataIfExists reads path's data and sets a data watch when the node
// exists; when it does not, it sets nothing.
func watchDataIfExists(conn *zk.Conn, path string) opResult {
	data, _, ch, err := conn.GetW(path)
	if errors.Is(err, zk.ErrNoNode) {
		return opResult{}
	}
	if err != nil {
		return opResult{err: err}
	}
	return opResult{data: data, exists: true, watch: ch}
}

func getData(conn *zk.Conn, path string) opResult {
	data, _, err := conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return opResult{}
	}
	return opResult{data: data, exists: err == nil, err: err}
}

// watchChildren lists path's children and sets a watch: a child watch
// when the node exists, an exists watch (which fires on its creation) when
// it does not.
func watchChildren(conn *zk.Conn, path string) opResult {
	return readOrAwait(conn, path, func() (opResult, error) {
		children, _, ch, err := conn.ChildrenW(path)
		return opResult{children: children, exists: true, watch: ch}, err
	})
}

func listChildren(conn *zk.Conn, path string) opResult {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return opResult{}
	}
	return opResult{children: children, exists: err == nil, err: err}
}

// adopt records the watch an operation on pw set.
func (w *zkWorker) adopt(pw *pathWatch, token uint64, r opResult) {
	if r.watch == nil || token != pw.token {
		return
	}
	pw.armed, pw.ch = true, r.watch
	if pw.live {
		w.resumeForward(pw) // dropped and watched again while the call was in the client
	}
	if w.hooks.armed != nil {
		w.hooks.armed(pw.path)
	}
}

// call runs op on a helper goroutine and waits at most Timeout for it.
// When it gives up, the helper sends the result to w.late once op returns;
// either way, a watch the operation set for pw (as token) is waited for by
// the helper, until stop closes, and reported on w.fired. Without pw, a
// watch the operation set is the caller's to forward.
func (w *zkWorker) call(target any, pw *pathWatch, token uint64, stop chan struct{}, op func() opResult) (opResult, bool) {
	select {
	case <-w.z.quit:
		return opResult{}, false // closing: start nothing more
	default:
	}
	c := &pendingCall{done: make(chan opResult, 1)}
	w.helpers.Add(1)
	go func() {
		defer w.helpers.Done()
		r := op()
		if !c.deliver(r) {
			select {
			case w.late <- lateResult{target: target, token: token, res: r}:
			case <-w.z.quit:
				return
			}
		}
		if r.watch != nil && pw != nil {
			w.forward(pw, token, r.watch, stop)
		}
	}()
	timer := time.NewTimer(w.z.opts.Timeout)
	defer timer.Stop()
	select {
	case r := <-c.done:
		return r, true
	case <-timer.C:
	case <-w.z.quit:
	}
	return c.abandon()
}

// forward waits for a watch's one event and hands it to the worker, unless
// stop closes first. An event received is handed over whatever stop says:
// the channel holds only one, and a helper started anew on it would wait
// in vain.
func (w *zkWorker) forward(pw *pathWatch, token uint64, ch <-chan zk.Event, stop <-chan struct{}) {
	select {
	case _, ok := <-ch:
		if !ok {
			return
		}
		select {
		case w.fired <- firedWatch{watch: pw, token: token}:
		case <-w.z.quit:
		}
	case <-stop:
	case <-w.z.quit:
	}
}

// pendingCall hands an operation's result to the waiting worker, unless
// the worker has given up on it.
type pendingCall struct {
	mu        sync.Mutex
	abandoned bool
	done      chan opResult // capacity 1
}

func (c *pendingCall) deliver(r opResult) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned {
		return false
	}
	c.done <- r
	return true
}

// abandon gives up on the call, unless its result came in meanwhile.
func (c *pendingCall) abandon() (opResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case r := <-c.done:
		return r, true
	default:
		c.abandoned = true
		return opResult{}, false
	}
}

// onLate takes the result of an operation the worker stopped waiting for.
func (w *zkWorker) onLate(r lateResult) {
	switch t := r.target.(type) {
	case *pathWatch:
		t.busy = false
		w.adopt(t, r.token, r.res)
		if t.live {
			t.need = true // read again: the result is old news by now
		}
		w.forget(t)
	case *consumerNode:
		t.busy = false
		if r.res.err == nil {
			t.registered = t.creating
		}
	case authOp:
		w.authBusy = false
		w.authed = r.res.err == nil
	case recycleOp:
	}
}

// onFired takes a watch's event: the node changed (read it again, which
// re-arms the watch), or the watch is gone (session expired).
func (w *zkWorker) onFired(f firedWatch) {
	pw := f.watch
	if f.token != pw.token || !pw.armed {
		return // a watch no longer counted: replaced after a session expiry
	}
	pw.armed, pw.ch, pw.stop = false, nil, nil // its helper has ended
	if w.hooks.fired != nil {
		w.hooks.fired(pw.path)
	}
	if pw.live {
		pw.need = true
		return
	}
	w.forget(pw) // a dropped watch fired: not re-armed
}

// setProviders takes a new listing of s's providers node. Children seen
// before keep their parsed node (and so their *cluster.Provider).
func (w *zkWorker) setProviders(s *ifaceState, children []string) {
	byName := make(map[string]*providerNode, len(children))
	nodes := make([]*providerNode, 0, len(children))
	for _, name := range children {
		n, seen := s.providerNodes[name]
		if !seen {
			var reason string
			if n, reason = parseProviderNode(name); reason != "" {
				w.skip(s.name, "provider", name, reason)
			}
		}
		byName[name] = n
		if n != nil {
			nodes = append(nodes, n)
		}
	}
	sortProviderNodes(nodes)
	s.providerNodes, s.nodes = byName, nodes
}

// setOverrides takes a new listing of s's configurators node.
func (w *zkWorker) setOverrides(s *ifaceState, children []string) {
	byName := make(map[string]*override, len(children))
	list := make([]*override, 0, len(children))
	for _, name := range children {
		o, seen := s.overrideNodes[name]
		if !seen {
			var reason string
			if o, reason = parseOverrideNode(s.name, name); reason != "" {
				w.skip(s.name, "override", name, reason)
			}
		}
		byName[name] = o
		if o != nil {
			list = append(list, o)
		}
	}
	sortOverrides(list)
	s.overrideNodes, s.overrides = byName, list
}

func (w *zkWorker) skip(iface, what, name, reason string) {
	w.z.skipped.Add(1)
	decoded, err := url.QueryUnescape(name)
	if err != nil {
		decoded = name
	}
	// Redacted: a provider URL's parameters may hold its token.
	w.z.log.Warn("skipping a "+what+" URL", "interface", iface, "url", config.RedactURL(decoded), "reason", reason)
}

// publishDirty publishes the interfaces whose nodes changed, once what
// they depend on has been read.
func (w *zkWorker) publishDirty() {
	if !w.connected {
		return
	}
	for s := range w.dirty {
		if w.settled(s) {
			delete(w.dirty, s)
			s.failed = false
			w.publish(s)
		}
	}
}

// settled reports whether s can be published: every node of its own has
// been read since the session was (re)established and, before its first
// publication, every instance of its applications has been read and its
// metadata fetched or given up on once — so that a gateway starting does
// not answer "no provider" for a service about to be known. Later, a new
// instance is left out until its metadata is known.
func (w *zkWorker) settled(s *ifaceState) bool {
	for _, pw := range s.paths {
		if !pw.read {
			return false
		}
	}
	if s.published {
		return true
	}
	for _, name := range s.apps {
		a := w.apps[name]
		// A node whose read failed (it is retried with a backoff) does
		// not hold the others' first answer back.
		if a == nil || !a.watch.read && !a.watch.failed {
			return false
		}
		for _, in := range a.instances {
			if !in.watch.read && !in.watch.failed || in.awaitingMetadata() {
				return false
			}
		}
	}
	return true
}

// publish sets the directories of s whose providers changed, and those
// not current (pending or stale).
func (w *zkWorker) publish(s *ifaceState) {
	s.published = true
	nodes := s.nodes
	if w.z.applicationLevel() {
		nodes = w.mergedNodes(s)
	}
	next := make(map[overridden]*cluster.Provider, len(s.reweighted))
	for key, d := range s.dirs {
		snap := buildSnapshot(key, nodes, s.overrides, s.reweighted, next)
		var origins map[string]registry.ProviderOrigin
		if w.z.applicationLevel() {
			origins = providerOrigins(key, nodes)
		}
		if d.State() == registry.DirOK && slices.Equal(d.Providers(), snap) && maps.Equal(d.Origins(), origins) {
			continue
		}
		prev := d.Providers()
		d.SetWithOrigins(snap, origins)
		if w.hooks.published != nil {
			w.hooks.published(key, snap)
		}
		w.redialNew(prev, snap)
	}
	s.reweighted = next
}

// redialNew hands Options.Redial the address of every provider
// in snap that prev did not have: one that registered (again), perhaps a
// process restarted on an address the client is still backing off from.
func (w *zkWorker) redialNew(prev, snap []*cluster.Provider) {
	if w.z.opts.Redial == nil {
		return
	}
	old := make(map[*cluster.Provider]bool, len(prev))
	for _, p := range prev {
		old[p] = true
	}
	for _, p := range snap {
		if !old[p] {
			w.z.opts.Redial(p.Addr)
		}
	}
}

func (s *ifaceState) markStale() {
	for _, d := range s.dirs {
		d.MarkStale()
	}
}

// createConsumer registers the gateway as a consumer of c.key.
func (w *zkWorker) createConsumer(c *consumerNode) error {
	if c.path == "" {
		host := w.z.opts.ConsumerHost
		if host == "" {
			if h := w.z.localHost.Load(); h != nil {
				host = *h
			}
		}
		u := consumerURL(host, c.key, w.z.opts.Application, time.Now().UnixMilli(), os.Getpid())
		c.path = w.z.root + "/" + c.key.Interface + "/consumers/" + url.QueryEscape(u)
	}
	conn, path := w.client.conn, c.path
	c.busy, c.creating = true, true
	r, ok := w.call(c, nil, 0, nil, func() opResult { return opResult{err: createEphemeral(conn, path)} })
	if !ok {
		return fmt.Errorf("registering consumer %s: %w", c.key, errGaveUp)
	}
	c.busy = false
	if r.err != nil {
		return fmt.Errorf("registering consumer %s: %w", c.key, r.err)
	}
	c.registered = true
	return nil
}

// deleteConsumer removes the gateway's consumer node of c.key.
func (w *zkWorker) deleteConsumer(c *consumerNode) error {
	conn, path := w.client.conn, c.path
	c.busy, c.creating = true, false
	r, ok := w.call(c, nil, 0, nil, func() opResult {
		err := conn.Delete(path, -1)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
		return opResult{err: err}
	})
	if !ok {
		return fmt.Errorf("unregistering consumer %s: %w", c.key, errGaveUp)
	}
	c.busy = false
	if r.err != nil {
		return fmt.Errorf("unregistering consumer %s: %w", c.key, r.err)
	}
	c.registered = false
	return nil
}

// createEphemeral creates path as an ephemeral node of conn's session,
// creating its missing parents as persistent nodes (open ACL, as Dubbo
// does). A node of another session at path (an expired session of ours
// the server has not cleaned up yet, or the session a recycle replaces) is
// replaced in one transaction, so the node never disappears meanwhile.
func createEphemeral(conn *zk.Conn, path string) error {
	acl := zk.WorldACL(zk.PermAll)
	_, err := conn.Create(path, nil, zk.FlagEphemeral, acl)
	if errors.Is(err, zk.ErrNoNode) {
		for i := 1; i < len(path); i++ {
			if path[i] != '/' {
				continue
			}
			if _, err := conn.Create(path[:i], nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
		_, err = conn.Create(path, nil, zk.FlagEphemeral, acl)
	}
	for range 3 {
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		// Ours (an earlier answer was lost), or another session's.
		exists, st, xerr := conn.Exists(path)
		switch {
		case xerr != nil:
			return xerr
		case !exists:
			_, err = conn.Create(path, nil, zk.FlagEphemeral, acl)
		case st.EphemeralOwner == conn.SessionID():
			return nil
		default:
			// One transaction: a failed delete (the node changed
			// meanwhile) fails the create too, and ZooKeeper answers the
			// delete's error.
			_, err = conn.Multi(
				&zk.DeleteRequest{Path: path, Version: st.Version},
				&zk.CreateRequest{Path: path, Acl: acl, Flags: zk.FlagEphemeral})
			if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
				err = zk.ErrNodeExists // look again
			}
		}
	}
	return err
}

// publishStatus makes the worker's view readable by Status.
func (w *zkWorker) publishStatus() {
	st := registry.Status{
		Type:            "zookeeper",
		State:           registry.StateConnecting,
		Degraded:        w.z.unreachable.Load(),
		Error:           w.lastErr,
		Reconnects:      w.reconnects,
		SessionExpiries: w.expiries,
	}
	switch {
	case w.connected:
		st.State = registry.StateConnected
	case w.everConnected:
		st.State = registry.StateDisconnected
	}
	st.Watches, st.OrphanWatches = w.countWatches()
	st.Applications, st.Instances = w.appCounts()
	st.MetadataFetches, st.MetadataFailures, st.MetadataCached = w.metaFetches, w.metaFailures, len(w.meta)
	st.MetadataInFlight = w.fetching
	st.SessionRecycles = w.recycles
	for _, c := range w.consumers {
		if c.registered {
			st.Registered++
		}
	}
	w.z.statusMu.Lock()
	if w.z.status.State != registry.StateClosed {
		w.z.status = st
	}
	w.z.statusMu.Unlock()
}
