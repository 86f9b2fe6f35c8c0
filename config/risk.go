package config

// Redis is the Redis server the gateway uses for token lookups and
// distributed rate limits: one client shared by every route, built on
// github.com/redis/rueidis (RESP3, pipelined, server-assisted client-side
// caching).
type Redis struct {
	// Address is "host:port", several separated by commas for a cluster. Empty: no Redis.
	Address string `yaml:"address"`
	// Username and Password authenticate (AUTH; a username for Redis 6
	// ACL users); PasswordFile names a file holding the password instead
	// (surrounding white space trimmed), e.g. a mounted Secret. DB
	// selects the database.
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	DB           int    `yaml:"db"`
	// TLS speaks TLS to Redis (its tls-port) when enabled.
	TLS ClientTLS `yaml:"tls"`
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
