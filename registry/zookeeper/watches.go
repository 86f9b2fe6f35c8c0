package zookeeper

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

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

// watches are the nodes the worker reads and watches, by path: those the
// interfaces, applications and catalog hold (live), and those of released
// nodes whose watch is still set, until it fires or a recycle clears it
// (orphans). Reads run on the session; what they found is the worker's to
// hand to whoever holds the node.
type watches struct {
	z       *Registry
	session *session
	byPath  map[string]*pathWatch
}

func newWatches(z *Registry, s *session) *watches {
	return &watches{z: z, session: s, byPath: make(map[string]*pathWatch)}
}

// watch returns the live record of path, which must be read: a new one, or
// the record a released node left (its watch may still be armed).
func (ws *watches) watch(path string, kind int, owner, child string) *pathWatch {
	pw := ws.byPath[path]
	if pw == nil {
		pw = &pathWatch{path: path}
		ws.byPath[path] = pw
	}
	pw.kind, pw.owner, pw.child = kind, owner, child
	pw.live, pw.need, pw.read, pw.retry = true, true, false, time.Time{}
	ws.resumeForward(pw) // its watch, set before the node was dropped, may still fire
	ws.z.poke()          // read it, also when the worker is not in work (a recycle)
	return pw
}

// unwatch drops a node nobody needs any more: its watch is no longer
// re-armed, and the helper forwarding its event ends (see pathWatch).
func (ws *watches) unwatch(pw *pathWatch) {
	pw.live, pw.need, pw.read = false, false, false
	ws.stopForward(pw)
	ws.forget(pw)
}

// stopForward ends the helper forwarding pw's watch event, if any.
func (ws *watches) stopForward(pw *pathWatch) {
	if pw.stop != nil {
		close(pw.stop)
		pw.stop = nil
	}
}

// resumeForward starts a helper forwarding the event of pw's armed watch
// when none does (it was stopped when the node was dropped).
func (ws *watches) resumeForward(pw *pathWatch) {
	if !pw.armed || pw.stop != nil || pw.ch == nil {
		return
	}
	stop, token, ch := make(chan struct{}), pw.token, pw.ch
	pw.stop = stop
	ws.session.helpers.Go(func() { ws.session.forward(pw, token, ch, stop) })
}

// forget removes a watch record nobody needs and nothing is pending on.
func (ws *watches) forget(pw *pathWatch) {
	if !pw.live && !pw.armed && !pw.busy && ws.byPath[pw.path] == pw {
		delete(ws.byPath, pw.path)
	}
}

// read reads pw's node (its children or its data; nothing when it does
// not exist), arming its watch when none is set. On success the node is
// read, and what it found is the caller's to take.
func (ws *watches) read(pw *pathWatch) (opResult, error) {
	conn, path, arm := ws.session.client.conn, pw.path, !pw.armed
	var stop chan struct{}
	if arm {
		pw.token++
		ws.stopForward(pw) // a helper still waiting for an invalidated watch's event
		stop = make(chan struct{})
		pw.stop = stop
	}
	token := pw.token
	pw.busy = true
	r, ok := ws.session.call(pw, pw, token, stop, readOp(conn, path, pw.kind, arm))
	if !ok {
		return opResult{}, fmt.Errorf("reading %s: %w", path, errGaveUp)
	}
	pw.busy = false
	ws.adopt(pw, token, r)
	if r.err != nil {
		return opResult{}, fmt.Errorf("reading %s: %w", path, r.err)
	}
	pw.need, pw.read, pw.failed = false, true, false
	return r, nil
}

// adopt records the watch an operation on pw set.
func (ws *watches) adopt(pw *pathWatch, token uint64, r opResult) {
	if r.watch == nil || token != pw.token {
		return
	}
	pw.armed, pw.ch = true, r.watch
	if pw.live {
		ws.resumeForward(pw) // dropped and watched again while the call was in the client
	}
	if ws.z.hooks.armed != nil {
		ws.z.hooks.armed(pw.path)
	}
}

// onLate takes the late result of a read of pw the worker stopped waiting
// for.
func (ws *watches) onLate(pw *pathWatch, token uint64, r opResult) {
	pw.busy = false
	ws.adopt(pw, token, r)
	if pw.live {
		pw.need = true // read again: the result is old news by now
	}
	ws.forget(pw)
}

