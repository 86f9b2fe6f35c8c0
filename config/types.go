package config

// Config is the whole gateway configuration, as read from one YAML file.
// Every field has a default (see Defaults); keys are snake_case in YAML.
type Config struct {
	// Listen is the data-plane listener address (HTTP/1.1 and h2c). Default ":8080".
	Listen string `yaml:"listen"`
	// Admin is the separate admin listener: health, metrics, admin API.
	Admin Admin `yaml:"admin"`
	// Log sets the process logger.
	Log Log `yaml:"log"`
	// Server holds data-plane listener limits and timeouts.
	Server Server `yaml:"server"`
	// Shutdown sets how a SIGTERM drains the gateway.
	Shutdown Shutdown `yaml:"shutdown"`
	// Reload sets how configuration changes are picked up.
	Reload Reload `yaml:"reload"`
	// RequestID sets the request id every response carries.
	RequestID RequestID `yaml:"request_id"`
	// AccessLog sets the one-line-per-request JSON access log.
	AccessLog AccessLog `yaml:"access_log"`
	// DefaultFilters run on every route, before the route's own filters.
	DefaultFilters []Filter `yaml:"default_filters"`
	// Registries are the named sources of Dubbo providers routes call.
	Registries map[string]*Registry `yaml:"registries"`
	// Routes are matched against each request; see the router package for precedence.
	Routes []*Route `yaml:"routes"`
	// Demo starts in-process demo services, so the quickstart needs nothing external.
	Demo Demo `yaml:"demo"`
	// Redis is the Redis server of token lookups and distributed rate limits.
	Redis Redis `yaml:"redis"`
	// Tracing exports OpenTelemetry traces over OTLP/HTTP. Off by default.
	Tracing Tracing `yaml:"tracing"`

	// Sections are the top-level keys other packages own (upstreams:,
	// dubbo:), by key; see RegisterSection.
	Sections map[string]Section `yaml:"-"`
}

// Admin configures the admin listener.
type Admin struct {
	// Listen is the admin listener address. Default "127.0.0.1:9090".
	Listen string `yaml:"listen"`
	// Pprof exposes /debug/pprof/ on the admin listener. Default false.
	Pprof bool `yaml:"pprof"`
	// Token, when set, must come as "Authorization: Bearer <token>" with
	// every admin request except /livez, /readyz, the dashboard's static
	// files and, with PublicMetrics, /metrics. At least 16 printable
	// characters; write it as ${ENV} rather than in the file. Follows
	// reloads. Default "": no token (then keep the listener on loopback).
	Token string `yaml:"token"`
	// TokenFile names a file holding the token (surrounding white space
	// ignored), read at start and on every reload, so a rotated secret
	// (a Kubernetes Secret volume) applies on reload. Not with Token.
	// Default "".
	TokenFile string `yaml:"token_file"`
	// PublicMetrics serves /metrics without the token, for a scraper that
	// cannot send one. Default false: with a token set, /metrics needs it
	// too (Prometheus sends it with authorization.credentials_file).
	PublicMetrics bool `yaml:"public_metrics"`
	// AllowedHosts are Host values the admin listener answers besides its
	// own: IP addresses, "localhost" and admin.listen's host are always
	// allowed, names are not (a foreign name is how DNS rebinding reads
	// the admin API from a browser). An entry is a host name (any port) or
	// host:port, e.g. the Kubernetes Service name an ingress uses. It also
	// lists the origins allowed to POST. Follows reloads. Default [].
	AllowedHosts []string `yaml:"allowed_hosts"`
	// Readiness says when /readyz first answers 200: "strict" (the
	// default) once every route's service has had its registry's first
	// answer (providers, none, or unreachable: the last known ones), so a
	// load balancer sends no request to an instance that would answer 503
	// NO_PROVIDER for a service it has yet to read; "lenient" once the
	// route table is built (after startup_wait), the services still
	// unread listed in the body. Once ready, a gateway stays ready: a
	// reload adding routes lists their unread services without leaving
	// its load balancer. Follows reloads.
	Readiness string `yaml:"readiness"`
	// TLS, when it lists certificates, has the admin listener serve HTTPS
	// (the data plane's tls: shape without listen: admin.listen is the
	// address), the files reloaded on change; client_auth require makes
	// every admin client, probes included, present a certificate. Changes
	// only on restart. Default: plaintext.
	TLS ServerTLS `yaml:"tls"`
}

