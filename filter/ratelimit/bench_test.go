package ratelimit_test

import (
	"context"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/filter/ratelimit"
)

// discardWriter is a ResponseWriter that keeps one header map, so that a
// benchmark measures the filter, not a recorder.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// neverLimited is a limit no benchmark reaches: a million a second and a
// burst of a billion.
var neverLimited = ratelimit.Config{Rate: 1000000, Burst: 1000000000}

func BenchmarkLocalDecision(b *testing.B) {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	clients := make([]*http.Request, 1024)
	a := netip.MustParseAddr("10.0.0.0")
	for i := range clients {
		a = a.Next()
		clients[i], _ = request(context.Background(), a.String(), "")
	}
	run := func(b *testing.B, h http.Handler, requests []*http.Request) {
		w := &discardWriter{header: make(http.Header)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			h.ServeHTTP(w, requests[i%len(requests)])
			i++
		}
	}
	b.Run("baseline_next_only", func(b *testing.B) { run(b, noop, clients[:1]) })
	b.Run("one_client", func(b *testing.B) {
		run(b, newFilter(b, neverLimited, ratelimit.Deps{Route: "r"}).Wrap(noop), clients[:1])
	})
	b.Run("1024_clients", func(b *testing.B) {
		run(b, newFilter(b, neverLimited, ratelimit.Deps{Route: "r"}).Wrap(noop), clients)
	})
	b.Run("1024_clients_max_keys_512", func(b *testing.B) {
		cfg := neverLimited
		cfg.MaxKeys = 512 // every request evicts
		run(b, newFilter(b, cfg, ratelimit.Deps{Route: "r"}).Wrap(noop), clients)
	})
	b.Run("1024_clients_parallel", func(b *testing.B) {
		cfg := neverLimited
		cfg.MaxKeys = 2048 // sharded
		h := newFilter(b, cfg, ratelimit.Deps{Route: "r"}).Wrap(noop)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			w := &discardWriter{header: make(http.Header)}
			i := 0
			for pb.Next() {
				h.ServeHTTP(w, clients[i%len(clients)])
				i++
			}
		})
	})
}

// BenchmarkDistributedDecision compares a distributed decision with a
// Redis PING through the same client, in the same run.
func BenchmarkDistributedDecision(b *testing.B) {
	s := newScripter(b, redisAddr(b))
	route := uniqueRoute(b, s)
	h := newFilter(b, ratelimit.Config{Rate: 1000000, Burst: 1000000000, Distributed: true},
		ratelimit.Deps{Route: route, Redis: s}).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r, _ := request(context.Background(), "192.0.2.1", "")
	b.Run("redis_ping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			if err := s.client.Do(ctx, s.client.B().Ping().Build()).Error(); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
	})
	b.Run("decision", func(b *testing.B) {
		w := &discardWriter{header: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	})
}
