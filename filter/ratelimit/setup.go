// Package ratelimit implements the rate_limit route filter: it limits how
// many requests each key (client address, user, header value or the whole
// route) may make, with a token bucket kept in the gateway or, shared
// between gateway instances, in Redis.
package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"

	"github.com/dubbogw/dubbogw/observe"
)

// Scripter runs a Lua script in Redis and returns its integer-array reply;
// the gateway's redisclient.Client satisfies it (EVALSHA with load-on-miss,
// deadline, breaker, metrics).
type Scripter interface {
	EvalInts(ctx context.Context, script string, keys, args []string) ([]int64, error)
}

// Deps are what a rate limit filter needs from the gateway.
type Deps struct {
	// Redis runs the distributed limit; required when the config is distributed.
	// It must honour ctx's deadline and must not keep or change keys and args.
	Redis Scripter
	// Metrics registers the filter's metrics; nil: not registered.
	Metrics prometheus.Registerer
	// Log receives fallback warnings; nil: discarded.
	Log *slog.Logger
	// Route names the route: a metric label and part of the Redis keys.
	Route string
	// Now is the clock of the local limit; nil: time.Now.
	Now func() time.Time
	// DecisionTimeout, when not 0, bounds one distributed decision in
	// place of the config's timeout (tests).
	DecisionTimeout time.Duration
}

const (
	// defaultDecisionTimeout is the default of Config.Timeout.
	defaultDecisionTimeout = 20 * time.Millisecond
	// defaultMaxKeys bounds the local buckets when the config does not.
	defaultMaxKeys = 100000
	// minInterval is the shortest time between two requests a limit may
	// allow on one key: Redis's clock (TIME) counts microseconds.
	minInterval = time.Microsecond
	// fallbackLogEvery spaces the warnings logged while Redis cannot answer.
	fallbackLogEvery = 10 * time.Second
)

// keyKind says what a request's bucket is chosen by.
type keyKind int

const (
	keyClientIP keyKind = iota
	keyUser
	keyHeader
	keyRoute
)

// Sources and results of decisions, as metric label values.
const (
	sourceLocal = iota
	sourceRedis
	sourceFallback
	numSources
)

var sourceNames = [numSources]string{"local", "redis", "fallback"}

// Reasons a distributed decision fell back to the local limit.
const (
	reasonTimeout    = iota // the decision's deadline passed
	reasonCanceled          // the request's context was canceled
	reasonRedisError        // Redis answered with an error (script error, OOM, ...)
	reasonBadReply          // the script's reply had an unexpected shape
	reasonError             // anything else: connection refused, breaker open, ...
	numReasons
)

var reasonNames = [numReasons]string{"timeout", "canceled", "redis_error", "bad_reply", "error"}

// Filter is a compiled Config for one route. It is safe for
// concurrent use; Wrap may be called any number of times, the wrapped
// handlers share its buckets.
type Filter struct {
	route   string
	kind    keyKind
	header  string // canonical header name, keyHeader only
	limit   string // RateLimit-Limit value: the burst
	buckets *buckets

	now   func() time.Time
	start time.Time // local bucket times are nanoseconds since start

	redis      Scripter      // nil: local only
	timeout    time.Duration // of one Redis decision
	redisKey   string        // "ratelimit:<route>:", the prefix of every Redis key
	scriptArgs []string      // emission interval (µs), burst, key TTL (ms); read-only

	decisions [numSources][2]prometheus.Counter // [source][allowed?1:0]
	fallbacks [numReasons]prometheus.Counter

	log             *slog.Logger
	lastFallbackLog atomic.Int64 // f.elapsed() of the last fallback warning; MinInt64: never
	unlogged        atomic.Int64 // fallbacks since the last warning
}

