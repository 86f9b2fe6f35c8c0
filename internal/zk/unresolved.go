package zk

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// UnresolvedHosts hands the configured addresses to the client in turn, as
// DNSHostProvider does, but without resolving them up front: names are
// resolved at each dial, so a client whose ZooKeeper name does not resolve
// yet still starts, and connects once it does. The registry and the
// configuration source both connect this way.
type UnresolvedHosts struct {
	mu      sync.Mutex
	hosts   []string
	current int
	last    int // the host of the last successful connection
}

// Init takes the servers of the connection string.
func (h *UnresolvedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hosts, h.current, h.last = servers, -1, -1
	return nil
}

// Len is the number of servers.
func (h *UnresolvedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hosts)
}

// Next returns the next host; retryStart is true when every host has been
// tried since the last successful connection (the client then pauses).
func (h *UnresolvedHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current = (h.current + 1) % len(h.hosts)
	retryStart = h.current == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.hosts[h.current], retryStart
}

// Connected records that the current host answered.
func (h *UnresolvedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.current
}

// SlogLogger sends the client's own log lines to slog at debug level:
// its users log connection changes themselves, with context, at info.
type SlogLogger struct{ Log *slog.Logger }

// Printf logs one line of the client's.
func (l SlogLogger) Printf(format string, args ...any) {
	if l.Log.Enabled(context.Background(), slog.LevelDebug) {
		l.Log.Debug(fmt.Sprintf(format, args...), "source", "go-zookeeper")
	}
}
