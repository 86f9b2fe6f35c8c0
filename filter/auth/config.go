package auth

import (
	"net/textproto"
	"slices"
	"sort"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

func init() { filter.Register("auth", func() filter.Spec { return new(Config) }) }

// Config is the auth filter's entry: `- auth: {...}`.
type Config struct {
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
	Timeout config.Duration `yaml:"timeout"`
	// StaleIfError: while the store is slow, failing or its breaker open,
	// a token this instance found valid within this long is served the
	// identity it had then (never past the token's TTL); only tokens it
	// does not know get 503. Default 5m; 0s fails closed (503 for all).
	StaleIfError *config.Duration `yaml:"stale_if_error"`
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
	Threshold config.Duration `yaml:"threshold"`
	// Window is the TTL it is extended to. Default 4h.
	Window config.Duration `yaml:"window"`
	// Interval: at most one renewal per token per interval. Default 1m.
	Interval config.Duration `yaml:"interval"`
}

// AnonymousRule matches requests allowed without a token.
type AnonymousRule struct {
	// Path is an exact path or a prefix ending in "/*" ("/public/*").
	Path string `yaml:"path"`
	// Methods restricts the rule; empty: any method.
	Methods []string `yaml:"methods"`
}

// Defaults fills the fields left unset.
func (c *Config) Defaults() {
	config.SetDefault(&c.Store, defaultStore)
	config.SetDefault(&c.KeyPrefix, defaultKeyPrefix)
	config.SetDefault(&c.Token.Header, defaultHeader)
	if c.Token.Bearer == nil {
		c.Token.Bearer = ptr(true)
	}
	config.SetDefault(&c.UserIDField, defaultUserIDField)
	if c.Headers == nil {
		c.Headers = map[string]string{defaultUserIDField: defaultUserIDHeader}
	}
	if c.Attachments == nil {
		c.Attachments = make(map[string]string, len(c.Headers))
		for field := range c.Headers {
			c.Attachments[field] = field
		}
	}
	if c.Sliding.Enabled == nil {
		c.Sliding.Enabled = ptr(true)
	}
	config.SetDefault(&c.Sliding.Threshold, config.Duration(defaultThreshold))
	config.SetDefault(&c.Sliding.Window, config.Duration(defaultWindow))
	config.SetDefault(&c.Sliding.Interval, config.Duration(defaultInterval))
	config.SetDefault(&c.OnStoreError, defaultOnStoreError)
	config.SetDefault(&c.Timeout, config.Duration(defaultTimeout))
	if c.StaleIfError == nil {
		c.StaleIfError = ptr(config.Duration(defaultStaleIfError))
	}
	config.SetDefault(&c.UnknownLookups, defaultUnknown)
}

// Validate reports every problem New would refuse; the redis store needs
// the top-level redis: section.
func (c *Config) Validate(at config.At, ctx config.FilterContext) { compile(c, ctx.Redis, at) }

// Build compiles c for the route (New). Offline, the redis store is not
// built: it would need a connection.
func (c *Config) Build(d filter.Deps) (filter.Filter, error) {
	if d.Offline && c.Store == "redis" {
		return filter.PassThrough, nil
	}
	return New(c, Deps{Redis: d.Redis, Metrics: d.Metrics, Log: d.Log, Route: d.Route})
}

// IdentityHeaders returns the headers the filter sends upstream (the
// targets of its headers, X-User-Id by default), canonical and sorted.
// The gateway removes them, and their look-alikes, from every request as
// it enters, on every route.
func (c *Config) IdentityHeaders() []string {
	if c.Headers == nil {
		return []string{defaultUserIDHeader}
	}
	names := make([]string, 0, len(c.Headers))
	for _, h := range c.Headers {
		names = append(names, textproto.CanonicalMIMEHeaderKey(h))
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// IdentityAttachments returns the attachment keys the filter sets and the
// fields of the identity it reads: a Dubbo route may set none of them.
func (c *Config) IdentityAttachments() []string {
	var keys []string
	for field, att := range c.Attachments {
		keys = append(keys, field, att)
	}
	for field := range c.Headers {
		keys = append(keys, field)
	}
	if c.UserIDField != "" {
		keys = append(keys, c.UserIDField)
	}
	return keys
}

func ptr[T any](v T) *T { return &v }
