package ipfilter

import (
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

func init() { filter.Register("ip", func() filter.Spec { return new(Config) }) }

// Config is the ip filter's entry: it allows or denies clients by address
// (CIDR or single IP). Deny is checked first; when Allow is not empty,
// only matching clients pass.
type Config struct {
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
}

// Defaults does nothing: there is no default list.
func (c *Config) Defaults() {}

// Validate reports every problem New would refuse.
func (c *Config) Validate(at config.At, _ config.FilterContext) { compile(c, at) }

// Build compiles c (New).
func (c *Config) Build(filter.Deps) (filter.Filter, error) { return New(c) }
