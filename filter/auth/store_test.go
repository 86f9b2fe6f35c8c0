package auth

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/redisclient"
)

// The renewal script extends a low TTL once, however many instances run
// it, and leaves alone a TTL above the threshold, a key without TTL and a
// missing key.
func TestRedisStoreRenew(t *testing.T) {
	addr := testenv.RedisAddr(t)
	rc, err := redisclient.New(config.Redis{Address: addr, Timeout: config.Duration(5 * time.Second)}, prometheus.NewRegistry(), nil) // a functional test: no 50 ms deadline to race
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	prefix := "dubbogw-test:TestRedisStoreRenew:" + time.Now().Format(time.RFC3339Nano) + ":"
	s := &redisStore{client: rc, prefix: prefix}
	set := func(tok string, ttl time.Duration) {
		t.Helper()
		err := rc.Do(ctx, "set", func(b rueidis.Builder) rueidis.Completed {
			if ttl == 0 {
				return b.Set().Key(prefix + tok).Value("v").Build()
			}
			return b.Set().Key(prefix + tok).Value("v").Px(ttl).Build()
		}).Error()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			rc.Do(context.Background(), "del", func(b rueidis.Builder) rueidis.Completed { return b.Del().Key(prefix + tok).Build() })
		})
	}
	set("low", time.Minute)
	set("high", 3*time.Hour)
	set("forever", 0)
	for i, want := range []bool{true, false} { // the second instance finds it renewed
		renewed, err := s.Renew(ctx, "low", time.Hour, 2*time.Hour)
		if err != nil || renewed != want {
			t.Errorf("low #%d: renewed %v, %v; want %v", i, renewed, err, want)
		}
	}
	if _, ttl, _, _ := s.Lookup(ctx, "low"); ttl < 2*time.Hour-time.Minute {
		t.Errorf("renewed TTL %s", ttl)
	}
	for _, tok := range []string{"high", "forever", "missing"} {
		if renewed, err := s.Renew(ctx, tok, time.Hour, 2*time.Hour); renewed || err != nil {
			t.Errorf("%s: renewed %v, %v", tok, renewed, err)
		}
	}
	if _, ttl, _, _ := s.Lookup(ctx, "forever"); ttl != -1 {
		t.Errorf("a token without TTL got one: %s", ttl)
	}
	if _, _, found, _ := s.Lookup(ctx, "missing"); found {
		t.Error("renewing a missing token created it")
	}
}

func TestMemoryStoreTTLs(t *testing.T) {
	s := newMemoryStore(map[string]string{"a": "va", "b": "vb"}, time.Minute)
	ctx := context.Background()
	if v, ttl, found, err := s.Lookup(ctx, "a"); v != "va" || !found || err != nil || ttl <= 59*time.Second || ttl > time.Minute {
		t.Errorf("Lookup a = %q %s %v %v", v, ttl, found, err)
	}
	if _, _, found, _ := s.Lookup(ctx, "c"); found {
		t.Error("unknown token found")
	}
	if renewed, _ := s.Renew(ctx, "a", 30*time.Second, time.Hour); renewed {
		t.Error("renewed above the threshold")
	}
	if renewed, _ := s.Renew(ctx, "a", 2*time.Minute, time.Hour); !renewed {
		t.Error("not renewed below the threshold")
	}
	if _, ttl, _, _ := s.Lookup(ctx, "a"); ttl <= 59*time.Minute {
		t.Errorf("renewed TTL %s", ttl)
	}
	s.tokens["b"].expiresAt.Store(time.Now().Add(-time.Millisecond).UnixNano())
	if _, _, found, _ := s.Lookup(ctx, "b"); found {
		t.Error("expired token found")
	}
	if renewed, _ := s.Renew(ctx, "b", time.Hour, time.Hour); renewed {
		t.Error("an expired token was renewed")
	}
	forever := newMemoryStore(map[string]string{"a": "va"}, 0)
	if _, ttl, found, _ := forever.Lookup(ctx, "a"); !found || ttl != -1 {
		t.Errorf("without sliding: ttl %s", ttl)
	}
}
