package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
	"github.com/dubbogw/dubbogw/registry"
)

// This file is the instance metadata of application-level discovery
// (apps.go): a cache per instance and revision, bounded beyond the entries
// live instances use, and the fetches that fill it: remote metadata read
// on the worker's session, an instance's own MetadataService called on a
// helper goroutine.

// metaKey identifies the metadata of one instance at one revision; of
// every instance of the application at that revision when it is stored
// in ZooKeeper (storage "remote": one node per application and
// revision), instance then empty.
type metaKey struct{ app, instance, revision string }

// metaEntry is the metadata of one instance and revision: known, being
// fetched, or failed (retried after retryAt).
type metaEntry struct {
	key   metaKey
	users int // live instances whose metadata this is
	// holders are those instances, with their applications (in practice
	// one: the key names the instance).
	holders map[*instanceState]*appState
	// known says the metadata was fetched; offers are its services, made
	// ready for the instances at its revision (the parsed metadata itself
	// is not kept).
	known    bool
	offers   []nodeOffer
	fetching bool
	failures int
	retryAt  time.Time
	lastErr  string
	used     time.Time // when an instance last took it
}

// metaResult is what a metadata fetch returns to the worker.
type metaResult struct {
	entry *metaEntry
	info  *registry.MetadataInfo
	err   error
}

// Metadata fetch retries: from metaMinBackoff, doubling, up to metaMaxBackoff.
const (
	metaMinBackoff = time.Second
	metaMaxBackoff = time.Minute
)

// metaEntry returns the cache entry of key, creating it; the cache keeps
// at most MetadataCache entries beyond those live instances use.
func (ap *apps) metaEntry(key metaKey) *metaEntry {
	e := ap.meta[key]
	if e == nil {
		e = &metaEntry{key: key}
		ap.meta[key] = e
	}
	e.used = time.Now()
	return e
}

// useMeta makes e (nil for none) the metadata entry of in, keeping the
// entries' user counts, and so the count of entries in use, current. An
// entry in use whose metadata is not known is due to be fetched.
func (ap *apps) useMeta(a *appState, in *instanceState, e *metaEntry) {
	if old := in.meta; old != nil {
		delete(old.holders, in)
		if old.users--; old.users == 0 {
			ap.metaInUse--
		}
	}
	if e != nil {
		if e.holders == nil {
			e.holders = make(map[*instanceState]*appState, 1)
		}
		e.holders[in] = a
		if e.users++; e.users == 1 {
			ap.metaInUse++
		}
		if !e.known && !e.fetching {
			ap.toFetch.add(e)
		}
	}
	in.meta = e
}

// evictMetadata keeps at most MetadataCache entries no live instance uses,
// dropping the least recently used idle ones beyond that. The entries in
// use are counted as instances take and leave them, so a registry with
// more instances than the bound scans the cache only when idle entries
// are really over it.
func (ap *apps) evictMetadata() {
	limit := ap.z.opts.MetadataCache
	if len(ap.meta)-ap.metaInUse <= limit {
		return
	}
	var idle []*metaEntry
	for _, e := range ap.meta {
		if e.users == 0 && !e.fetching {
			idle = append(idle, e)
		}
	}
	slices.SortFunc(idle, func(a, b *metaEntry) int { return a.used.Compare(b.used) })
	for _, e := range idle[:max(len(idle)-limit, 0)] {
		delete(ap.meta, e.key)
	}
}

// fetchDue starts the metadata fetches that are due, as many as
// MetadataConcurrency allows. It looks at the entries in use whose
// metadata is unknown (toFetch) only, not at every instance.
func (ap *apps) fetchDue() {
	now := time.Now()
	for e := range ap.toFetch.all() {
		inst := e.instance()
		if e.users == 0 || e.known || e.fetching || inst == nil {
			ap.toFetch.remove(e) // useMeta or a failed fetch puts it back when due again
			continue
		}
		if now.Before(e.retryAt) {
			ap.wakeAt(e.retryAt)
			continue
		}
		if ap.fetching >= ap.z.opts.MetadataConcurrency {
			return // onMetadata wakes the worker
		}
		if !ap.startFetch(e, inst) {
			return // the session is full: a result wakes the worker
		}
		ap.toFetch.remove(e)
	}
}

// instance is a parsed instance whose metadata e is, nil if none.
func (e *metaEntry) instance() *registry.Instance {
	for in := range e.holders {
		if in.inst != nil {
			return in.inst
		}
	}
	return nil
}

// startFetch fetches e's metadata: a remote one by reading its node on
// the worker's session like any other read (metaRead: no goroutine waits
// on it), one served by the instance on a helper goroutine, which hands
// the result to the worker. False when the session has no room for
// another read (maxInFlight): fetchDue tries again on a later step.
func (ap *apps) startFetch(e *metaEntry, inst *registry.Instance) bool {
	if storageType(inst) == "remote" && validNodeName(inst.App) && validNodeName(inst.Revision) {
		if !ap.startMetaRead(&metaRead{entry: e, inst: inst}) {
			return false
		}
		e.fetching = true
		ap.fetching++
		return true
	}
	e.fetching = true
	ap.fetching++
	conn := ap.session.client.conn
	ap.session.helpers.Go(func() {
		ctx, cancel := context.WithTimeout(ap.z.ctx, ap.z.opts.MetadataTimeout)
		info, err := ap.fetchMetadata(ctx, conn, inst)
		cancel()
		if err != nil {
			err = fetchError(e, inst, err)
		}
		select {
		case ap.metaDone <- metaResult{entry: e, info: info, err: err}:
		case <-ap.z.quit:
		}
	})
	return true
}