// New compiles cfg into the rate limit filter of the route deps.Route,
// with defaults for the fields left unset (cfg is not modified). Its
// error lists every problem, each naming its field.
func New(cfg *Config, deps Deps) (*Filter, error) {
	c := *cfg
	c.Defaults()
	var l limits
	if err := config.Check("", func(at config.At) { l = compile(&c, deps.Redis != nil, at) }); err != nil {
		return nil, err
	}
	kind, header, burst, interval, maxKeys := l.kind, l.header, l.burst, l.interval, l.maxKeys
	f := &Filter{
		route:    deps.Route,
		kind:     kind,
		header:   header,
		limit:    strconv.Itoa(burst),
		now:      deps.Now,
		timeout:  deps.DecisionTimeout,
		log:      deps.Log,
		redisKey: "ratelimit:" + deps.Route + ":",
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.timeout <= 0 {
		f.timeout = c.Timeout.D()
	}
	f.start = f.now()
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	f.log = f.log.With("filter", "rate_limit", "route", deps.Route)
	f.lastFallbackLog.Store(math.MinInt64)
	if c.Distributed {
		f.redis = deps.Redis
		ttl := time.Duration(burst) * interval
		f.scriptArgs = []string{
			strconv.FormatFloat(float64(interval)/float64(time.Microsecond), 'g', -1, 64),
			strconv.Itoa(burst),
			strconv.FormatInt(int64((ttl+time.Millisecond-1)/time.Millisecond), 10),
		}
	}

	m, err := newMetrics(deps.Metrics)
	if err != nil {
		return nil, err
	}
	for s := range numSources {
		f.decisions[s][0] = m.decisions.WithLabelValues(deps.Route, "limited", sourceNames[s])
		f.decisions[s][1] = m.decisions.WithLabelValues(deps.Route, "allowed", sourceNames[s])
	}
	for r := range numReasons {
		f.fallbacks[r] = m.fallbacks.WithLabelValues(deps.Route, reasonNames[r])
	}
	f.buckets = newBuckets(maxKeys, int64(interval), int64(burst)*int64(interval), m.evictions.WithLabelValues(deps.Route))
	return f, nil
}

// limits are the compiled numbers of a Config.
type limits struct {
	kind     keyKind
	header   string // canonical, keyHeader only
	burst    int
	interval time.Duration // between two requests allowed on one key
	maxKeys  int
}

// compile checks the defaulted cfg, reporting its problems at at: the
// rules of the rate_limit filter, written once for Validate and New.
// redis says whether the gateway has a Redis client.
func compile(cfg *Config, redis bool, at config.At) limits {
	l := limits{burst: cfg.Burst, maxKeys: cfg.MaxKeys}
	var err error
	if l.kind, l.header, err = parseKey(cfg.Key); err != nil {
		at.Field("key").Err(err)
	}
	per := cfg.Per.D()
	if per <= 0 {
		at.Field("per").Errorf("must be more than 0, got %s", per)
	}
	switch {
	case cfg.Rate < 1:
		at.Field("rate").Errorf("required: requests per period, at least 1 (got %d)", cfg.Rate)
	case per > 0:
		l.interval = per / time.Duration(cfg.Rate)
		if l.interval < minInterval {
			at.Field("rate").Errorf("%d per %s is more than one request per %s", cfg.Rate, per, minInterval)
		}
	}
	if l.burst < 1 {
		at.Field("burst").Errorf("must be at least 1, got %d", l.burst)
	} else if l.interval > 0 && int64(l.interval) > math.MaxInt64/int64(l.burst) {
		at.Field("burst").Errorf("%d requests at one per %s is too long a period", l.burst, l.interval)
	}
	if l.maxKeys < 1 {
		at.Field("max_keys").Errorf("must be at least 1, got %d", l.maxKeys)
	}
	if cfg.Timeout <= 0 {
		at.Field("timeout").Errorf("must be more than 0, got %s", cfg.Timeout.D())
	}
	if cfg.Distributed && !redis {
		at.Field("distributed").Errorf("a distributed limit needs the top-level redis: section (redis.address)")
	}
	return l
}

// parseKey reads Config.Key.
func parseKey(key string) (keyKind, string, error) {
	switch key {
	case "client_ip":
		return keyClientIP, "", nil
	case "user":
		return keyUser, "", nil
	case "route":
		return keyRoute, "", nil
	}
	if name, ok := strings.CutPrefix(key, "header:"); ok && httpguts.ValidHeaderFieldName(name) {
		return keyHeader, textproto.CanonicalMIMEHeaderKey(name), nil
	}
	return 0, "", fmt.Errorf("unknown key %q (known: client_ip, user, route, header:<Name>)", key)
}

// metrics are the filter's metric families, shared by the filters of every
// route and every route table (reloads build new filters).
type metrics struct {
	decisions *prometheus.CounterVec // dubbogw_ratelimit_decisions_total{route,result,source}
	fallbacks *prometheus.CounterVec // dubbogw_ratelimit_fallbacks_total{route,reason}
	evictions *prometheus.CounterVec // dubbogw_ratelimit_evictions_total{route}
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_ratelimit_decisions_total",
			Help: "Rate limit decisions, by route, result (allowed, limited) and source (local, redis, fallback: the local limit because Redis could not answer in time).",
		}, []string{"route", "result", "source"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_ratelimit_fallbacks_total",
			Help: "Distributed rate limit decisions the local limit made instead, by route and reason (timeout, canceled, redis_error, bad_reply, error).",
		}, []string{"route", "reason"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_ratelimit_evictions_total",
			Help: "Local rate limit buckets dropped, least recently used first, to stay within max_keys, by route.",
		}, []string{"route"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.decisions, err = observe.Register(reg, m.decisions); err != nil {
		return nil, err
	}
	if m.fallbacks, err = observe.Register(reg, m.fallbacks); err != nil {
		return nil, err
	}
	if m.evictions, err = observe.Register(reg, m.evictions); err != nil {
		return nil, err
	}
	return m, nil
}
