package proxy

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"golang.org/x/net/http/httpguts"
)

// The proxy's configuration: the top-level upstreams: section, each entry
// a Config, and the route kind "upstream" (a route that sets upstream:
// sends its requests to that entry). Registered here, so config knows
// neither.

func init() {
	config.RegisterSection(SectionKey, func() config.Section { return new(Upstreams) })
	config.RegisterRouteKind(RouteKey, func() config.RouteSpec { return new(Route) })
}

// SectionKey is the top-level key of the upstreams; RouteKey the route
// key that names one.
const (
	SectionKey = "upstreams"
	RouteKey   = "upstream"
)

// Config is one entry of the top-level upstreams: an HTTP service with
// one or more targets.
type Config struct {
	// Targets are base URLs (scheme http or https, host:port, optional base path).
	Targets []Target `yaml:"targets"`
	// Policy picks a target: round_robin (default), weighted_random, least_request.
	Policy string `yaml:"policy"`
	// Timeout bounds the whole exchange (request, response headers and body). Default 30s.
	Timeout config.Duration `yaml:"timeout"`
	// ConnectTimeout bounds TCP connect. Default 2s.
	ConnectTimeout config.Duration `yaml:"connect_timeout"`
	// PreserveHost forwards the client's Host header instead of the target's.
	PreserveHost bool `yaml:"preserve_host"`
	// Pool limits connections per target.
	Pool Pool `yaml:"pool"`
	// Retry retries idempotent requests on another target.
	Retry Retry `yaml:"retry"`
	// PassiveHealth ejects failing targets and lets them back through probes.
	PassiveHealth PassiveHealth `yaml:"passive_health"`
	// Transport sends the requests: "direct" (default: HTTP/1.1 exchanges
	// on the calling goroutine over pooled connections, for http://
	// targets; https targets, upgrades, Expect: 100-continue, trailers and
	// large or streamed bodies go through net/http's Transport) or
	// "standard" (net/http's Transport for everything).
	Transport string `yaml:"transport"`
	// Protocol is the HTTP version targets are spoken to with: http1
	// (default) or http2: HTTP/2 with prior knowledge (h2c) to http://
	// targets, HTTP/2 over TLS (ALPN h2) to https:// ones. gRPC backends
	// need http2 (trailers, streams both ways at once). With http2 every
	// request goes through net/http's Transport (transport standard).
	Protocol string `yaml:"protocol"`
	// TLS is how https:// targets are spoken to: ca_file (a private CA),
	// cert_file and key_file (a client certificate), server_name,
	// min_version (config.ClientTLS). Default: the system's roots, the
	// target's host name.
	TLS config.ClientTLS `yaml:"tls"`
}

// Values of Config.Protocol.
const (
	ProtocolHTTP1 = "http1"
	ProtocolHTTP2 = "http2"
)

// Values of Config.Transport; "" means TransportDirect.
const (
	TransportStandard = "standard"
	TransportDirect   = "direct"
)

// Target is one upstream address.
type Target struct {
	URL string `yaml:"url"`
	// Weight for weighted_random (and ignored by other policies). Default 100.
	Weight int `yaml:"weight"`
}

// Pool limits the connection pool of each target.
type Pool struct {
	// MaxIdlePerTarget keeps at most this many idle connections per target. Default 64.
	MaxIdlePerTarget int `yaml:"max_idle_per_target"`
	// MaxPerTarget caps connections per target (requests wait beyond it); 0 = no cap. Default 0.
	MaxPerTarget int `yaml:"max_per_target"`
	// IdleTimeout closes idle pooled connections. Default 90s.
	IdleTimeout config.Duration `yaml:"idle_timeout"`
}

// Retry sets retries of a failed attempt on another target.
type Retry struct {
	// Retries is the number of extra attempts. Default 1; 0 disables.
	Retries *int `yaml:"retries"`
	// On lists what counts as retryable: connect_failure and status codes such as 502, 503, 504.
	// Default [connect_failure, 502, 503, 504].
	On []string `yaml:"on"`
	// Methods that may be retried. Default GET, HEAD, OPTIONS, PUT, DELETE (idempotent methods).
	Methods []string `yaml:"methods"`
}

