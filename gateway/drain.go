package gateway

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
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
	state atomic.Int32 // http.ConnState
	since atomic.Int64 // UnixNano
}

// set records state from now. The time goes first: a reader that sees the
// new state sees its time too, and one that sees the new time with the old
// state (idle) counts it idle for less, which only makes the drain wait.
func (m *connMark) set(state http.ConnState, now time.Time) {
	m.since.Store(now.UnixNano())
	m.state.Store(int32(state))
}

// track is the http.Server.ConnState hook. It runs twice per request (the
// connection turns active, then idle): a connection accepted by the
// limiting listener carries its mark, so those cost two atomic stores and
// no map lookup; the map changes once per connection.
func (s *connStates) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateClosed, http.StateHijacked:
		s.conns.Delete(c)
		return
	case http.StateNew:
		m := &connMark{}
		if lc := limitedOf(c); lc != nil {
			m = &lc.mark
		}
		m.set(state, time.Now())
		s.conns.Store(c, m)
		return
	}
	if lc := limitedOf(c); lc != nil {
		lc.mark.set(state, time.Now())
		return
	}
	if v, ok := s.conns.Load(c); ok {
		v.(*connMark).set(state, time.Now())
	}
}

// limitedOf is the limiting listener's connection c is or wraps (the TLS
// listener's connections are *tls.Conn over one), nil when none.
func limitedOf(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

// settling says how long until no keep-alive connection is both idle and
// idle for less than grace, and whether any connection is still settling:
// idle for less than grace, or active since less than grace (a response
// that began before the drain may end any moment, and its connection then
// turns idle without Connection: close).
func (s *connStates) settling(grace time.Duration) (wait time.Duration, found bool) {
	now := time.Now()
	s.conns.Range(func(_, v any) bool {
		m := v.(*connMark)
		state := http.ConnState(m.state.Load())
		age := now.Sub(time.Unix(0, m.since.Load()))
		switch {
		case state == http.StateIdle && age < grace:
			wait, found = max(wait, grace-age), true
		case state == http.StateActive && age < grace:
			wait, found = max(wait, settlePoll), true
		}
		return true
	})
	return min(wait, grace), found
}

// settlePoll is how often the drain looks again at connections that were
// active when it looked.
const settlePoll = 10 * time.Millisecond

// waitIdleGrace returns once no keep-alive connection has been idle for
// less than grace, nor turned active less than grace ago — so that
// closing the idle ones then does not cut a request a client had just
// sent — or once ctx ends, and in any case after twice grace: new
// connections keep arriving until the listener closes, and must not hold
// the drain. Every response since the drain began says Connection: close,
// so only responses that began before it leave connections idle anew.
func (s *connStates) waitIdleGrace(ctx context.Context, grace time.Duration) {
	if grace <= 0 {
		return
	}
	limit := time.NewTimer(2 * grace)
	defer limit.Stop()
	for {
		wait, found := s.settling(grace)
		if !found {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-limit.C:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
