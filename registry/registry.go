// Package registry finds the providers of Dubbo services. A Registry hands
// out Directories, one per service key, shared and reference-counted by every
// route that calls the service; a Directory publishes immutable provider
// snapshots that readers load without locking.
//
// Subscriptions are keyed by the service key (group/interface:version) and
// nothing else — never by a URL carrying a timestamp — so however many routes
// or requests ask for a service, it has exactly one directory: the
// subscription leak of seed incident 000 cannot happen by construction.
package registry

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dubbogw/dubbogw/cluster"
)

// ServiceKey identifies a Dubbo service.
type ServiceKey struct {
	Interface, Group, Version string
}

// String renders the key as Dubbo does: "group/interface:version", leaving
// out what is empty.
func (k ServiceKey) String() string {
	s := k.Interface
	if k.Group != "" {
		s = k.Group + "/" + s
	}
	if k.Version != "" {
		s += ":" + k.Version
	}
	return s
}

// Registry is a source of providers.
type Registry interface {
	// Subscribe returns the directory of key, creating it on first use; every
	// caller must Release it when done.
	Subscribe(key ServiceKey) *Directory
	// Directories reports the live directories, for the admin API and metrics.
	Directories() []DirectoryStatus
	// Close releases everything the registry holds.
	Close() error
}

// DirectoryStatus describes one directory.
type DirectoryStatus struct {
	Service   string   `json:"service"`
	Refs      int      `json:"references"`
	Providers []string `json:"providers"`
}

// Directory is the current provider list of one service.
type Directory struct {
	key       ServiceKey
	providers atomic.Pointer[[]*cluster.Provider]
	release   func(*Directory)
}

// Key is the directory's service key.
func (d *Directory) Key() ServiceKey { return d.key }

// Providers returns the current snapshot; callers must not modify it.
func (d *Directory) Providers() []*cluster.Provider {
	if p := d.providers.Load(); p != nil {
		return *p
	}
	return nil
}

// Release gives the caller's reference back.
func (d *Directory) Release() { d.release(d) }

// set publishes a new snapshot.
func (d *Directory) set(ps []*cluster.Provider) { d.providers.Store(&ps) }

// directories is the ref-counted set of directories a registry shares.
type directories struct {
	mu   sync.Mutex
	dirs map[ServiceKey]*dirEntry
}

type dirEntry struct {
	dir  *Directory
	refs int
}

// acquire returns key's directory, creating it with fill when new.
func (s *directories) acquire(key ServiceKey, fill func(*Directory)) *Directory {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirs == nil {
		s.dirs = make(map[ServiceKey]*dirEntry)
	}
	if e, ok := s.dirs[key]; ok {
		e.refs++
		return e.dir
	}
	d := &Directory{key: key, release: s.release}
	fill(d)
	s.dirs[key] = &dirEntry{dir: d, refs: 1}
	return d
}

func (s *directories) release(d *Directory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.dirs[d.key]
	if !ok || e.dir != d {
		return
	}
	if e.refs--; e.refs <= 0 {
		delete(s.dirs, d.key)
	}
}

func (s *directories) status() []DirectoryStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DirectoryStatus, 0, len(s.dirs))
	for _, e := range s.dirs {
		st := DirectoryStatus{Service: e.dir.key.String(), Refs: e.refs, Providers: []string{}}
		for _, p := range e.dir.Providers() {
			st.Providers = append(st.Providers, p.Addr)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out
}