// Values of Admin.Readiness.
const (
	ReadinessStrict  = "strict"
	ReadinessLenient = "lenient"
)

// Log configures the process logger (log/slog).
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is json or text. Default json.
	Format string `yaml:"format"`
}

// Server holds the data-plane listener's limits and timeouts.
type Server struct {
	// ReadHeaderTimeout bounds reading request headers. Default 10s.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// IdleTimeout closes idle keep-alive connections. Default 120s.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxHeaderBytes bounds the request line and headers. Default 64KiB.
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// MaxBodyBytes is the default request body limit of every route (413 beyond). Default 8MiB.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// MaxInFlight sheds requests beyond this many in flight with a fast 503 SHED. 0 = no limit. Default 10000.
	// A pointer, like Retry.Retries, so that an explicit 0 survives Defaults.
	MaxInFlight *int `yaml:"max_in_flight"`
	// AdaptiveConcurrency makes the global limit follow measured latency
	// (between its min and max_in_flight).
	AdaptiveConcurrency *AdaptiveConcurrency `yaml:"adaptive_concurrency"`
	// TrustedProxies are CIDRs whose X-Forwarded-For entries are believed when finding the client IP.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// IdentityHeaders are request headers only the gateway may send
	// upstream: removed from every request as it enters, on every route,
	// with their look-alikes (any case, '_' for '-': X_User_Id is
	// X-User-Id to nginx, CGI and Spring). The headers every auth filter
	// sends (auth.headers) are always added to them. Default
	// DefaultIdentityHeaders(): X-User-Id and the user headers of common
	// authenticating proxies; [] leaves only the auth filters' headers.
	IdentityHeaders []string `yaml:"identity_headers"`
	// H2C serves HTTP/2 without TLS (prior knowledge) beside HTTP/1.1. Default true.
	H2C *bool `yaml:"h2c"`
	// Engine serves HTTP/1.1 on the plain listener: "loop", the gateway's
	// own server loop (internal/h1: fewer copies and system calls per
	// request, pipelined answers written together), or "net/http", Go's
	// server. Both accept and refuse the same requests; h2c connections
	// are served by net/http either way. Default loop.
	Engine string `yaml:"engine"`
	// BodyGrace is the time a request body may take before MinBodyRate
	// applies: a body of n bytes must be complete within body_grace +
	// n/min_body_rate of the request's start, and never later than the
	// route's timeout (or body_grace, when that is longer); beyond, 408.
	// Default 10s, as read_header_timeout.
	BodyGrace Duration `yaml:"body_grace"`
	// MinBodyRate is the average rate, in bytes per second, a request body
	// must keep after BodyGrace. 0 = none (the route's timeout alone bounds
	// the body). Default 1KiB. A pointer so that an explicit 0 survives Defaults.
	MinBodyRate *ByteSize `yaml:"min_body_rate"`
	// WriteTimeout bounds each write of a response to the client: a client
	// that reads nothing for this long is cut off and its slot freed. Over
	// HTTP/2 it runs from the latest time the route can start answering
	// (twice its timeout, with body_grace) or the last write, whichever
	// is later: an HTTP/2 stream's deadline resets it even while idle.
	// Default 30s.
	WriteTimeout Duration `yaml:"write_timeout"`
	// MaxConnections caps the data-plane connections open at once; beyond,
	// a new connection gets 503 CONNECTION_LIMIT and is closed. 0 = no cap.
	// Default 10000. A pointer so that an explicit 0 survives Defaults.
	MaxConnections *int `yaml:"max_connections"`
	// MaxConnectionsPerIP caps the connections of one client address (an
	// IPv6 client by its /64); peers in TrustedProxies are exempt. 0 = no
	// cap. Default 64.
	MaxConnectionsPerIP *int `yaml:"max_connections_per_ip"`
	// MaxConcurrentStreams caps the open streams of one HTTP/2 connection.
	// Default 100.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
}

// Shutdown sets the drain sequence run on SIGTERM/SIGINT.
type Shutdown struct {
	// Delay keeps serving (with readiness false) so load balancers notice. Default 3s;
	// a pointer so that an explicit 0s (no load balancer to wait for) survives Defaults.
	Delay *Duration `yaml:"delay"`
	// DrainTimeout bounds waiting for in-flight requests after listeners close. Default 30s.
	DrainTimeout Duration `yaml:"drain_timeout"`
	// IdleGrace: after the delay, a keep-alive connection is closed only
	// once it has been idle this long, so a request a client already sent
	// on it is served rather than reset. Default 1s; 0s closes idle
	// connections at once.
	IdleGrace *Duration `yaml:"idle_grace"`
}

