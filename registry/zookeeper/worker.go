package zookeeper

import (
	"fmt"
	"time"

	"github.com/dubbogw/dubbogw/registry"
)

// How operations are bounded. go-zookeeper's calls take no context and can
// block: a request queued while the client is disconnected waits for a
// connection (the client fails it with ErrNoServer after each round of
// failed dials, ErrConnectionClosed when a connection drops, or when Close
// is called), and a connection to a server that accepts but never answers
// holds requests for up to ten receive timeouts. So the worker never runs
// one itself. Reads are started asynchronously (the client hands their
// answers to a callback: no goroutine waits on one) and consumer nodes on
// helper goroutines, up to maxInFlight at once (the client pipelines them
// on its one connection, so a large registry is read at the rate of the
// link, not one round trip per node), and their results come back to the
// worker, which takes them in its next step. One that has no answer after Timeout is
// counted as failed and nothing new starts for a backoff; it is not
// started again while it is still in the client, so there is never a
// second watch call outstanding on a path. The rest (credentials, a
// recycle's moves) the worker waits for, at most Timeout each.
//
// Watch events come through the client's event callback, by path (no
// goroutine waits on a watch): the worker takes them from the client in
// use at each step, and reads the node again, which re-arms its watch.
//
// go-zookeeper cannot remove a watch, so a released interface's watches stay
// set (orphans) until they fire, which for a node that does not exist can be
// never. Left alone, clients naming ever new interfaces would grow them
// without bound; so while there are any, the worker recycles the session at
// most once per WatchGC, make-before-break: it opens a second client, waits
// for its session, arms the live interfaces' watches and lists them on it,
// moves the consumer nodes to it, and only then switches to it and closes
// the old client, whose session takes the orphans (and their client-side
// channels) with it. An orphan holds nothing but its record and the
// client's one-event channel. Directories keep their snapshots
// throughout: nothing is marked stale, and a listing that did not change
// publishes nothing.

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// worker is the goroutine that does all of a registry's ZooKeeper work
// (operations on helper goroutines, as explained above). It owns the session and what the registry knows, each
// part its own type, all of it touched by the worker's goroutine only
// (but for the helpers and clients session.go names):
//
//   - session: the client in use, its session, credentials and operations,
//     and the client a session recycle readies (session.go, recycle.go);
//   - watches: the nodes read and watched, live and orphaned (watches.go);
//   - ifaces: interface-level discovery, the interfaces with live
//     directories and their nodes, and the directories' publication
//     (ifaces.go);
//   - apps: application-level discovery, the applications those
//     interfaces' mappings name, their instances and instance metadata
//     (apps.go, metadata.go);
//   - consumers: the gateway's consumer nodes (consumers.go);
//   - catalog: the listings of the interfaces registered (catalog.go).
type worker struct {
	z         *Registry
	session   *session
	watches   *watches
	ifaces    *ifaces
	apps      *apps
	consumers *consumers
	catalog   *catalogState // with one discovery level, nil until the catalog is first wanted

	results []opDone // results of started operations, taken by the next step

	backoff time.Duration // how long a failed operation waits before it is retried
	// holdUntil: after an operation went without an answer for Timeout,
	// or failed on the connection, nothing more is started until then.
	holdUntil time.Time
	retry     *time.Timer // wakes the worker when a retry or a deadline is due
	retryAt   time.Time   // when retry fires, zero when stopped
	warned    time.Time   // when the last failure was logged
	quiet     int         // failures not logged since
}

func newWorker(z *Registry, client *zkClient) *worker {
	w := &worker{z: z, backoff: minBackoff, retry: time.NewTimer(time.Hour)}
	w.retry.Stop()
	w.session = newSession(z, client)
	w.watches = newWatches(z, w.session)
	w.consumers = newConsumers(z, w.session)
	w.apps = newApps(z, w.session, w.watches, func(iface string) { w.ifaces.markDirty(iface) }, w.wakeAt)
	w.ifaces = newIfaces(z, w.session, w.watches, w.apps, w.consumers)
	if z.opts.Governance != nil {
		w.ifaces.rules = newRuleNodes(z, w.watches)
	}
	if z.interfaceLevel() && z.applicationLevel() {
		// Both levels: the catalog gates the subscriptions' reads
		// (catalog.go), so it is read from the start.
		w.catalog = newCatalogState(z, w.watches)
		w.catalog.gate = true
		w.ifaces.catalog = w.catalog
	}
	return w
}

