package gateway

import (
	"context"
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
		if lc, ok := c.(*limitedConn); ok {
			m = &lc.mark
		}
		m.set(state, time.Now())
		s.conns.Store(c, m)
		return
	}
	if lc, ok := c.(*limitedConn); ok {
		lc.mark.set(state, time.Now())
		return
	}
	if v, ok := s.conns.Load(c); ok {
		v.(*connMark).set(state, time.Now())
	}
}

// youngestIdle says how long the most recently idled keep-alive connection
// has been idle, and whether there is one idle for less than grace.
func (s *connStates) youngestIdle(grace time.Duration) (time.Duration, bool) {
	now := time.Now()
	youngest, found := grace, false
	s.conns.Range(func(_, v any) bool {
		m := v.(*connMark)
		state := http.ConnState(m.state.Load())
		idle := now.Sub(time.Unix(0, m.since.Load()))
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
