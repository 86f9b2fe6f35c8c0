package redisclient_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// rawClient is a plain rueidis client (no client-side cache) to set up and
// inspect keys beside the client under test.
func rawClient(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatalf("raw redis client to %s: %v", addr, err)
	}
	t.Cleanup(rc.Close)
	return rc
}

func must(t testing.TB, r rueidis.RedisResult) {
	t.Helper()
	if err := r.Error(); err != nil {
		t.Fatalf("redis: %v", err)
	}
}

// keyPrefix is unique per test so that tests sharing the dev Redis never
// see each other's keys.
func keyPrefix(t testing.TB) string {
	return fmt.Sprintf("dubbogw-test:%s:%d:", t.Name(), time.Now().UnixNano())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
