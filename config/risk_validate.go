package config

import (
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of Redis and adaptive concurrency.
const (
	DefaultRedisDialTimeout   = Duration(time.Second)
	DefaultRedisTimeout       = Duration(50 * time.Millisecond)
	DefaultRedisPipelines     = 2
	DefaultRedisMaxPending    = 10000
	DefaultClientCacheTTL     = Duration(30 * time.Second)
	DefaultClientCacheBytes   = ByteSize(64 << 20)
	DefaultRedisMaxFailures   = 5
	DefaultRedisOpenFor       = Duration(500 * time.Millisecond)
	DefaultAdaptiveAlgorithm  = "gradient"
	DefaultAdaptiveMinLimit   = 16
	DefaultAdaptiveMaxLimit   = 1000
	DefaultAdaptiveTolerance  = 2.0
	DefaultAdaptiveLatencyTgt = Duration(100 * time.Millisecond)
)

var (
	adaptiveAlgos = []string{"gradient", "aimd"}
)

func defaultRisk(c *Config) {
	if c.Redis.Address != "" {
		c.Redis.Defaults()
	}
	for _, rt := range c.Routes {
		if rt == nil {
			continue
		}
		if a := rt.AdaptiveConcurrency; a != nil {
			a.Defaults(rt.MaxInFlight)
		}
	}
	if a := c.Server.AdaptiveConcurrency; a != nil {
		limit := 0
		if c.Server.MaxInFlight != nil {
			limit = *c.Server.MaxInFlight
		}
		a.Defaults(limit)
	}
}

// Defaults fills the fields of r left unset: Defaults(c) calls it when a
// redis: section is set, and redisclient.New for the client it builds.
func (r *Redis) Defaults() {
	SetDefault(&r.DialTimeout, DefaultRedisDialTimeout)
	SetDefault(&r.Timeout, DefaultRedisTimeout)
	SetDefault(&r.Pipelines, DefaultRedisPipelines)
	SetDefault(&r.MaxPending, DefaultRedisMaxPending)
	SetDefaultPtr(&r.ClientCache.Enabled, true)
	SetDefault(&r.ClientCache.TTL, DefaultClientCacheTTL)
	SetDefault(&r.ClientCache.MaxBytes, DefaultClientCacheBytes)
	SetDefault(&r.Breaker.MaxFailures, DefaultRedisMaxFailures)
	SetDefault(&r.Breaker.OpenFor, DefaultRedisOpenFor)
}

// Defaults fills the fields of a left unset. staticLimit is the in-flight
// limit it adapts below (0: none), max_limit's default; min_limit's is 16,
// or max_limit when that is lower. admission.NewAdaptive applies it too.
func (a *AdaptiveConcurrency) Defaults(staticLimit int) {
	SetDefault(&a.Algorithm, DefaultAdaptiveAlgorithm)
	if staticLimit > 0 {
		SetDefault(&a.MaxLimit, staticLimit)
	}
	SetDefault(&a.MaxLimit, DefaultAdaptiveMaxLimit)
	SetDefault(&a.MinLimit, min(DefaultAdaptiveMinLimit, a.MaxLimit))
	SetDefault(&a.InitialLimit, max(a.MaxLimit/4, a.MinLimit))
	SetDefault(&a.Tolerance, DefaultAdaptiveTolerance)
	SetDefault(&a.LatencyTarget, DefaultAdaptiveLatencyTgt)
}

// validateRisk checks the top-level redis section and the routes'
// in-flight limits.
func validateRisk(ps *problems, c *Config) {
	if c.Redis.Address != "" {
		validateRedis(ps, &c.Redis)
	}
	for i, rt := range c.Routes {
		if rt == nil {
			continue
		}
		path := indexPath("routes", i)
		if rt.MaxInFlight < 0 {
			ps.add(path+".max_in_flight", 0, "must not be negative, got %d", rt.MaxInFlight)
		}
		if rt.AdaptiveConcurrency != nil {
			rt.AdaptiveConcurrency.Validate(At{ps, path + ".adaptive_concurrency"})
		}
	}
	if c.Server.AdaptiveConcurrency != nil {
		c.Server.AdaptiveConcurrency.Validate(At{ps, "server.adaptive_concurrency"})
	}
}

func validateRedis(ps *problems, r *Redis) {
	for _, a := range strings.Split(r.Address, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			ps.add("redis.address", 0, "%q is not host:port", RedactURL(a))
		}
	}
	if r.DB < 0 {
		ps.add("redis.db", 0, "must not be negative, got %d", r.DB)
	}
	if r.Password != "" && r.PasswordFile != "" {
		ps.add("redis.password_file", 0, "set password or password_file, not both")
	} else if r.PasswordFile != "" {
		if _, err := ReadSecretFile(r.PasswordFile); err != nil {
			ps.add("redis.password_file", 0, "%v", err)
		}
	}
	switch {
	case r.TLS.Enabled:
		At{ps, "redis.tls"}.ValidateClientTLS(r.TLS)
	case r.TLS.Set():
		ps.add("redis.tls.enabled", 0, "tls settings are given but enabled is false: set enabled: true (or remove them)")
	}
	if r.Pipelines < 1 || r.Pipelines&(r.Pipelines-1) != 0 {
		ps.add("redis.pipelines", 0, "must be a power of two (1, 2, 4, ...), got %d", r.Pipelines)
	}
	if r.MaxPending < 1 {
		ps.add("redis.max_pending", 0, "must be at least 1, got %d", r.MaxPending)
	}
	if r.Breaker.MaxFailures < 1 {
		ps.add("redis.breaker.max_failures", 0, "must be at least 1, got %d", r.Breaker.MaxFailures)
	}
}

// Validate reports every problem of the defaulted a at at: the rules
// `dubbogw validate` applies and admission.NewAdaptive applies again.
func (a *AdaptiveConcurrency) Validate(at At) {
	if !slices.Contains(adaptiveAlgos, a.Algorithm) {
		at.Field("algorithm").Errorf("unknown algorithm %q (known: %s)", a.Algorithm, strings.Join(adaptiveAlgos, ", "))
	}
	if a.MinLimit < 1 || a.MaxLimit < a.MinLimit {
		at.Errorf("want 1 <= min_limit (%d) <= max_limit (%d)", a.MinLimit, a.MaxLimit)
	} else if a.InitialLimit < a.MinLimit || a.InitialLimit > a.MaxLimit {
		at.Field("initial_limit").Errorf("must be within min_limit and max_limit, got %d", a.InitialLimit)
	}
	if !(a.Tolerance >= 1) || math.IsInf(a.Tolerance, 0) {
		at.Field("tolerance").Errorf("must be a finite number of at least 1 (a multiple of the no-load latency), got %g", a.Tolerance)
	}
	at.Field("latency_target").Err(NonNegative(a.LatencyTarget))
}
