package headers

import (
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

func init() { filter.Register("headers", func() filter.Spec { return new(Config) }) }

// Config is the headers filter's entry: it edits request headers (toward
// the upstream) and response headers (toward the client).
type Config struct {
	Request  Ops `yaml:"request"`
	Response Ops `yaml:"response"`
}

// Ops are applied in the order remove, set, add. The values of Set and
// Add are often credentials (Cookie, an upstream's API key): the admin
// API, logs and errors never show them.
type Ops struct {
	Set    map[string]string `yaml:"set" redact:"values"`
	Add    map[string]string `yaml:"add" redact:"values"`
	Remove []string          `yaml:"remove"`
}

// Defaults does nothing: every field is optional.
func (c *Config) Defaults() {}

// Validate reports every problem New would refuse.
func (c *Config) Validate(at config.At, _ config.FilterContext) { compileEditor(c, at) }

// Build compiles c (New).
func (c *Config) Build(filter.Deps) (filter.Filter, error) { return New(c) }