// PassiveHealth ejects a target after consecutive failures (connect errors and 5xx)
// and lets a single probe request through once the ejection time has passed.
type PassiveHealth struct {
	// MaxFailures consecutive failures eject a target. Default 5; 0 disables ejection.
	MaxFailures *int `yaml:"max_failures"`
	// Ejection is the first ejection time; it doubles on each failed probe. Default 10s.
	Ejection config.Duration `yaml:"ejection"`
	// MaxEjection caps the ejection time. Default 2m.
	MaxEjection config.Duration `yaml:"max_ejection"`
}

// The documented defaults (see the field comments of Config).
const (
	DefaultPolicy           = PolicyRoundRobin
	DefaultTimeout          = config.Duration(30 * time.Second)
	DefaultConnectTimeout   = config.Duration(2 * time.Second)
	DefaultTargetWeight     = 100
	DefaultMaxIdlePerTarget = 64
	DefaultPoolIdleTimeout  = config.Duration(90 * time.Second)
	DefaultRetries          = 1
	DefaultMaxFailures      = 5
	DefaultEjection         = config.Duration(10 * time.Second)
	DefaultMaxEjection      = config.Duration(2 * time.Minute)
)

// Load-balancing policies of Config.Policy.
const (
	PolicyRoundRobin     = "round_robin"
	PolicyWeightedRandom = "weighted_random"
	PolicyLeastRequest   = "least_request"
)

// RetryOnConnectFailure is the Retry.On entry for a failed TCP connect.
const RetryOnConnectFailure = "connect_failure"

// DefaultRetryOn returns the default Retry.On.
func DefaultRetryOn() []string { return []string{RetryOnConnectFailure, "502", "503", "504"} }

