package configsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// HistoryNode is the child of the configuration node under which every
// push is kept: <path>/history/v<version>-<sequence>, the configuration
// that became that version of the node, created in the same transaction
// (ZooKeeper's multi) as the write of the node, so the two cannot
// diverge. ZooKeeper appends the sequence, which orders the entries.
const HistoryNode = "history"

// DefaultKeep is how many history entries a push keeps unless told.
const DefaultKeep = 10

// maxHistoryChildren bounds the history listing read: a push keeps at
// most its --keep entries; more means someone else writes there.
const maxHistoryChildren = 10000

// Store is a configuration node for `dubbogw config`: get, push with a
// compare-and-set on the node's version, history and rollback.
type Store struct {
	zk *client
}

// OpenStore starts a session to loc's servers; every operation waits at
// most timeout.
func OpenStore(loc Location, timeout time.Duration, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := dial(loc, timeout, log)
	if err != nil {
		return nil, err
	}
	return &Store{zk: c}, nil
}

// Close ends the session.
func (s *Store) Close() { s.zk.close() }

// Node is the configuration node as read.
type Node struct {
	Data     []byte
	Version  int32
	Modified time.Time
}

// ErrNoConfig is the configuration node missing.
var ErrNoConfig = errors.New("no configuration at this path")

// Get reads the node.
func (s *Store) Get(ctx context.Context) (Node, error) {
	var n Node
	err := s.zk.call(ctx, "reading", func(c *zk.Conn) error {
		data, st, err := c.Get(s.zk.loc.Path)
		if errors.Is(err, zk.ErrNoNode) {
			return ErrNoConfig
		}
		if err != nil {
			return err
		}
		n = Node{Data: data, Version: st.Version, Modified: time.UnixMilli(st.Mtime)}
		return nil
	})
	return n, err
}

// Entry is one history entry.
type Entry struct {
	Name     string    // the child's name
	Version  int32     // the node's version this configuration became
	Seq      int64     // ZooKeeper's sequence: the order of pushes
	Pushed   time.Time // the child's creation
	Size     int
	Live     bool // the node's version now
	historic bool
}

// History lists the entries, oldest first; Live marks the one whose
// version the node has now.
func (s *Store) History(ctx context.Context) ([]Entry, error) {
	live, err := s.Get(ctx)
	if err != nil && !errors.Is(err, ErrNoConfig) {
		return nil, err
	}
	hist := s.zk.loc.Path + "/" + HistoryNode
	var entries []Entry
	err = s.zk.call(ctx, "listing the history of", func(c *zk.Conn) error {
		names, st, err := c.Children(hist)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.NumChildren > maxHistoryChildren {
			return fmt.Errorf("%s has %d children: more than %d", hist, st.NumChildren, maxHistoryChildren)
		}
		for _, name := range names {
			e, ok := parseEntry(name)
			if !ok {
				continue // not a push's
			}
			_, st, err := c.Exists(hist + "/" + name)
			if err != nil {
				return err
			}
			if st == nil {
				continue
			}
			e.Pushed, e.Size = time.UnixMilli(st.Ctime), int(st.DataLength)
			e.Live = live.Data != nil && e.Version == live.Version
			entries = append(entries, e)
		}
		return nil
	})
	slices.SortFunc(entries, func(a, b Entry) int { return int(a.Seq - b.Seq) })
	// Only the newest entry of the live version is live (a node deleted
	// and made again starts its versions over).
	for i := range entries {
		for j := i + 1; j < len(entries); j++ {
			if entries[j].Version == entries[i].Version {
				entries[i].Live = false
			}
		}
	}
	return entries, err
}

// parseEntry reads "v<version>-<10-digit sequence>".
func parseEntry(name string) (Entry, bool) {
	v, seq, ok := strings.Cut(strings.TrimPrefix(name, "v"), "-")
	if !ok || !strings.HasPrefix(name, "v") {
		return Entry{}, false
	}
	version, err1 := strconv.ParseInt(v, 10, 32)
	n, err2 := strconv.ParseInt(seq, 10, 64)
	if err1 != nil || err2 != nil || version < 0 {
		return Entry{}, false
	}
	return Entry{Name: name, Version: int32(version), Seq: n, historic: true}, true
}

// EntryData reads the configuration of the newest history entry of
// version.
func (s *Store) EntryData(ctx context.Context, version int32) ([]byte, error) {
	entries, err := s.History(ctx)
	if err != nil {
		return nil, err
	}
	var found *Entry
	for i := range entries {
		if entries[i].Version == version {
			found = &entries[i]
		}
	}
	if found == nil {
		have := make([]string, 0, len(entries))
		for _, e := range entries {
			have = append(have, strconv.Itoa(int(e.Version)))
		}
		return nil, fmt.Errorf("no version %d in the history (it has: %s)", version, strings.Join(have, ", "))
	}
	var data []byte
	err = s.zk.call(ctx, "reading history entry "+found.Name+" of", func(c *zk.Conn) error {
		var err error
		data, _, err = c.Get(s.zk.loc.Path + "/" + HistoryNode + "/" + found.Name)
		return err
	})
	return data, err
}

// PushOptions say how a push checks what it replaces.
type PushOptions struct {
	// IfVersion, when not nil, is the version the node must have (what
	// `get` showed); else the version read as the push starts.
	IfVersion *int32
	// Force writes whatever the node's version.
	Force bool
	// Keep is how many history entries to keep (at least 1). Default
	// DefaultKeep.
	Keep int
}

