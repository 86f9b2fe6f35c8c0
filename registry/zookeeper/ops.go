package zookeeper

import (
	"errors"
	"fmt"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// This file holds the ZooKeeper operations the worker runs, as plain
// functions of a go-zookeeper connection: they keep no state, and the
// session runs each on a helper goroutine (session.call).

// opResult is what one ZooKeeper operation returns to the worker.
type opResult struct {
	children []string
	data     []byte
	exists   bool            // a read found the node
	watch    <-chan zk.Event // set when the operation set a watch
	err      error
}

var errGaveUp = errors.New("no answer within the timeout")

// isConnectionError reports whether err is a problem of the connection
// rather than of the operation: the round of work ends on one.
func isConnectionError(err error) bool {
	return errors.Is(err, errGaveUp) || errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing)
}

// readOp is the operation that reads path's children or data, as its
// kind says, setting a watch when arm is true.
func readOp(conn *zk.Conn, path string, kind int, arm bool) func() opResult {
	data := kind == nodeMapping || kind == nodeInstance
	switch {
	case kind == nodeInstance && arm:
		// An instance node that is gone is not watched for its return:
		// the application's listing says when it comes back, and an
		// exists watch on it would be an orphan once it is dropped.
		return func() opResult { return watchDataIfExists(conn, path) }
	case data && arm:
		return func() opResult { return watchData(conn, path) }
	case data:
		return func() opResult { return getData(conn, path) }
	case arm:
		return func() opResult { return watchChildren(conn, path) }
	}
	return func() opResult { return listChildren(conn, path) }
}

// watchData reads path's data and sets a watch: a data watch when the node
// exists (it fires on a change or the deletion), an exists watch (which
// fires on its creation) when it does not.
func watchData(conn *zk.Conn, path string) opResult {
	return readOrAwait(conn, path, func() (opResult, error) {
		data, _, ch, err := conn.GetW(path)
		return opResult{data: data, exists: true, watch: ch}, err
	})
}

// readOrAwait reads path with readW, which sets a watch when the node
// exists; when it does not, it sets an exists watch instead, which fires
// on the node's creation.
func readOrAwait(conn *zk.Conn, path string, readW func() (opResult, error)) opResult {
	for range 3 {
		r, err := readW()
		if err == nil {
			return r
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return opResult{err: err}
		}
		exists, _, ch, err := conn.ExistsW(path)
		if err != nil {
			return opResult{err: err}
		}
		if !exists {
			return opResult{watch: ch}
		}
		// Created between the two calls. ExistsW then set a data watch,
		// which fires only if the node's data changes or it is deleted; it
		// is left unread (the client buffers its one event and drops the
		// channel). Read again, for the watch readW sets.
	}
	return opResult{err: fmt.Errorf("%s keeps appearing and disappearing", path)}
}

// watchDataIfExists reads path's data and sets a data watch when the node
// exists; when it does not, it sets nothing.
func watchDataIfExists(conn *zk.Conn, path string) opResult {
	data, _, ch, err := conn.GetW(path)
	if errors.Is(err, zk.ErrNoNode) {
		return opResult{}
	}
	if err != nil {
		return opResult{err: err}
	}
	return opResult{data: data, exists: true, watch: ch}
}

func getData(conn *zk.Conn, path string) opResult {
	data, _, err := conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return opResult{}
	}
	return opResult{data: data, exists: err == nil, err: err}
}

// watchChildren lists path's children and sets a watch: a child watch
// when the node exists, an exists watch (which fires on its creation) when
// it does not.
func watchChildren(conn *zk.Conn, path string) opResult {
	return readOrAwait(conn, path, func() (opResult, error) {
		children, _, ch, err := conn.ChildrenW(path)
		return opResult{children: children, exists: true, watch: ch}, err
	})
}

func listChildren(conn *zk.Conn, path string) opResult {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return opResult{}
	}
	return opResult{children: children, exists: err == nil, err: err}
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
