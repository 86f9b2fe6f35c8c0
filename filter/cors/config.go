package cors

import (
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

func init() { filter.Register("cors", func() filter.Spec { return new(Config) }) }

// Config is the cors filter's entry: `- cors: {allow_origins: [...]}`.
type Config struct {
	// AllowOrigins lists allowed origins: exact ("https://a.example"), "*" or a
	// wildcard subdomain ("https://*.example.com"). Required.
	AllowOrigins []string `yaml:"allow_origins"`
	// AllowMethods answered to preflights. Default GET, HEAD, POST.
	AllowMethods []string `yaml:"allow_methods"`
	// AllowHeaders answered to preflights; "*" echoes the requested headers.
	AllowHeaders []string `yaml:"allow_headers"`
	// ExposeHeaders lists response headers readable by the browser.
	ExposeHeaders []string `yaml:"expose_headers"`
	// AllowCredentials sets Access-Control-Allow-Credentials (never with origin "*").
	AllowCredentials bool `yaml:"allow_credentials"`
	// MaxAge is how long a browser may cache a preflight answer (whole
	// seconds). Default 0: not sent.
	MaxAge config.Duration `yaml:"max_age"`
}

// Defaults sets AllowMethods to GET, HEAD, POST when not written.
func (c *Config) Defaults() {
	if c.AllowMethods == nil {
		c.AllowMethods = []string{"GET", "HEAD", "POST"}
	}
}

// Validate reports every problem New would refuse.
func (c *Config) Validate(at config.At, _ config.FilterContext) { compile(c, at) }

// Build compiles c (New).
func (c *Config) Build(filter.Deps) (filter.Filter, error) { return New(c) }
