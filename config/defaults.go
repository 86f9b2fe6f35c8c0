package config

import "time"

// server.engine's values.
const (
	EngineLoop    = "loop"
	EngineNetHTTP = "net/http"
)

// The documented defaults (see the field comments in types.go).
const (
	DefaultListen            = ":8080"
	DefaultAdminListen       = "127.0.0.1:9090"
	DefaultLogLevel          = "info"
	DefaultLogFormat         = "json"
	DefaultReadHeaderTimeout = Duration(10 * time.Second)
	DefaultIdleTimeout       = Duration(120 * time.Second)
	DefaultMaxHeaderBytes    = ByteSize(64 << 10)
	DefaultMaxBodyBytes      = ByteSize(8 << 20)
	DefaultMaxInFlight       = 10000
	DefaultBodyGrace         = Duration(10 * time.Second)
	DefaultMinBodyRate       = ByteSize(1 << 10)
	DefaultWriteTimeout      = Duration(30 * time.Second)
	DefaultMaxConnections    = 10000
	DefaultMaxConnsPerIP     = 64
	DefaultMaxStreams        = 100
	DefaultShutdownDelay     = Duration(3 * time.Second)
	DefaultIdleGrace         = Duration(time.Second)
	DefaultDrainTimeout      = Duration(30 * time.Second)
	DefaultReloadInterval    = Duration(2 * time.Second)
	DefaultRequestIDHeader   = "X-Request-Id"
	DefaultAccessLogOutput   = "stdout"
)

// DefaultIdentityHeaders returns the default Server.IdentityHeaders: the
// auth filter's default user header, and the user headers that
// authenticating proxies (oauth2-proxy, Apache, Django's RemoteUser) send
// and that upstreams behind them trust.
func DefaultIdentityHeaders() []string {
	return []string{"X-User-Id", "X-Remote-User", "Remote-User", "X-Forwarded-User", "X-Forwarded-Email",
		"X-Auth-Request-User", "X-Auth-Request-Email"}
}

// Defaults fills every zero value of c with its documented default. Slices
// are defaulted only when nil, so an explicit empty list stays empty. A
// route's timeout defaults to its upstream's and its body limit to
// server.max_body_bytes. Defaults is idempotent.
func Defaults(c *Config) {
	SetDefault(&c.Listen, DefaultListen)
	SetDefault(&c.Admin.Listen, DefaultAdminListen)
	SetDefault(&c.Admin.Readiness, ReadinessStrict)
	if c.Admin.TLS.Set() {
		c.Admin.TLS.Defaults()
	}
	SetDefault(&c.Log.Level, DefaultLogLevel)
	SetDefault(&c.Log.Format, DefaultLogFormat)

	s := &c.Server
	SetDefault(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	SetDefault(&s.IdleTimeout, DefaultIdleTimeout)
	SetDefault(&s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	SetDefault(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	SetDefaultPtr(&s.MaxInFlight, DefaultMaxInFlight)
	SetDefaultPtr(&s.H2C, true)
	SetDefault(&s.Engine, EngineLoop)
	if s.IdentityHeaders == nil {
		s.IdentityHeaders = DefaultIdentityHeaders()
	}
	SetDefault(&s.BodyGrace, DefaultBodyGrace)
	SetDefaultPtr(&s.MinBodyRate, DefaultMinBodyRate)
	SetDefault(&s.WriteTimeout, DefaultWriteTimeout)
	SetDefaultPtr(&s.MaxConnections, DefaultMaxConnections)
	SetDefaultPtr(&s.MaxConnectionsPerIP, DefaultMaxConnsPerIP)
	SetDefault(&s.MaxConcurrentStreams, DefaultMaxStreams)

	SetDefaultPtr(&c.Shutdown.Delay, DefaultShutdownDelay)
	SetDefaultPtr(&c.Shutdown.IdleGrace, DefaultIdleGrace)
	SetDefault(&c.Shutdown.DrainTimeout, DefaultDrainTimeout)
	SetDefault(&c.Reload.Interval, DefaultReloadInterval)
	SetDefault(&c.RequestID.Header, DefaultRequestIDHeader)
	SetDefaultPtr(&c.RequestID.TrustIncoming, true)
	SetDefaultPtr(&c.AccessLog.Enabled, true)
	SetDefault(&c.AccessLog.Output, DefaultAccessLogOutput)

	defaultRisk(c)
	defaultTracing(c)
	defaultFilters(c.DefaultFilters)

	// Sections first, then registries, then routes: a route kind's
	// defaults read sections (an upstream's timeout) and may add a
	// registry (a derived one), which is then defaulted too.
	for _, key := range sections.names() {
		if c.Sections[key] == nil {
			if c.Sections == nil {
				c.Sections = make(map[string]Section)
			}
			c.Sections[key], _ = sections.make(key)
		}
		c.Sections[key].Defaults(c)
	}
	for _, reg := range c.Registries {
		defaultRegistry(reg)
	}
	for _, r := range c.Routes {
		if r == nil {
			continue
		}
		defaultFilters(r.Filters)
		SetDefault(&r.MaxBodyBytes, s.MaxBodyBytes)
		if r.Spec != nil {
			r.Spec.Defaults(RouteContext{Config: c, Route: r, Params: routeParams(r)})
		}
	}
	for _, reg := range c.Registries {
		defaultRegistry(reg) // those routes added
	}
}

func defaultRegistry(reg *Registry) {
	if reg == nil {
		return
	}
	SetDefault(&reg.Type, DefaultRegistryType)
	SetDefault(&reg.ReleaseAfter, DefaultRegistryReleaseAfter)
	SetDefault(&reg.StartupWait, DefaultRegistryStartupWait)
	if reg.Spec == nil {
		reg.Spec, _ = registryTypes.make(reg.Type)
	}
	if reg.Spec != nil {
		reg.Spec.Defaults()
	}
}

// routeParams are the names of the parameters of r's path pattern (nil
// for a prefix route or a pattern that does not parse).
func routeParams(r *Route) []string {
	if r.Match.Path == "" {
		return nil
	}
	params, _ := parsePathPattern(r.Match.Path)
	return params
}

// SetDefault sets *field to value when it is the zero value: how every
// Defaults here and in the kinds' packages fills a field left unset.
func SetDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// SetDefaultPtr sets *field to a pointer to value when it is nil: for
// fields whose zero value is a setting (an explicit 0 or false).
func SetDefaultPtr[T any](field **T, value T) {
	if *field == nil {
		*field = &value
	}
}