// Conflict is a push refused because the node is not at the version the
// push expected: someone else wrote it meanwhile.
type Conflict struct {
	Expected int32 // -1: expected no node
	Actual   int32 // -1: there is no node
}

func (c *Conflict) Error() string {
	name := func(v int32) string {
		if v < 0 {
			return "no node"
		}
		return "version " + strconv.Itoa(int(v))
	}
	return fmt.Sprintf("the configuration changed: expected %s, found %s (look with `dubbogw config diff`, then push with --if-version %d, or --force)",
		name(c.Expected), name(c.Actual), max(c.Actual, 0))
}

// forceTries bounds the retries of a forced push that keeps losing the
// race to other writers.
const forceTries = 5

// Push writes data as the node's configuration, with a compare-and-set
// on the node's version, and its history entry in the same transaction;
// it returns the node's new version. A Conflict when the node is not at
// the version expected (unless Force).
func (s *Store) Push(ctx context.Context, data []byte, opts PushOptions) (int32, error) {
	if len(data) > MaxConfigBytes {
		return 0, fmt.Errorf("%d bytes: more than %d (a push writes the node and its history entry in one ZooKeeper request, bounded by jute.maxbuffer, 1 MiB)", len(data), MaxConfigBytes)
	}
	if opts.Keep < 1 {
		opts.Keep = DefaultKeep
	}
	for try := 1; ; try++ {
		v, err := s.push(ctx, data, opts)
		var c *Conflict
		if errors.As(err, &c) && opts.Force && try < forceTries {
			continue // a writer came between the read and the write: read again
		}
		return v, err
	}
}

func (s *Store) push(ctx context.Context, data []byte, opts PushOptions) (int32, error) {
	path := s.zk.loc.Path
	hist := path + "/" + HistoryNode
	cur, err := s.Get(ctx)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNoConfig) {
		return 0, err
	}
	actual := int32(-1)
	if exists {
		actual = cur.Version
	}
	expected := actual
	if opts.IfVersion != nil && !opts.Force {
		expected = *opts.IfVersion
		if expected != actual {
			return 0, &Conflict{Expected: expected, Actual: actual}
		}
	}
	acl := s.zk.acl()
	var entries []Entry
	if exists {
		if entries, err = s.History(ctx); err != nil {
			return 0, err
		}
	} else if err := s.ensureParents(ctx, path, acl); err != nil {
		return 0, err
	}
	var ops []any
	newVersion := int32(0)
	if exists {
		if err := s.create(ctx, hist, acl); err != nil {
			return 0, err
		}
		newVersion = expected + 1
		ops = append(ops, &zk.SetDataRequest{Path: path, Data: data, Version: expected})
		if !slices.ContainsFunc(entries, func(e Entry) bool { return e.Version == cur.Version }) {
			// The live configuration was written by other means (or
			// before any push): keep it too, so a rollback can reach it.
			ops = append(ops, &zk.CreateRequest{Path: hist + "/v" + strconv.Itoa(int(cur.Version)) + "-", Data: cur.Data, Acl: acl, Flags: zk.FlagSequence})
			entries = append(entries, Entry{})
		}
	} else {
		ops = append(ops, &zk.CreateRequest{Path: path, Data: data, Acl: acl},
			&zk.CreateRequest{Path: hist, Acl: acl})
	}
	ops = append(ops, &zk.CreateRequest{Path: hist + "/v" + strconv.Itoa(int(newVersion)) + "-", Data: data, Acl: acl, Flags: zk.FlagSequence})
	entries = append(entries, Entry{})
	for _, e := range entries[:max(0, len(entries)-opts.Keep)] {
		if e.historic {
			ops = append(ops, &zk.DeleteRequest{Path: hist + "/" + e.Name, Version: -1})
		}
	}
	err = s.zk.call(ctx, "writing", func(c *zk.Conn) error {
		res, err := c.Multi(ops...)
		return multiErr(res, err)
	})
	switch {
	case err == nil:
		return newVersion, nil
	case errors.Is(err, zk.ErrBadVersion) || !exists && errors.Is(err, zk.ErrNodeExists):
		now, gerr := s.Get(ctx)
		actual := int32(-1)
		if gerr == nil {
			actual = now.Version
		}
		return 0, &Conflict{Expected: expected, Actual: actual}
	}
	return 0, err
}

// ensureParents creates the node's missing ancestors.
func (s *Store) ensureParents(ctx context.Context, path string, acl []zk.ACL) error {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := ""
	for _, p := range parts[:len(parts)-1] {
		cur += "/" + p
		if err := s.create(ctx, cur, acl); err != nil {
			return err
		}
	}
	return nil
}

// create makes an empty persistent node unless it exists.
func (s *Store) create(ctx context.Context, path string, acl []zk.ACL) error {
	return s.zk.call(ctx, "creating "+path+" at", func(c *zk.Conn) error {
		_, err := c.Create(path, nil, 0, acl)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}

// multiErr is the error of a transaction: that of the operation that
// failed. The others answer "runtime inconsistency" (-2, rolled back),
// which the client does not name ("unknown error").
func multiErr(res []zk.MultiResponse, err error) error {
	var other error
	for _, r := range res {
		switch {
		case r.Error == nil:
		case !strings.HasPrefix(r.Error.Error(), "unknown error"):
			return r.Error
		case other == nil:
			other = r.Error
		}
	}
	if err != nil {
		return err
	}
	return other
}
