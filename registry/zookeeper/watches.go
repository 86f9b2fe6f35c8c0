package zookeeper

import (
	"fmt"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
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
	nodeRule                 // data of <config root>/<group>/<key>: a governance rule (rules.go)
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
	owner string // the interface (providers, configurators, mapping), the application (app, instance) or the rule key (rule)
	child string // the instance's node name (instance)
	live  bool   // a state holds it: read it when needed, re-arm it when it fires
	armed bool   // a watch is set (in the client in use and on the server)
	busy  bool   // a read is in the client
	// arming says the read in the client sets the watch: the node counts
	// as watched meanwhile, so a status published while a fired watch is
	// re-armed still counts it (the status goes out before the directories
	// it describes: see worker.step).
	arming bool
	need   bool // the node must be read (again): in watches.due while not busy
	// fired says its watch fired while a read was in the client: which of
	// the read's answer and the change came first is unknown, so it is
	// read again after.
	fired bool
	read  bool // the node was read since the session was last (re)established
	// failed says the last read failed (it is retried at retry): a
	// first publication does not wait for such a node.
	failed bool
	retry  time.Time
}

// watches are the nodes the worker reads and watches, by path: those the
// interfaces, applications and catalog hold (live), and those of released
// nodes whose watch is still set, until it fires or a recycle clears it
// (orphans). Reads run on the session, many at once; what they found is
// the worker's to hand to whoever holds the node. The work of an event is
// proportional to it: the nodes to read are kept in due, and the counts
// Status reports are kept as records change.
type watches struct {
	z       *Registry
	session *session
	byPath  map[string]*pathWatch
	due     set[*pathWatch] // live, need and not busy: to read

	liveArmed int // armed watches of live nodes
	orphans   int // armed watches of released nodes
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
	ws.setLive(pw, true)
	pw.read, pw.retry = false, time.Time{}
	ws.markNeed(pw)
	ws.z.poke() // read it, also when the worker is not in work (a recycle)
	return pw
}

// unwatch drops a node nobody needs any more: its watch is no longer
// re-armed, and the record goes once nothing is set or pending on it.
func (ws *watches) unwatch(pw *pathWatch) {
	ws.setLive(pw, false)
	pw.read = false
	ws.clearNeed(pw)
	ws.forget(pw)
}

// markNeed has pw's node read (again).
func (ws *watches) markNeed(pw *pathWatch) {
	pw.need = true
	if pw.live && !pw.busy {
		ws.due.add(pw)
	}
}

func (ws *watches) clearNeed(pw *pathWatch) {
	pw.need = false
	ws.due.remove(pw)
}

// setArmed and setLive change a record's state, keeping the counts.
func (ws *watches) setArmed(pw *pathWatch, armed bool) {
	ws.countArmed(pw, -1)
	pw.armed = armed
	ws.countArmed(pw, +1)
}

func (ws *watches) setLive(pw *pathWatch, live bool) {
	ws.countArmed(pw, -1)
	pw.live = live
	ws.countArmed(pw, +1)
}

func (ws *watches) setArming(pw *pathWatch, arming bool) {
	ws.countArmed(pw, -1)
	pw.arming = arming
	ws.countArmed(pw, +1)
}

// countArmed counts pw, armed or being armed, in the live or orphan count.
func (ws *watches) countArmed(pw *pathWatch, d int) {
	switch {
	case !pw.armed && !pw.arming:
	case pw.live:
		ws.liveArmed += d
	default:
		ws.orphans += d
	}
}

// forget removes a watch record nobody needs and nothing is pending on.
func (ws *watches) forget(pw *pathWatch) {
	if !pw.live && !pw.armed && !pw.busy && ws.byPath[pw.path] == pw {
		delete(ws.byPath, pw.path)
	}
}

// startRead starts reading pw's node (its children or its data; nothing
// when it does not exist), arming its watch when none is set. It reports
// false when no more reads fit in the client: the results of those in
// flight wake the worker.
func (ws *watches) startRead(pw *pathWatch) bool {
	arm := !pw.armed
	if !ws.session.startAsync(pw, readOp(pw.path, pw.kind, arm)) {
		return false
	}
	pw.busy, pw.fired = true, false
	if arm {
		ws.setArming(pw, true)
	}
	ws.clearNeed(pw)
	return true
}

