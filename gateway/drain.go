package gateway

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// connStates follows the data plane's connections (http.Server.ConnState)
// so that a drain can tell a connection idle for a while from one a client
// is about to reuse. http.Server.Shutdown closes idle connections at once:
// a request a client sent on one a moment before meets a reset.
type connStates struct {
	conns sync.Map // net.Conn → *connMark
}

// connMark is a connection's last state and when it entered it.
type connMark struct {
	mu    sync.Mutex
	state http.ConnState
	since time.Time
}

// track is the http.Server.ConnState hook.
func (s *connStates) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateClosed, http.StateHijacked:
		s.conns.Delete(c)
		return
	case http.StateNew:
		s.conns.Store(c, &connMark{state: state, since: time.Now()})
		return
	}
	if v, ok := s.conns.Load(c); ok {
		m := v.(*connMark)
		m.mu.Lock()
		m.state, m.since = state, time.Now()
		m.mu.Unlock()
	}
}

// youngestIdle says how long the most recently idled keep-alive connection
// has been idle, and whether there is one idle for less than grace.
func (s *connStates) youngestIdle(grace time.Duration) (time.Duration, bool) {
	now := time.Now()
	youngest, found := grace, false
	s.conns.Range(func(_, v any) bool {
		m := v.(*connMark)
		m.mu.Lock()
		state, idle := m.state, now.Sub(m.since)
		m.mu.Unlock()
		if state == http.StateIdle && idle < youngest {
			youngest, found = idle, true
		}
		return true
	})
	return youngest, found
}

// waitIdleGrace returns once no keep-alive connection has been idle for
// less than grace (or ctx ends), so that closing the idle ones then does
// not cut a request a client had just sent. Every response since the
// drain began says Connection: close, so no connection turns idle anew
// (except one whose response began before): the wait is about grace.
func (s *connStates) waitIdleGrace(ctx context.Context, grace time.Duration) {
	for grace > 0 {
		idle, found := s.youngestIdle(grace)
		if !found {
			return
		}
		t := time.NewTimer(grace - idle)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
