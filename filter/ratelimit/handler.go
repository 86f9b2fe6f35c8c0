package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/dubbogw/dubbogw/exchange"
)

// Response headers, in the canonical form net/http keeps them in
// (RateLimit-* of draft-ietf-httpapi-ratelimit-headers; names are
// case-insensitive).
const (
	headerLimit      = "Ratelimit-Limit"
	headerRemaining  = "Ratelimit-Remaining"
	headerReset      = "Ratelimit-Reset"
	headerRetryAfter = "Retry-After"
)

// maxNameLen bounds the user ids and header values kept as keys, locally and
// in Redis; longer ones are replaced by their hash.
const maxNameLen = 64

// Wrap returns the rate limit handler in front of next.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return &handler{f: f, next: next}
}

type handler struct {
	f    *Filter
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := h.f.decide(r.Context(), h.f.keyOf(r))
	h.f.setHeaders(w.Header(), d)
	if !d.allowed {
		exchange.Fail(w, r, exchange.CodeRateLimited, "rate limit exceeded")
		return
	}
	h.next.ServeHTTP(w, r)
}

// decide spends one request of key's bucket: in Redis when the limit is
// distributed and Redis answers in time, else in the local bucket.
func (f *Filter) decide(ctx context.Context, key bucketKey) decision {
	if f.redis != nil {
		d, reason, err := f.decideRedis(ctx, key)
		if err == nil {
			f.count(sourceRedis, d)
			return d
		}
		now := f.elapsed()
		f.noteFallback(reason, err, now)
		d = f.buckets.take(key, now)
		f.count(sourceFallback, d)
		return d
	}
	d := f.buckets.take(key, f.elapsed())
	f.count(sourceLocal, d)
	return d
}

// count counts a decision by its source and result.
func (f *Filter) count(source int, d decision) {
	if d.allowed {
		f.decisions[source][1].Inc()
	} else {
		f.decisions[source][0].Inc()
	}
}

// elapsed is the local clock: nanoseconds since the filter was built
// (monotonic when Deps.Now is time.Now).
func (f *Filter) elapsed() int64 { return int64(f.now().Sub(f.start)) }

// keyOf is the bucket a request spends from.
func (f *Filter) keyOf(r *http.Request) bucketKey {
	switch f.kind {
	case keyRoute:
		return bucketKey{}
	case keyHeader:
		if v := r.Header[f.header]; len(v) > 0 && v[0] != "" {
			return bucketKey{name: boundedName(v[0])}
		}
		return bucketKey{} // missing or empty: one shared bucket
	}
	info := exchange.From(r.Context())
	if f.kind == keyUser && info != nil && info.UserID != "" {
		return bucketKey{name: boundedName(info.UserID)}
	}
	return bucketKey{addr: clientAddr(r, info)}
}

// clientAddr is the address the gateway core resolved (honouring trusted
// proxies), or else the connection's peer; a zero Addr when neither is known.
func clientAddr(r *http.Request, info *exchange.Info) netip.Addr {
	var a netip.Addr
	if info != nil && info.ClientIP.IsValid() {
		a = info.ClientIP
	} else if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		a = ap.Addr()
	} else {
		a, _ = netip.ParseAddr(r.RemoteAddr)
	}
	return a.Unmap().WithZone("")
}

// boundedName returns s, or its hash when s is longer than maxNameLen, so
// that a client cannot make the gateway or Redis keep large keys.
func boundedName(s string) string {
	if len(s) <= maxNameLen {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// setHeaders writes the RateLimit-* headers, and Retry-After when d denies.
// The values share one allocation.
func (f *Filter) setHeaders(h http.Header, d decision) {
	values := make([]string, 3, 4)
	values[0] = f.limit
	values[1] = strconv.FormatInt(d.remaining, 10)
	values[2] = ceilSeconds(d.reset)
	h[headerLimit] = values[0:1:1]
	h[headerRemaining] = values[1:2:2]
	h[headerReset] = values[2:3:3]
	if !d.allowed {
		values = append(values, ceilSeconds(max(d.retryAfter, time.Second)))
		h[headerRetryAfter] = values[3:4:4]
	}
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
