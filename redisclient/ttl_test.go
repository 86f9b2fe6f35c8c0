package redisclient

import (
	"testing"
	"time"
)

func TestRemainingTTL(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	const cacheTTL = 30 * time.Second
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name        string
		reply, pxat int64
		want        time.Duration
		ok          bool
	}{
		{"no key", -2, -1, 0, false},
		{"no TTL", -1, now.UnixMilli() + 30_000, -1, true},
		{"fresh, not cached", 5000, -1, ms(5000), true},
		// Fetched 10s ago with 1h left: the entry expires at fetch+30s.
		{"cached, longer than the cache TTL", 3_600_000, now.UnixMilli() + 20_000, ms(3_600_000 - 10_000), true},
		// Fetched 2s ago with 5s left: the entry expires with the key.
		{"cached, shorter than the cache TTL", 5000, now.UnixMilli() + 3000, ms(3000), true},
		{"cached, key expired since", 5000, now.UnixMilli() - 1, 0, true},
	} {
		got, ok := remainingTTL(c.reply, c.pxat, cacheTTL, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: remainingTTL(%d, %d) = %s, %v; want %s, %v", c.name, c.reply, c.pxat, got, ok, c.want, c.ok)
		}
	}
}
