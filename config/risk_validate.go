package config

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Defaults of Redis, the auth and rate-limit filters and adaptive
// concurrency.
const (
	DefaultRedisDialTimeout   = Duration(time.Second)
	DefaultRedisTimeout       = Duration(50 * time.Millisecond)
	DefaultRedisPipelines     = 2
	DefaultRedisMaxPending    = 10000
	DefaultClientCacheTTL     = Duration(30 * time.Second)
	DefaultClientCacheBytes   = ByteSize(64 << 20)
	DefaultRedisMaxFailures   = 5
	DefaultRedisOpenFor       = Duration(500 * time.Millisecond)
	DefaultAuthStore          = "redis"
	DefaultAuthKeyPrefix      = "token:"
	DefaultAuthHeader         = "Authorization"
	DefaultAuthUserIDField    = "userId"
	DefaultAuthUserIDHeader   = "X-User-Id"
	DefaultSlidingThreshold   = Duration(4 * time.Hour)
	DefaultSlidingWindow      = Duration(4 * time.Hour)
	DefaultSlidingInterval    = Duration(time.Minute)
	DefaultAuthTimeout        = Duration(50 * time.Millisecond)
	DefaultAuthStaleIfError   = Duration(5 * time.Minute)
	DefaultAuthUnknownLookups = 256
	DefaultOnStoreError       = "reject"
	DefaultRateLimitKey       = "client_ip"
	DefaultRateLimitPer       = Duration(time.Second)
	DefaultRateLimitMaxKeys   = 100000
	DefaultAdaptiveAlgorithm  = "gradient"
	DefaultAdaptiveMinLimit   = 16
	DefaultAdaptiveMaxLimit   = 1000
	DefaultAdaptiveTolerance  = 2.0
	DefaultAdaptiveLatencyTgt = Duration(100 * time.Millisecond)
)

var (
	authStores      = []string{"redis", "memory"}
	storeErrorModes = []string{"reject", "anonymous"}
	adaptiveAlgos   = []string{"gradient", "aimd"}
)

func defaultRisk(c *Config) {
	r := &c.Redis
	if r.Address != "" {
		setDefault(&r.DialTimeout, DefaultRedisDialTimeout)
		setDefault(&r.Timeout, DefaultRedisTimeout)
		setDefault(&r.Pipelines, DefaultRedisPipelines)
		setDefault(&r.MaxPending, DefaultRedisMaxPending)
		setDefaultPtr(&r.ClientCache.Enabled, true)
		setDefault(&r.ClientCache.TTL, DefaultClientCacheTTL)
		setDefault(&r.ClientCache.MaxBytes, DefaultClientCacheBytes)
		setDefault(&r.Breaker.MaxFailures, DefaultRedisMaxFailures)
		setDefault(&r.Breaker.OpenFor, DefaultRedisOpenFor)
	}
	each := func(fs []Filter) {
		for _, f := range fs {
			if f.Auth != nil {
				defaultAuth(f.Auth)
			}
			if f.RateLimit != nil {
				rl := f.RateLimit
				setDefault(&rl.Key, DefaultRateLimitKey)
				setDefault(&rl.Per, DefaultRateLimitPer)
				setDefault(&rl.Burst, rl.Rate)
				setDefault(&rl.MaxKeys, DefaultRateLimitMaxKeys)
			}
		}
	}
	each(c.DefaultFilters)
	for _, rt := range c.Routes {
		if rt == nil {
			continue
		}
		each(rt.Filters)
		if a := rt.AdaptiveConcurrency; a != nil {
			defaultAdaptive(a, rt.MaxInFlight)
		}
	}
	if a := c.Server.AdaptiveConcurrency; a != nil {
		limit := 0
		if c.Server.MaxInFlight != nil {
			limit = *c.Server.MaxInFlight
		}
		defaultAdaptive(a, limit)
	}
}

func defaultAuth(a *Auth) {
	setDefault(&a.Store, DefaultAuthStore)
	setDefault(&a.KeyPrefix, DefaultAuthKeyPrefix)
	setDefault(&a.Token.Header, DefaultAuthHeader)
	setDefaultPtr(&a.Token.Bearer, true)
	setDefault(&a.UserIDField, DefaultAuthUserIDField)
	if a.Headers == nil {
		a.Headers = map[string]string{DefaultAuthUserIDField: DefaultAuthUserIDHeader}
	}
	if a.Attachments == nil {
		a.Attachments = make(map[string]string, len(a.Headers))
		for field := range a.Headers {
			a.Attachments[field] = field
		}
	}
	setDefaultPtr(&a.Sliding.Enabled, true)
	setDefault(&a.Sliding.Threshold, DefaultSlidingThreshold)
	setDefault(&a.Sliding.Window, DefaultSlidingWindow)
	setDefault(&a.Sliding.Interval, DefaultSlidingInterval)
	setDefault(&a.OnStoreError, DefaultOnStoreError)
	setDefault(&a.Timeout, DefaultAuthTimeout)
	setDefaultPtr(&a.StaleIfError, DefaultAuthStaleIfError)
	setDefault(&a.UnknownLookups, DefaultAuthUnknownLookups)
}

func defaultAdaptive(a *AdaptiveConcurrency, staticLimit int) {
	setDefault(&a.Algorithm, DefaultAdaptiveAlgorithm)
	setDefault(&a.MinLimit, DefaultAdaptiveMinLimit)
	if staticLimit > 0 {
		setDefault(&a.MaxLimit, staticLimit)
	}
	setDefault(&a.MaxLimit, DefaultAdaptiveMaxLimit)
	setDefault(&a.InitialLimit, max(a.MaxLimit/4, a.MinLimit))
	setDefault(&a.Tolerance, DefaultAdaptiveTolerance)
	setDefault(&a.LatencyTarget, DefaultAdaptiveLatencyTgt)
}

