package config

// Redis is the Redis server the gateway uses for token lookups and
// distributed rate limits: one client shared by every route, built on
// github.com/redis/rueidis (RESP3, pipelined, server-assisted client-side
// caching).
type Redis struct {
	// Address is "host:port", several separated by commas for a cluster. Empty: no Redis.
	Address string `yaml:"address"`
	// Username and Password authenticate (AUTH); DB selects the database.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	DB       int    `yaml:"db"`
	// DialTimeout bounds connecting. Default 1s.
	DialTimeout Duration `yaml:"dial_timeout"`
	// Timeout is the deadline of one command when the caller has none. Default 50ms.
	Timeout Duration `yaml:"timeout"`
	// Pipelines is the number of pipelined connections commands are
	// multiplexed over (rueidis PipelineMultiplex 2^n). Default 2.
	Pipelines int `yaml:"pipelines"`
	// MaxPending bounds commands waiting for a connection; beyond, a
	// command fails at once (counted). Default 10000.
	MaxPending int `yaml:"max_pending"`
	// ClientCache keeps values in the gateway, invalidated by Redis
	// (CLIENT TRACKING) when they change or are deleted.
	ClientCache ClientCache `yaml:"client_cache"`
	// Breaker fails commands at once while Redis keeps failing.
	Breaker RedisBreaker `yaml:"breaker"`
}

// ClientCache configures server-assisted client-side caching.
type ClientCache struct {
	// Enabled turns it on. Default true.
	Enabled *bool `yaml:"enabled"`
	// TTL caps how long a value is kept (Redis invalidates sooner on change). Default 30s.
	TTL Duration `yaml:"ttl"`
	// MaxBytes bounds the cache per connection. Default 64MiB.
	MaxBytes ByteSize `yaml:"max_bytes"`
}

// RedisBreaker opens after MaxFailures consecutive failed commands and
// lets one probe through after OpenFor, or as soon as Redis sends
// anything again. A failure is a command past its deadline while Redis
// sent nothing at all since it began, or a connection error: a caller
// that was merely late (a busy scheduler) while Redis kept answering is
// not one.
type RedisBreaker struct {
	// MaxFailures consecutive failures open it. Default 5.
	MaxFailures int `yaml:"max_failures"`
	// OpenFor is how long it fails commands at once. Default 500ms: a
	// restarted Redis serves new tokens within a second.
	OpenFor Duration `yaml:"open_for"`
}

// Auth is the token authentication filter.
type Auth struct {
	// Store is "redis" (the top-level redis:) or "memory" (Tokens below;
	// for the quickstart and tests). Default "redis".
	Store string `yaml:"store"`
	// Tokens (memory store) maps a token to its JSON value, as Redis would hold it.
	Tokens map[string]string `yaml:"tokens"`
	// KeyPrefix is prepended to the token to make the store key. Default "token:".
	KeyPrefix string `yaml:"key_prefix"`
	// Token says where the token is read, in order: header (with an
	// optional "Bearer " prefix), cookie, query parameter.
	Token TokenSource `yaml:"token"`
	// UserIDField is the JSON field that must be a non-empty string for the
	// token to be valid. Default "userId".
	UserIDField string `yaml:"user_id_field"`
	// Headers maps JSON fields of the token's value to request headers
	// sent upstream. Default {userId: X-User-Id}. Incoming headers with
	// these names are always removed first.
	Headers map[string]string `yaml:"headers"`
	// Attachments maps JSON fields to Dubbo attachments. Default: the
	// fields of Headers, under their own names.
	Attachments map[string]string `yaml:"attachments"`
	// Sliding extends a token's TTL when it runs low, off the request path.
	Sliding Sliding `yaml:"sliding"`
	// Anonymous lists requests that may go on without a valid token
	// (without identity); all others get 401.
	Anonymous []AnonymousRule `yaml:"anonymous"`
	// OnStoreError is what a request gets when the store cannot answer in
	// time: "reject" (503 AUTH_UNAVAILABLE, default) or "anonymous" (go
	// on without identity where Anonymous allows it, else 503).
	OnStoreError string `yaml:"on_store_error"`
	// Timeout bounds one lookup. Default 50ms.
	Timeout Duration `yaml:"timeout"`
	// StaleIfError: while the store is slow, failing or its breaker open,
	// a token this instance found valid within this long is served the
	// identity it had then (never past the token's TTL); only tokens it
	// does not know get 503. Default 5m; 0s fails closed (503 for all).
	StaleIfError *Duration `yaml:"stale_if_error"`
	// UnknownLookups bounds the lookups in flight of tokens this instance
	// has not found valid recently; beyond, such a request gets 503 at
	// once, so a flood of random tokens cannot delay known users. Default 256.
	UnknownLookups int `yaml:"unknown_lookups"`
}