// onFired takes a watch's event: the node changed (read it again, which
// re-arms the watch), or the watch is gone (session expired).
func (ws *watches) onFired(f firedWatch) {
	pw := f.watch
	if f.token != pw.token || !pw.armed {
		return // a watch no longer counted: replaced after a session expiry
	}
	pw.armed, pw.ch, pw.stop = false, nil, nil // its helper has ended
	if ws.z.hooks.fired != nil {
		ws.z.hooks.fired(pw.path)
	}
	if pw.live {
		pw.need = true
		return
	}
	ws.forget(pw) // a dropped watch fired: not re-armed
}

// count counts the armed watches of live nodes and those of released ones
// (orphans).
func (ws *watches) count() (live, orphans int) {
	for _, pw := range ws.byPath {
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

// busy reports whether a read the worker gave up waiting for is still in
// the client.
func (ws *watches) busy() bool {
	for _, pw := range ws.byPath {
		if pw.busy {
			return true
		}
	}
	return false
}

// readAgain has every live node read once more, at once: a session was
// (re-)established. The client re-sends its watches on a reconnection
// (SetWatches), and the server fires those whose node changed meanwhile;
// but the client only logs it when that request fails.
func (ws *watches) readAgain() {
	for _, pw := range ws.byPath {
		if pw.live {
			pw.need, pw.retry = true, time.Time{}
		}
	}
}

// connectionLost says that no node is known to be current any more.
func (ws *watches) connectionLost() {
	for _, pw := range ws.byPath {
		if pw.live {
			pw.need, pw.read = true, false
		}
	}
}

// sessionExpired forgets the watches of the expired session, which the
// client has invalidated.
func (ws *watches) sessionExpired() {
	for _, pw := range ws.byPath {
		if pw.armed && !pw.busy {
			pw.armed = false
			pw.token++ // the invalidated watch's event is now ignored
			ws.forget(pw)
		}
	}
}

// reading is a live node read, and armed, on the client a recycle
// readies.
type reading struct {
	pw  *pathWatch
	res opResult
}

// readOn reads every live node on conn, the client a recycle readies,
// arming its watch there. A problem of that connection fails the whole;
// another one (a node that cannot be read) is left in its reading, for
// the new session's ordinary retries.
func (ws *watches) readOn(conn *zk.Conn) ([]reading, error) {
	readings := make([]reading, 0, len(ws.byPath))
	for _, pw := range ws.byPath {
		if !pw.live {
			continue
		}
		r, ok := ws.session.call(recycleOp{}, nil, 0, nil, readOp(conn, pw.path, pw.kind, true))
		r.err = recycleErr(r, ok)
		if isConnectionError(r.err) {
			return nil, fmt.Errorf("reading %s: %w", pw.path, r.err)
		}
		readings = append(readings, reading{pw, r})
	}
	return readings, nil
}

// switchTo follows the session's switch to the client the readings were
// made on: the watches of the old session are no longer counted (they go
// with it, orphans included), those the readings set are, and then take
// takes what each reading found. Every watch is recorded before any
// reading is taken: a reading's take can drop another node (a mapping
// that changed meanwhile), whose watch must then be counted as an orphan.
func (ws *watches) switchTo(readings []reading, take func(*pathWatch, opResult)) {
	for _, pw := range ws.byPath {
		pw.armed, pw.ch = false, nil
		pw.token++
		ws.stopForward(pw)
		ws.forget(pw) // an orphan: gone with the old session
	}
	for _, r := range readings {
		if r.res.err == nil && r.res.watch != nil {
			r.pw.armed = true
			ws.forwardWatch(r.pw, r.res.watch)
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
		take(pw, r.res)
	}
}

// forwardWatch hands the watch just armed for pw to a helper that reports
// its event to the worker.
func (ws *watches) forwardWatch(pw *pathWatch, ch <-chan zk.Event) {
	if ws.z.hooks.armed != nil {
		ws.z.hooks.armed(pw.path)
	}
	ws.stopForward(pw)
	pw.ch = ch
	ws.resumeForward(pw)
}