// validateRisk checks the top-level redis section, and that the filters
// needing Redis have it.
func validateRisk(ps *problems, c *Config) {
	if c.Redis.Address != "" {
		validateRedis(ps, &c.Redis)
	}
	needRedis := func(path string, f Filter) {
		switch {
		case f.Auth != nil && f.Auth.Store == "redis" && c.Redis.Address == "":
			ps.add(path+".auth.store", 0, "the redis store needs the top-level redis: section (redis.address); or use store: memory")
		case f.RateLimit != nil && f.RateLimit.Distributed && c.Redis.Address == "":
			ps.add(path+".rate_limit.distributed", 0, "a distributed limit needs the top-level redis: section (redis.address)")
		}
	}
	for i, f := range c.DefaultFilters {
		needRedis(indexPath("default_filters", i), f)
	}
	for i, rt := range c.Routes {
		if rt == nil {
			continue
		}
		path := indexPath("routes", i)
		for j, f := range rt.Filters {
			needRedis(indexPath(path+".filters", j), f)
		}
		if rt.MaxInFlight < 0 {
			ps.add(path+".max_in_flight", 0, "must not be negative, got %d", rt.MaxInFlight)
		}
		if rt.AdaptiveConcurrency != nil {
			validateAdaptive(ps, path+".adaptive_concurrency", rt.AdaptiveConcurrency)
		}
	}
	if c.Server.AdaptiveConcurrency != nil {
		validateAdaptive(ps, "server.adaptive_concurrency", c.Server.AdaptiveConcurrency)
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

func validateAuth(ps *problems, path string, a *Auth) {
	if !slices.Contains(authStores, a.Store) {
		ps.add(path+".store", 0, "unknown store %q (known: %s)", a.Store, strings.Join(authStores, ", "))
	}
	if a.Store == "memory" && len(a.Tokens) == 0 {
		ps.add(path+".tokens", 0, "the memory store needs tokens: token → JSON value")
	}
	if a.Store != "memory" && len(a.Tokens) > 0 {
		ps.add(path+".tokens", 0, "tokens are for the memory store")
	}
	for tok := range a.Tokens {
		if tok == "" {
			ps.add(path+".tokens", 0, "empty token")
		}
	}
	if a.Token.Header == "" && a.Token.Cookie == "" && a.Token.Query == "" {
		ps.add(path+".token", 0, "name at least one place to read the token: header, cookie or query")
	}
	for field, h := range a.Headers {
		if field == "" || !httpguts.ValidHeaderFieldName(h) {
			ps.add(keyPath(path+".headers", field), 0, "want a JSON field name mapped to an HTTP header name, got %q", h)
		}
	}
	for field, att := range a.Attachments {
		if field == "" || att == "" {
			ps.add(keyPath(path+".attachments", field), 0, "want a JSON field name mapped to an attachment name")
		}
	}
	if !slices.Contains(storeErrorModes, a.OnStoreError) {
		ps.add(path+".on_store_error", 0, "unknown policy %q (known: %s)", a.OnStoreError, strings.Join(storeErrorModes, ", "))
	}
	if a.Sliding.Window.D() < a.Sliding.Threshold.D() {
		ps.add(path+".sliding.window", 0, "the window (%s) must be at least the threshold (%s), or renewed tokens would be renewed again at once",
			a.Sliding.Window.D(), a.Sliding.Threshold.D())
	}
	for i, rule := range a.Anonymous {
		rpath := indexPath(path+".anonymous", i)
		if !strings.HasPrefix(rule.Path, "/") || strings.Contains(strings.TrimSuffix(rule.Path, "/*"), "*") {
			ps.add(rpath+".path", 0, "%q: want an exact path or a prefix ending in /*", rule.Path)
		}
		checkMethods(ps, rpath+".methods", rule.Methods)
	}
}

func validateRateLimit(ps *problems, path string, r *RateLimit) {
	switch k := r.Key; {
	case k == "client_ip", k == "user", k == "route":
	case strings.HasPrefix(k, "header:") && httpguts.ValidHeaderFieldName(strings.TrimPrefix(k, "header:")):
	default:
		ps.add(path+".key", 0, "unknown key %q (known: client_ip, user, route, header:<Name>)", k)
	}
	if r.Rate < 1 {
		ps.add(path+".rate", 0, "required: requests per period, at least 1")
	}
	if r.Burst < 1 {
		ps.add(path+".burst", 0, "must be at least 1, got %d", r.Burst)
	}
	if r.MaxKeys < 1 {
		ps.add(path+".max_keys", 0, "must be at least 1, got %d", r.MaxKeys)
	}
}

func validateAdaptive(ps *problems, path string, a *AdaptiveConcurrency) {
	if !slices.Contains(adaptiveAlgos, a.Algorithm) {
		ps.add(path+".algorithm", 0, "unknown algorithm %q (known: %s)", a.Algorithm, strings.Join(adaptiveAlgos, ", "))
	}
	if a.MinLimit < 1 || a.MaxLimit < a.MinLimit {
		ps.add(path, 0, "want 1 <= min_limit (%d) <= max_limit (%d)", a.MinLimit, a.MaxLimit)
	}
	if a.InitialLimit < a.MinLimit || a.InitialLimit > a.MaxLimit {
		ps.add(path+".initial_limit", 0, "must be within min_limit and max_limit, got %d", a.InitialLimit)
	}
	if a.Tolerance < 1 {
		ps.add(path+".tolerance", 0, "must be at least 1, got %g", a.Tolerance)
	}
}
