package zookeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/registry"
	"github.com/go-zookeeper/zk"
)

// This file is the worker's application-level discovery (Dubbo 3 "service
// discovery"), next to the interface-level nodes of worker.go:
//
//	/<root>/mapping/<interface>      data "app1,app2": the applications serving the interface
//	<services>/<app>/<ip:port>        one instance of the application (Curator's JSON)
//
// and the instance's metadata, which says which services (interface,
// group, version, protocol, port) the instance serves: by calling the
// instance's MetadataService (storage "local", through
// Options.Metadata) or, for storage "remote", from
// /<root>/metadata/<app>/<revision> (Java Dubbo) or /<root>/<app>/<revision>
// (dubbo-go). An interface watches its mapping node; an application
// watched for any interface is watched once, with a data watch on each of
// its instances (an instance's revision changes in place). Metadata is
// fetched off the worker, at most MetadataConcurrency at a time, each with
// a deadline, retried with a backoff, and cached per instance and
// revision (a revision alone is not unique: dubbo-go's ignores protocol,
// port, group and version).

// appState is an application named by the mapping node of a live interface.
type appState struct {
	name      string
	watch     *pathWatch // <services>/<app>, children
	users     map[*ifaceState]struct{}
	instances map[string]*instanceState // by node name ("ip:port")
}

// instanceState is one instance of an application.
type instanceState struct {
	child string
	watch *pathWatch // <services>/<app>/<child>, data
	seen  bool       // raw holds the node's data last read
	raw   []byte
	inst  *registry.Instance // parsed from raw; nil when unusable or gone
	meta  *metaEntry         // the metadata of inst's revision
	// nodes are the providers the instance offers, from the last metadata
	// known: those of the previous revision until the new one's is known.
	nodes []*providerNode
	// missingSince is when the application's listing first lacked the
	// instance (zero while listed): it is dropped leaveGrace later unless
	// it is listed again.
	missingSince time.Time
}

// leaveGrace is how long an instance missing from its application's
// listing keeps its providers: a provider re-registering (dubbo-go
// deletes its instance node and creates it again when it restarts or
// reconnects to ZooKeeper) is not seen as leaving, and its services are
// never left without providers in between.
const leaveGrace = 500 * time.Millisecond

// awaitingMetadata reports whether the instance's metadata has been
// neither fetched nor given up on once.
func (in *instanceState) awaitingMetadata() bool {
	return in.inst != nil && in.meta != nil && in.meta.info == nil && in.meta.failures == 0
}

// metaKey identifies the metadata of one instance at one revision.
type metaKey struct{ app, instance, revision string }

