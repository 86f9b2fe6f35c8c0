package dubboroute

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
	"github.com/dubbogw/dubbogw/idl"
	"github.com/dubbogw/dubbogw/registry"
	"golang.org/x/net/http/httpguts"
)

// The Dubbo route's configuration: the route kind "dubbo" (a route that
// sets dubbo: calls a Dubbo method) and the top-level dubbo: section (the
// client every such route shares). Registered here, so config knows
// neither.

func init() {
	config.RegisterSection(SectionKey, func() config.Section { return new(Client) })
	config.RegisterRouteKind(RouteKey, func() config.RouteSpec { return new(Route) })
}

// SectionKey is the top-level key of the client's settings; RouteKey the
// route key that makes a Dubbo route.
const (
	SectionKey = "dubbo"
	RouteKey   = "dubbo"
)

// Defaults of the Dubbo client and routes, as Java Dubbo users expect them.
const (
	DefaultDubboConnsPerAddr  = 1
	DefaultDubboDialTimeout   = config.Duration(3 * time.Second)
	DefaultDubboHeartbeat     = config.Duration(60 * time.Second)
	DefaultDubboMaxPayload    = config.ByteSize(8 << 20)
	DefaultDubboMaxPending    = 10000
	DefaultDubboTimeout       = config.Duration(time.Second)
	DefaultDubboRetries       = 2
	DefaultDubboCluster       = "failover" // cluster.Failover
	DefaultDubboLoadBalance   = "random"
	DefaultExceptionStatus    = 500
	DefaultBreakerMaxFailures = 5
	DefaultBreakerRatio       = 0.5
	DefaultBreakerWindow      = config.Duration(10 * time.Second)
	DefaultBreakerMinRequests = 20
	DefaultBreakerOpenFor     = config.Duration(10 * time.Second)
	DefaultBreakerProbes      = 1

	DefaultMaxReferences          = 1024
	DefaultReferenceIdleTTL       = config.Duration(10 * time.Minute)
	DefaultReferenceNewPerSecond  = 100
	DefaultReferenceSubscriptions = 2048

	// DefaultTagHeader is the header a client gives a call's Dubbo tag with.
	DefaultTagHeader = "X-Dubbo-Tag"
	// MaxTagLen bounds a Dubbo tag.
	MaxTagLen = 64
)

