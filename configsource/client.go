package configsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// MaxReadBytes bounds what is read from ZooKeeper in one answer: 1 MiB,
// ZooKeeper's own jute.maxbuffer default (0xfffff bytes), beyond which a
// server refuses a packet. A node cannot hold more under the default
// settings; the client refuses a larger answer instead of growing its
// buffer for it.
const MaxReadBytes = 1 << 20

// MaxConfigBytes bounds a configuration `dubbogw config push` writes: a
// push writes it twice in one transaction (the live node and its history
// entry), and the transaction is one request, which the server refuses
// beyond jute.maxbuffer (1 MiB): half of that, less room for the paths.
const MaxConfigBytes = 500 << 10

// DefaultTimeout bounds one ZooKeeper operation unless told otherwise.
const DefaultTimeout = 5 * time.Second

// sessionTimeout is the session the client asks for: long enough that a
// short disconnection keeps it (and its watch), short enough that a
// gateway gone is forgotten soon. The config source holds no ephemeral
// node, so nothing but the watch depends on it.
const sessionTimeout = 20 * time.Second

// client is one ZooKeeper session for a configuration node: the digest
// credentials added to it once (go-zookeeper re-sends them on every
// reconnection), every operation bounded by timeout, and what its events
// said last.
type client struct {
	loc     Location
	timeout time.Duration
	log     *slog.Logger
	conn    *zk.Conn
	events  <-chan zk.Event // closed once the client's goroutines have ended
	ops     sync.WaitGroup  // operations given up on that are still in the client

	authMu sync.Mutex // one AddAuth at a time
	authed bool

	mu       sync.Mutex
	state    zk.State
	sessions uint64 // StateHasSession events: a session (re-)established
	fired    bool   // a watch on the node fired, or watches were dropped
	wake     chan struct{}
}

// dial starts a client; it connects in the background.
func dial(loc Location, timeout time.Duration, log *slog.Logger) (*client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &client{loc: loc, timeout: timeout, log: log, wake: make(chan struct{}, 1)}
	conn, events, err := zk.Connect(loc.Addrs, sessionTimeout,
		zk.WithHostProvider(&zk.UnresolvedHosts{}),
		zk.WithDialer(net.DialTimeout),
		zk.WithEventCallback(c.onEvent),
		zk.WithoutWatchChannels(), // events come from the callback
		zk.WithMaxBufferSize(MaxReadBytes+64<<10),
		zk.WithLogger(zk.SlogLogger{Log: log}),
		zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("starting the ZooKeeper client for %s: %w", loc, err)
	}
	c.conn, c.events = conn, events
	return c, nil
}

// onEvent runs on the client's receiving goroutine: it must not block.
func (c *client) onEvent(ev zk.Event) {
	c.mu.Lock()
	switch ev.Type {
	case zk.EventSession:
		c.state = ev.State
		if ev.State == zk.StateHasSession {
			c.sessions++
		}
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged:
		if ev.Path == c.loc.Path {
			c.fired = true
		}
	case zk.EventNotWatching: // the session expired: its watches are gone
		c.fired = true
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// status returns the session state, the sessions established so far, and
// whether a watch fired since the last call.
func (c *client) status() (state zk.State, sessions uint64, fired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fired, c.fired = c.fired, false
	return c.state, c.sessions, fired
}

func (c *client) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == zk.StateHasSession
}

// errTimeout is an operation that did not answer within the timeout.
var errTimeout = errors.New("no answer from ZooKeeper in time")

// call runs op, adding the credentials first if they are not yet, and
// waits at most the timeout (or until ctx ends). A blocking go-zookeeper
// call ends when its answer comes or the client gives up the connection
// (its receive timeout) or closes, so the goroutine left behind on a
// timeout is bounded too; close waits for it.
func (c *client) call(ctx context.Context, what string, op func(*zk.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	done := make(chan error, 1)
	c.ops.Go(func() {
		if err := c.authenticate(); err != nil {
			done <- err
			return
		}
		done <- op(c.conn)
	})
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, c.loc, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w (%s)", what, c.loc, errTimeout, c.timeout)
	}
}

// authenticate adds the digest credentials once.
func (c *client) authenticate() error {
	if c.loc.Username == "" {
		return nil
	}
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if c.authed {
		return nil
	}
	if err := c.conn.AddAuth("digest", []byte(c.loc.Username+":"+c.loc.Password)); err != nil {
		return fmt.Errorf("adding digest credentials: %w", err)
	}
	c.authed = true
	return nil
}

// acl is what the nodes a push creates get: with credentials, every
// right to their owner only (ZooKeeper's "auth" scheme: the session's
// digest identity), for a configuration may name what others should not
// change; without, open to all, as ZooKeeper's default.
func (c *client) acl() []zk.ACL {
	if c.loc.Username != "" {
		return zk.AuthACL(zk.PermAll)
	}
	return zk.WorldACL(zk.PermAll)
}

// close ends the session and waits, at most the timeout, for the
// client's goroutines and the operations given up on.
func (c *client) close() {
	c.conn.Close()
	done := make(chan struct{})
	go func() {
		for range c.events {
		}
		c.ops.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(c.timeout):
		c.log.Warn("ZooKeeper client still running after close", "location", c.loc.String(), "waited", c.timeout)
	}
}
