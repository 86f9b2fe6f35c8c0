package rewrite

import (
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

func init() { filter.Register("rewrite", func() filter.Spec { return new(Config) }) }

// Config is the rewrite filter's entry: it changes the path sent
// upstream. At most one of StripPrefix, Path and Regex is set; AddPrefix
// applies after any of them.
type Config struct {
	// StripPrefix removes this leading path (segment-aware: "/api" strips "/api/x" to "/x").
	StripPrefix string `yaml:"strip_prefix"`
	// AddPrefix is prepended to the path.
	AddPrefix string `yaml:"add_prefix"`
	// Path replaces the whole path; "{name}" is replaced by the route's path parameter.
	Path string `yaml:"path"`
	// Regex with Replacement rewrites the path (Go regexp syntax, $1 expansion).
	Regex       string `yaml:"regex"`
	Replacement string `yaml:"replacement"`
}

// Defaults does nothing: every field is optional.
func (c *Config) Defaults() {}

// Validate reports every problem New would refuse, with the route's path
// parameters.
func (c *Config) Validate(at config.At, ctx config.FilterContext) { compile(c, ctx.Params, at) }

// Build compiles c for the route (New).
func (c *Config) Build(d filter.Deps) (filter.Filter, error) { return New(c, d.Params) }
