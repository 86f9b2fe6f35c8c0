package zookeeper

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/dubbogw/dubbogw/registry"
	"github.com/go-zookeeper/zk"
)

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

// consumers are the gateway's registrations as a consumer (Options.Register):
// an ephemeral node of the session under the consumers node of each
// service key's interface, while the key has a directory.
type consumers struct {
	z       *Registry
	session *session
	byKey   map[registry.ServiceKey]*consumerNode
}

func newConsumers(z *Registry, s *session) *consumers {
	return &consumers{z: z, session: s, byKey: make(map[registry.ServiceKey]*consumerNode)}
}

// register says that key's node is wanted (when the registry registers).
func (cs *consumers) register(key registry.ServiceKey) {
	if !cs.z.opts.Register {
		return
	}
	c := cs.byKey[key]
	if c == nil {
		c = &consumerNode{key: key}
		cs.byKey[key] = c
	}
	c.want = true
}

// unregister says that key's node is no longer wanted.
func (cs *consumers) unregister(key registry.ServiceKey) {
	if c := cs.byKey[key]; c != nil {
		c.want = false
	}
}

// sync creates the nodes wanted, once their interface's providers node
// exists (hasProviders), and deletes those no longer wanted, as the round
// paces them. It stops at a problem of the connection.
func (cs *consumers) sync(r *round, hasProviders func(iface string) bool) {
	for key, c := range cs.byKey {
		if c.busy {
			continue
		}
		if r.now.Before(c.retry) {
			r.later(c.retry)
			continue
		}
		var err error
		switch {
		case c.want && !c.registered:
			if !hasProviders(key.Interface) {
				continue // the providers node's watch wakes the worker when it appears
			}
			err = cs.createNode(c)
		case !c.want && c.registered:
			err = cs.deleteNode(c)
		case !c.want:
			delete(cs.byKey, key)
		}
		if err != nil {
			c.retry = r.fail(err)
			if isConnectionError(err) {
				return
			}
		}
	}
}

// createNode registers the gateway as a consumer of c.key.
func (cs *consumers) createNode(c *consumerNode) error {
	if c.path == "" {
		host := cs.z.opts.ConsumerHost
		if host == "" {
			if h := cs.z.localHost.Load(); h != nil {
				host = *h
			}
		}
		u := consumerURL(host, c.key, cs.z.opts.Application, time.Now().UnixMilli(), os.Getpid())
		c.path = cs.z.root + "/" + c.key.Interface + "/consumers/" + url.QueryEscape(u)
	}
	conn, path := cs.session.client.conn, c.path
	c.busy, c.creating = true, true
	r, ok := cs.session.call(c, nil, 0, nil, func() opResult { return opResult{err: createEphemeral(conn, path)} })
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

// deleteNode removes the gateway's consumer node of c.key.
func (cs *consumers) deleteNode(c *consumerNode) error {
	conn, path := cs.session.client.conn, c.path
	c.busy, c.creating = true, false
	r, ok := cs.session.call(c, nil, 0, nil, func() opResult {
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

// onLate takes the late result of creating or deleting c's node.
func (cs *consumers) onLate(c *consumerNode, r opResult) {
	c.busy = false
	if r.err == nil {
		c.registered = c.creating
	}
}

// sessionExpired forgets the nodes of the expired session: ZooKeeper
// removed them with it.
func (cs *consumers) sessionExpired() {
	for _, c := range cs.byKey {
		if !c.busy {
			c.registered = false
		}
	}
}

// busy reports whether an operation the worker gave up waiting for is
// still in the client.
func (cs *consumers) busy() bool {
	for _, c := range cs.byKey {
		if c.busy {
			return true
		}
	}
	return false
}

// registered counts the nodes registered.
func (cs *consumers) registered() int {
	n := 0
	for _, c := range cs.byKey {
		if c.registered {
			n++
		}
	}
	return n
}

// moveTo creates the registered nodes still wanted on conn, the client a
// recycle readies, and reports those it moved. A problem of that
// connection fails the whole (the nodes moved already are then registered
// again on the session in use); a node that cannot be moved for another
// reason is left to be registered again after the switch.
func (cs *consumers) moveTo(conn *zk.Conn) (map[*consumerNode]bool, error) {
	moved := make(map[*consumerNode]bool, len(cs.byKey))
	for _, c := range cs.byKey {
		if !c.want || !c.registered {
			continue // not registered, or its node goes with the old session
		}
		path := c.path
		r, ok := cs.session.call(recycleOp{}, nil, 0, nil, func() opResult { return opResult{err: createEphemeral(conn, path)} })
		err := recycleErr(r, ok)
		if isConnectionError(err) {
			for m := range moved {
				m.registered = false // moved to the session given up: registered again on the old one
			}
			return nil, fmt.Errorf("registering consumer %s: %w", c.key, err)
		}
		if err != nil {
			cs.z.log.Warn("cannot move a consumer node to the new session: registering it again", "consumer", c.key, "err", err)
			continue
		}
		moved[c] = true
	}
	return moved, nil
}

// keepMoved follows the switch to the new session: the nodes not moved
// to it go with the old one, to be registered again.
func (cs *consumers) keepMoved(moved map[*consumerNode]bool) {
	for _, c := range cs.byKey {
		if c.registered && !moved[c] {
			c.registered = false
		}
	}
}
