package zookeeper

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// consumerNode is the gateway's registration as a consumer of one key.
type consumerNode struct {
	key registry.ServiceKey
	// host and since make the node's name (see path), fixed at the first
	// registration and re-used after a session expiry; since is 0 before.
	host       string
	since      int64 // Unix milliseconds
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
	// due are the nodes with something to do (wanted and not registered,
	// or registered and not wanted, or neither and to be forgotten): sync
	// looks at them only.
	due set[*consumerNode]
	// waiting are the nodes wanted whose interface has no providers node
	// yet, by interface: out of due until it appears (providersAppeared),
	// so that thousands of them cost nothing per step. A slice, not a set:
	// an interface has a node per service key, one or a few.
	waiting map[string][]*consumerNode
	n       int // nodes registered
}

func newConsumers(z *Registry, s *session) *consumers {
	return &consumers{z: z, session: s, byKey: make(map[registry.ServiceKey]*consumerNode),
		waiting: make(map[string][]*consumerNode)}
}

// setRegistered records whether c's node is registered, keeping the count
// and the nodes due current.
func (cs *consumers) setRegistered(c *consumerNode, registered bool) {
	if c.registered {
		cs.n--
	}
	if c.registered = registered; registered {
		cs.n++
	}
	cs.check(c)
}

// check puts c in due when it has something to do.
func (cs *consumers) check(c *consumerNode) {
	if c.want != c.registered || !c.want {
		cs.due.add(c)
	} else {
		cs.due.remove(c)
	}
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
	cs.check(c)
}

// unregister says that key's node is no longer wanted.
func (cs *consumers) unregister(key registry.ServiceKey) {
	if c := cs.byKey[key]; c != nil {
		c.want = false
		cs.check(c)
	}
}

// sync starts creating the nodes wanted, once their interface's
// providers node exists (hasProviders), and deleting those no longer
// wanted, as the round paces them, as many at once as the client takes.
func (cs *consumers) sync(r *round, hasProviders func(iface string) bool) {
	for c := range cs.due.all() {
		key := c.key
		if c.busy {
			continue
		}
		if r.now.Before(c.retry) {
			r.later(c.retry)
			continue
		}
		switch {
		case c.want && !c.registered:
			if !hasProviders(key.Interface) {
				cs.wait(c) // until the providers node appears
				continue
			}
			if !cs.startCreate(c) {
				return
			}
		case !c.want && c.registered:
			if !cs.startDelete(c) {
				return
			}
		case !c.want:
			delete(cs.byKey, key)
			cs.due.remove(c)
			cs.unwait(c)
		default:
			cs.due.remove(c)
		}
	}
}

// wait takes c out of due until its interface's providers node appears.
func (cs *consumers) wait(c *consumerNode) {
	cs.due.remove(c)
	if w := cs.waiting[c.key.Interface]; !slices.Contains(w, c) {
		cs.waiting[c.key.Interface] = append(w, c)
	}
}

// unwait forgets c's wait, if any.
func (cs *consumers) unwait(c *consumerNode) {
	w, ok := cs.waiting[c.key.Interface]
	if !ok {
		return
	}
	if w = slices.DeleteFunc(w, func(d *consumerNode) bool { return d == c }); len(w) == 0 {
		delete(cs.waiting, c.key.Interface)
	} else {
		cs.waiting[c.key.Interface] = w
	}
}

// providersAppeared says that interface iface's providers node exists:
// its consumer nodes waiting for it are due.
func (cs *consumers) providersAppeared(iface string) {
	for _, c := range cs.waiting[iface] {
		cs.check(c)
	}
	delete(cs.waiting, iface)
}

// path is the ZooKeeper path of c's node, made when it is needed rather
// than kept: a gateway routing thousands of services keeps thousands of
// nodes, and the path (the escaped consumer URL) is most of one.
func (cs *consumers) path(c *consumerNode) string {
	u := consumerURL(c.host, c.key, cs.z.opts.Application, c.since, os.Getpid())
	return cs.z.root + "/" + c.key.Interface + "/consumers/" + url.QueryEscape(u)
}

