package zookeeper

import (
	"fmt"
	"sync"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// zkClient is one go-zookeeper client: a connection to the ensemble, the
// session it keeps across reconnections, and what its session events said
// last. The registry has one in use, and a second one while it recycles
// the session.
type zkClient struct {
	conn   *zk.Conn
	events <-chan zk.Event // closed once the client's goroutines have ended

	mu      sync.Mutex
	session sessionEvents
	// fired are the paths whose watches fired since the worker last took
	// them (takeFired). A set: however many events a path gets, it is read
	// once; bounded by the watches set on the client.
	fired map[string]struct{}
}

// sessionEvents is what a client's session events said last.
type sessionEvents struct {
	state       zk.State
	established uint64 // StateHasSession events: a session was (re-)established
}

// onEvent receives every event of the client, on its receiving goroutine:
// it must not block. Unlike the client's event channel, which drops events
// when full, the callback sees every session change and every watch that
// fires: that is how watch events reach the worker, with no goroutine
// waiting on each watch's own channel (go-zookeeper's per-watch channels
// hold one event each and are left unread).
func (c *zkClient) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		c.mu.Lock()
		c.session.state = ev.State
		if ev.State == zk.StateHasSession {
			c.session.established++
		}
		c.mu.Unlock()
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
		c.mu.Lock()
		if c.fired == nil {
			c.fired = make(map[string]struct{})
		}
		c.fired[ev.Path] = struct{}{}
		c.mu.Unlock()
	}
	// EventNotWatching (the client dropped its watches: the session
	// expired, or it is closing) is followed by the session's own events.
}

// takeFired returns the paths whose watches fired since the last call.
func (c *zkClient) takeFired() map[string]struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.fired
	c.fired = nil
	return f
}