func (w *worker) run() {
	defer close(w.z.workerDone)
	firstSession := time.NewTimer(w.z.opts.Timeout)
	defer firstSession.Stop()
	defer w.retry.Stop()
	defer w.session.gc.Stop()
	for {
		w.step()
		select {
		case <-w.z.quit:
			return
		case <-w.z.nudge:
		case d := <-w.session.done:
			w.received(d)
			for more := true; more; { // take every result in at once: one step for them all
				select {
				case d := <-w.session.done:
					w.received(d)
				default:
					more = false
				}
			}
		case r := <-w.session.late:
			w.onLate(r)
		case m := <-w.apps.metaDone:
			w.onMetadata(m)
			for more := true; more; { // the fetches done meanwhile: one step for them all
				select {
				case m := <-w.apps.metaDone:
					w.onMetadata(m)
				default:
					more = false
				}
			}
		case <-firstSession.C:
			w.onNoFirstSession()
		case <-w.retry.C:
			w.retryAt = time.Time{}
		case <-w.session.gc.C:
		}
	}
}

// received keeps a started operation's result for the next step, unless
// the operation goes on (session.continued).
func (w *worker) received(d opDone) {
	if !w.session.continued(d) {
		w.results = append(w.results, d)
	}
}

// step brings everything up to date as far as it can without waiting for
// anything but the operations it runs.
func (w *worker) step() {
	r := &round{w: w, now: time.Now()}
	w.syncSession()
	w.takeResults(r)
	w.takeFired()
	w.syncSubscriptions()
	w.syncCatalog()
	if w.session.connected {
		w.work(r)
		w.apps.dropAllMissing(r.now)
		w.apps.fetchDue()
	}
	r.end()
	w.collectOrphans()
	// The status goes out before the directories and the catalog it
	// describes: whoever sees a provider or a catalog change through
	// them then reads a status at least as new (the watch that change
	// re-armed, the subscription it served), never the step before.
	w.publishStatus()
	w.ifaces.publishDirty()
	if w.catalog != nil {
		w.catalog.publish(w.session.connected)
	}
	if w.z.hooks.stepped != nil {
		w.z.hooks.stepped()
	}
}

// takeResults takes the results of the operations that answered, and
// counts those overdue as failed (they stay in the client: nothing more is
// started until the backoff has passed).
func (w *worker) takeResults(r *round) {
	for _, d := range w.results {
		current := w.session.finish(d)
		switch t := d.op.target.(type) {
		case *pathWatch:
			if w.watches.finish(t, current, d.res) {
				w.take(t, d.res)
			} else if current && d.res.err != nil && t.live {
				w.readFailed(r, t, d.op, fmt.Errorf("reading %s: %w", t.path, d.res.err))
			}
		case *consumerNode:
			if err := w.consumers.finish(t, current, d.res); err != nil && !d.op.overdue {
				t.retry = r.fail(err)
			}
		case *metaRead:
			if d.op.overdue {
				break // counted as failed when it went overdue
			}
			if m, ok := w.apps.metaReadDone(t, d.res); ok {
				w.onMetadata(m)
			}
		}
	}
	clear(w.results)
	w.results = w.results[:0]
	late, next := w.session.overdue(r.now)
	if !next.IsZero() {
		r.later(next)
	}
	for _, o := range late {
		switch t := o.target.(type) {
		case *pathWatch:
			t.failed = true
			w.markFailed(t)
			r.fail(fmt.Errorf("reading %s: %w", t.path, errGaveUp))
		case *consumerNode:
			r.fail(fmt.Errorf("consumer %s: %w", t.key, errGaveUp))
		case *metaRead:
			w.onMetadata(metaResult{entry: t.entry, err: fetchError(t.entry, t.inst,
				fmt.Errorf("reading %s: %w", w.apps.metadataPaths(t.inst)[t.path], errGaveUp))})
		}
		w.holdUntil = r.now.Add(w.backoff)
	}
}

