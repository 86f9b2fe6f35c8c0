package redisclient

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/rueidis"
)

// Get returns the string value of key and its remaining TTL as Redis
// reports it (-1 when the key has none). found is false, with a nil error,
// when the key does not exist.
//
// With the client-side cache on, GET and PTTL are answered from the cache
// while Redis has not invalidated key (it does on any change, expiry or
// deletion, through CLIENT TRACKING); the cache entry's age is taken off
// the cached PTTL, so pttl is the key's real TTL, not the cache's.
func (c *Client) Get(ctx context.Context, key string) (value string, pttl time.Duration, found bool, err error) {
	return c.GetWithin(ctx, key, 0)
}

// GetWithin is Get with a deadline of at most timeout from now (0 or more
// than the client's timeout: the client's). Unlike a context.WithTimeout
// around Get, a shorter timeout costs nothing on a cache hit: the timer is
// only started when the command goes to Redis.
func (c *Client) GetWithin(ctx context.Context, key string, timeout time.Duration) (value string, pttl time.Duration, found bool, err error) {
	if c.tracer != nil {
		return c.getTraced(ctx, key, timeout)
	}
	value, pttl, found, _, err = c.getValue(ctx, key, timeout)
	return value, pttl, found, err
}

// getValue is GetWithin, telling also whether the client-side cache answered.
func (c *Client) getValue(ctx context.Context, key string, timeout time.Duration) (value string, pttl time.Duration, found, cacheHit bool, err error) {
	cl, err := c.begin(ctx, c.get, timeout)
	if err != nil {
		return "", 0, false, false, err
	}
	if c.cacheTTL > 0 {
		value, pttl, cacheHit, err = c.getCached(cl.ctx, cl.rc, key, cl.start)
	} else {
		value, pttl, err = getDirect(cl.ctx, cl.rc, key)
	}
	r, err := c.finish(&cl, err)
	if r != resultOK {
		return "", 0, false, cacheHit, err
	}
	return value, pttl, true, cacheHit, nil
}

func (c *Client) getCached(ctx context.Context, rc rueidis.Client, key string, now time.Time) (string, time.Duration, bool, error) {
	// GET and PTTL in one call: on a miss, both go to Redis in one round
	// trip (pipelined); on a hit, both come from the local cache.
	resps := rc.DoMultiCache(ctx,
		rueidis.CT(rc.B().Get().Key(key).Cache(), c.cacheTTL),
		rueidis.CT(rc.B().Pttl().Key(key).Cache(), c.cacheTTL))
	resp, ttl := resps[0], resps[1]
	if err := resp.NonRedisError(); err != nil {
		return "", 0, false, err
	}
	hit := resp.IsCacheHit()
	if hit {
		c.metrics.cacheHits.Inc()
	} else {
		c.metrics.cacheMisses.Inc()
	}
	value, err := resp.ToString()
	if err != nil {
		return "", 0, hit, err // rueidis.Nil when there is no such key
	}
	ms, err := ttl.ToInt64()
	if err != nil {
		return "", 0, hit, err
	}
	pttl, ok := remainingTTL(ms, ttl.CachePXAT(), c.cacheTTL, now)
	if !ok {
		return "", 0, hit, rueidis.Nil
	}
	return value, pttl, hit, nil
}

func getDirect(ctx context.Context, rc rueidis.Client, key string) (string, time.Duration, error) {
	resps := rc.DoMulti(ctx, rc.B().Get().Key(key).Build(), rc.B().Pttl().Key(key).Build())
	value, err := resps[0].ToString()
	if err != nil {
		return "", 0, err
	}
	ms, err := resps[1].ToInt64()
	if err != nil {
		return "", 0, err
	}
	pttl, ok := remainingTTL(ms, -1, 0, time.Time{})
	if !ok {
		return "", 0, rueidis.Nil
	}
	return value, pttl, nil
}