func (c *zkClient) sessionEvents() sessionEvents {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// session is the worker's connection to ZooKeeper: the client in use and
// what its session events said, the credentials added to it, the
// operations run on it (each on a helper goroutine the worker waits for at
// most Timeout, as the comment at the top of worker.go explains), and the
// client a session recycle readies until the worker switches to it
// (recycle.go). Everything in it is owned by the worker's goroutine,
// except helpers, which Close waits on (and the clients, which Close
// closes once the worker has returned).
type session struct {
	z       *Registry
	client  *zkClient       // the client in use
	late    chan lateResult // results of waited-for operations the worker stopped waiting for
	done    chan opDone     // results of started operations; capacity maxInFlight, so no helper blocks
	helpers sync.WaitGroup  // goroutines running an operation, fetching metadata or closing a client
	// idle hands an operation to a helper that has run one and waits for
	// another (helperIdle at most): a goroutine made for each operation
	// grew its stack each time, a tenth of the registry's CPU under churn.
	idle chan func()

	// inFlight are the operations started (start) whose results the
	// worker has not taken yet: at most maxInFlight.
	inFlight map[*startedOp]struct{}
	// epoch counts the clients and sessions the watches and nodes were
	// made on: it changes when the session in use expires and when a
	// recycle switches clients, so the result of an operation started
	// before is known to be of the old one.
	epoch uint64

	established   uint64 // sessionEvents.established last handled
	id            int64  // the session of client, once it had one
	connected     bool
	everConnected bool
	authed        bool
	authBusy      bool
	reconnects    uint64
	expiries      uint64
	lastErr       string // the last connection or operation problem, cleared by success

	next         *zkClient // a client a session recycle is readying, or nil
	nextDeadline time.Time // when the recycle gives up waiting for next's session
	lastRecycle  time.Time // when the last recycle started (the session's start, before the first)
	recycles     uint64
	gc           *time.Timer // wakes the worker when a recycle is due, or its wait is over
}

func newSession(z *Registry, client *zkClient) *session {
	gc := time.NewTimer(time.Hour)
	gc.Stop()
	return &session{
		z:           z,
		client:      client,
		late:        make(chan lateResult),
		done:        make(chan opDone, maxInFlight),
		idle:        make(chan func()),
		inFlight:    make(map[*startedOp]struct{}, maxInFlight),
		gc:          gc,
		lastRecycle: time.Now(),
	}
}

// lateResult is the result of an operation the worker stopped waiting for.
type lateResult struct {
	target any // authOp or recycleOp
	res    opResult
}

// maxInFlight bounds the operations started (reads, consumer nodes) that
// are in the client at once. go-zookeeper pipelines requests on its one
// connection: reads are answered at the rate of the link and the server,
// not one round trip each.
const maxInFlight = 64

// startedOp is an operation started with start.
type startedOp struct {
	target  any    // *pathWatch, *consumerNode or *metaRead
	epoch   uint64 // session.epoch when it started
	started time.Time
	overdue bool // no answer within Timeout: counted as failed, still in the client
}

// opDone is the result of a started operation.
type opDone struct {
	op  *startedOp
	res opResult
}

// authOp marks the late result of adding credentials.
type authOp struct{}

// recycleOp marks the late result of an operation on the client a
// session recycle was readying: the recycle was abandoned, nothing to do.
type recycleOp struct{}

// sessionChange is what sync found.
type sessionChange int

const (
	sessionUnchanged sessionChange = iota
	sessionUp                      // a session was established, or re-established after a disconnection
	sessionExpired                 // a new session replaced one that expired: what it held is gone
	sessionLost                    // the connection was lost: last known providers serve, marked stale
)

// sync follows the client's session: a session (re-)established, a new
// session after expiry, or the connection lost.
func (s *session) sync() sessionChange {
	ev := s.client.sessionEvents()
	up := ev.state == zk.StateHasSession
	if up && ev.established != s.established {
		s.established = ev.established
		sid := s.client.conn.SessionID()
		if s.everConnected {
			s.reconnects++
		}
		change := sessionUp
		if s.id != 0 && sid != s.id {
			s.expiries++
			change = sessionExpired
			s.z.log.Warn("ZooKeeper session expired: a new session re-arms watches and re-registers",
				"old_session", fmt.Sprintf("%#x", s.id), "session", fmt.Sprintf("%#x", sid))
		} else {
			s.z.log.Info("connected to ZooKeeper", "session", fmt.Sprintf("%#x", sid), "server", s.client.conn.Server())
		}
		s.id = sid
		s.connected, s.everConnected = true, true
		s.z.unreachable.Store(false)
		s.lastErr = ""
		return change
	}
	if !up && s.connected {
		s.connected = false
		s.z.unreachable.Store(true)
		s.lastErr = "connection to ZooKeeper lost (" + ev.state.String() + ")"
		s.z.log.Warn("lost ZooKeeper: serving the last known providers", "state", ev.state.String())
		return sessionLost
	}
	return sessionUnchanged
}

// noFirstSession runs Timeout after start: without a session by then,
// ZooKeeper is unreachable, and it reports true.
func (s *session) noFirstSession() bool {
	if s.everConnected {
		return false
	}
	s.z.unreachable.Store(true)
	s.lastErr = fmt.Sprintf("no ZooKeeper session within %s", s.z.opts.Timeout)
	s.z.log.Warn("ZooKeeper unreachable: directories answer no provider until it is", "addrs", s.z.opts.Addrs)
	return true
}

// authenticate adds the digest credentials once; the client re-sends them
// on every reconnection itself.
func (s *session) authenticate() error {
	if s.z.opts.Username == "" && s.z.opts.Password == "" {
		s.authed = true
		return nil
	}
	if s.authBusy {
		return nil
	}
	conn, cred := s.client.conn, []byte(s.z.opts.Username+":"+s.z.opts.Password)
	s.authBusy = true
	r, ok := s.call(authOp{}, func() opResult { return opResult{err: conn.AddAuth("digest", cred)} })
	if !ok {
		return fmt.Errorf("adding digest credentials: %w", errGaveUp)
	}
	s.authBusy = false
	if r.err != nil {
		return fmt.Errorf("adding digest credentials: %w", r.err)
	}
	s.authed = true
	return nil
}

// onLateAuth takes the late result of adding credentials.
func (s *session) onLateAuth(r opResult) {
	s.authBusy = false
	s.authed = r.err == nil
}

// call runs op on a helper goroutine and waits at most Timeout for it.
// When it gives up, the helper sends the result to s.late once op returns.
func (s *session) call(target any, op func() opResult) (opResult, bool) {
	select {
	case <-s.z.quit:
		return opResult{}, false // closing: start nothing more
	default:
	}
	c := &pendingCall{done: make(chan opResult, 1)}
	s.helpers.Go(func() {
		r := op()
		if !c.deliver(r) {
			select {
			case s.late <- lateResult{target: target, res: r}:
			case <-s.z.quit:
			}
		}
	})
	timer := time.NewTimer(s.z.opts.Timeout)
	defer timer.Stop()
	select {
	case r := <-c.done:
		return r, true
	case <-timer.C:
	case <-s.z.quit:
	}
	return c.abandon()
}

// start runs op on a helper goroutine without waiting for it: its result
// comes on s.done for the worker to take (finish). It reports false,
// starting nothing, when maxInFlight operations are in the client already
// or the registry is closing.
func (s *session) start(target any, op func() opResult) bool {
	o := s.started(target)
	if o == nil {
		return false
	}
	s.goHelper(func() {
		s.done <- opDone{op: o, res: op()} // never blocks: room for every operation in flight
	})
	return true
}

// startAsync starts op on the client in use, as start does, but with no
// goroutine waiting on it: the client hands its result to s.done.
func (s *session) startAsync(target any, op asyncOp) bool {
	o := s.started(target)
	if o == nil {
		return false
	}
	s.runAsync(o, op)
	return true
}

func (s *session) runAsync(o *startedOp, op asyncOp) {
	op(s.client.conn, func(r opResult) {
		s.done <- opDone{op: o, res: r} // never blocks: room for every operation in flight
	})
}

// started records an operation about to start, or returns nil when
// maxInFlight are in the client already or the registry is closing.
func (s *session) started(target any) *startedOp {
	if len(s.inFlight) >= maxInFlight {
		return nil
	}
	select {
	case <-s.z.quit:
		return nil
	default:
	}
	o := &startedOp{target: target, epoch: s.epoch, started: time.Now()}
	s.inFlight[o] = struct{}{}
	if s.z.hooks.started != nil {
		s.z.hooks.started(len(s.inFlight))
	}
	return o
}

// continued starts the rest of an operation whose result is not final
// (opResult.next), on the client it started on, and reports whether it
// did; the operation stays in flight. The result of an operation of an
// earlier client or session is taken as it is (finish says it is stale).
func (s *session) continued(d opDone) bool {
	if d.res.next == nil || d.op.epoch != s.epoch {
		return false
	}
	s.runAsync(d.op, d.res.next)
	return true
}

// helperIdle is how long a helper waits for another operation before it
// ends.
const helperIdle = time.Second

// goHelper runs f on a helper waiting for work, else on a new one, which
// waits helperIdle for more once f returns (or until the registry
// closes). There are never more helpers than operations run at once.
func (s *session) goHelper(f func()) {
	select {
	case s.idle <- f:
		return
	default:
	}
	s.helpers.Go(func() {
		f()
		wait := time.NewTimer(helperIdle)
		defer wait.Stop()
		for {
			select {
			case f := <-s.idle:
				f()
				wait.Reset(helperIdle)
			case <-wait.C:
				return
			case <-s.z.quit:
				return
			}
		}
	})
}

// finish takes a started operation's result off the operations in flight
// and reports whether it was made on the client and session in use.
func (s *session) finish(d opDone) bool {
	delete(s.inFlight, d.op)
	return d.op.epoch == s.epoch
}

// overdue returns the operations in flight that have gone Timeout without
// an answer, once each, and when the next one will.
func (s *session) overdue(now time.Time) (late []*startedOp, next time.Time) {
	for o := range s.inFlight {
		if o.overdue {
			continue
		}
		due := o.started.Add(s.z.opts.Timeout)
		if now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		o.overdue = true
		late = append(late, o)
	}
	return late, next
}

// callAll runs op(0) … op(n-1), at most maxInFlight at a time, and waits
// for all of them: it gives up when Timeout passes without any answering
// (the results of those still in the client are then dropped).
func (s *session) callAll(n int, op func(i int) opResult) ([]opResult, error) {
	type indexed struct {
		i int
		r opResult
	}
	results := make(chan indexed, n) // room for every one: none blocks after a give-up
	out := make([]opResult, n)
	timer := time.NewTimer(s.z.opts.Timeout)
	defer timer.Stop()
	for started, got := 0, 0; got < n; {
		for ; started < n && started-got < maxInFlight; started++ {
			i := started
			s.goHelper(func() { results <- indexed{i, op(i)} })
		}
		select {
		case r := <-results:
			out[r.i] = r.r
			got++
			timer.Reset(s.z.opts.Timeout)
		case <-timer.C:
			return nil, fmt.Errorf("%d of %d operations: %w", n-got, n, errGaveUp)
		case <-s.z.quit:
			return nil, zk.ErrClosing
		}
	}
	return out, nil
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

// clients are the clients the session holds: the one in use and the one a
// recycle is readying. Close calls it once the worker has returned.
func (s *session) clients() []*zkClient {
	if s.next != nil {
		return []*zkClient{s.client, s.next}
	}
	return []*zkClient{s.client}
}

// startRecycle opens the client a session recycle readies, unless the
// last recycle started less than WatchGC ago (the worker is woken when it
// is due). It reports whether a recycle started.
func (s *session) startRecycle(now time.Time) bool {
	if due := s.lastRecycle.Add(s.z.opts.WatchGC); now.Before(due) {
		s.gc.Reset(due.Sub(now))
		return false
	}
	s.lastRecycle = now
	next, err := s.z.connect()
	if err != nil {
		s.z.log.Warn("cannot recycle the ZooKeeper session", "err", err, "retry_in", s.z.opts.WatchGC)
		return false
	}
	s.next, s.nextDeadline = next, now.Add(s.z.opts.Timeout)
	s.gc.Reset(s.z.opts.Timeout)
	return true
}

// nextReady reports whether the client a recycle readies has its session.
func (s *session) nextReady() bool { return s.next.sessionEvents().state == zk.StateHasSession }

// authenticateNext adds the digest credentials to the client a recycle
// readies.
func (s *session) authenticateNext() error {
	if s.z.opts.Username == "" && s.z.opts.Password == "" {
		return nil
	}
	next, cred := s.next, []byte(s.z.opts.Username+":"+s.z.opts.Password)
	r, ok := s.call(recycleOp{}, func() opResult { return opResult{err: next.conn.AddAuth("digest", cred)} })
	return recycleErr(r, ok)
}

// switchToNext makes the client a recycle readied the one in use, and
// returns the old one, for the worker to close once it has moved.
func (s *session) switchToNext() *zkClient {
	old := s.client
	s.client, s.next = s.next, nil
	s.epoch++
	s.z.current.Store(s.client)
	s.established, s.id = s.client.sessionEvents().established, s.client.conn.SessionID()
	s.authed = true
	s.recycles++
	return old
}

// abandonRecycle closes the client a recycle was readying and keeps the
// one in use; the next try is WatchGC away. It reports false, doing
// nothing, while the registry closes (Close closes s.next).
func (s *session) abandonRecycle(reason string) bool {
	select {
	case <-s.z.quit:
		return false
	default:
	}
	next := s.next
	s.next = nil
	s.closeClient(next)
	s.lastRecycle = time.Now()
	s.gc.Reset(s.z.opts.WatchGC)
	s.z.log.Warn("cannot recycle the ZooKeeper session: keeping the one in use",
		"reason", reason, "retry_in", s.z.opts.WatchGC)
	return true
}

// closeClient closes c on a helper goroutine, which waits for c's
// goroutines to end (Close waits for the helper).
func (s *session) closeClient(c *zkClient) {
	s.helpers.Go(func() {
		c.conn.Close()
		s.z.awaitClient(c)
	})
}

// recycleErr is the error of an operation of a recycle.
func recycleErr(r opResult, ok bool) error {
	if !ok {
		return errGaveUp
	}
	return r.err
}