// Reload sets how configuration changes are picked up (SIGHUP and POST /admin/reload always work).
type Reload struct {
	// Watch polls the config file and reloads when its content changes. Default false.
	Watch bool `yaml:"watch"`
	// Interval is the polling interval for Watch. Default 2s.
	Interval Duration `yaml:"interval"`
}

// RequestID sets the request id header.
type RequestID struct {
	// Header is the request id header name. Default "X-Request-Id".
	Header string `yaml:"header"`
	// TrustIncoming keeps a well-formed id sent by the client. Default true.
	TrustIncoming *bool `yaml:"trust_incoming"`
}

// AccessLog sets the access log: one JSON line per request.
type AccessLog struct {
	// Enabled turns the access log on. Default true.
	Enabled *bool `yaml:"enabled"`
	// Output is "stdout" (default), "stderr" or a file path (appended to).
	Output string `yaml:"output"`
}

// Route maps matching requests through filters to what its kind calls.
// Its keys are the generic ones below and those of its kind (see
// RegisterRouteKind).
type Route struct {
	// Name identifies the route in logs, metrics and errors; unique.
	Name string `yaml:"name"`
	// Match selects requests.
	Match Match `yaml:"match"`
	// Filters run in order after the default filters.
	Filters []Filter `yaml:"filters"`
	// Timeout bounds the whole upstream exchange; its kind gives the
	// default (an HTTP upstream's timeout).
	Timeout Duration `yaml:"timeout"`
	// MaxBodyBytes overrides server.max_body_bytes for this route.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// MaxInFlight sheds this route's requests beyond this many in flight
	// with a fast 503 SHED, before any filter, upstream or Redis work. 0 = no limit.
	MaxInFlight int `yaml:"max_in_flight"`
	// AdaptiveConcurrency makes the route's limit follow its latency.
	AdaptiveConcurrency *AdaptiveConcurrency `yaml:"adaptive_concurrency"`
	// AllowMatrixParams lets paths carry ';' parameters (matrix
	// parameters, "/cars;color=red/x") to this route, as they are. The
	// route is chosen by the path without them, as Tomcat and Spring read
	// it; "..;" and ".;" segments are refused all the same. Default false:
	// 400 for any ';' in the path.
	AllowMatrixParams bool `yaml:"allow_matrix_params"`

	// Kind is the key that chose the route's kind ("upstream", "dubbo").
	Kind string `yaml:"-"`
	// Spec is the kind's settings: the route's keys other than the above.
	Spec RouteSpec `yaml:"-"`
}

// Match selects requests. Path and Prefix are exclusive; one of them is required.
type Match struct {
	// Host is an exact host ("api.example.com") or a wildcard ("*.example.com"); empty matches any.
	Host string `yaml:"host"`
	// Methods restricts the route to these methods; empty matches any.
	Methods []string `yaml:"methods"`
	// Path is an exact path or a pattern: "/users/{id}", "/files/{path...}".
	Path string `yaml:"path"`
	// Prefix matches the path and everything below it, segment-aware.
	Prefix string `yaml:"prefix"`
	// Headers, Query and Cookies are predicates on the request's headers,
	// query parameters and cookies; all must hold. Routes with more are
	// tried first (see the router package).
	Headers []ValueMatch `yaml:"headers"`
	Query   []ValueMatch `yaml:"query"`
	Cookies []ValueMatch `yaml:"cookies"`
	// Weight (0..10000) splits the requests of the routes with the same
	// host, path, methods and predicates that all have one: each serves its
	// share. Unset: the route is no split's.
	Weight *int `yaml:"weight"`
}

// Demo starts in-process demo services for the quickstart.
type Demo struct {
	// HTTP is the listen address of a demo HTTP service (e.g. "127.0.0.1:18081"); empty = off.
	HTTP string `yaml:"http"`
	// Dubbo is the listen address of the in-process demo Dubbo provider
	// (com.example.demo.UserService, e.g. "127.0.0.1:20880"); empty = off.
	Dubbo string `yaml:"dubbo"`
	// Triple is the listen address of the same demo provider's Triple
	// side (h2c, e.g. "127.0.0.1:28882"), for routes with protocol: tri;
	// empty = off.
	Triple string `yaml:"triple"`
}
