package redisclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// BenchmarkGetCached compares Client.Get answered from the client-side
// cache with the bare rueidis DoCache it is built on (GET alone, and the
// GET and PTTL Get reads), on a client with the same options, in one run.
// The context is a canceler like a request's.
func BenchmarkGetCached(b *testing.B) {
	addr := testenv.RedisAddr(b)
	c, _ := newClient(b, config.Redis{Address: addr}, true)
	raw := rawClient(b, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := keyPrefix(b) + "token"
	must(b, raw.Do(ctx, raw.B().Set().Key(key).Value(`{"userId":"u-123456","tenant":"t1","roles":"admin"}`).Px(time.Hour).Build()))
	b.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(key).Build()) })

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
		PipelineMultiplex: 1, CacheSizeEachConn: 64 << 20, DisableRetry: true, AlwaysPipelining: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	const ttl = 30 * time.Second
	get := func() {
		if _, _, found, err := c.Get(ctx, key); !found || err != nil {
			b.Fatalf("Get: %v %v", found, err)
		}
	}
	rawGet := func() {
		if _, err := rc.DoCache(ctx, rc.B().Get().Key(key).Cache(), ttl).ToString(); err != nil {
			b.Fatal(err)
		}
	}
	rawGetPTTL := func() {
		rawGet()
		if _, err := rc.DoCache(ctx, rc.B().Pttl().Key(key).Cache(), ttl).ToInt64(); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 { // fill both connections' caches
		get()
		rawGetPTTL()
	}
	for _, bm := range []struct {
		name string
		fn   func()
	}{{"rueidis_DoCache_GET", rawGet}, {"rueidis_DoCache_GET_PTTL", rawGetPTTL}, {"Client_Get", get}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bm.fn()
			}
		})
		b.Run(bm.name+"_parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bm.fn()
				}
			})
		})
	}
}
