package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Bounds of the renewal machinery of one Filter.
const (
	renewWorkers    = 2
	renewQueueSize  = 1024
	maxRecentTokens = 100_000
)

// renewer extends the TTL of tokens running low, off the request path: a
// request only records that its token wants renewing (at most once per
// token per interval, across concurrent requests) and queues it; a few
// workers run the renewals. Nothing here blocks a request.
type renewer struct {
	store                       Store
	threshold, window, interval time.Duration
	timeout                     time.Duration // of one renewal
	m                           *filterMetrics
	log                         *slog.Logger

	queue chan string

	mu        sync.RWMutex
	recent    map[string]int64 // token → UnixNano it was last queued
	nextPurge int64            // UnixNano before which purging frees nothing

	ctx    context.Context // canceled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRenewer(store Store, threshold, window, interval, timeout time.Duration, m *filterMetrics, log *slog.Logger) *renewer {
	r := &renewer{
		store: store, threshold: threshold, window: window, interval: interval, timeout: timeout,
		m: m, log: log,
		queue:  make(chan string, renewQueueSize),
		recent: make(map[string]int64),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for range renewWorkers {
		r.wg.Go(r.work)
	}
	r.wg.Go(r.purgeEvery)
	return r
}

// request asks for token to be renewed; now is the request's time.
func (r *renewer) request(token string, now time.Time) {
	t := now.UnixNano()
	r.mu.RLock()
	last, seen := r.recent[token]
	r.mu.RUnlock()
	if seen && t-last < int64(r.interval) {
		r.m.renewals[renewDeduplicated].Inc()
		return
	}

	r.mu.Lock()
	if last, seen := r.recent[token]; seen && t-last < int64(r.interval) {
		r.mu.Unlock()
		r.m.renewals[renewDeduplicated].Inc()
		return
	}
	if len(r.recent) >= maxRecentTokens && !r.purgeLocked(t) {
		r.mu.Unlock()
		r.m.renewals[renewDropped].Inc()
		return
	}
	token = strings.Clone(token) // not the request's header memory
	r.recent[token] = t
	r.m.renewTracked.Set(float64(len(r.recent)))
	r.mu.Unlock()

	r.m.renewQueue.Inc()
	select {
	case r.queue <- token:
	default:
		r.m.renewQueue.Dec()
		r.m.renewals[renewDropped].Inc()
		r.mu.Lock()
		delete(r.recent, token) // a later request may try again
		r.m.renewTracked.Set(float64(len(r.recent)))
		r.mu.Unlock()
	}
}

// purgeLocked forgets tokens queued more than an interval ago and reports
// whether there is room again. It scans only when that can free something.
func (r *renewer) purgeLocked(now int64) bool {
	if now < r.nextPurge {
		return len(r.recent) < maxRecentTokens
	}
	oldest := now
	for tok, t := range r.recent {
		if now-t >= int64(r.interval) {
			delete(r.recent, tok)
		} else if t < oldest {
			oldest = t
		}
	}
	r.nextPurge = oldest + int64(r.interval)
	r.m.renewTracked.Set(float64(len(r.recent)))
	return len(r.recent) < maxRecentTokens
}

// purgeEvery forgets old entries each interval, so that tokens no longer
// used do not stay in memory.
func (r *renewer) purgeEvery() {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-tick.C:
			r.mu.Lock()
			r.purgeLocked(now.UnixNano())
			r.mu.Unlock()
		}
	}
}

func (r *renewer) work() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case token := <-r.queue:
			r.m.renewQueue.Dec()
			r.renew(token)
		}
	}
}

func (r *renewer) renew(token string) {
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	renewed, err := r.store.Renew(ctx, token, r.threshold, r.window)
	switch {
	case err != nil:
		r.m.renewals[renewError].Inc()
		r.log.Debug("token renewal failed", "error", err)
	case renewed:
		r.m.renewals[renewRenewed].Inc()
	default:
		r.m.renewals[renewNotNeeded].Inc()
	}
}

// close stops the workers; queued renewals are dropped.
func (r *renewer) close() {
	r.cancel()
	r.wg.Wait()
	r.m.renewQueue.Sub(float64(len(r.queue)))
}
