package zookeeper

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file is the worker's session recycle, which clears orphan watches
// (see the comment at the top of worker.go).

// collectOrphans starts a session recycle when one is due, and carries on
// with the one under way once its new session is up (or gives it up).
func (w *zkWorker) collectOrphans() {
	if w.z.opts.WatchGC < 0 {
		return
	}
	now := time.Now()
	if w.next != nil {
		switch {
		case !w.connected:
			w.abandonRecycle("the session in use lost its connection")
		case w.next.sessionEvents().state == zk.StateHasSession && !w.pending():
			w.recycle()
		case !now.Before(w.nextDeadline):
			w.abandonRecycle(fmt.Sprintf("no new session within %s", w.z.opts.Timeout))
		}
		return
	}
	_, orphans := w.countWatches()
	if orphans == 0 || !w.connected || w.pending() {
		return
	}
	if due := w.lastRecycle.Add(w.z.opts.WatchGC); now.Before(due) {
		w.gc.Reset(due.Sub(now))
		return
	}
	w.lastRecycle = now
	next, err := w.z.connect()
	if err != nil {
		w.z.log.Warn("cannot recycle the ZooKeeper session", "err", err, "retry_in", w.z.opts.WatchGC)
		return
	}
	w.next, w.nextDeadline = next, now.Add(w.z.opts.Timeout)
	w.gc.Reset(w.z.opts.Timeout)
	w.recycleHook(recycleStarted, orphans)
}

// pending reports whether an operation the worker gave up waiting for is
// still in the client in use, or its credentials are not added yet: a
// recycle waits until the client is quiet.
func (w *zkWorker) pending() bool {
	if !w.authed || w.authBusy {
		return true
	}
	for _, pw := range w.watches {
		if pw.busy {
			return true
		}
	}
	for _, c := range w.consumers {
		if c.busy {
			return true
		}
	}
	return false
}

// countWatches counts the armed watches of live nodes and those of
// released ones (orphans).
func (w *zkWorker) countWatches() (live, orphans int) {
	for _, pw := range w.watches {
		switch {
		case !pw.armed:
		case pw.live:
			live++
		default:
			orphans++
		}
	}
	return live, orphans
}