// finish takes the result of a read of pw; current says it was made on the
// client and session in use. It reports whether the result is to be taken
// (then the node is read); a failed read is the caller's to retry
// (retryLater).
func (ws *watches) finish(pw *pathWatch, current bool, r opResult) bool {
	pw.busy = false
	ws.setArming(pw, false)
	if current && r.watch != nil {
		ws.setArmed(pw, true)
		if ws.z.hooks.armed != nil {
			ws.z.hooks.armed(pw.path)
		}
	}
	if pw.fired {
		pw.fired = false
		ws.setArmed(pw, false)
		if pw.live {
			pw.need = true
		}
	}
	take := false
	switch {
	case !pw.live:
	case !current:
		pw.need = true // read on the new session
	case r.err == nil:
		pw.read, pw.failed = true, false
		take = true
	}
	if pw.need {
		ws.markNeed(pw)
	}
	ws.forget(pw)
	return take
}

// retryLater has pw's node read again at retry: its read failed.
func (ws *watches) retryLater(pw *pathWatch, retry time.Time) {
	pw.retry, pw.failed = retry, true
	if pw.live {
		ws.markNeed(pw)
	}
}

// onFired takes the event of the watch on path: the node changed, so it is
// read again, which re-arms the watch. An event of a path without an
// armed watch is of one no longer counted (replaced after a session
// expiry), and ignored.
func (ws *watches) onFired(path string) {
	pw := ws.byPath[path]
	switch {
	case pw == nil:
		return
	case pw.busy:
		pw.fired = true // read again once the read in the client answers
		return
	case !pw.armed:
		return
	}
	ws.setArmed(pw, false)
	if ws.z.hooks.fired != nil {
		ws.z.hooks.fired(pw.path)
	}
	if pw.live {
		ws.markNeed(pw)
		return
	}
	ws.forget(pw) // a dropped watch fired: not re-armed
}

// count counts the armed watches of live nodes and those of released ones
// (orphans).
func (ws *watches) count() (live, orphans int) { return ws.liveArmed, ws.orphans }

// readAgain has every live node read once more, at once: a session was
// (re-)established. The client re-sends its watches on a reconnection
// (SetWatches), and the server fires those whose node changed meanwhile;
// but the client only logs it when that request fails.
func (ws *watches) readAgain() {
	for _, pw := range ws.byPath {
		if pw.live {
			pw.retry = time.Time{}
			ws.markNeed(pw)
		}
	}
}

// connectionLost says that no node is known to be current any more.
func (ws *watches) connectionLost() {
	for _, pw := range ws.byPath {
		if pw.live {
			pw.read = false
			ws.markNeed(pw)
		}
	}
}

// sessionExpired forgets the watches of the expired session, which the
// client has invalidated. Reads still in the client were started on it:
// their results are not taken (session.epoch has moved on).
func (ws *watches) sessionExpired() {
	for _, pw := range ws.byPath {
		if pw.armed {
			ws.setArmed(pw, false)
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
// arming its watch there, many at once. A problem of that connection
// fails the whole; another one (a node that cannot be read) is left in its
// reading, for the new session's ordinary retries.
func (ws *watches) readOn(conn *zk.Conn) ([]reading, error) {
	readings := make([]reading, 0, ws.liveArmed)
	for _, pw := range ws.byPath {
		if pw.live {
			readings = append(readings, reading{pw: pw})
		}
	}
	results, err := ws.session.callAll(len(readings), func(i int) opResult {
		return wait(conn, readOp(readings[i].pw.path, readings[i].pw.kind, true))
	})
	if err != nil {
		return nil, fmt.Errorf("reading the live nodes: %w", err)
	}
	for i, r := range results {
		if isConnectionError(r.err) {
			return nil, fmt.Errorf("reading %s: %w", readings[i].pw.path, r.err)
		}
		readings[i].res = r
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
		ws.setArmed(pw, false)
		ws.forget(pw) // an orphan: gone with the old session
	}
	for _, r := range readings {
		if r.res.err == nil && r.res.watch != nil {
			ws.setArmed(r.pw, true)
			if ws.z.hooks.armed != nil {
				ws.z.hooks.armed(r.pw.path)
			}
		}
	}
	for _, r := range readings {
		pw := r.pw
		if r.res.err != nil {
			pw.read = false
			ws.markNeed(pw)
			continue
		}
		if !pw.live {
			continue // dropped by an earlier reading's take
		}
		pw.read, pw.failed = true, false
		ws.clearNeed(pw)
		take(pw, r.res)
	}
}