// DefaultRetryMethods returns the default Retry.Methods: the idempotent methods.
func DefaultRetryMethods() []string { return []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE"} }

// DefaultUpgrades returns the default Route.Upgrades: WebSocket only.
func DefaultUpgrades() []string { return []string{"websocket"} }

// Defaults fills the fields of c left unset: the upstreams section calls
// it for every entry, and New for the one it builds.
func (c *Config) Defaults() {
	config.SetDefault(&c.Policy, DefaultPolicy)
	config.SetDefault(&c.Protocol, ProtocolHTTP1)
	config.SetDefault(&c.Timeout, DefaultTimeout)
	config.SetDefault(&c.ConnectTimeout, DefaultConnectTimeout)
	for i := range c.Targets {
		config.SetDefault(&c.Targets[i].Weight, DefaultTargetWeight)
	}
	config.SetDefault(&c.Pool.MaxIdlePerTarget, DefaultMaxIdlePerTarget)
	config.SetDefault(&c.Pool.IdleTimeout, DefaultPoolIdleTimeout)
	config.SetDefaultPtr(&c.Retry.Retries, DefaultRetries)
	if c.Retry.On == nil {
		c.Retry.On = DefaultRetryOn()
	}
	if c.Retry.Methods == nil {
		c.Retry.Methods = DefaultRetryMethods()
	}
	config.SetDefaultPtr(&c.PassiveHealth.MaxFailures, DefaultMaxFailures)
	config.SetDefault(&c.PassiveHealth.Ejection, DefaultEjection)
	config.SetDefault(&c.PassiveHealth.MaxEjection, DefaultMaxEjection)
}

// Validate reports every problem of the defaulted c at at: the rules
// `dubbogw validate` applies and New applies again.
func (c *Config) Validate(at config.At) {
	if len(c.Targets) == 0 {
		at.Field("targets").Errorf("required: at least one target")
	}
	firstByURL := make(map[string]int)
	for i, t := range c.Targets {
		tat := at.Field("targets").Index(i)
		if err := checkTargetURL(t.URL); err != nil {
			tat.Field("url").Err(err)
		} else if first, dup := firstByURL[t.URL]; dup {
			tat.Field("url").Errorf("repeats targets[%d]; use weight to favour a target", first)
		} else {
			firstByURL[t.URL] = i
		}
		if t.Weight < 1 || t.Weight > 10000 {
			tat.Field("weight").Errorf("must be 1..10000, got %d", t.Weight)
		}
	}
	if _, err := newPolicy(c.Policy, nil); err != nil {
		at.Field("policy").Err(err)
	}
	switch c.Transport {
	case "", TransportStandard, TransportDirect:
	default:
		at.Field("transport").Errorf("%q is not a transport: want standard or direct", c.Transport)
	}
	switch c.Protocol {
	case ProtocolHTTP1:
	case ProtocolHTTP2:
		if c.Transport == TransportDirect {
			at.Field("transport").Errorf("direct speaks HTTP/1.1 only: with protocol http2 leave it out or say standard")
		}
	default:
		at.Field("protocol").Errorf("%q is not a protocol: want http1 or http2", c.Protocol)
	}
	if c.TLS.Set() {
		tat := at.Field("tls")
		https := false
		for _, t := range c.Targets {
			https = https || strings.HasPrefix(strings.ToLower(t.URL), "https://")
		}
		switch {
		case c.TLS.Enabled:
			tat.Field("enabled").Errorf("not an upstream setting: a target speaks TLS when its URL is https://")
		case !https:
			tat.Errorf("no target is https://: tls applies to https targets only")
		default:
			tat.ValidateClientTLS(c.TLS)
		}
	}
	at.Field("timeout").Err(config.Positive(c.Timeout))
	at.Field("connect_timeout").Err(config.Positive(c.ConnectTimeout))
	if c.Pool.MaxIdlePerTarget < 0 {
		at.Field("pool").Field("max_idle_per_target").Errorf("must not be negative")
	}
	if c.Pool.MaxPerTarget < 0 {
		at.Field("pool").Field("max_per_target").Errorf("must be 0 (no cap) or more")
	}
	at.Field("pool").Field("idle_timeout").Err(config.NonNegative(c.Pool.IdleTimeout))
	c.Retry.validate(at.Field("retry"))
	h, hat := &c.PassiveHealth, at.Field("passive_health")
	if h.MaxFailures != nil && *h.MaxFailures < 0 {
		hat.Field("max_failures").Errorf("must be 0 (no ejection) or more, got %d", *h.MaxFailures)
	}
	hat.Field("ejection").Err(config.Positive(h.Ejection))
	if h.MaxEjection < h.Ejection {
		hat.Field("max_ejection").Errorf("%s is shorter than ejection (%s)", h.MaxEjection.D(), h.Ejection.D())
	}
}

func (r *Retry) validate(at config.At) {
	if r.Retries != nil && (*r.Retries < 0 || *r.Retries > 10) {
		at.Field("retries").Errorf("must be 0..10, got %d", *r.Retries)
	}
	for i, on := range r.On {
		oat := at.Field("on").Index(i)
		if on != RetryOnConnectFailure {
			if code, err := strconv.Atoi(on); err != nil || code < 500 || code > 599 {
				oat.Errorf("%q: want connect_failure or a status code 500..599", on)
				continue
			}
		}
		if j := slices.Index(r.On[:i], on); j >= 0 {
			oat.Errorf("%s repeats on[%d]", on, j)
		}
	}
	config.CheckMethods(at.Field("methods"), r.Methods)
}

// checkTargetURL accepts "http://host:port" and "https://host[:port]/base".
// Its errors show the URL redacted (config.RedactURL).
func checkTargetURL(raw string) error {
	if raw == "" {
		return errors.New(`required: a base URL such as "http://127.0.0.1:8081"`)
	}
	shown := config.RedactURL(raw)
	if !strings.Contains(raw, "://") {
		return fmt.Errorf("%q has no scheme: write \"http://%s\"", shown, shown)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL%s", shown, config.URLErrorDetail(raw, err))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: scheme must be http or https", shown)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q has no host", shown)
	case u.User != nil:
		return fmt.Errorf("%q: credentials in the URL are not supported; use a headers filter", shown)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("%q: a target has no query", shown)
	case u.Fragment != "":
		return fmt.Errorf("%q: a target has no fragment", shown)
	}
	if p := u.Port(); p != "" {
		if err := config.CheckPort(p, false); err != nil {
			return fmt.Errorf("%q: %v", shown, err)
		}
	}
	return nil
}

