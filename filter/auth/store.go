package auth

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dubbogw/dubbogw/redisclient"
)

// Store holds tokens: each maps to a JSON value and may expire.
type Store interface {
	// Lookup returns token's JSON value and its remaining TTL (-1 when it
	// has none); found is false, with no error, when the token is unknown
	// or expired. It gives up after the filter's timeout (a store that
	// goes over the network bounds the call itself).
	Lookup(ctx context.Context, token string) (value string, pttl time.Duration, found bool, err error)
	// Renew sets token's TTL to window if it is below threshold now (a
	// token without TTL is left alone), and reports whether it did.
	Renew(ctx context.Context, token string, threshold, window time.Duration) (renewed bool, err error)
}

// redisStore keeps tokens in Redis under prefix+token, shared by every
// gateway instance; lookups go through the client-side cache.
type redisStore struct {
	client  *redisclient.Client
	prefix  string
	timeout time.Duration // the filter's lookup timeout
}

func (s *redisStore) Lookup(ctx context.Context, token string) (string, time.Duration, bool, error) {
	return s.client.GetWithin(ctx, s.prefix+token, s.timeout)
}

// renewScript extends a key's TTL only while it is below the threshold, so
// that any number of gateway instances renewing the same token at once
// extend it once (ARGV: threshold and window in milliseconds). It returns
// {1 if renewed else 0, the PTTL it saw}.
const renewScript = `local pttl = redis.call('PTTL', KEYS[1])
if pttl >= 0 and pttl < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, pttl}
end
return {0, pttl}`

func (s *redisStore) Renew(ctx context.Context, token string, threshold, window time.Duration) (bool, error) {
	res, err := s.client.EvalInts(ctx, renewScript, []string{s.prefix + token},
		[]string{strconv.FormatInt(threshold.Milliseconds(), 10), strconv.FormatInt(window.Milliseconds(), 10)})
	if err != nil {
		return false, fmt.Errorf("renewing a token: %w", err)
	}
	if len(res) != 2 {
		return false, fmt.Errorf("renewing a token: the script answered %v", res)
	}
	return res[0] == 1, nil
}

// memoryStore keeps the tokens of the configuration in memory (the
// quickstart, tests), with TTLs that behave as Redis's would.
type memoryStore struct {
	tokens map[string]*memoryToken // read-only after newMemoryStore
}

type memoryToken struct {
	value     string
	expiresAt atomic.Int64 // UnixNano; 0 = never
}

// newMemoryStore holds tokens (token → JSON value); each expires after ttl
// from now unless renewed, or never when ttl is 0.
func newMemoryStore(tokens map[string]string, ttl time.Duration) *memoryStore {
	s := &memoryStore{tokens: make(map[string]*memoryToken, len(tokens))}
	now := time.Now()
	for tok, v := range tokens {
		t := &memoryToken{value: v}
		if ttl > 0 {
			t.expiresAt.Store(now.Add(ttl).UnixNano())
		}
		s.tokens[tok] = t
	}
	return s
}

func (s *memoryStore) Lookup(_ context.Context, token string) (string, time.Duration, bool, error) {
	t := s.tokens[token]
	if t == nil {
		return "", 0, false, nil
	}
	exp := t.expiresAt.Load()
	if exp == 0 {
		return t.value, -1, true, nil
	}
	left := time.Duration(exp - time.Now().UnixNano())
	if left <= 0 {
		return "", 0, false, nil
	}
	return t.value, left.Truncate(time.Millisecond), true, nil
}

func (s *memoryStore) Renew(_ context.Context, token string, threshold, window time.Duration) (bool, error) {
	t := s.tokens[token]
	if t == nil {
		return false, nil
	}
	for {
		exp := t.expiresAt.Load()
		now := time.Now().UnixNano()
		left := exp - now
		if exp == 0 || left <= 0 || left >= int64(threshold) {
			return false, nil // no TTL, expired (gone, as in Redis), or not low yet
		}
		if t.expiresAt.CompareAndSwap(exp, now+int64(window)) {
			return true, nil
		}
	}
}
