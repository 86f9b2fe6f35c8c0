package zookeeper

import (
	"fmt"
	"time"
)

// This file is the session recycle, which clears orphan watches (see the
// comment at the top of worker.go): the session readies a new client
// (session.go), the worker reads the live nodes and moves the consumer
// nodes to it, then the session switches to it and closes the old one.

// Recycle stages, as zkHooks.recycle reports them.
const (
	recycleStarted   = "started"   // a new client is connecting
	recycleSession   = "session"   // it has a session: watches and consumers move next
	recycleMoved     = "moved"     // watches armed and consumers moved; the old session is still open
	recycleDone      = "done"      // the new session is in use; the old one is closing
	recycleAbandoned = "abandoned" // the old session stays; another try after WatchGC
)

// collectOrphans starts a session recycle when one is due, and carries on
// with the one under way once its new session is up (or gives it up).
func (w *worker) collectOrphans() {
	if w.z.opts.WatchGC < 0 {
		return
	}
	s := w.session
	now := time.Now()
	if s.next != nil {
		switch {
		case !s.connected:
			w.abandonRecycle("the session in use lost its connection")
		case s.nextReady() && !w.pending():
			w.recycle()
		case !now.Before(s.nextDeadline):
			w.abandonRecycle(fmt.Sprintf("no new session within %s", w.z.opts.Timeout))
		}
		return
	}
	_, orphans := w.watches.count()
	if orphans == 0 || !s.connected || w.pending() {
		return
	}
	if s.startRecycle(now) {
		w.recycleHook(recycleStarted, orphans)
	}
}

// pending reports whether an operation is still in the client in use, or
// its credentials are not added yet: a recycle waits until the client is
// quiet.
func (w *worker) pending() bool {
	return !w.session.authed || w.session.authBusy || len(w.session.inFlight) > 0
}

// recycle moves to the client the session readied, whose session is up:
// it arms the live nodes' watches on it and reads them, moves the
// registered consumer nodes to it, then switches to it and closes the old
// client. A connection problem of the new client gives the recycle up,
// the old client staying in use; another problem (an interface that
// cannot be listed, a consumer node that cannot be moved) is left to the
// new session's ordinary retries.
func (w *worker) recycle() {
	start := time.Now()
	next := w.session.next
	live, orphans := w.watches.count()
	w.recycleHook(recycleSession, orphans)

	if err := w.session.authenticateNext(); err != nil {
		w.abandonRecycle("adding digest credentials: " + err.Error())
		return
	}
	readings, err := w.watches.readOn(next.conn)
	if err != nil {
		w.abandonRecycle(err.Error())
		return
	}
	moved, err := w.consumers.moveTo(next.conn)
	if err != nil {
		w.abandonRecycle(err.Error())
		return
	}
	w.recycleHook(recycleMoved, orphans)

	// Switch. The old client's watch events, still to come, are not taken:
	// events are taken from the client in use only.
	old := w.session.switchToNext()
	w.watches.switchTo(readings, w.take)
	// The step publishes, after the status, only the directories whose
	// providers changed, or not current; nodes the readings made needed
	// (new applications, instances) are read by the next step.
	w.ifaces.markAllDirty()
	w.consumers.keepMoved(moved)
	w.session.closeClient(old)
	w.z.log.Info("recycled the ZooKeeper session to clear orphan watches",
		"old_session", fmt.Sprintf("%#x", old.conn.SessionID()), "session", fmt.Sprintf("%#x", w.session.id),
		"orphan_watches_cleared", orphans, "watches", live, "consumers_moved", len(moved), "took", time.Since(start))
	w.recycleHook(recycleDone, orphans)
}

// abandonRecycle gives the recycle under way up, keeping the client in
// use; the next try is WatchGC away.
func (w *worker) abandonRecycle(reason string) {
	if !w.session.abandonRecycle(reason) {
		return // closing: Close closes the client readied
	}
	_, orphans := w.watches.count()
	w.recycleHook(recycleAbandoned, orphans)
}

func (w *worker) recycleHook(stage string, orphans int) {
	if w.z.hooks.recycle != nil {
		w.z.hooks.recycle(stage, orphans)
	}
}
