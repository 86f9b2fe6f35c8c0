package registry

import (
	"fmt"
	"sort"

	"github.com/dubbogw/dubbogw/cluster"
)

// Static is a registry whose providers are listed in the configuration.
type Static struct {
	urls      map[string][]*ProviderURL // interface → providers
	providers map[*ProviderURL]*cluster.Provider
	dirs      Directories
}

var _ ProviderCounter = (*Static)(nil)

// NewStatic builds a static registry from interface → provider URLs.
func NewStatic(providers map[string][]string) (*Static, error) {
	s := &Static{urls: make(map[string][]*ProviderURL, len(providers)), providers: map[*ProviderURL]*cluster.Provider{}}
	s.dirs.OnFirst = s.fill
	for iface, list := range providers {
		for i, raw := range list {
			u, err := ParseProviderURL(raw)
			if err != nil {
				return nil, fmt.Errorf("providers[%q][%d]: %w", iface, i, err)
			}
			if u.Interface == "" {
				u.Interface = iface
			}
			p, err := u.Provider()
			if err != nil {
				return nil, fmt.Errorf("providers[%q][%d]: %w", iface, i, err)
			}
			s.providers[u] = p
			s.urls[iface] = append(s.urls[iface], u)
		}
	}
	return s, nil
}

// Subscribe returns key's directory: the listed providers that match it.
func (s *Static) Subscribe(key ServiceKey) *Directory {
	return s.dirs.Acquire(key)
}

// fill sets a new directory's providers: the listed ones that match its key.
func (s *Static) fill(d *Directory) {
	var ps []*ProviderURL
	for _, u := range s.urls[d.Key().Interface] {
		if u.Matches(d.Key()) {
			ps = append(ps, u)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Addr < ps[j].Addr })
	out := make([]*cluster.Provider, 0, len(ps))
	for _, u := range ps {
		out = append(out, s.providers[u])
	}
	d.Set(out)
}

// Directories reports the live directories.
func (s *Static) Directories() []DirectoryStatus { return s.dirs.Status() }

// Status reports the static registry: always current, never watching.
func (s *Static) Status() Status {
	return Status{Type: "static", State: StateStatic, Subscriptions: s.dirs.Len()}
}

// ProviderCount is the number of providers its live directories list.
func (s *Static) ProviderCount() int { return s.dirs.ProviderCount() }

// Close releases nothing: a static registry holds no connection.
func (s *Static) Close() error {
	s.dirs.Close()
	return nil
}

// SelectDirectories lists the directories f selects.
func (s *Static) SelectDirectories(f DirectoryFilter) ([]DirectoryStatus, int) {
	return s.dirs.Select(f)
}
