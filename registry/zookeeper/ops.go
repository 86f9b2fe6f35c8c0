package zookeeper

import (
	"errors"
	"fmt"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// This file holds the ZooKeeper operations the worker runs, as plain
// functions of a go-zookeeper connection: they keep no state. Reads are
// asynchronous (asyncOp: no goroutine waits on one); the rest are
// blocking calls the session runs on a helper goroutine (session.call).

// opResult is what one ZooKeeper operation returns to the worker.
type opResult struct {
	children []string
	data     []byte
	exists   bool            // a read found the node
	watch    <-chan zk.Event // set when the operation set a watch
	err      error
	// next, when set, is the rest of the operation: the result is not
	// final, and next is started on the same client in its place.
	next asyncOp
}

// asyncOp starts an operation on conn and hands its result to done, once,
// from the client's goroutines: done must not block or call conn.
type asyncOp func(conn *zk.Conn, done func(opResult))

var errGaveUp = errors.New("no answer within the timeout")

// isConnectionError reports whether err is a problem of the connection
// rather than of the operation: the round of work ends on one.
func isConnectionError(err error) bool {
	return errors.Is(err, errGaveUp) || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing) ||
		errors.Is(err, zk.ErrSendQueueFull)
}

// readOp is the operation that reads path's children or data, as its
// kind says, setting a watch when arm is true. A node that does not exist
// reads as nothing (exists false); when arm is set, an exists watch then
// waits for its creation, except for an instance node: the application's
// listing says when an instance comes back, and an exists watch on it
// would be an orphan once it is dropped.
func readOp(path string, kind int, arm bool) asyncOp {
	var read asyncOp
	if kind == nodeMapping || kind == nodeInstance || kind == nodeRule {
		read = getData(path, arm)
	} else {
		read = getChildren(path, arm)
	}
	if arm && kind != nodeInstance {
		return orAwait(path, read, 3)
	}
	return orAbsent(read)
}

func getData(path string, watch bool) asyncOp {
	return func(conn *zk.Conn, done func(opResult)) {
		conn.GetAsync(path, watch, func(data []byte, watched <-chan zk.Event, err error) {
			done(opResult{data: data, exists: err == nil, watch: watched, err: err})
		})
	}
}

func getChildren(path string, watch bool) asyncOp {
	return func(conn *zk.Conn, done func(opResult)) {
		conn.ChildrenAsync(path, watch, func(children []string, watched <-chan zk.Event, err error) {
			done(opResult{children: children, exists: err == nil, watch: watched, err: err})
		})
	}
}

// orAbsent is read, answering nothing (exists false) when the node does
// not exist.
func orAbsent(read asyncOp) asyncOp {
	return func(conn *zk.Conn, done func(opResult)) {
		read(conn, func(r opResult) {
			if errors.Is(r.err, zk.ErrNoNode) {
				r = opResult{}
			}
			done(r)
		})
	}
}

// orAwait is read, which sets a watch when the node exists; when it does
// not, an exists watch is set instead (awaitCreation), which fires on the
// node's creation. tries bounds the rounds when the node keeps appearing
// and disappearing between the two.
func orAwait(path string, read asyncOp, tries int) asyncOp {
	return func(conn *zk.Conn, done func(opResult)) {
		read(conn, func(r opResult) {
			if errors.Is(r.err, zk.ErrNoNode) {
				r = opResult{next: awaitCreation(path, read, tries)}
			}
			done(r)
		})
	}
}

func awaitCreation(path string, read asyncOp, tries int) asyncOp {
	return func(conn *zk.Conn, done func(opResult)) {
		conn.ExistsAsync(path, true, func(exists bool, watched <-chan zk.Event, err error) {
			switch {
			case err != nil:
				done(opResult{err: err})
			case !exists:
				done(opResult{watch: watched})
			case tries <= 1:
				done(opResult{err: fmt.Errorf("%s keeps appearing and disappearing", path)})
			default:
				// Created between the two calls. The exists call then set
				// a data watch, which fires only if the node's data
				// changes or it is deleted (and is then read again, which
				// costs nothing but the read). Read again, for the watch
				// read sets.
				done(opResult{next: orAwait(path, read, tries-1)})
			}
		})
	}
}

// wait runs op on conn and waits for its final result. Every request is
// answered by the client (with ErrConnectionClosed or ErrClosing when the
// connection or the client ends), so it returns.
func wait(conn *zk.Conn, op asyncOp) opResult {
	results := make(chan opResult, 1)
	for {
		op(conn, func(r opResult) { results <- r })
		r := <-results
		if r.next == nil {
			return r
		}
		op = r.next
	}
}

// createEphemeral creates path as an ephemeral node of conn's session,
// creating its missing parents as persistent nodes (open ACL, as Dubbo
// does). A node of another session at path (an expired session of ours
// the server has not cleaned up yet, or the session a recycle replaces) is
// replaced in one transaction, so the node never disappears meanwhile.
func createEphemeral(conn *zk.Conn, path string) error {
	acl := zk.WorldACL(zk.PermAll)
	_, err := conn.Create(path, nil, zk.FlagEphemeral, acl)
	if errors.Is(err, zk.ErrNoNode) {
		for i := 1; i < len(path); i++ {
			if path[i] != '/' {
				continue
			}
			if _, err := conn.Create(path[:i], nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
		_, err = conn.Create(path, nil, zk.FlagEphemeral, acl)
	}
	for range 3 {
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		// Ours (an earlier answer was lost), or another session's.
		exists, st, xerr := conn.Exists(path)
		switch {
		case xerr != nil:
			return xerr
		case !exists:
			_, err = conn.Create(path, nil, zk.FlagEphemeral, acl)
		case st.EphemeralOwner == conn.SessionID():
			return nil
		default:
			// One transaction: a failed delete (the node changed
			// meanwhile) fails the create too, and ZooKeeper answers the
			// delete's error.
			_, err = conn.Multi(
				&zk.DeleteRequest{Path: path, Version: st.Version},
				&zk.CreateRequest{Path: path, Acl: acl, Flags: zk.FlagEphemeral})
			if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
				err = zk.ErrNodeExists // look again
			}
		}
	}
	return err
}