// readFailed retries a node whose read failed after the backoff; the
// directories depending on it are marked stale. A read already counted as
// failed when it went overdue is not counted again.
func (w *worker) readFailed(r *round, pw *pathWatch, op *startedOp, err error) {
	var retry time.Time
	if op.overdue {
		retry = r.now.Add(w.backoff)
		r.later(retry)
	} else {
		retry = r.fail(err)
	}
	w.watches.retryLater(pw, retry)
	w.markFailed(pw)
	if isConnectionError(err) {
		w.holdUntil = retry
	} else if (pw.kind == nodeRoot || pw.kind == nodeMappingRoot) && w.catalog.gating() {
		// ZooKeeper refused the listing: the gate cannot be kept.
		w.catalog.off = true
		w.ifaces.ungate()
		w.z.log.Warn("the registry's listing of interfaces cannot be read: every interface's nodes are read at both discovery levels",
			"path", pw.path, "err", err)
	}
}

// markFailed marks the directories depending on pw stale, and has the
// interfaces waiting for it looked at again: a failed node counts as
// answered, so it may settle them.
func (w *worker) markFailed(pw *pathWatch) {
	w.ifaces.readFailed(pw)
	switch pw.kind {
	case nodeApp, nodeInstance:
		w.ifaces.touchUsers(w.apps.usersOf(pw.owner))
	case nodeRule:
		w.ifaces.touchRuleHolders(pw)
	}
}

// onMetadata takes the result of a metadata fetch: the interfaces using
// the applications of its instances are looked at again.
func (w *worker) onMetadata(m metaResult) {
	w.apps.onMetadata(m)
	for _, a := range m.entry.holders {
		w.ifaces.touchUsers(a.users)
	}
}

// takeFired takes the watch events of the client in use.
func (w *worker) takeFired() {
	for path := range w.session.client.takeFired() {
		w.watches.onFired(path)
	}
}

// syncSession follows the client's session: a session (re-)established
// has every live node read again (after an expiry, what the old session
// held is forgotten first); a connection lost leaves the directories
// their providers, stale.
func (w *worker) syncSession() {
	change := w.session.sync()
	if change != sessionUnchanged {
		w.ifaces.appsChanged()
	}
	switch change {
	case sessionExpired:
		w.session.epoch++ // what is still in the client was of the old session
		w.watches.sessionExpired()
		w.consumers.sessionExpired()
		w.watches.readAgain()
	case sessionUp:
		w.watches.readAgain()
	case sessionLost:
		w.watches.connectionLost()
		w.ifaces.markStale()
	}
}

// onNoFirstSession runs Timeout after start: without a session by then,
// directories stop waiting for one.
func (w *worker) onNoFirstSession() {
	if !w.session.noFirstSession() {
		return
	}
	w.ifaces.markStale()
	w.publishStatus()
}

// syncSubscriptions takes the directories created and released since the
// last look.
func (w *worker) syncSubscriptions() {
	w.z.mu.Lock()
	if len(w.z.changed) == 0 {
		w.z.mu.Unlock()
		return
	}
	changed := make(map[string]dirSet, len(w.z.changed))
	for name := range w.z.changed {
		changed[name] = w.z.want[name]
	}
	clear(w.z.changed)
	w.z.mu.Unlock()
	for name, want := range changed {
		w.ifaces.reconcile(name, want)
	}
}

// syncCatalog starts watching the catalog's listings once it is wanted.
func (w *worker) syncCatalog() {
	if w.catalog == nil && w.z.catalogWanted.Load() {
		w.catalog = newCatalogState(w.z, w.watches)
	}
}

// round paces the operations of one round of work: an operation that
// fails is retried after the backoff, which doubles after a round with a
// failure and is reset by a round with nothing left to retry.
type round struct {
	w      *worker
	now    time.Time
	next   time.Time // the earliest retry due
	failed bool
}

// later makes the worker step again at t at the latest.
func (r *round) later(t time.Time) {
	if r.next.IsZero() || t.Before(r.next) {
		r.next = t
	}
}