// fetchError names the fetch that failed.
func fetchError(e *metaEntry, inst *registry.Instance, err error) error {
	return fmt.Errorf("metadata of %s instance %s revision %s (storage %s): %w",
		inst.App, e.key.instance, inst.Revision, storageType(inst), err)
}

// metaRead is a read of a revision's remote metadata node: first where
// Java Dubbo writes it, then where dubbo-go does (metadataPaths).
type metaRead struct {
	entry *metaEntry
	inst  *registry.Instance
	path  int // the index in metadataPaths of the node read
}

// metadataPaths are where inst's remote metadata may be, in the order
// they are read.
func (ap *apps) metadataPaths(inst *registry.Instance) [2]string {
	return [2]string{
		ap.z.root + "/metadata/" + inst.App + "/" + inst.Revision, // Java Dubbo
		ap.z.root + "/" + inst.App + "/" + inst.Revision,          // dubbo-go
	}
}

func (ap *apps) startMetaRead(r *metaRead) bool {
	return ap.session.startAsync(r, orAbsent(getData(ap.metadataPaths(r.inst)[r.path], false)))
}

// metaReadDone takes the answer of a metaRead: the metadata, or the
// next node to read, or why there is none. ok is false while the fetch
// goes on.
func (ap *apps) metaReadDone(r *metaRead, res opResult) (m metaResult, ok bool) {
	paths := ap.metadataPaths(r.inst)
	m.entry = r.entry
	switch {
	case res.err != nil:
		m.err = fmt.Errorf("reading %s: %w", paths[r.path], res.err)
	case res.exists:
		info, err := registry.ParseMetadataJSON(res.data)
		if err != nil {
			m.err = fmt.Errorf("parsing %s: %w", paths[r.path], err)
		}
		m.info = info
	case r.path+1 < len(paths):
		r.path++
		if ap.startMetaRead(r) {
			return m, false
		}
		m.err = fmt.Errorf("reading %s: %w", paths[r.path], errBusy)
	default:
		m.err = fmt.Errorf("neither %s nor %s exists", paths[0], paths[1])
	}
	if m.err != nil {
		m.err = fetchError(r.entry, r.inst, m.err)
	}
	return m, true
}

// errBusy: the session had no room for another operation.
var errBusy = errors.New("too many ZooKeeper operations in flight")

func storageType(inst *registry.Instance) string {
	if inst.StorageType == "" {
		return "local"
	}
	return inst.StorageType
}

// fetchMetadata reads inst's metadata: from ZooKeeper for remote storage,
// from the instance's MetadataService otherwise. It runs on a helper
// goroutine: it reads nothing of the worker's.
func (ap *apps) fetchMetadata(ctx context.Context, conn *zk.Conn, inst *registry.Instance) (*registry.MetadataInfo, error) {
	if storageType(inst) != "remote" {
		if ap.z.opts.Metadata == nil {
			return nil, errors.New("stored on the instance, and no MetadataService client is configured")
		}
		return ap.z.opts.Metadata(ctx, inst)
	}
	if !validNodeName(inst.App) || !validNodeName(inst.Revision) {
		return nil, fmt.Errorf("app %q and revision %q cannot name a ZooKeeper node", inst.App, inst.Revision)
	}
	paths := ap.metadataPaths(inst)
	for _, path := range paths {
		data, exists, err := ap.getWithin(ctx, conn, path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if exists {
			info, err := registry.ParseMetadataJSON(data)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", path, err)
			}
			return info, nil
		}
	}
	return nil, fmt.Errorf("neither %s nor %s exists", paths[0], paths[1])
}

// getWithin reads path's data, giving up when ctx ends (the read itself
// ends at the latest when the client closes).
func (ap *apps) getWithin(ctx context.Context, conn *zk.Conn, path string) ([]byte, bool, error) {
	done := make(chan opResult, 1) // room for the answer after a give-up
	orAbsent(getData(path, false))(conn, func(r opResult) { done <- r })
	select {
	case r := <-done:
		return r.data, r.exists, r.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// onMetadata takes a fetch's result.
func (ap *apps) onMetadata(m metaResult) {
	e := m.entry
	e.fetching = false
	ap.fetching--
	ap.metaFetches++
	if m.err != nil {
		ap.metaFailures++
		e.failures++
		backoff := min(metaMinBackoff<<min(e.failures-1, 10), metaMaxBackoff)
		e.retryAt, e.lastErr = time.Now().Add(backoff), m.err.Error()
		ap.z.log.Warn("cannot fetch instance metadata: the instance is not used", "err", m.err,
			"failures", e.failures, "retry_in", backoff)
		ap.toFetch.add(e) // again at retryAt, if still in use
	} else {
		e.known, e.offers, e.failures, e.lastErr = true, nodeOffers(m.info), 0, ""
	}
	for in, a := range e.holders {
		ap.applyMetadata(a, in)
	}
}