// Upstreams is the top-level upstreams: section, by name.
type Upstreams map[string]*Config

// Defaults fills every entry's defaults.
func (us *Upstreams) Defaults(*config.Config) {
	for _, u := range *us {
		if u != nil {
			u.Defaults()
		}
	}
}

// Validate checks every entry, and its name.
func (us *Upstreams) Validate(at config.At, _ *config.Config) {
	for _, name := range slices.Sorted(maps.Keys(*us)) {
		uat := at.Field(name)
		if !config.CheckName(name) {
			uat.Errorf("upstream name %q: use only letters, digits, '-', '_' and '.'", name)
		}
		u := (*us)[name]
		if u == nil {
			uat.Errorf("empty upstream: targets are required")
			continue
		}
		u.Validate(uat)
	}
}

// Warn reports the upstreams no route uses.
func (us *Upstreams) Warn(at config.At, c *config.Config) {
	used := make(map[string]bool)
	for _, r := range c.Routes {
		if rt, ok := RouteOf(r); ok {
			used[rt.Upstream] = true
		}
	}
	for name := range *us {
		if !used[name] {
			at.Field(name).Errorf("not used by any route")
		}
	}
}

// UpstreamsOf returns c's upstreams (nil before config.Defaults when the
// file has none).
func UpstreamsOf(c *config.Config) Upstreams {
	if us, ok := c.Section(SectionKey).(*Upstreams); ok && us != nil {
		return *us
	}
	return nil
}

// Route is the settings of a route that sends its requests to an HTTP
// upstream: the route's keys upstream and upgrades.
type Route struct {
	// Upstream names an entry of upstreams.
	Upstream string `yaml:"upstream"`
	// Upgrades lists the protocols an HTTP route lets a client upgrade to
	// (Upgrade header, tunnelled after a 101); a request asking for
	// another one is served as plain HTTP, its Upgrade ignored. Default
	// [websocket]; [] allows none.
	Upgrades []string `yaml:"upgrades"`
}

// RouteOf returns the settings of r when it is an HTTP upstream route.
func RouteOf(r *config.Route) (*Route, bool) {
	if r == nil {
		return nil, false
	}
	rt, ok := r.Spec.(*Route)
	return rt, ok
}

// Defaults sets the route's timeout to its upstream's, and the upgrades.
func (rt *Route) Defaults(ctx config.RouteContext) {
	if u := UpstreamsOf(ctx.Config)[rt.Upstream]; u != nil {
		config.SetDefault(&ctx.Route.Timeout, u.Timeout)
	}
	if rt.Upgrades == nil {
		rt.Upgrades = DefaultUpgrades()
	}
}

// Validate checks that the upstream is defined and the upgrades are
// protocol names (tokens, an optional "/version").
func (rt *Route) Validate(at config.At, ctx config.RouteContext) {
	us := UpstreamsOf(ctx.Config)
	switch _, ok := us[rt.Upstream]; {
	case rt.Upstream == "":
		at.Field(RouteKey).Errorf("required: name an entry of upstreams")
	case !ok:
		at.Field(RouteKey).Err(config.NotDefined("upstream", rt.Upstream, slices.Collect(maps.Keys(us))))
	}
	for i, p := range rt.Upgrades {
		// A protocol is a token with an optional "/version" (RFC 9110 7.8).
		name, version, versioned := strings.Cut(p, "/")
		if !httpguts.ValidHeaderFieldName(name) || versioned && !httpguts.ValidHeaderFieldName(version) {
			at.Field("upgrades").Index(i).Errorf("%q is not a protocol name such as websocket", p)
		}
	}
}