// fail records a failed operation and returns when to retry it. Failures
// are logged at most once a second (with the count of those not logged):
// with many reads in flight, one lost connection fails them all at once.
func (r *round) fail(err error) time.Time {
	w := r.w
	r.failed = true
	w.session.lastErr = err.Error()
	if r.now.Sub(w.warned) >= time.Second {
		w.z.log.Warn("ZooKeeper operation failed", "err", err, "retry_in", w.backoff, "more_failures_not_logged", w.quiet)
		w.warned, w.quiet = r.now, 0
	} else {
		w.quiet++
	}
	retry := r.now.Add(w.backoff)
	r.later(retry)
	return retry
}

// end adjusts the backoff and sets the worker's wake-up.
func (r *round) end() {
	w := r.w
	if r.failed {
		w.backoff = min(w.backoff*2, maxBackoff)
	} else if r.next.IsZero() && w.session.connected {
		w.backoff = minBackoff
		w.session.lastErr = ""
	}
	if !r.next.IsZero() {
		w.wakeAt(r.next)
	}
}

// work starts the operations pending, while connected: credentials, reads
// and consumer nodes, as many at once as the client takes (maxInFlight).
// An item that fails is retried after a backoff (takeResults); while an
// operation is overdue or the connection failed, nothing new starts
// before holdUntil.
func (w *worker) work(r *round) {
	if !w.session.authed {
		if err := w.session.authenticate(); err != nil {
			r.fail(err)
			return
		}
		if !w.session.authed {
			return // still in the client; its late result wakes the worker
		}
	}
	if r.now.Before(w.holdUntil) {
		r.later(w.holdUntil)
		return
	}
	for pw := range w.watches.due.all() {
		if r.now.Before(pw.retry) {
			r.later(pw.retry)
			continue
		}
		if !w.watches.startRead(pw) {
			break // the client is full: results wake the worker
		}
	}
	w.consumers.sync(r, w.ifaces.hasProviders)
}

// take hands what a read of pw's node found to whoever holds the node.
func (w *worker) take(pw *pathWatch, r opResult) {
	switch pw.kind {
	case nodeProviders, nodeConfigurators, nodeMapping:
		w.ifaces.take(pw, r)
	case nodeApp, nodeInstance:
		w.apps.take(pw, r)
		w.ifaces.touchUsers(w.apps.usersOf(pw.owner))
	case nodeRule:
		w.ifaces.takeRule(pw, r)
	case nodeRoot, nodeMappingRoot:
		if w.catalog != nil {
			added := w.catalog.take(pw, r.children)
			if w.catalog.gating() {
				w.ifaces.listed(pw.kind, added)
			}
		}
	}
}

// onLate takes the result of an operation the worker stopped waiting for.
func (w *worker) onLate(r lateResult) {
	switch r.target.(type) {
	case authOp:
		w.session.onLateAuth(r.res)
	case recycleOp:
	}
}

// wakeAt makes the worker step at t at the latest.
func (w *worker) wakeAt(t time.Time) {
	if !w.retryAt.IsZero() && !t.Before(w.retryAt) {
		return
	}
	w.retryAt = t
	w.retry.Reset(time.Until(t))
}

// publishStatus makes the worker's view readable by Status.
func (w *worker) publishStatus() {
	s := w.session
	st := registry.Status{
		Type:            "zookeeper",
		State:           registry.StateConnecting,
		Degraded:        w.z.unreachable.Load(),
		Error:           s.lastErr,
		Reconnects:      s.reconnects,
		SessionExpiries: s.expiries,
	}
	switch {
	case s.connected:
		st.State = registry.StateConnected
	case s.everConnected:
		st.State = registry.StateDisconnected
	}
	st.Watches, st.OrphanWatches = w.watches.count()
	st.Applications, st.Instances = w.apps.counts()
	st.MetadataFetches, st.MetadataFailures, st.MetadataCached = w.apps.metaFetches, w.apps.metaFailures, len(w.apps.meta)
	st.MetadataInFlight = w.apps.fetching
	st.SessionRecycles = s.recycles
	st.Registered = w.consumers.registered()
	st.Rules, st.RulesRefused = w.ifaces.rules.count(), w.z.rulesRefused.Load()
	w.z.statusMu.Lock()
	if w.z.status.State != registry.StateClosed {
		w.z.status = st
	}
	w.z.statusMu.Unlock()
}
