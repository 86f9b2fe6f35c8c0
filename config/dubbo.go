package config

// Registry is a source of Dubbo providers.
type Registry struct {
	// Type is "static" (providers listed here) or "zookeeper".
	Type string `yaml:"type"`
	// Providers (static) maps an interface name to its provider URLs:
	// "dubbo://10.0.0.1:20880?version=1.0.0&group=g&weight=100" or plain "10.0.0.1:20880".
	Providers map[string][]string `yaml:"providers" redact:"urls"`

	// Address (zookeeper) is "host:port", several separated by commas
	// ("zookeeper://" in front is accepted).
	Address string `yaml:"address"`
	// Root (zookeeper) is the root node, Dubbo's registry group. Default "dubbo".
	Root string `yaml:"root"`
	// SessionTimeout (zookeeper) of the ZooKeeper session. Default 30s.
	SessionTimeout Duration `yaml:"session_timeout"`
	// Timeout (zookeeper) bounds one ZooKeeper operation. Default 5s.
	Timeout Duration `yaml:"timeout"`
	// Register (zookeeper) the gateway as a consumer of each service it
	// calls (ephemeral nodes, so Dubbo Admin shows it). Default true.
	Register *bool `yaml:"register"`
	// Application is the application name in consumer URLs. Default "dubbogw".
	Application string `yaml:"application"`
	// Username and Password (zookeeper) enable digest authentication.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// ReleaseAfter is how long a subscription nobody uses is kept (so a
	// reload that keeps a service does not re-subscribe). Default 30s.
	ReleaseAfter Duration `yaml:"release_after"`
	// WatchGC (zookeeper): a ZooKeeper watch cannot be removed, so watches
	// of released subscriptions are cleared by moving to a new session
	// (made before the old one closes), at most this often. Default 1m.
	WatchGC Duration `yaml:"watch_gc"`
	// StartupWait bounds how long a start or a reload waits for the
	// registry's first answer about the services its routes call. Default 3s.
	StartupWait Duration `yaml:"startup_wait"`
	// Discovery (zookeeper) says which registrations are read: "interface"
	// (/<root>/<interface>/providers), "application" (Dubbo 3's
	// application-level instances: mapping, /services/<app>, metadata) or
	// "auto" (both, merged by address, application-level data preferred).
	// A route may ask for another mode (DubboRoute.Discovery). Default
	// "auto".
	Discovery string `yaml:"discovery"`
	// ServicesRoot (zookeeper) is where application instances are
	// registered. Default "/services" with the root "dubbo", else
	// "/<root>" (Dubbo's registry group replaces both roots).
	ServicesRoot string `yaml:"services_root"`
	// Metadata (zookeeper) bounds how application instances' metadata is
	// fetched (their MetadataService, or remote nodes in ZooKeeper).
	Metadata RegistryMetadata `yaml:"metadata"`

	// derivedFrom names the registry this one copies for routes asking for
	// another discovery mode (DubboRoute.Discovery); empty for a
	// configured registry.
	derivedFrom string
}

// RegistryMetadata bounds the fetching of application instances' metadata.
type RegistryMetadata struct {
	// Timeout of one fetch. Default 3s.
	Timeout Duration `yaml:"timeout"`
	// Concurrency: fetches under way at most. Default 8.
	Concurrency int `yaml:"concurrency"`
	// Cache: entries (per instance and revision) kept beyond those live
	// instances use. Default 1024.
	Cache int `yaml:"cache"`
}

// References bounds the Dubbo references made on demand (the generic
// pass-through): one per (interface, version, group, timeout). Routes'
// own references are always kept.
type References struct {
	// Max references kept beyond those routes hold, least recently used
	// evicted first. Default 1024.
	Max int `yaml:"max"`
	// IdleTTL evicts a reference unused for this long, and releases its
	// subscription at once. Default 10m.
	IdleTTL Duration `yaml:"idle_ttl"`
	// NewPerSecond bounds the subscriptions the pass-through makes for
	// services nobody else holds, per second (a burst of as many); beyond,
	// calls answer 503 SUBSCRIBE_LIMITED. Default 100.
	NewPerSecond int `yaml:"new_per_second"`
	// MaxSubscriptions bounds the subscriptions made that way that are
	// live at once (held, or waiting out release_after). Default 2048.
	MaxSubscriptions int `yaml:"max_subscriptions"`
}

// DubboClient sets the Dubbo client shared by every Dubbo route.
type DubboClient struct {
	// ConnsPerAddr multiplexed connections per provider address. Default 1.
	ConnsPerAddr int `yaml:"conns_per_addr"`
	// DialTimeout bounds connecting to a provider. Default 3s.
	DialTimeout Duration `yaml:"dial_timeout"`
	// Heartbeat is the idle time before a heartbeat; 3 missed close the connection. Default 60s.
	Heartbeat Duration `yaml:"heartbeat"`
	// MaxPayload bounds request and response bodies. Default 8MiB.
	MaxPayload ByteSize `yaml:"max_payload"`
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
}

// DubboRoute turns a route's requests into calls of one Dubbo method (or,
// with Passthrough, of any allowed method named in the path).
type DubboRoute struct {
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
	// Generic calls through $invoke (no provider JAR needed; default true);
	// false sends a typed call (real method name and descriptor).
	Generic *bool `yaml:"generic"`
	// Async calls $invokeAsync instead of $invoke (generic only): the
	// provider runs the method on its async path. Default false.
	Async bool `yaml:"async"`
	// Timeout of one call. Default 1s, as Java Dubbo.
	Timeout Duration `yaml:"timeout"`
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
	Params []DubboParam `yaml:"params"`
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
	MaxBodyBytesInFlight ByteSize `yaml:"max_body_bytes_in_flight"`
	// DetailedErrors shows clients the provider's own error text (it may
	// name internal addresses and the gateway's connections) and transport
	// errors as they are. Default false: clients get the status and the
	// exception's class and message; the details go to the log.
	DetailedErrors bool `yaml:"detailed_errors"`
	// Attachments are constant attachments sent with every call. Their
	// values (a signature, a provider token) are never shown.
	Attachments map[string]string `yaml:"attachments" redact:"values"`
	// Result sets how results become JSON.
	Result DubboResult `yaml:"result"`
	// ExceptionStatus is the HTTP status of a business exception. Default 500.
	ExceptionStatus int `yaml:"exception_status"`
	// Passthrough enables the generic pass-through endpoint on this route.
	Passthrough *Passthrough `yaml:"passthrough"`
	// Breaker opens after failures so calls fail fast with 503.
	Breaker Breaker `yaml:"breaker"`
}

// DubboParam is one parameter of a Dubbo method.
type DubboParam struct {
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

// DubboResult sets how a result becomes JSON.
type DubboResult struct {
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
	Window Duration `yaml:"window"`
	// MinRequests in Window before the ratio rule applies. Default 20.
	MinRequests int `yaml:"min_requests"`
	// OpenFor is how long it stays open. Default 10s.
	OpenFor Duration `yaml:"open_for"`
	// HalfOpenProbes calls let through to test recovery. Default 1.
	HalfOpenProbes int `yaml:"half_open_probes"`
}