// ValidTag reports whether tag may be a call's Dubbo tag: 1 to MaxTagLen
// letters, digits, '.', '-' and '_' (Dubbo Admin's tag names are such).
func ValidTag(tag string) bool {
	if tag == "" || len(tag) > MaxTagLen {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// DefaultDubboBodyBudget is a route's default max_body_bytes_in_flight:
// four bodies of the default size limit at once, or thousands of small ones.
const DefaultDubboBodyBudget = config.ByteSize(32 << 20)

// Protocols a route calls its providers with.
const (
	ProtocolDubbo  = "dubbo"
	ProtocolTriple = "tri"
	ProtocolAuto   = "auto"
)

// Sources of a Param.
const (
	FromPath     = "path"
	FromQuery    = "query"
	FromHeader   = "header"
	FromBody     = "body"
	FromConstant = "constant"
)

var (
	paramSources = []string{FromPath, FromQuery, FromHeader, FromBody, FromConstant}
)

// References bounds the Dubbo references made on demand (the generic
// pass-through): one per (interface, version, group, timeout). Routes'
// own references are always kept.
type References struct {
	// Max references kept beyond those routes hold, least recently used
	// evicted first. Default 1024.
	Max int `yaml:"max"`
	// IdleTTL evicts a reference unused for this long, and releases its
	// subscription at once. Default 10m.
	IdleTTL config.Duration `yaml:"idle_ttl"`
	// NewPerSecond bounds the subscriptions the pass-through makes for
	// services nobody else holds, per second (a burst of as many); beyond,
	// calls answer 503 SUBSCRIBE_LIMITED. Default 100.
	NewPerSecond int `yaml:"new_per_second"`
	// MaxSubscriptions bounds the subscriptions made that way that are
	// live at once (held, or waiting out release_after). Default 2048.
	MaxSubscriptions int `yaml:"max_subscriptions"`
}

// Client is the top-level dubbo: section: the Dubbo client shared by
// every Dubbo route, and what every route allows.
type Client struct {
	// ConnsPerAddr multiplexed connections per provider address. Default 1.
	ConnsPerAddr int `yaml:"conns_per_addr"`
	// DialTimeout bounds connecting to a provider. Default 3s.
	DialTimeout config.Duration `yaml:"dial_timeout"`
	// Heartbeat is the idle time before a heartbeat; 3 missed close the connection. Default 60s.
	Heartbeat config.Duration `yaml:"heartbeat"`
	// MaxPayload bounds request and response bodies. Default 8MiB.
	MaxPayload config.ByteSize `yaml:"max_payload"`
	// MaxPending bounds calls waiting for a response per connection. Default 10000.
	MaxPending int `yaml:"max_pending"`
	// Types declares DTO field types for every route: class → field → Java type.
	Types map[string]map[string]string `yaml:"types"`
	// AllowedClasses are classes every route lets clients name in a
	// "class" key or a pass-through type, beyond the declared parameter
	// types, the classes of types and the built-in ones (java.lang boxes
	// and String, BigDecimal, BigInteger, java.util collections and Date,
	// java.time): exact names or package prefixes such as com.example.dto.*.
	// Known deserialization gadgets are refused whatever this says.
	// Default: none.
	AllowedClasses []string `yaml:"allowed_classes"`
	// References bounds references made on demand.
	References References `yaml:"references"`
	// Metrics sets which Dubbo metrics are exported one series per
	// provider. Changes only on restart.
	Metrics Metrics `yaml:"metrics"`
	// TLS is how providers over TLS are spoken to: those whose registry
	// URL says ssl-enabled=true, or every one with enabled: true (dubbo-go
	// providers serve TLS without saying so in their URL). Changes only
	// on restart.
	TLS config.ClientTLS `yaml:"tls"`
}

// Metrics sets the cardinality of the Dubbo client's and clusters'
// metrics (docs/METRICS.md has the formula).
type Metrics struct {
	// PerProvider labels the dubbogw_dubbo_* families with the provider
	// address (addr) and exports each provider circuit breaker's state and
	// transitions under its address: series then grow with the providers
	// (49 per address called, and one or more per route and provider
	// address). For debugging a few providers, not for a large registry.
	// Default false: the dubbogw_dubbo_* families have no addr label, and
	// a route's provider breakers are counted in
	// dubbogw_cluster_provider_breakers_open; the series do not grow with
	// the registry.
	PerProvider bool `yaml:"per_provider"`
}

// Config is a route's dubbo: mapping: it turns the route's requests into
// calls of one Dubbo method (or, with Passthrough, of any allowed method
// named in the path).
type Config struct {
	// Registry names an entry of registries.
	Registry string `yaml:"registry"`
	// Discovery (zookeeper registries) reads this route's service with
	// another discovery mode than its registry's (interface, application
	// or auto). The route then uses registry "<registry>@<mode>": a copy of
	// its registry with that mode (a second session to the same
	// ZooKeeper), shared by every route asking for the mode. Default: the
	// registry's mode.
	Discovery string `yaml:"discovery"`
	// Interface, Version, Group and Method name what is called. With
	// Passthrough, Interface and Method come from the path instead.
	Interface string `yaml:"interface"`
	Version   string `yaml:"version"`
	Group     string `yaml:"group"`
	Method    string `yaml:"method"`
	// Protocol is the protocol providers are called with: dubbo, tri
	// (Triple) or auto (default): dubbo where a provider offers it, else
	// tri. Providers of the other protocol are left out.
	Protocol string `yaml:"protocol"`
	// Generic calls through $invoke (no provider JAR needed; default true,
	// false with protocol tri); false sends a typed call (real method name
	// and descriptor). Triple providers take typed calls only.
	Generic *bool `yaml:"generic"`
	// Async calls $invokeAsync instead of $invoke (generic only): the
	// provider runs the method on its async path. Default false.
	Async bool `yaml:"async"`
	// Timeout of one call. Default 1s, as Java Dubbo.
	Timeout config.Duration `yaml:"timeout"`
	// Check refuses to start (or reload) when the service has no provider
	// once the registry has answered, as Dubbo's check=true. Default false:
	// the route answers 503 NO_PROVIDER until a provider registers.
	Check bool `yaml:"check"`
	// Cluster is failover (default) or failfast.
	Cluster string `yaml:"cluster"`
	// Retries on other providers (failover, idempotent methods only). Default 2.
	Retries *int `yaml:"retries"`
	// Idempotent lets failover retry calls that may have reached a provider.
	// Default: true when the route's HTTP methods are all GET or HEAD.
	Idempotent *bool `yaml:"idempotent"`
	// LoadBalance is random (weighted, default), roundrobin, leastactive, consistenthash or p2c.
	LoadBalance string `yaml:"loadbalance"`
	// HashArguments are the parameter indexes consistenthash hashes. Default [0].
	HashArguments []int `yaml:"hash_arguments"`
	// Params are the method's parameters, in order, with where each comes from.
	Params []Param `yaml:"params"`
	// Types declares DTO field types for this route (merged over dubbo.types).
	Types map[string]map[string]string `yaml:"types"`
	// AllowedClasses are classes this route lets clients name, over
	// dubbo.allowed_classes (a subtype of a declared DTO, say); a
	// pass-through route also allows the packages of its allowed
	// interfaces. Default: none.
	AllowedClasses []string `yaml:"allowed_classes"`
	// MaxBodyBytesInFlight is this route's memory budget: the bytes of
	// request bodies it holds at once, while they are read, decoded and
	// sent. A request whose body would take it beyond is shed at once
	// (503 SHED, Retry-After). Default 32MiB, or the route's
	// max_body_bytes when that is larger.
	MaxBodyBytesInFlight config.ByteSize `yaml:"max_body_bytes_in_flight"`
	// DetailedErrors shows clients the provider's own error text (it may
	// name internal addresses and the gateway's connections) and transport
	// errors as they are. Default false: clients get the status and the
	// exception's class and message; the details go to the log.
	DetailedErrors bool `yaml:"detailed_errors"`
	// Attachments are constant attachments sent with every call. Their
	// values (a signature, a provider token) are never shown.
	Attachments map[string]string `yaml:"attachments" redact:"values"`
	// AttachmentsFrom maps request headers to attachments: header name →
	// attachment key ({X-Tenant: tenant}). A header the request lacks adds
	// nothing; a repeated one, or one longer than MaxMappedValue bytes or
	// not UTF-8, is refused (400). Keys Dubbo reserves, identity keys and
	// the keys of attachments cannot be mapped; identity attachments of an
	// auth filter win. Default: none.
	AttachmentsFrom map[string]string `yaml:"attachments_from"`
	// Tag is the Dubbo tag of every call of the route (Dubbo's tag
	// routing): sent as attachment dubbo.tag, it chooses the providers of
	// that tag under the registry's governance rules and static tags. When
	// set, TagHeader is not read. Default: none.
	Tag string `yaml:"tag"`
	// TagHeader is the request header a client gives the call's tag with
	// (when Tag is not set): at most 64 letters, digits, '.', '-' and '_'
	// (another value is refused, 400). "" reads none. Default
	// "X-Dubbo-Tag".
	TagHeader *string `yaml:"tag_header"`
	// Result sets how results become JSON.
	Result Result `yaml:"result"`
	// ExceptionStatus is the HTTP status of a business exception. Default 500.
	ExceptionStatus int `yaml:"exception_status"`
	// Passthrough enables the generic pass-through endpoint on this route.
	Passthrough *Passthrough `yaml:"passthrough"`
	// IDL calls a protobuf (IDL) method over Triple: interface is the
	// protobuf service's full name, method the rpc's name, the request's
	// JSON body the request message. Implies protocol tri; no params.
	IDL *IDL `yaml:"idl"`
	// Breaker opens after failures so calls fail fast with 503.
	Breaker Breaker `yaml:"breaker"`
}

// Param is one parameter of a Dubbo method.
type Param struct {
	// Type is the Java type: int, java.lang.String, com.example.User,
	// java.util.List<com.example.Item>, int[], ...
	Type string `yaml:"type"`
	// From is path, query, header, body (default) or constant.
	From string `yaml:"from"`
	// Name is the path parameter, query parameter or header name; for body,
	// the top-level JSON field the parameter is bound to by name.
	Name string `yaml:"name"`
	// Pointer is a JSON pointer (RFC 6901) into the body, e.g. "/user/id".
	Pointer string `yaml:"pointer"`
	// Value is the constant's value, or the default when the source is absent.
	Value *string `yaml:"value"`
	// Required refuses requests where the source is absent (400). Default: true for path.
	Required *bool `yaml:"required"`
}

// Result sets how a result becomes JSON.
type Result struct {
	// KeepClass keeps the "class" keys of generic results. Default false.
	KeepClass bool `yaml:"keep_class"`
	// LongAsNumber writes longs beyond ±2^53 as JSON numbers (default: strings, which JavaScript reads exactly).
	LongAsNumber bool `yaml:"long_as_number"`
	// BigAsNumber writes BigDecimal and BigInteger as JSON numbers (default: strings).
	BigAsNumber bool `yaml:"big_as_number"`
}

// Passthrough is the generic pass-through endpoint: the route's path must
// capture {interface} and {method}; the body is
// {"types": [...], "args": [...], "version": "...", "group": "...", "attachments": {...}}.
type Passthrough struct {
	// Allow lists the interfaces that may be called: exact names or a prefix ending in ".*".
	Allow []string `yaml:"allow"`
	// Attachments lists the attachment keys a client may send in the
	// body's "attachments"; any other key is refused (400). Keys Dubbo
	// reserves (path, group, token, generic, dubbo.tag...) and identity
	// keys an auth filter sets cannot be listed. Default: none.
	Attachments []string `yaml:"attachments"`
}

// Breaker is a circuit breaker: open after MaxFailures consecutive failures
// or when the failure ratio over Window reaches FailureRatio (with at least
// MinRequests), for OpenFor; then HalfOpenProbes calls test the way back.
type Breaker struct {
	// Enabled turns the breaker on. Default true.
	Enabled *bool `yaml:"enabled"`
	// MaxFailures consecutive failures open it. Default 5.
	MaxFailures int `yaml:"max_failures"`
	// FailureRatio over Window opens it (0 disables the ratio rule). Default 0.5.
	FailureRatio *float64 `yaml:"failure_ratio"`
	// Window of the ratio rule. Default 10s.
	Window config.Duration `yaml:"window"`
	// MinRequests in Window before the ratio rule applies. Default 20.
	MinRequests int `yaml:"min_requests"`
	// OpenFor is how long it stays open. Default 10s.
	OpenFor config.Duration `yaml:"open_for"`
	// HalfOpenProbes calls let through to test recovery. Default 1.
	HalfOpenProbes int `yaml:"half_open_probes"`
}

// Route is the settings of a Dubbo route: its dubbo: key.
type Route struct {
	Dubbo Config `yaml:"dubbo"`
}

// RouteOf returns the dubbo: settings of r when it is a Dubbo route.
func RouteOf(r *config.Route) (*Config, bool) {
	if r == nil {
		return nil, false
	}
	if rt, ok := r.Spec.(*Route); ok {
		return &rt.Dubbo, true
	}
	return nil, false
}

// ClientOf returns c's dubbo: section (nil before config.Defaults when
// the file has none).
func ClientOf(c *config.Config) *Client {
	cl, _ := c.Section(SectionKey).(*Client)
	return cl
}

// Defaults fills the client's defaults.
func (d *Client) Defaults(*config.Config) {
	config.SetDefault(&d.ConnsPerAddr, DefaultDubboConnsPerAddr)
	config.SetDefault(&d.DialTimeout, DefaultDubboDialTimeout)
	config.SetDefault(&d.Heartbeat, DefaultDubboHeartbeat)
	config.SetDefault(&d.MaxPayload, DefaultDubboMaxPayload)
	config.SetDefault(&d.MaxPending, DefaultDubboMaxPending)
	config.SetDefault(&d.References.Max, DefaultMaxReferences)
	config.SetDefault(&d.References.IdleTTL, DefaultReferenceIdleTTL)
	config.SetDefault(&d.References.NewPerSecond, DefaultReferenceNewPerSecond)
	config.SetDefault(&d.References.MaxSubscriptions, DefaultReferenceSubscriptions)
}

// Validate checks the client's settings.
func (d *Client) Validate(at config.At, _ *config.Config) {
	if d.ConnsPerAddr < 1 || d.ConnsPerAddr > 64 {
		at.Field("conns_per_addr").Errorf("must be 1..64, got %d", d.ConnsPerAddr)
	}
	at.Field("dial_timeout").Err(config.Positive(d.DialTimeout))
	if d.Heartbeat.D() < 100*time.Millisecond {
		at.Field("heartbeat").Errorf("%s is too short: at least 100ms", d.Heartbeat.D())
	}
	if d.MaxPayload < 1<<10 {
		at.Field("max_payload").Errorf("%d bytes is too small: at least 1KiB", d.MaxPayload)
	}
	if d.MaxPending < 1 {
		at.Field("max_pending").Errorf("must be at least 1, got %d", d.MaxPending)
	}
	at.Field("tls").ValidateClientTLS(d.TLS)
	validateTypes(at.Field("types"), d.Types)
	validateAllowedClasses(at.Field("allowed_classes"), d.AllowedClasses)
	r := at.Field("references")
	if d.References.Max < 1 {
		r.Field("max").Errorf("must be at least 1, got %d", d.References.Max)
	}
	if d.References.NewPerSecond < 1 {
		r.Field("new_per_second").Errorf("must be at least 1, got %d", d.References.NewPerSecond)
	}
	if d.References.MaxSubscriptions < 1 {
		r.Field("max_subscriptions").Errorf("must be at least 1, got %d", d.References.MaxSubscriptions)
	}
}

// Defaults fills the route's defaults, and its timeout: the route's own
// timeout is the call's default, and the call's the route's. A route
// asking for another discovery mode than its registry's is pointed at a
// derived registry (deriveRegistry).
func (rt *Route) Defaults(ctx config.RouteContext) {
	c, r, dr := ctx.Config, ctx.Route, &rt.Dubbo
	deriveRegistry(c, dr)
	if dr.IDL != nil {
		config.SetDefault(&dr.Protocol, ProtocolTriple)
	}
	config.SetDefault(&dr.Protocol, ProtocolAuto)
	config.SetDefaultPtr(&dr.Generic, dr.Protocol != ProtocolTriple)
	config.SetDefault(&dr.Timeout, r.Timeout)
	config.SetDefault(&dr.Timeout, DefaultDubboTimeout)
	config.SetDefault(&r.Timeout, dr.Timeout)
	config.SetDefault(&dr.Cluster, DefaultDubboCluster)
	config.SetDefaultPtr(&dr.Retries, DefaultDubboRetries)
	config.SetDefaultPtr(&dr.Idempotent, readOnlyMethods(r.Match.Methods))
	config.SetDefault(&dr.LoadBalance, DefaultDubboLoadBalance)
	if dr.HashArguments == nil {
		dr.HashArguments = []int{0}
	}
	config.SetDefault(&dr.ExceptionStatus, DefaultExceptionStatus)
	if dr.TagHeader == nil {
		h := DefaultTagHeader
		dr.TagHeader = &h
	}
	config.SetDefault(&dr.MaxBodyBytesInFlight, max(DefaultDubboBodyBudget, r.MaxBodyBytes)) // server.max_body_bytes by now
	b := &dr.Breaker
	config.SetDefaultPtr(&b.Enabled, true)
	config.SetDefault(&b.MaxFailures, DefaultBreakerMaxFailures)
	config.SetDefaultPtr(&b.FailureRatio, DefaultBreakerRatio)
	config.SetDefault(&b.Window, DefaultBreakerWindow)
	config.SetDefault(&b.MinRequests, DefaultBreakerMinRequests)
	config.SetDefault(&b.OpenFor, DefaultBreakerOpenFor)
	config.SetDefault(&b.HalfOpenProbes, DefaultBreakerProbes)
	for i := range dr.Params {
		p := &dr.Params[i]
		config.SetDefault(&p.From, FromBody)
		config.SetDefaultPtr(&p.Required, p.From == FromPath)
	}
}

// readOnlyMethods reports whether methods are all GET or HEAD (and not empty):
// only then may a call that reached a provider be sent again by default.
func readOnlyMethods(methods []string) bool {
	if len(methods) == 0 {
		return false
	}
	for _, m := range methods {
		if m != "GET" && m != "HEAD" {
			return false
		}
	}
	return true
}

// deriveRegistry points a route asking for another discovery mode than its
// registry's at "<registry>@<mode>", a copy of that registry with the mode,
// made once for every route asking for it. Anything else is left to
// validation.
func deriveRegistry(c *config.Config, dr *Config) {
	mode := dr.Discovery
	reg := c.Registries[dr.Registry]
	if mode == "" || reg == nil || reg.DerivedFrom != "" {
		return
	}
	m, ok := reg.Spec.(registry.Moded)
	if !ok || !slices.Contains(m.DiscoveryModes(), mode) || m.DiscoveryMode() == mode {
		return
	}
	name := dr.Registry + "@" + mode
	if c.Registries[name] == nil {
		cp := *reg
		cp.Spec, cp.DerivedFrom = m.WithDiscovery(mode), dr.Registry
		c.Registries[name] = &cp
	}
	dr.Registry = name
}

// Validate checks the route's dubbo: settings; at is the route's place.
func (rt *Route) Validate(at config.At, ctx config.RouteContext) {
	c, r, dr := ctx.Config, ctx.Route, &rt.Dubbo
	at = at.Field(RouteKey)
	reg, err := config.RegistryNamed(c, dr.Registry)
	at.Field("registry").Err(err)
	if m := dr.Discovery; m != "" && reg != nil {
		if moded, ok := reg.Spec.(registry.Moded); !ok {
			at.Field("discovery").Errorf("registry %q is %s: it has no discovery modes", dr.Registry, reg.Type)
		} else if !slices.Contains(moded.DiscoveryModes(), m) {
			at.Field("discovery").Errorf("unknown mode %q (known: %s)", m, strings.Join(moded.DiscoveryModes(), ", "))
		}
	}
	if pt := dr.Passthrough; pt != nil {
		pat := at.Field("passthrough")
		for _, want := range []string{"interface", "method"} {
			if !slices.Contains(ctx.Params, want) {
				pat.Errorf("the route's match.path must capture {%s} (e.g. /dubbo/{interface}/{method})", want)
			}
		}
		if len(pt.Allow) == 0 {
			pat.Field("allow").Errorf("required: list the interfaces that may be called (exact names or a prefix such as com.example.*)")
		}
		for i, a := range pt.Allow {
			if !protocol.JavaName(strings.TrimSuffix(a, ".*")) {
				pat.Field("allow").Index(i).Errorf("%q is neither an interface name nor a package prefix ending in .*", a)
			}
		}
		identity := identityAttachments(c)
		for i, k := range pt.Attachments {
			kat := pat.Field("attachments").Index(i)
			switch {
			case strings.TrimSpace(k) == "":
				kat.Errorf("empty attachment key")
			case protocol.ReservedAttachment(k):
				kat.Errorf("%q is an attachment Dubbo reserves (service, group, version, token, generic, timeout, routing...): a client may never set it", k)
			case slices.Contains(identity, strings.ToLower(k)):
				kat.Errorf("%q carries identity (a filter that authenticates sets it): a client may never set it", k)
			case slices.Contains(pt.Attachments[:i], k):
				kat.Errorf("%q is listed twice", k)
			}
		}
		if dr.Interface != "" || dr.Method != "" || len(dr.Params) > 0 {
			pat.Errorf("a pass-through route takes interface, method and arguments from the request: remove interface, method and params")
		}
		if dr.IDL != nil {
			at.Field("idl").Errorf("an IDL route calls one method: remove passthrough or idl")
		}
	} else if dr.IDL != nil {
		iat := at.Field("idl")
		switch {
		case len(dr.Params) > 0:
			at.Field("params").Errorf("an IDL route's request message is the JSON body: remove params")
		case dr.Protocol != ProtocolTriple:
			at.Field("protocol").Errorf("IDL methods are called over Triple: protocol tri (or leave it out)")
		case dr.IDL.DescriptorSet == "" && !dr.IDL.Reflection:
			iat.Field("descriptor_set").Errorf("required: a FileDescriptorSet file (protoc --include_imports --descriptor_set_out), or reflection: true")
		case dr.IDL.DescriptorSet != "" && dr.IDL.Reflection:
			iat.Errorf("set one of descriptor_set and reflection")
		case dr.IDL.Reflection:
		default:
			if _, err := idl.Load(dr.IDL.DescriptorSet, dr.Interface, dr.Method); err != nil {
				iat.Field("descriptor_set").Err(err)
			}
		}
	} else {
		if !protocol.JavaName(dr.Interface) {
			at.Field("interface").Errorf("required: a Java interface name such as com.example.UserService, got %q", dr.Interface)
		}
		if !protocol.JavaIdent(dr.Method) {
			at.Field("method").Errorf("required: a Java method name, got %q", dr.Method)
		}
	}
	validateAttachmentsFrom(at.Field("attachments_from"), dr, identityAttachments(c))
	at.Field("timeout").Err(config.Positive(dr.Timeout))
	if dr.Async && dr.Generic != nil && !*dr.Generic {
		at.Field("async").Errorf("async ($invokeAsync) is a generic call: set generic: true or drop async")
	}
	switch dr.Protocol {
	case ProtocolDubbo, ProtocolAuto:
	case ProtocolTriple:
		if dr.Generic != nil && *dr.Generic {
			at.Field("generic").Errorf("Triple providers take typed calls only ($invoke is not served over Triple): set generic: false and declare the DTO types")
		}
		if dr.Passthrough != nil {
			at.Field("passthrough").Errorf("a pass-through route makes generic calls, which Triple providers do not serve: use protocol dubbo or auto")
		}
	default:
		at.Field("protocol").Errorf("unknown protocol %q (known: dubbo, tri, auto)", dr.Protocol)
	}
	if _, err := cluster.ParseMode(dr.Cluster); err != nil {
		at.Field("cluster").Err(err)
	}
	if !slices.Contains(cluster.PolicyNames(), dr.LoadBalance) {
		at.Field("loadbalance").Errorf("unknown load balance %q (known: %s)", dr.LoadBalance, strings.Join(cluster.PolicyNames(), ", "))
	}
	if dr.Retries != nil && (*dr.Retries < 0 || *dr.Retries > 10) {
		at.Field("retries").Errorf("must be 0..10, got %d", *dr.Retries)
	}
	if dr.Tag != "" && !ValidTag(dr.Tag) {
		at.Field("tag").Errorf("%q: want at most %d letters, digits, '.', '-' and '_'", dr.Tag, MaxTagLen)
	}
	if dr.TagHeader != nil && *dr.TagHeader != "" && !httpguts.ValidHeaderFieldName(*dr.TagHeader) {
		at.Field("tag_header").Errorf("%q is not an HTTP header name", *dr.TagHeader)
	}
	if dr.ExceptionStatus < 400 || dr.ExceptionStatus > 599 {
		at.Field("exception_status").Errorf("must be an HTTP error status 400..599, got %d", dr.ExceptionStatus)
	}
	if dr.LoadBalance == cluster.PolicyConsistentHash && dr.Passthrough == nil {
		for i, a := range dr.HashArguments {
			if a < 0 || a >= len(dr.Params) {
				at.Field("hash_arguments").Index(i).Errorf("argument %d does not exist: the method has %d parameters", a, len(dr.Params))
			}
		}
	}
	validateTypes(at.Field("types"), dr.Types)
	validateAllowedClasses(at.Field("allowed_classes"), dr.AllowedClasses)
	for _, class := range slices.Sorted(maps.Keys(dr.Types)) {
		if jsonbridge.DeniedClass(class) {
			at.Field("types").Field(class).Errorf("%q is a known deserialization gadget: never allowed", class)
		}
	}
	for i, p := range dr.Params {
		if jsonbridge.DeniedClass(p.Type) {
			at.Field("params").Index(i).Field("type").Errorf("%q is a known deserialization gadget: never allowed", p.Type)
		}
	}
	if dr.MaxBodyBytesInFlight < r.MaxBodyBytes {
		at.Field("max_body_bytes_in_flight").Errorf("%d bytes is less than the route's max_body_bytes (%d): a body within the limit could never be taken", dr.MaxBodyBytesInFlight, r.MaxBodyBytes)
	}
	b, bat := &dr.Breaker, at.Field("breaker")
	if b.MaxFailures < 1 {
		bat.Field("max_failures").Errorf("must be at least 1, got %d", b.MaxFailures)
	}
	if b.FailureRatio != nil && (*b.FailureRatio < 0 || *b.FailureRatio > 1) {
		bat.Field("failure_ratio").Errorf("must be 0..1 (0 turns the ratio rule off), got %v", *b.FailureRatio)
	}
	bat.Field("window").Err(config.Positive(b.Window))
	bat.Field("open_for").Err(config.Positive(b.OpenFor))
	if b.HalfOpenProbes < 1 {
		bat.Field("half_open_probes").Errorf("must be at least 1, got %d", b.HalfOpenProbes)
	}
	validateParams(at.Field("params"), dr.Params, ctx.Params)
}

// Bounds of attachments_from: what one request may make a route send.
const (
	// MaxMappedAttachments is the most headers one route maps.
	MaxMappedAttachments = 16
	// MaxMappedValue is the longest header value mapped to an attachment.
	MaxMappedValue = 1024
)

// validateAttachmentsFrom checks the header → attachment mapping: header
// names, and keys a client may set through a header: never one Dubbo
// reserves or one that carries identity, nor a constant of the route.
func validateAttachmentsFrom(at config.At, dr *Config, identity []string) {
	if len(dr.AttachmentsFrom) > MaxMappedAttachments {
		at.Errorf("%d headers: at most %d", len(dr.AttachmentsFrom), MaxMappedAttachments)
	}
	byKey, byHeader := map[string]string{}, map[string]string{}
	for _, h := range slices.Sorted(maps.Keys(dr.AttachmentsFrom)) {
		k, hat := dr.AttachmentsFrom[h], at.Field(h)
		lower := strings.ToLower(strings.TrimSpace(k))
		canonical := http.CanonicalHeaderKey(h)
		switch {
		case !httpguts.ValidHeaderFieldName(h):
			hat.Errorf("%q is not a header name", h)
		case byHeader[canonical] != "":
			hat.Errorf("%q is the header %q: header names are case-insensitive", h, byHeader[canonical])
		case strings.TrimSpace(k) == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			hat.Errorf("%q: an attachment key is a non-empty word", k)
		case protocol.ReservedAttachment(k):
			hat.Errorf("%q is an attachment Dubbo reserves (service, group, version, token, generic, timeout, routing...): a client may never set it", k)
		case slices.Contains(identity, lower):
			hat.Errorf("%q carries identity (a filter that authenticates sets it): a client may never set it", k)
		case byKey[lower] != "":
			hat.Errorf("%q is mapped from %s already", k, byKey[lower])
		default:
			for c := range dr.Attachments {
				if strings.EqualFold(c, k) {
					hat.Errorf("%q is a constant of attachments: a header may not change it", k)
				}
			}
		}
		if byKey[lower] == "" {
			byKey[lower] = h
		}
		if byHeader[canonical] == "" {
			byHeader[canonical] = h
		}
	}
}

func validateParams(at config.At, params []Param, routeParams []string) {
	wholeBody, positional := -1, 0
	for i, p := range params {
		pat := at.Index(i)
		if strings.TrimSpace(p.Type) == "" {
			pat.Field("type").Errorf("required: the parameter's Java type, e.g. java.lang.String, int, com.example.User")
		} else if problem := javaTypeProblem(p.Type); problem != "" {
			pat.Field("type").Errorf("%q %s", p.Type, problem)
		}
		if !slices.Contains(paramSources, p.From) {
			pat.Field("from").Errorf("unknown source %q (known: %s)", p.From, strings.Join(paramSources, ", "))
			continue
		}
		switch p.From {
		case FromPath:
			if !slices.Contains(routeParams, p.Name) {
				pat.Field("name").Errorf("path parameter %q is not captured by the route's match.path (it captures: %s)", p.Name, strings.Join(routeParams, ", "))
			}
		case FromQuery, FromHeader:
			if p.Name == "" {
				pat.Field("name").Errorf("required: the %s parameter to read", p.From)
			}
		case FromConstant:
			if p.Value == nil {
				pat.Field("value").Errorf("required: the constant's value")
			}
		case FromBody:
			switch {
			case p.Pointer != "" && p.Name != "":
				pat.Errorf("set name (a top-level field) or pointer, not both")
			case p.Pointer != "":
				if !strings.HasPrefix(p.Pointer, "/") {
					pat.Field("pointer").Errorf("a JSON pointer starts with /, got %q", p.Pointer)
				}
			case p.Name == "":
				positional++
				if wholeBody < 0 {
					wholeBody = i
				}
			}
		}
		if p.Pointer != "" && p.From != FromBody {
			pat.Field("pointer").Errorf("pointer applies to from: body only")
		}
	}
	// One unnamed body parameter takes the whole body; several take the
	// elements of a JSON array body by position. Mixing them with named or
	// pointer body parameters would read the body two ways.
	if positional > 0 {
		for i, p := range params {
			if p.From == FromBody && (p.Name != "" || p.Pointer != "") {
				at.Index(i).Errorf("params[%d] takes the whole body (no name or pointer): bind every body parameter by name or pointer, or none", wholeBody)
				break
			}
		}
	}
}

// validateAllowedClasses checks allowed_classes: class names or package
// prefixes ending in ".*", none of them a known gadget.
func validateAllowedClasses(at config.At, classes []string) {
	for i, c := range classes {
		name := strings.TrimSuffix(c, ".*")
		switch {
		case !protocol.JavaName(name):
			at.Index(i).Errorf("%q is neither a class name nor a package prefix ending in .*", c)
		case jsonbridge.DeniedClass(name + "."), jsonbridge.DeniedClass(name):
			at.Index(i).Errorf("%q is or contains known deserialization gadgets: never allowed", c)
		}
	}
}

// DefaultIdentityAttachment is the attachment key (lower-case) that
// carries the user's id when a filter authenticates: no Dubbo route may
// set it, even where no filter does.
const DefaultIdentityAttachment = "userid"

// identityAttachments are the attachment keys (lower-case) that carry
// identity: those any identity filter of the configuration sets, and
// DefaultIdentityAttachment.
func identityAttachments(c *config.Config) []string {
	keys := []string{DefaultIdentityAttachment}
	for _, k := range config.IdentityAttachments(c) {
		keys = append(keys, strings.ToLower(k))
	}
	return keys
}

func validateTypes(at config.At, types map[string]map[string]string) {
	for _, class := range slices.Sorted(maps.Keys(types)) {
		if !protocol.JavaName(class) {
			at.Field(class).Errorf("%q is not a Java class name", class)
		}
		for _, field := range slices.Sorted(maps.Keys(types[class])) {
			if !protocol.JavaIdent(field) {
				at.Field(class).Field(field).Errorf("%q is not a Java field name", field)
			}
		}
	}
}
