package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/auth"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkServeHTTP measures the filter on a valid token answered from
// the client-side cache against the same next handler without the filter,
// in one run.
func BenchmarkServeHTTP(b *testing.B) {
	addr := testenv.RedisAddr(b)
	raw := rawClient(b, addr)
	prefix := uniquePrefix(b)
	const value = `{"userId":"u-123456","tenant":"acme","roles":"admin,ops"}`
	setToken(b, raw, prefix+"cold", value, 5*time.Hour) // above the 4h threshold: no renewal
	setToken(b, raw, prefix+"warm", value, time.Hour)   // below: every request asks, deduplicated
	rc := newRedisClient(b, config.Redis{Address: addr})
	headers := map[string]string{"userId": "X-User-Id", "tenant": "X-Tenant"}

	var sink string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vs := r.Header["X-User-Id"]; len(vs) > 0 {
			sink = vs[0]
		}
	})
	filtered := func(cfg auth.Config) http.Handler {
		f, err := auth.New(&cfg, auth.Deps{Redis: rc, Route: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(f.Close)
		return f.Wrap(next)
	}
	request := func(token string) *http.Request {
		// The request context is a canceler, as net/http's is.
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		r := httptest.NewRequest("GET", "/orders/1", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r.WithContext(exchange.WithInfo(ctx, &exchange.Info{Route: "bench"}))
	}
	for _, bm := range []struct {
		name string
		h    http.Handler
		r    *http.Request
	}{
		{"next_alone", next, request("cold")},
		{"redis_cached", filtered(auth.Config{KeyPrefix: prefix, Headers: headers}), request("cold")},
		{"redis_cached_renewal_deduplicated", filtered(auth.Config{KeyPrefix: prefix, Headers: headers}), request("warm")},
		{"memory", filtered(auth.Config{Store: "memory", Tokens: map[string]string{"cold": value}, Headers: headers}), request("cold")},
	} {
		w := &discardWriter{h: http.Header{}}
		for range 10 { // fill the client-side cache of both connections
			bm.h.ServeHTTP(w, bm.r)
		}
		if bm.name != "next_alone" && sink != "u-123456" {
			b.Fatalf("%s: the upstream saw user %q", bm.name, sink)
		}
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bm.h.ServeHTTP(w, bm.r)
			}
		})
	}
}
