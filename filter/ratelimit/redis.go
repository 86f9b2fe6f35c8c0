package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/redis/rueidis"
)

// gcraScript is the distributed limit: the same GCRA as the local buckets,
// on Redis's clock so that gateway instances need not agree on time.
//
// KEYS[1] holds the TAT in microseconds. ARGV: emission interval in
// microseconds (may be fractional), burst, TTL of the key in milliseconds
// (interval × burst: past it the bucket is full, the same as no key).
// Reply: {allowed 0/1, remaining, retry after ms, reset ms}.
//
// Times near 1.7e15 µs are exact in a double to 0.25 µs; tolerance absorbs
// that rounding at the edges (an interval of 1e6/7 µs would otherwise lose
// a request of the burst). Redis writes a number argument with all its
// digits.
const gcraScript = `local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local limit = interval * burst
local tolerance = 0.5
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then
  tat = now
end
local next_tat = tat + interval
local ahead = next_tat - now
if ahead > limit + tolerance then
  return {0, 0, math.ceil((ahead - limit) / 1000), math.ceil((tat - now) / 1000)}
end
redis.call('SET', KEYS[1], next_tat, 'PX', ARGV[3])
return {1, math.floor((limit - ahead + tolerance) / interval), 0, math.ceil(ahead / 1000)}
`

// decideRedis asks Redis for the decision on key, waiting at most
// f.timeout (less when the request's own deadline is nearer).
// An error comes with the reason the local limit must answer instead.
func (f *Filter) decideRedis(ctx context.Context, key bucketKey) (decision, int, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	reply, err := f.redis.EvalInts(ctx, gcraScript, []string{f.redisKeyOf(key)}, f.scriptArgs)
	if err != nil {
		return decision{}, fallbackReason(err), fmt.Errorf("running the rate limit script: %w", err)
	}
	if len(reply) != 4 || reply[0] < 0 || reply[0] > 1 || reply[1] < 0 || reply[2] < 0 || reply[3] < 0 {
		return decision{}, reasonBadReply, fmt.Errorf("rate limit script replied %v, want {allowed, remaining, retry ms, reset ms}", reply)
	}
	return decision{
		allowed:    reply[0] == 1,
		remaining:  reply[1],
		retryAfter: time.Duration(reply[2]) * time.Millisecond,
		reset:      time.Duration(reply[3]) * time.Millisecond,
	}, 0, nil
}

// redisKeyOf is the Redis key of a bucket: "ratelimit:<route>:" and then
// "ip:<address>", "user:<id>", "h:<header value>", "header-missing" or
// "route". An address that could not be known is "ip:unknown".
func (f *Filter) redisKeyOf(k bucketKey) string {
	switch f.kind {
	case keyRoute:
		return f.redisKey + "route"
	case keyHeader:
		if k.name == "" {
			return f.redisKey + "header-missing"
		}
		return f.redisKey + "h:" + k.name
	case keyUser:
		if k.name != "" {
			return f.redisKey + "user:" + k.name
		}
	}
	if !k.addr.IsValid() {
		return f.redisKey + "ip:unknown"
	}
	return f.redisKey + "ip:" + k.addr.String()
}

// fallbackReason classifies why Redis did not decide.
func fallbackReason(err error) int {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return reasonTimeout
	case errors.Is(err, context.Canceled):
		return reasonCanceled
	}
	if re, ok := errors.AsType[*rueidis.RedisError](err); ok && !re.IsNil() {
		return reasonRedisError
	}
	return reasonError
}

// noteFallback counts a decision the local limit made for Redis and logs a
// warning at most every fallbackLogEvery, with how many went unlogged.
func (f *Filter) noteFallback(reason int, err error, now int64) {
	f.fallbacks[reason].Inc()
	f.unlogged.Add(1)
	last := f.lastFallbackLog.Load()
	if last != math.MinInt64 && now-last < int64(fallbackLogEvery) {
		return
	}
	if !f.lastFallbackLog.CompareAndSwap(last, now) {
		return
	}
	f.log.Warn("Redis did not decide in time: the local limit answers",
		"reason", reasonNames[reason], "fallbacks", f.unlogged.Swap(0), "err", err)
}
