package zookeeper

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
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
}

// sessionEvents is what a client's session events said last.
type sessionEvents struct {
	state       zk.State
	established uint64 // StateHasSession events: a session was (re-)established
}

// onEvent receives every event of the client, on its receiving goroutine:
// it must not block. Unlike the client's event channel, which drops events
// when full, the callback sees every session change.
func (c *zkClient) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	c.session.state = ev.State
	if ev.State == zk.StateHasSession {
		c.session.established++
	}
	c.mu.Unlock()
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
	late    chan lateResult // results of operations the worker stopped waiting for
	fired   chan firedWatch // watch events
	helpers sync.WaitGroup  // goroutines running an operation, waiting for a watch's event, fetching metadata or closing a client

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
		fired:       make(chan firedWatch),
		gc:          gc,
		lastRecycle: time.Now(),
	}
}

// lateResult is the result of an operation the worker stopped waiting for.
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
	r, ok := s.call(authOp{}, nil, 0, nil, func() opResult { return opResult{err: conn.AddAuth("digest", cred)} })
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
// When it gives up, the helper sends the result to s.late once op returns;
// either way, a watch the operation set for pw (as token) is waited for by
// the helper, until stop closes, and reported on s.fired. Without pw, a
// watch the operation set is the caller's to forward.
func (s *session) call(target any, pw *pathWatch, token uint64, stop chan struct{}, op func() opResult) (opResult, bool) {
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
			case s.late <- lateResult{target: target, token: token, res: r}:
			case <-s.z.quit:
				return
			}
		}
		if r.watch != nil && pw != nil {
			s.forward(pw, token, r.watch, stop)
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

// forward waits for a watch's one event and hands it to the worker, unless
// stop closes first. An event received is handed over whatever stop says:
// the channel holds only one, and a helper started anew on it would wait
// in vain.
func (s *session) forward(pw *pathWatch, token uint64, ch <-chan zk.Event, stop <-chan struct{}) {
	select {
	case _, ok := <-ch:
		if !ok {
			return
		}
		select {
		case s.fired <- firedWatch{watch: pw, token: token}:
		case <-s.z.quit:
		}
	case <-stop:
	case <-s.z.quit:
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
	r, ok := s.call(recycleOp{}, nil, 0, nil, func() opResult { return opResult{err: next.conn.AddAuth("digest", cred)} })
	return recycleErr(r, ok)
}

// switchToNext makes the client a recycle readied the one in use, and
// returns the old one, for the worker to close once it has moved.
func (s *session) switchToNext() *zkClient {
	old := s.client
	s.client, s.next = s.next, nil
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