// recycle moves to w.next, whose session is up: it arms the live
// nodes' watches on it and reads them, moves the registered consumer
// nodes to it, then switches to it and closes the old client. A connection
// problem of the new client gives the recycle up, the old client staying
// in use; another problem (an interface that cannot be listed, a consumer
// node that cannot be moved) is left to the new session's ordinary retries.
func (w *zkWorker) recycle() {
	start := time.Now()
	next, old := w.next, w.client
	live, orphans := w.countWatches()
	w.recycleHook(recycleSession, orphans)

	if w.z.opts.Username != "" || w.z.opts.Password != "" {
		cred := []byte(w.z.opts.Username + ":" + w.z.opts.Password)
		r, ok := w.call(recycleOp{}, nil, 0, nil, func() opResult { return opResult{err: next.conn.AddAuth("digest", cred)} })
		if err := recycleErr(r, ok); err != nil {
			w.abandonRecycle("adding digest credentials: " + err.Error())
			return
		}
	}

	type reading struct {
		pw  *pathWatch
		res opResult
	}
	readings := make([]reading, 0, len(w.watches))
	for _, pw := range w.watches {
		if !pw.live {
			continue
		}
		r, ok := w.call(recycleOp{}, nil, 0, nil, readOp(next.conn, pw.path, pw.kind, true))
		r.err = recycleErr(r, ok)
		if isConnectionError(r.err) {
			w.abandonRecycle(fmt.Sprintf("reading %s: %v", pw.path, r.err))
			return
		}
		readings = append(readings, reading{pw, r})
	}

	moved := make(map[*consumerNode]bool, len(w.consumers))
	for _, c := range w.consumers {
		if !c.want || !c.registered {
			continue // not registered, or its node goes with the old session
		}
		path := c.path
		r, ok := w.call(recycleOp{}, nil, 0, nil, func() opResult { return opResult{err: createEphemeral(next.conn, path)} })
		err := recycleErr(r, ok)
		if isConnectionError(err) {
			for m := range moved {
				m.registered = false // moved to the session given up: registered again on the old one
			}
			w.abandonRecycle(fmt.Sprintf("registering consumer %s: %v", c.key, err))
			return
		}
		if err != nil {
			w.z.log.Warn("cannot move a consumer node to the new session: registering it again", "consumer", c.key, "err", err)
			continue
		}
		moved[c] = true
	}
	w.recycleHook(recycleMoved, orphans)

	// Switch. The old client's watch events, still to come, carry old tokens.
	w.client, w.next = next, nil
	w.z.current.Store(next)
	w.established, w.sessionID = next.sessionEvents().established, next.conn.SessionID()
	w.authed = true
	w.recycles++
	for _, pw := range w.watches {
		pw.armed, pw.ch = false, nil
		pw.token++
		w.stopForward(pw)
		w.forget(pw) // an orphan: gone with the old session
	}
	// Record every watch the readings set before taking any of them: a
	// reading's take can drop another node (a mapping that changed
	// meanwhile), whose watch must then be counted as an orphan.
	for _, r := range readings {
		if r.res.err == nil && r.res.watch != nil {
			r.pw.armed = true
			w.forwardWatch(r.pw, r.res.watch)
		}
	}
	for _, r := range readings {
		pw := r.pw
		if r.res.err != nil {
			pw.need, pw.read = true, false
			continue
		}
		if !pw.live {
			continue // dropped by an earlier reading's take
		}
		pw.need, pw.read, pw.failed = false, true, false
		w.take(pw, r.res)
	}
	// The step publishes, after the status, only the directories whose
	// providers changed, or not current; nodes the readings made needed
	// (new applications, instances) are read by the next step.
	for _, s := range w.ifaces {
		w.dirty[s] = struct{}{}
	}
	for _, c := range w.consumers {
		if c.registered && !moved[c] {
			c.registered = false
		}
	}
	w.closeClient(old)
	w.z.log.Info("recycled the ZooKeeper session to clear orphan watches",
		"old_session", fmt.Sprintf("%#x", old.conn.SessionID()), "session", fmt.Sprintf("%#x", w.sessionID),
		"orphan_watches_cleared", orphans, "watches", live, "consumers_moved", len(moved), "took", time.Since(start))
	w.recycleHook(recycleDone, orphans)
}

// recycleErr is the error of an operation of a recycle.
func recycleErr(r opResult, ok bool) error {
	if !ok {
		return errGaveUp
	}
	return r.err
}

// abandonRecycle closes the client a recycle was readying and keeps the
// one in use; the next try is WatchGC away.
func (w *zkWorker) abandonRecycle(reason string) {
	select {
	case <-w.z.quit:
		return // closing: Close closes w.next
	default:
	}
	next := w.next
	w.next = nil
	w.closeClient(next)
	w.lastRecycle = time.Now()
	w.gc.Reset(w.z.opts.WatchGC)
	w.z.log.Warn("cannot recycle the ZooKeeper session: keeping the one in use",
		"reason", reason, "retry_in", w.z.opts.WatchGC)
	_, orphans := w.countWatches()
	w.recycleHook(recycleAbandoned, orphans)
}

// closeClient closes c on a helper goroutine, which waits for c's
// goroutines to end (Close waits for the helper).
func (w *zkWorker) closeClient(c *zkClient) {
	w.helpers.Add(1)
	go func() {
		defer w.helpers.Done()
		c.conn.Close()
		w.z.awaitClient(c)
	}()
}

// forwardWatch hands the watch just armed for pw to a helper that reports
// its event on w.fired.
func (w *zkWorker) forwardWatch(pw *pathWatch, ch <-chan zk.Event) {
	if w.hooks.armed != nil {
		w.hooks.armed(pw.path)
	}
	w.stopForward(pw)
	pw.ch = ch
	w.resumeForward(pw)
}

func (w *zkWorker) recycleHook(stage string, orphans int) {
	if w.hooks.recycle != nil {
		w.hooks.recycle(stage, orphans)
	}
}
