package ratelimit

import (
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

func init() { filter.Register("rate_limit", func() filter.Spec { return new(Config) }) }

// Config is the rate_limit filter's entry: `- rate_limit: {rate: 100}`.
type Config struct {
	// Key says what is limited: "client_ip" (default), "user" (the auth
	// filter's user id; anonymous requests share one bucket per client IP),
	// "header:<Name>" or "route" (one bucket for the route).
	Key string `yaml:"key"`
	// Rate is requests per Per. Required.
	Rate int `yaml:"rate"`
	// Per is the period of Rate. Default 1s.
	Per config.Duration `yaml:"per"`
	// Burst is how many requests may come at once. Default Rate.
	Burst int `yaml:"burst"`
	// Distributed shares the limit between gateway instances through Redis
	// (GCRA in one Lua call); when Redis cannot answer in time the local
	// limit applies. Default false (local only).
	Distributed bool `yaml:"distributed"`
	// MaxKeys bounds the local buckets kept (least recently used evicted). Default 100000.
	MaxKeys int `yaml:"max_keys"`
	// Timeout bounds one distributed decision; past it the local limit
	// answers (counted as a fallback). Default 20ms.
	Timeout config.Duration `yaml:"timeout"`
}

// Defaults fills the fields left unset.
func (c *Config) Defaults() {
	if c.Key == "" {
		c.Key = "client_ip"
	}
	if c.Per == 0 {
		c.Per = config.Duration(time.Second)
	}
	if c.Burst == 0 {
		c.Burst = c.Rate
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = defaultMaxKeys
	}
	if c.Timeout == 0 {
		c.Timeout = config.Duration(defaultDecisionTimeout)
	}
}

// Validate reports every problem New would refuse; a distributed limit
// needs the top-level redis: section.
func (c *Config) Validate(at config.At, ctx config.FilterContext) { compile(c, ctx.Redis, at) }

// Build compiles c for the route (New). Offline, a distributed limit is
// not built: it would need a connection.
func (c *Config) Build(d filter.Deps) (filter.Filter, error) {
	deps := Deps{Metrics: d.Metrics, Log: d.Log, Route: d.Route}
	switch {
	case d.Redis != nil:
		deps.Redis = d.Redis
	case d.Offline && c.Distributed:
		return filter.PassThrough, nil
	}
	return New(c, deps)
}
