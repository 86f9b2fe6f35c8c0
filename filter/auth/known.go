package auth

import (
	"sync"
	"sync/atomic"
	"time"
)

// knownTokens remembers, per token, the identity its last successful
// lookup gave and when. It serves two purposes, both so that trouble with
// the store never locks out users it knew a moment ago:
//   - stale_if_error: while the store is slow, broken or its breaker open,
//     a known token is served the identity last confirmed, for at most
//     maxStale (and never past the token's own TTL);
//   - lookups of tokens it does not know (a flood of random ones) take a
//     separate, bounded budget, so they cannot delay known users.
//
// Only found tokens enter it (a random-token flood adds nothing); a token
// the store says is gone leaves it at once (revocation is seen whenever
// the store answers). It holds at most limit tokens; when full, entries
// older than keep are swept (at most once per sweepEvery), and a new token
// that still does not fit is simply not remembered.
type knownTokens struct {
	maxStale time.Duration // 0: never served stale (fail closed)
	keep     time.Duration // how long an unconfirmed token stays known
	limit    int64

	m         sync.Map // token → *knownToken
	n         atomic.Int64
	lastSweep atomic.Int64 // UnixNano
	sweeping  sync.Mutex
}

// knownToken is one remembered token.
type knownToken struct {
	id        atomic.Pointer[identity]
	confirmed atomic.Int64 // UnixNano of the last lookup that found it
	expires   atomic.Int64 // UnixNano when its TTL ends; 0: no TTL
}

// confirmRefresh: a hot token's confirmation time is rewritten at most this
// often (one shared cache line per token, written by every core otherwise).
const (
	confirmRefresh = 100 * time.Millisecond
	sweepEvery     = 10 * time.Second
)

// get returns the remembered token, or nil.
func (k *knownTokens) get(token string) *knownToken {
	if v, ok := k.m.Load(token); ok {
		return v.(*knownToken)
	}
	return nil
}

// confirm records that the store found token (kt: its entry, or nil) with
// identity id and remaining TTL pttl (-1: none) at now.
func (k *knownTokens) confirm(kt *knownToken, token string, id *identity, pttl time.Duration, now time.Time) {
	ns := now.UnixNano()
	var expires int64
	if pttl >= 0 {
		expires = ns + int64(pttl)
	}
	if kt != nil {
		if kt.id.Load() != id {
			kt.id.Store(id)
		}
		if ns-kt.confirmed.Load() >= int64(confirmRefresh) {
			kt.confirmed.Store(ns)
			kt.expires.Store(expires)
		}
		return
	}
	if k.n.Load() >= k.limit && !k.sweep(ns) {
		return
	}
	kt = &knownToken{}
	kt.id.Store(id)
	kt.confirmed.Store(ns)
	kt.expires.Store(expires)
	if _, loaded := k.m.LoadOrStore(token, kt); !loaded {
		k.n.Add(1)
	}
}

// forget drops token: the store says it does not exist (revoked, expired).
func (k *knownTokens) forget(kt *knownToken, token string) {
	if kt != nil {
		if _, loaded := k.m.LoadAndDelete(token); loaded {
			k.n.Add(-1)
		}
	}
}

// stale returns the identity to serve kt's token while the store cannot
// answer, or nil when it may not be served (unknown, confirmed too long
// ago, past its TTL, or stale_if_error is 0).
func (k *knownTokens) stale(kt *knownToken, now time.Time) *identity {
	if kt == nil || k.maxStale <= 0 {
		return nil
	}
	ns := now.UnixNano()
	if ns-kt.confirmed.Load() > int64(k.maxStale) {
		return nil
	}
	if exp := kt.expires.Load(); exp != 0 && ns >= exp {
		return nil
	}
	return kt.id.Load()
}

// sweep removes tokens not confirmed within keep, at most once per
// sweepEvery; it reports whether there is room now.
func (k *knownTokens) sweep(ns int64) bool {
	if ns-k.lastSweep.Load() < int64(sweepEvery) || !k.sweeping.TryLock() {
		return k.n.Load() < k.limit
	}
	defer k.sweeping.Unlock()
	k.lastSweep.Store(ns)
	k.m.Range(func(key, v any) bool {
		kt := v.(*knownToken)
		if ns-kt.confirmed.Load() > int64(k.keep) {
			if _, loaded := k.m.LoadAndDelete(key); loaded {
				k.n.Add(-1)
			}
		}
		return true
	})
	return k.n.Load() < k.limit
}

// size is how many tokens are remembered.
func (k *knownTokens) size() int64 { return k.n.Load() }