// startCreate starts registering the gateway as a consumer of c.key; false
// means the client is full.
func (cs *consumers) startCreate(c *consumerNode) bool {
	if c.since == 0 {
		c.host = cs.z.opts.ConsumerHost
		if c.host == "" {
			if h := cs.z.localHost.Load(); h != nil {
				c.host = *h
			}
		}
		c.since = time.Now().UnixMilli()
	}
	conn, path := cs.session.client.conn, cs.path(c)
	if !cs.session.start(c, func() opResult { return opResult{err: createEphemeral(conn, path)} }) {
		return false
	}
	c.busy, c.creating = true, true
	return true
}

// startDelete starts removing the gateway's consumer node of c.key; false
// means the client is full.
func (cs *consumers) startDelete(c *consumerNode) bool {
	conn, path := cs.session.client.conn, cs.path(c)
	if !cs.session.start(c, func() opResult {
		err := conn.Delete(path, -1)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
		return opResult{err: err}
	}) {
		return false
	}
	c.busy, c.creating = true, false
	return true
}

// finish takes the result of creating or deleting c's node; current says
// it was made on the session in use (a node created on an expired one went
// with it). It returns the error to retry after.
func (cs *consumers) finish(c *consumerNode, current bool, r opResult) error {
	c.busy = false
	switch {
	case !current:
		cs.setRegistered(c, false) // registered again on the session in use, if wanted
		return nil
	case r.err != nil && c.creating:
		return fmt.Errorf("registering consumer %s: %w", c.key, r.err)
	case r.err != nil:
		return fmt.Errorf("unregistering consumer %s: %w", c.key, r.err)
	}
	cs.setRegistered(c, c.creating)
	return nil
}

// sessionExpired forgets the nodes of the expired session: ZooKeeper
// removed them with it.
func (cs *consumers) sessionExpired() {
	for _, c := range cs.byKey {
		if !c.busy {
			cs.setRegistered(c, false)
		}
	}
}

// registered counts the nodes registered.
func (cs *consumers) registered() int { return cs.n }

// moveTo creates the registered nodes still wanted on conn, the client a
// recycle readies, many at once, and reports those it moved. A problem of
// that connection fails the whole (the nodes moved already are then
// registered again on the session in use); a node that cannot be moved for
// another reason is left to be registered again after the switch.
func (cs *consumers) moveTo(conn *zk.Conn) (map[*consumerNode]bool, error) {
	var nodes []*consumerNode
	for _, c := range cs.byKey {
		if c.want && c.registered {
			nodes = append(nodes, c) // others: not registered, or their node goes with the old session
		}
	}
	paths := make([]string, len(nodes))
	for i, c := range nodes {
		paths[i] = cs.path(c)
	}
	results, err := cs.session.callAll(len(nodes), func(i int) opResult {
		return opResult{err: createEphemeral(conn, paths[i])}
	})
	if err != nil {
		cs.unmove(nodes)
		return nil, fmt.Errorf("registering the consumers: %w", err)
	}
	moved := make(map[*consumerNode]bool, len(nodes))
	for i, r := range results {
		c := nodes[i]
		if isConnectionError(r.err) {
			cs.unmove(nodes)
			return nil, fmt.Errorf("registering consumer %s: %w", c.key, r.err)
		}
		if r.err != nil {
			cs.z.log.Warn("cannot move a consumer node to the new session: registering it again", "consumer", c.key, "err", r.err)
			continue
		}
		moved[c] = true
	}
	return moved, nil
}

// unmove follows a move given up: any of nodes may have moved to the
// session given up (createEphemeral takes a node over), so each is
// registered again on the session in use.
func (cs *consumers) unmove(nodes []*consumerNode) {
	for _, c := range nodes {
		cs.setRegistered(c, false)
	}
}

// keepMoved follows the switch to the new session: the nodes not moved
// to it go with the old one, to be registered again.
func (cs *consumers) keepMoved(moved map[*consumerNode]bool) {
	for _, c := range cs.byKey {
		if c.registered && !moved[c] {
			cs.setRegistered(c, false)
		}
	}
}