// remainingTTL turns a PTTL reply (milliseconds; -1 no TTL, -2 no key)
// into the key's TTL now; ok is false when the key does not exist. A
// cached reply is as old as its cache entry: rueidis set the entry to
// expire (pxat, Unix ms; -1 when not cached) at the fetch time plus the
// smaller of the reply and the cache TTL, which gives the fetch time back.
func remainingTTL(reply, pxat int64, cacheTTL time.Duration, now time.Time) (pttl time.Duration, ok bool) {
	switch {
	case reply == -2:
		return 0, false
	case reply < 0:
		return -1, true
	case pxat <= 0:
		return time.Duration(reply) * time.Millisecond, true
	}
	fetched := pxat - min(reply, cacheTTL.Milliseconds())
	left := max(fetched+reply-now.UnixMilli(), 0)
	return time.Duration(left) * time.Millisecond, true
}

// EvalInts runs a Lua script that returns an array of integers: EVALSHA,
// and EVAL (which also loads it) when Redis does not know the script. The
// SHA1 of each script text is computed once.
func (c *Client) EvalInts(ctx context.Context, script string, keys, args []string) ([]int64, error) {
	sha := c.scripts.get(script, sha1Hex)
	cl, err := c.begin(ctx, c.evalsha, 0)
	if err != nil {
		return nil, err
	}
	rc := cl.rc
	resp := rc.Do(cl.ctx, rc.B().Evalsha().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	if rerr, ok := rueidis.IsRedisErr(resp.Error()); ok && rerr.IsNoScript() {
		resp = rc.Do(cl.ctx, rc.B().Eval().Script(script).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	if _, err := c.finish(&cl, resp.Error()); err != nil {
		return nil, err
	}
	ints, err := resp.AsIntSlice()
	if err != nil {
		return nil, fmt.Errorf("redis evalsha: want an array of integers: %w", err)
	}
	return ints, nil
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Do runs the command build makes, with the same deadline, pending bound,
// breaker and metrics as Get; name labels its metrics (keep the set of
// names small and fixed: beyond 64 names they are counted as "other").
// Errors that never reached Redis come back as the result's error; Redis
// replies, including error replies and nil, come back as they are.
func (c *Client) Do(ctx context.Context, name string, build func(b rueidis.Builder) rueidis.Completed) rueidis.RedisResult {
	rc := c.rc.Load()
	var cmd rueidis.Completed
	if rc != nil {
		cmd = build(rc.B()) // before begin: a panicking build holds no pending slot
	}
	cl, err := c.begin(ctx, c.commandMetrics(name), 0)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	resp := cl.rc.Do(cl.ctx, cmd)
	switch r, err := c.finish(&cl, resp.Error()); r {
	case resultOK, resultNil, resultRedis:
		return resp
	default:
		return rueidis.NewErrorResult(err)
	}
}

func (c *Client) commandMetrics(name string) *commandMetrics {
	if v, ok := c.commands.m.Load(name); ok {
		return v.(*commandMetrics)
	}
	if c.commands.n.Load() >= c.commands.limit {
		name = "other"
	}
	return c.commands.get(name, c.metrics.command)
}

// call is one command between begin and finish.
type call struct {
	ctx    context.Context  // the command's: the caller's, or deadline
	dl     *deadlineContext // the client's deadline, when sooner than the caller's; nil otherwise
	caller context.Context
	rc     rueidis.Client
	m      *commandMetrics
	start  time.Time
	probe  bool // the breaker's half-open probe
}

// begin admits a command: connected, breaker closed (or this is its probe),
// a deadline, and a pending slot waited for at most until the deadline.
// On error the command is over (counted) and must not call finish.
func (c *Client) begin(ctx context.Context, m *commandMetrics, timeout time.Duration) (call, error) {
	if timeout <= 0 || timeout > c.timeout {
		timeout = c.timeout
	}
	cl := call{caller: ctx, m: m, start: time.Now()}
	rc := c.rc.Load()
	if rc == nil || c.closed.Load() {
		return cl, c.fail(&cl, resultUnavailable, ErrUnavailable)
	}
	if err := ctx.Err(); err != nil {
		return cl, c.fail(&cl, contextResult(err), err)
	}
	ok, probe := c.breaker.allow(cl.start)
	if !ok {
		return cl, c.fail(&cl, resultBreakerOpen, ErrBreakerOpen)
	}
	cl.rc, cl.probe, cl.ctx = rc.Client, probe, ctx
	if d, has := ctx.Deadline(); !has || d.Sub(cl.start) > timeout {
		cl.dl = newDeadlineContext(ctx, cl.start.Add(timeout))
		cl.ctx = cl.dl
	}
	if err := c.acquire(cl.ctx); err != nil {
		c.breaker.abandoned(probe)
		if cl.dl != nil {
			cl.dl.stop()
		}
		if ctx.Err() == context.Canceled {
			return cl, c.fail(&cl, resultCanceled, ctx.Err())
		}
		return cl, c.fail(&cl, resultOverloaded, ErrOverloaded)
	}
	c.metrics.pending.Inc()
	return cl, nil
}

// acquire takes a pending slot, waiting at most until ctx is done.
func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	select {
	case c.sem <- struct{}{}:
		c.metrics.pendingWait.Observe(time.Since(start).Seconds())
		return nil
	case <-ctx.Done():
		c.metrics.pendingWait.Observe(time.Since(start).Seconds())
		return ctx.Err()
	}
}

// finish ends an admitted command whose outcome is err (nil, rueidis.Nil,
// a Redis error reply or a failure): it frees the slot, counts, tells the
// breaker, and returns the result and the error for the caller (nil for
// ok and nil results).
func (c *Client) finish(cl *call, err error) (result, error) {
	<-c.sem
	c.metrics.pending.Dec()
	if cl.dl != nil {
		cl.dl.stop()
	}
	now := time.Now()
	r := c.classify(cl, err)
	cl.m.duration[r].Observe(now.Sub(cl.start).Seconds())
	switch r {
	case resultOK, resultNil:
		c.breaker.succeeded(cl.probe)
		c.setConnected(true)
		return r, nil
	case resultRedis:
		c.breaker.succeeded(cl.probe)
		c.setConnected(true)
	case resultTimeout, resultLate:
		if r == resultTimeout {
			c.breaker.failed(cl.probe, now)
		} else {
			c.breaker.abandoned(cl.probe)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
	case resultConnection:
		c.breaker.failed(cl.probe, now)
		c.setConnected(false)
	default: // canceled by the caller, or closed: says nothing about Redis
		c.breaker.abandoned(cl.probe)
	}
	c.metrics.errorsByResult[r].Inc()
	return r, fmt.Errorf("redis %s: %w", cl.m.name, err)
}

// fail counts a command that ended before reaching Redis.
func (c *Client) fail(cl *call, r result, err error) error {
	cl.m.duration[r].Observe(time.Since(cl.start).Seconds())
	c.metrics.errorsByResult[r].Inc()
	return fmt.Errorf("redis %s: %w", cl.m.name, err)
}

func (c *Client) classify(cl *call, err error) result {
	if err == nil {
		return resultOK
	}
	if rueidis.IsRedisNil(err) {
		return resultNil
	}
	if _, ok := rueidis.IsRedisErr(err); ok {
		return resultRedis
	}
	if errors.Is(err, context.Canceled) && cl.caller.Err() != nil {
		return resultCanceled
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		if !c.silentSince(cl.start) {
			return resultLate // Redis kept answering: this caller was late, Redis was not
		}
		return resultTimeout
	}
	if errors.Is(err, rueidis.ErrClosing) && c.closed.Load() {
		return resultUnavailable
	}
	return resultConnection
}

func contextResult(err error) result {
	if errors.Is(err, context.DeadlineExceeded) {
		return resultTimeout
	}
	return resultCanceled
}