// metaEntry is the metadata of one instance and revision: known, being
// fetched, or failed (retried after retryAt).
type metaEntry struct {
	key      metaKey
	users    int // live instances whose metadata this is
	info     *registry.MetadataInfo
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

// parseMapping parses a mapping node's data: application names separated
// by commas. Names that cannot be ZooKeeper nodes are left out.
func parseMapping(data []byte) []string {
	var apps []string
	for name := range strings.SplitSeq(string(data), ",") {
		if name = strings.TrimSpace(name); validNodeName(name) {
			apps = append(apps, name)
		}
	}
	slices.Sort(apps)
	return slices.Compact(apps)
}

// setApps makes s use exactly the applications apps (sorted).
func (w *zkWorker) setApps(s *ifaceState, apps []string) {
	if slices.Equal(s.apps, apps) {
		return
	}
	for _, name := range s.apps {
		if !slices.Contains(apps, name) {
			w.leaveApp(s, name)
		}
	}
	for _, name := range apps {
		if !slices.Contains(s.apps, name) {
			w.joinApp(s, name)
		}
	}
	s.apps = apps
}

func (w *zkWorker) joinApp(s *ifaceState, name string) {
	a := w.apps[name]
	if a == nil {
		a = &appState{
			name:      name,
			watch:     w.watch(w.z.servicesRoot+"/"+name, nodeApp, name, ""),
			users:     make(map[*ifaceState]struct{}),
			instances: make(map[string]*instanceState),
		}
		w.apps[name] = a
	}
	a.users[s] = struct{}{}
}

// leaveApp says s no longer uses application name; an application nobody
// uses is no longer watched.
func (w *zkWorker) leaveApp(s *ifaceState, name string) {
	a := w.apps[name]
	if a == nil {
		return
	}
	delete(a.users, s)
	if len(a.users) > 0 {
		return
	}
	w.unwatch(a.watch)
	for _, in := range a.instances {
		w.unwatch(in.watch)
		w.useMeta(in, nil)
	}
	delete(w.apps, name)
}

// setInstances takes a listing of a's instances: new ones are read, gone
// ones dropped.
func (w *zkWorker) setInstances(a *appState, children []string) {
	seen := make(map[string]bool, len(children))
	for _, c := range children {
		if !strings.Contains(c, ":") {
			// Not an instance ("ip:port"): under a registry group the
			// application's remote metadata nodes (named by revision)
			// share its node.
			continue
		}
		seen[c] = true
		if in := a.instances[c]; in != nil {
			in.missingSince = time.Time{}
		}
		switch in := a.instances[c]; {
		case in == nil:
			a.instances[c] = &instanceState{child: c, watch: w.watch(a.watch.path+"/"+c, nodeInstance, a.name, c)}
		case !in.watch.armed && !in.watch.busy && !in.watch.need:
			// Read while it was gone (no watch is set then), and back:
			// a restart on the same address.
			in.watch.need = true
			w.z.poke()
		}
	}
	now := time.Now()
	for c, in := range a.instances {
		if !seen[c] && in.missingSince.IsZero() {
			in.missingSince = now
			w.wakeAt(now.Add(leaveGrace))
		}
	}
	w.dropMissing(a, now)
	if len(children) > 0 {
		w.dirtyUsers(a) // their first publication waits for the new instances (settled)
	}
}

// dropMissing drops the instances of a missing from its listing for
// leaveGrace or longer.
func (w *zkWorker) dropMissing(a *appState, now time.Time) {
	for c, in := range a.instances {
		if in.missingSince.IsZero() {
			continue
		}
		if due := in.missingSince.Add(leaveGrace); now.Before(due) {
			w.wakeAt(due)
			continue
		}
		w.unwatch(in.watch)
		w.useMeta(in, nil)
		delete(a.instances, c)
		w.dirtyUsers(a)
	}
}

// setInstance takes a read of one instance's node.
func (w *zkWorker) setInstance(a *appState, in *instanceState, data []byte, exists bool) {
	if !exists {
		// Deleted. The application's listing, whose watch fired too, is
		// the authority on membership: it drops the instance if it is
		// gone, or keeps it and reads it again if it is back (a provider
		// re-registering, as dubbo-go does on a restart or a reconnection:
		// delete, then create). Until then its providers stay, so a
		// re-registration never leaves a service without providers.
		return
	}
	if in.seen && bytes.Equal(data, in.raw) {
		return // unchanged (re-read after a reconnection or a recycle): nothing to count or log again
	}
	in.seen, in.raw = true, data
	inst, err := registry.ParseInstance(data)
	if err != nil {
		w.z.skipped.Add(1)
		w.z.log.Warn("skipping an application instance", "app", a.name, "instance", in.child, "err", err)
		w.useMeta(in, nil)
		in.inst, in.nodes = nil, nil
		w.dirtyUsers(a)
		return
	}
	if inst.App == "" {
		inst.App = a.name
	}
	in.inst = inst
	if !inst.RevisionKnown() {
		// Revision "0" or "N/A": the instance exports nothing (a pure
		// consumer, or metadata not computed): nothing to fetch or select.
		w.useMeta(in, nil)
		in.nodes = nil
		w.dirtyUsers(a)
		return
	}
	key := metaKey{app: a.name, instance: in.child, revision: inst.Revision}
	if in.meta == nil || in.meta.key != key {
		w.useMeta(in, w.metaEntry(key))
		w.evictMetadata()
	}
	w.applyMetadata(a, in)
}

// applyMetadata derives in's providers from its metadata, when known.
// While the metadata of a new revision is fetched, the providers of the
// previous one stay; once a fetch has failed, the instance has none.
func (w *zkWorker) applyMetadata(a *appState, in *instanceState) {
	switch e := in.meta; {
	case e == nil || in.inst == nil:
		return
	case e.info != nil:
		in.nodes = w.instanceNodes(a, in, e.info)
	case e.failures > 0:
		in.nodes = nil
	default:
		return // fetching: fetchDue starts it, onMetadata applies it
	}
	w.dirtyUsers(a)
}

// instanceNodes are the providers in offers according to its metadata.
func (w *zkWorker) instanceNodes(a *appState, in *instanceState, info *registry.MetadataInfo) []*providerNode {
	urls, skipped := info.ProviderURLs(in.inst)
	for _, reason := range skipped {
		w.z.skipped.Add(1)
		w.z.log.Warn("skipping a service of an application instance", "app", a.name, "instance", in.child,
			"revision", in.inst.Revision, "reason", reason)
	}
	nodes := make([]*providerNode, 0, len(urls))
	for _, u := range urls {
		name := "app:" + a.name + "/" + in.child + "/" + registry.ServiceKey{Interface: u.Interface, Group: u.Params.Get("group"), Version: u.Params.Get("version")}.String()
		n, reason := newProviderNode(name, u)
		if n == nil {
			if reason != "" {
				w.z.skipped.Add(1)
				w.z.log.Warn("skipping a service of an application instance", "app", a.name, "instance", in.child,
					"revision", in.inst.Revision, "service", u.Interface, "reason", reason)
			}
			continue
		}
		n.app, n.revision = a.name, in.inst.Revision
		nodes = append(nodes, n)
	}
	return nodes
}

func (w *zkWorker) dirtyUsers(a *appState) {
	for s := range a.users {
		w.dirty[s] = struct{}{}
	}
}

// metaEntry returns the cache entry of key, creating it; the cache keeps
// at most MetadataCache entries beyond those live instances use.
func (w *zkWorker) metaEntry(key metaKey) *metaEntry {
	e := w.meta[key]
	if e == nil {
		e = &metaEntry{key: key}
		w.meta[key] = e
	}
	e.used = time.Now()
	return e
}

// useMeta makes e (nil for none) the metadata entry of in, keeping the
// entries' user counts, and so the count of entries in use, current.
func (w *zkWorker) useMeta(in *instanceState, e *metaEntry) {
	if old := in.meta; old != nil {
		if old.users--; old.users == 0 {
			w.metaInUse--
		}
	}
	if e != nil {
		if e.users++; e.users == 1 {
			w.metaInUse++
		}
	}
	in.meta = e
}

// evictMetadata keeps at most MetadataCache entries no live instance uses,
// dropping the least recently used idle ones beyond that. The entries in
// use are counted as instances take and leave them, so a registry with
// more instances than the bound scans the cache only when idle entries
// are really over it.
func (w *zkWorker) evictMetadata() {
	limit := w.z.opts.MetadataCache
	if len(w.meta)-w.metaInUse <= limit {
		return
	}
	var idle []*metaEntry
	for _, e := range w.meta {
		if e.users == 0 && !e.fetching {
			idle = append(idle, e)
		}
	}
	slices.SortFunc(idle, func(a, b *metaEntry) int { return a.used.Compare(b.used) })
	for _, e := range idle[:max(len(idle)-limit, 0)] {
		delete(w.meta, e.key)
	}
}

// fetchDue starts the metadata fetches that are due, as many as
// MetadataConcurrency allows.
func (w *zkWorker) fetchDue() {
	now := time.Now()
	for _, a := range w.apps {
		for _, in := range a.instances {
			e := in.meta
			if in.inst == nil || e == nil || e.info != nil || e.fetching {
				continue
			}
			if now.Before(e.retryAt) {
				w.wakeAt(e.retryAt)
				continue
			}
			if w.fetching >= w.z.opts.MetadataConcurrency {
				return // onMetadata wakes the worker
			}
			w.startFetch(e, in.inst)
		}
	}
}

// startFetch fetches e's metadata on a helper goroutine, which hands the
// result to the worker.
func (w *zkWorker) startFetch(e *metaEntry, inst *registry.Instance) {
	e.fetching = true
	w.fetching++
	conn := w.client.conn
	w.helpers.Add(1)
	go func() {
		defer w.helpers.Done()
		ctx, cancel := context.WithTimeout(w.z.ctx, w.z.opts.MetadataTimeout)
		info, err := w.fetchMetadata(ctx, conn, inst)
		cancel()
		if err != nil {
			err = fmt.Errorf("metadata of %s instance %s revision %s (storage %s): %w",
				inst.App, e.key.instance, inst.Revision, storageType(inst), err)
		}
		select {
		case w.metaDone <- metaResult{entry: e, info: info, err: err}:
		case <-w.z.quit:
		}
	}()
}

func storageType(inst *registry.Instance) string {
	if inst.StorageType == "" {
		return "local"
	}
	return inst.StorageType
}

// fetchMetadata reads inst's metadata: from ZooKeeper for remote storage,
// from the instance's MetadataService otherwise.
func (w *zkWorker) fetchMetadata(ctx context.Context, conn *zk.Conn, inst *registry.Instance) (*registry.MetadataInfo, error) {
	if storageType(inst) != "remote" {
		if w.z.opts.Metadata == nil {
			return nil, errors.New("stored on the instance, and no MetadataService client is configured")
		}
		return w.z.opts.Metadata(ctx, inst)
	}
	if !validNodeName(inst.App) || !validNodeName(inst.Revision) {
		return nil, fmt.Errorf("app %q and revision %q cannot name a ZooKeeper node", inst.App, inst.Revision)
	}
	paths := [2]string{
		w.z.root + "/metadata/" + inst.App + "/" + inst.Revision, // Java Dubbo
		w.z.root + "/" + inst.App + "/" + inst.Revision,          // dubbo-go
	}
	for _, path := range paths {
		data, exists, err := w.getWithin(ctx, conn, path)
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
func (w *zkWorker) getWithin(ctx context.Context, conn *zk.Conn, path string) ([]byte, bool, error) {
	done := make(chan opResult, 1)
	w.helpers.Add(1)
	go func() {
		defer w.helpers.Done()
		done <- getData(conn, path)
	}()
	select {
	case r := <-done:
		return r.data, r.exists, r.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// onMetadata takes a fetch's result.
func (w *zkWorker) onMetadata(m metaResult) {
	e := m.entry
	e.fetching = false
	w.fetching--
	w.metaFetches++
	if m.err != nil {
		w.metaFailures++
		e.failures++
		backoff := min(metaMinBackoff<<min(e.failures-1, 10), metaMaxBackoff)
		e.retryAt, e.lastErr = time.Now().Add(backoff), m.err.Error()
		w.z.log.Warn("cannot fetch instance metadata: the instance is not used", "err", m.err,
			"failures", e.failures, "retry_in", backoff)
	} else {
		e.info, e.failures, e.lastErr = m.info, 0, ""
	}
	for _, a := range w.apps {
		for _, in := range a.instances {
			if in.meta == e {
				w.applyMetadata(a, in)
			}
		}
	}
}

// mergedNodes are s's interface-level nodes and the nodes its
// applications' instances offer for it, sorted (application-level first
// for an address both have).
func (w *zkWorker) mergedNodes(s *ifaceState) []*providerNode {
	nodes := slices.Clone(s.nodes)
	for _, name := range s.apps {
		a := w.apps[name]
		if a == nil {
			continue
		}
		for _, in := range a.instances {
			for _, n := range in.nodes {
				if n.url.Interface == s.name {
					nodes = append(nodes, n)
				}
			}
		}
	}
	sortProviderNodes(nodes)
	return nodes
}

// providerOrigins says, for each address among nodes (sorted) that serves
// key, where it was found.
func providerOrigins(key registry.ServiceKey, nodes []*providerNode) map[string]registry.ProviderOrigin {
	m := make(map[string]registry.ProviderOrigin)
	for _, n := range nodes {
		if !n.url.Matches(key) {
			continue
		}
		o, seen := m[n.url.Addr]
		switch {
		case !seen && n.app != "":
			o = registry.ProviderOrigin{Source: registry.SourceApplication, App: n.app, Revision: n.revision}
		case !seen:
			o = registry.ProviderOrigin{Source: registry.SourceInterface}
		case o.Source == registry.SourceApplication && n.app == "":
			o.Source = registry.SourceBoth
		}
		m[n.url.Addr] = o
	}
	return m
}

// wakeAt makes the worker step at t at the latest.
func (w *zkWorker) wakeAt(t time.Time) {
	if !w.retryAt.IsZero() && !t.Before(w.retryAt) {
		return
	}
	w.retryAt = t
	w.retry.Reset(time.Until(t))
}

// appCounts counts the applications watched and their usable instances.
func (w *zkWorker) appCounts() (apps, instances int) {
	for _, a := range w.apps {
		for _, in := range a.instances {
			if in.inst != nil {
				instances++
			}
		}
	}
	return len(w.apps), instances
}
