package redisclient_test

import (
	"context"
	"strconv"
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

// BenchmarkGetMiss is Client.Get of keys the client-side cache does not
// hold yet (each iteration a key never read before): the lookups of a
// cold cache, or of tokens seen for the first time.
func BenchmarkGetMiss(b *testing.B) {
	addr := testenv.RedisAddr(b)
	c, _ := newClient(b, config.Redis{Address: addr}, true)
	raw := rawClient(b, addr)
	ctx := context.Background()
	prefix := keyPrefix(b) + "miss:"
	const keys = 20000
	cmds := make(rueidis.Commands, 0, keys)
	for i := range keys {
		cmds = append(cmds, raw.B().Set().Key(prefix+strconv.Itoa(i)).Value(`{"userId":"u"}`).Px(time.Hour).Build())
	}
	for _, r := range raw.DoMulti(ctx, cmds...) {
		must(b, r)
	}
	b.Cleanup(func() {
		del := make(rueidis.Commands, 0, keys)
		for i := range keys {
			del = append(del, raw.B().Del().Key(prefix+strconv.Itoa(i)).Build())
		}
		raw.DoMulti(context.Background(), del...)
	})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == keys {
			b.Fatalf("more than %d iterations: run with -benchtime=%dx or fewer", keys, keys)
		}
		if _, _, found, err := c.Get(ctx, prefix+strconv.Itoa(i)); !found || err != nil {
			b.Fatalf("Get: %v %v", found, err)
		}
		i++
	}
}