// TokenSource says where a token is read; the first present wins.
type TokenSource struct {
	// Header name. Default "Authorization".
	Header string `yaml:"header"`
	// Bearer strips a "Bearer " prefix from the header value. Default true.
	Bearer *bool `yaml:"bearer"`
	// Cookie name; empty: not read.
	Cookie string `yaml:"cookie"`
	// Query parameter name; empty: not read.
	Query string `yaml:"query"`
}

// Sliding is the sliding expiry of tokens, as the seed's filter did it.
type Sliding struct {
	// Enabled turns it on. Default true.
	Enabled *bool `yaml:"enabled"`
	// Threshold: a token whose remaining TTL is below it is extended. Default 4h.
	Threshold Duration `yaml:"threshold"`
	// Window is the TTL it is extended to. Default 4h.
	Window Duration `yaml:"window"`
	// Interval: at most one renewal per token per interval. Default 1m.
	Interval Duration `yaml:"interval"`
}

// AnonymousRule matches requests allowed without a token.
type AnonymousRule struct {
	// Path is an exact path or a prefix ending in "/*" ("/public/*").
	Path string `yaml:"path"`
	// Methods restricts the rule; empty: any method.
	Methods []string `yaml:"methods"`
}

// RateLimit is the rate limiting filter.
type RateLimit struct {
	// Key says what is limited: "client_ip" (default), "user" (the auth
	// filter's user id; anonymous requests share one bucket per client IP),
	// "header:<Name>" or "route" (one bucket for the route).
	Key string `yaml:"key"`
	// Rate is requests per Per. Required.
	Rate int `yaml:"rate"`
	// Per is the period of Rate. Default 1s.
	Per Duration `yaml:"per"`
	// Burst is how many requests may come at once. Default Rate.
	Burst int `yaml:"burst"`
	// Distributed shares the limit between gateway instances through Redis
	// (GCRA in one Lua call); when Redis cannot answer in time the local
	// limit applies. Default false (local only).
	Distributed bool `yaml:"distributed"`
	// MaxKeys bounds the local buckets kept (least recently used evicted). Default 100000.
	MaxKeys int `yaml:"max_keys"`
}

// AdaptiveConcurrency makes an in-flight limit follow measured latency.
type AdaptiveConcurrency struct {
	// Algorithm is "gradient" (default) or "aimd".
	Algorithm string `yaml:"algorithm"`
	// MinLimit and MaxLimit bound the limit. Defaults 16 and the static limit (or 1000).
	MinLimit int `yaml:"min_limit"`
	MaxLimit int `yaml:"max_limit"`
	// InitialLimit is where it starts. Default MaxLimit/4, at least MinLimit.
	InitialLimit int `yaml:"initial_limit"`
	// Tolerance (gradient): latency may grow to this multiple of the
	// no-load latency before the limit shrinks. Default 2.0.
	Tolerance float64 `yaml:"tolerance"`
	// LatencyTarget (aimd): above it the limit is cut. Default 100ms.
	LatencyTarget Duration `yaml:"latency_target"`
}
