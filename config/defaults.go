package config

import "time"

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
	DefaultPolicy            = PolicyRoundRobin
	DefaultUpstreamTimeout   = Duration(30 * time.Second)
	DefaultConnectTimeout    = Duration(2 * time.Second)
	DefaultTargetWeight      = 100
	DefaultMaxIdlePerTarget  = 64
	DefaultPoolIdleTimeout   = Duration(90 * time.Second)
	DefaultRetries           = 1
	DefaultMaxFailures       = 5
	DefaultEjection          = Duration(10 * time.Second)
	DefaultMaxEjection       = Duration(2 * time.Minute)
)

// Load-balancing policies of Upstream.Policy.
const (
	PolicyRoundRobin     = "round_robin"
	PolicyWeightedRandom = "weighted_random"
	PolicyLeastRequest   = "least_request"
)

// RetryOnConnectFailure is the Retry.On entry for a failed TCP connect.
const RetryOnConnectFailure = "connect_failure"

// DefaultIdentityHeaders returns the default Server.IdentityHeaders: the
// auth filter's default user header, and the user headers that
// authenticating proxies (oauth2-proxy, Apache, Django's RemoteUser) send
// and that upstreams behind them trust.
func DefaultIdentityHeaders() []string {
	return []string{"X-User-Id", "X-Remote-User", "Remote-User", "X-Forwarded-User", "X-Forwarded-Email",
		"X-Auth-Request-User", "X-Auth-Request-Email"}
}

// DefaultRetryOn returns the default Retry.On.
func DefaultRetryOn() []string { return []string{RetryOnConnectFailure, "502", "503", "504"} }

// DefaultUpgrades returns the default Route.Upgrades: WebSocket only.
func DefaultUpgrades() []string { return []string{"websocket"} }

// DefaultRetryMethods returns the default Retry.Methods: the idempotent methods.
func DefaultRetryMethods() []string { return []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE"} }

// Defaults fills every zero value of c with its documented default. Slices
// are defaulted only when nil, so an explicit empty list stays empty. A
// route's timeout defaults to its upstream's and its body limit to
// server.max_body_bytes. Defaults is idempotent.
func Defaults(c *Config) {
	setDefault(&c.Listen, DefaultListen)
	setDefault(&c.Admin.Listen, DefaultAdminListen)
	setDefault(&c.Log.Level, DefaultLogLevel)
	setDefault(&c.Log.Format, DefaultLogFormat)

	s := &c.Server
	setDefault(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&s.IdleTimeout, DefaultIdleTimeout)
	setDefault(&s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setDefault(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefaultPtr(&s.MaxInFlight, DefaultMaxInFlight)
	setDefaultPtr(&s.H2C, true)
	if s.IdentityHeaders == nil {
		s.IdentityHeaders = DefaultIdentityHeaders()
	}
	setDefault(&s.BodyGrace, DefaultBodyGrace)
	setDefaultPtr(&s.MinBodyRate, DefaultMinBodyRate)
	setDefault(&s.WriteTimeout, DefaultWriteTimeout)
	setDefaultPtr(&s.MaxConnections, DefaultMaxConnections)
	setDefaultPtr(&s.MaxConnectionsPerIP, DefaultMaxConnsPerIP)
	setDefault(&s.MaxConcurrentStreams, DefaultMaxStreams)

	setDefaultPtr(&c.Shutdown.Delay, DefaultShutdownDelay)
	setDefaultPtr(&c.Shutdown.IdleGrace, DefaultIdleGrace)
	setDefault(&c.Shutdown.DrainTimeout, DefaultDrainTimeout)
	setDefault(&c.Reload.Interval, DefaultReloadInterval)
	setDefault(&c.RequestID.Header, DefaultRequestIDHeader)
	setDefaultPtr(&c.RequestID.TrustIncoming, true)
	setDefaultPtr(&c.AccessLog.Enabled, true)
	setDefault(&c.AccessLog.Output, DefaultAccessLogOutput)

	defaultDubbo(c)
	defaultRisk(c)
	defaultTracing(c)
	defaultFilters(c.DefaultFilters)
	for _, u := range c.Upstreams {
		if u != nil {
			u.Defaults()
		}
	}
	for _, r := range c.Routes {
		if r == nil {
			continue
		}
		defaultFilters(r.Filters)
		if u := c.Upstreams[r.Upstream]; u != nil {
			setDefault(&r.Timeout, u.Timeout)
		}
		setDefault(&r.MaxBodyBytes, s.MaxBodyBytes)
		if r.Upgrades == nil && r.Dubbo == nil {
			r.Upgrades = DefaultUpgrades()
		}
	}
}

// Defaults fills the fields of u left unset: Defaults(c) calls it for
// every upstream, and proxy.New for the one it builds.
func (u *Upstream) Defaults() {
	setDefault(&u.Policy, DefaultPolicy)
	setDefault(&u.Timeout, DefaultUpstreamTimeout)
	setDefault(&u.ConnectTimeout, DefaultConnectTimeout)
	for i := range u.Targets {
		setDefault(&u.Targets[i].Weight, DefaultTargetWeight)
	}
	setDefault(&u.Pool.MaxIdlePerTarget, DefaultMaxIdlePerTarget)
	setDefault(&u.Pool.IdleTimeout, DefaultPoolIdleTimeout)
	setDefaultPtr(&u.Retry.Retries, DefaultRetries)
	if u.Retry.On == nil {
		u.Retry.On = DefaultRetryOn()
	}
	if u.Retry.Methods == nil {
		u.Retry.Methods = DefaultRetryMethods()
	}
	setDefaultPtr(&u.PassiveHealth.MaxFailures, DefaultMaxFailures)
	setDefault(&u.PassiveHealth.Ejection, DefaultEjection)
	setDefault(&u.PassiveHealth.MaxEjection, DefaultMaxEjection)
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

func setDefaultPtr[T any](field **T, value T) {
	if *field == nil {
		*field = &value
	}
}
