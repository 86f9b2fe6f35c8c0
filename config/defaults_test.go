package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// full sets every field of the schema to a non-default value.
const full = `
listen: "127.0.0.1:8080"
admin:
  listen: "127.0.0.1:9091"
  pprof: true
log:
  level: debug
  format: text
server:
  read_header_timeout: 5s
  idle_timeout: 1m
  max_header_bytes: 32KiB
  max_body_bytes: 1MB
  max_in_flight: 0
  trusted_proxies: ["10.0.0.0/8", "192.0.2.7", "::1"]
  identity_headers: [X-User-Id, X-Tenant-Admin]
  h2c: false
  body_grace: 5s
  min_body_rate: 0
  write_timeout: 20s
  max_connections: 0
  max_connections_per_ip: 16
  max_concurrent_streams: 32
shutdown:
  delay: 1s
  drain_timeout: 10s
  idle_grace: 2s
reload:
  watch: true
  interval: 500ms
request_id:
  header: X-Trace-Id
  trust_incoming: false
access_log:
  enabled: false
  output: /var/log/dubbogw/access.log
default_filters:
  - probe:
      name: everywhere
      secrets: {X-Gateway: dubbogw}
  - marker:
upstreams:
  users:
    targets:
      - url: http://127.0.0.1:9001
        weight: 3
      - url: https://users.internal:8443/base
    policy: weighted_random
    timeout: 5s
    connect_timeout: 500ms
    preserve_host: true
    pool: {max_idle_per_target: 8, max_per_target: 100, idle_timeout: 30s}
    retry:
      retries: 2
      on: [connect_failure, 503]
      methods: [GET]
    passive_health: {max_failures: 0, ejection: 1s, max_ejection: 30s}
  orders:
    targets: [{url: "http://127.0.0.1:9002"}]
    policy: least_request
routes:
  - name: users.get
    match:
      host: "*.example.com"
      methods: [GET, HEAD]
      path: /users/{id}
    filters:
      - probe:
          name: users
          count: 3
          methods: [GET, POST]
          path: "{id}"
      - marker: {}
    upstream: users
    timeout: 2s
    max_body_bytes: 64KiB
    upgrades: [websocket, mqtt]
  - name: orders_v1
    match: {prefix: /orders, host: api.example.com}
    filters:
      - probe: {name: orders}
    upstream: orders
  - name: user-dubbo
    match: {methods: [GET], path: "/api/users/{id}"}
    dubbo:
      registry: local
      interface: com.example.demo.UserService
      version: 1.0.0
      group: g1
      method: getUser
      generic: false
      timeout: 500ms
      cluster: failfast
      retries: 0
      idempotent: false
      loadbalance: consistenthash
      hash_arguments: [0]
      params:
        - {type: java.lang.String, from: path, name: id}
        - {type: int, from: query, name: limit, value: "10", required: false}
        - {type: java.lang.String, from: header, name: X-Tenant}
        - {type: com.example.demo.Filter, from: body, pointer: /filter}
        - {type: long, from: constant, value: "7"}
      types:
        com.example.demo.Filter: {since: java.util.Date}
      attachments: {app: web}
      result: {keep_class: true, long_as_number: true, big_as_number: true}
      exception_status: 502
      breaker: {enabled: true, max_failures: 3, failure_ratio: 0.25, window: 5s, min_requests: 10, open_for: 2s, half_open_probes: 2}
  - name: dubbo-generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: local
      passthrough: {allow: [com.example.demo.*, org.acme.OrderService]}
registries:
  local:
    type: static
    providers:
      com.example.demo.UserService: ["127.0.0.1:20880", "dubbo://127.0.0.1:20881?version=1.0.0&group=g1&weight=200"]
  zk:
    type: zookeeper
    address: "zookeeper://127.0.0.1:2181, 127.0.0.2:2181"
    root: dubbo-prod
    session_timeout: 10s
    timeout: 2s
    register: false
    application: edge
    username: gw
    password: secret
    release_after: 1m
    watch_gc: 5m
    startup_wait: 500ms
    discovery: application
    services_root: /g/services
    metadata: {timeout: 1s, concurrency: 2}
dubbo:
  references: {max: 64, idle_ttl: 1m, new_per_second: 20, max_subscriptions: 500}
  conns_per_addr: 2
  dial_timeout: 1s
  heartbeat: 30s
  max_payload: 4MiB
  max_pending: 500
  types:
    com.example.demo.User: {createdAt: java.util.Date}
demo:
  http: 127.0.0.1:18081
  dubbo: 127.0.0.1:20880
`

func ptr[T any](v T) *T { return &v }

func TestParseFullConfig(t *testing.T) {
	got, err := Parse([]byte(full), "full.yaml", nil)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	want := &Config{
		Listen: "127.0.0.1:8080",
		Admin:  Admin{Listen: "127.0.0.1:9091", Pprof: true},
		Log:    Log{Level: "debug", Format: "text"},
		Server: Server{
			ReadHeaderTimeout: Duration(5 * time.Second),
			IdleTimeout:       Duration(time.Minute),
			MaxHeaderBytes:    32 << 10,
			MaxBodyBytes:      1000 * 1000,
			MaxInFlight:       ptr(0),
			TrustedProxies:    []string{"10.0.0.0/8", "192.0.2.7", "::1"},
			IdentityHeaders:   []string{"X-User-Id", "X-Tenant-Admin"},
			H2C:               ptr(false),

			BodyGrace:            Duration(5 * time.Second),
			MinBodyRate:          ptr(ByteSize(0)),
			WriteTimeout:         Duration(20 * time.Second),
			MaxConnections:       ptr(0),
			MaxConnectionsPerIP:  ptr(16),
			MaxConcurrentStreams: 32,
		},
		Shutdown:  Shutdown{Delay: ptr(Duration(time.Second)), DrainTimeout: Duration(10 * time.Second), IdleGrace: ptr(Duration(2 * time.Second))},
		Reload:    Reload{Watch: true, Interval: Duration(500 * time.Millisecond)},
		RequestID: RequestID{Header: "X-Trace-Id", TrustIncoming: ptr(false)},
		AccessLog: AccessLog{Enabled: ptr(false), Output: "/var/log/dubbogw/access.log"},
		DefaultFilters: []Filter{
			{Name: "probe", Spec: &probe{Name: "everywhere", Count: 1, Secrets: map[string]string{"X-Gateway": "dubbogw"}}},
			{Name: "marker", Spec: &marker{}},
		},
		Upstreams: map[string]*Upstream{
			"users": {
				Targets: []Target{
					{URL: "http://127.0.0.1:9001", Weight: 3},
					{URL: "https://users.internal:8443/base", Weight: DefaultTargetWeight},
				},
				Policy:         PolicyWeightedRandom,
				Timeout:        Duration(5 * time.Second),
				ConnectTimeout: Duration(500 * time.Millisecond),
				PreserveHost:   true,
				Pool:           Pool{MaxIdlePerTarget: 8, MaxPerTarget: 100, IdleTimeout: Duration(30 * time.Second)},
				Retry:          Retry{Retries: ptr(2), On: []string{"connect_failure", "503"}, Methods: []string{"GET"}},
				PassiveHealth:  PassiveHealth{MaxFailures: ptr(0), Ejection: Duration(time.Second), MaxEjection: Duration(30 * time.Second)},
			},
			"orders": {
				Targets:        []Target{{URL: "http://127.0.0.1:9002", Weight: DefaultTargetWeight}},
				Policy:         PolicyLeastRequest,
				Timeout:        DefaultUpstreamTimeout,
				ConnectTimeout: DefaultConnectTimeout,
				Pool:           Pool{MaxIdlePerTarget: DefaultMaxIdlePerTarget, IdleTimeout: DefaultPoolIdleTimeout},
				Retry:          Retry{Retries: ptr(DefaultRetries), On: DefaultRetryOn(), Methods: DefaultRetryMethods()},
				PassiveHealth:  PassiveHealth{MaxFailures: ptr(DefaultMaxFailures), Ejection: DefaultEjection, MaxEjection: DefaultMaxEjection},
			},
		},
		Routes: []*Route{
			{
				Name:  "users.get",
				Match: Match{Host: "*.example.com", Methods: []string{"GET", "HEAD"}, Path: "/users/{id}"},
				Filters: []Filter{
					{Name: "probe", Spec: &probe{Name: "users", Count: 3, Methods: []string{"GET", "POST"}, Path: "{id}"}},
					{Name: "marker", Spec: &marker{}},
				},
				Upstream:     "users",
				Timeout:      Duration(2 * time.Second),
				MaxBodyBytes: 64 << 10,
				Upgrades:     []string{"websocket", "mqtt"},
			},
			{
				Name:         "orders_v1",
				Match:        Match{Host: "api.example.com", Prefix: "/orders"},
				Filters:      []Filter{{Name: "probe", Spec: &probe{Name: "orders", Count: 1}}},
				Upstream:     "orders",
				Timeout:      DefaultUpstreamTimeout, // from the upstream
				MaxBodyBytes: 1000 * 1000,            // from server.max_body_bytes
				Upgrades:     DefaultUpgrades(),
			},
			{
				Name:  "user-dubbo",
				Match: Match{Methods: []string{"GET"}, Path: "/api/users/{id}"},
				Dubbo: &DubboRoute{
					Registry: "local", Interface: "com.example.demo.UserService", Version: "1.0.0", Group: "g1", Method: "getUser",
					Generic: ptr(false), Timeout: Duration(500 * time.Millisecond), Cluster: "failfast", Retries: ptr(0),
					Idempotent: ptr(false), LoadBalance: "consistenthash", HashArguments: []int{0},
					Params: []DubboParam{
						{Type: "java.lang.String", From: "path", Name: "id", Required: ptr(true)},
						{Type: "int", From: "query", Name: "limit", Value: ptr("10"), Required: ptr(false)},
						{Type: "java.lang.String", From: "header", Name: "X-Tenant", Required: ptr(false)},
						{Type: "com.example.demo.Filter", From: "body", Pointer: "/filter", Required: ptr(false)},
						{Type: "long", From: "constant", Value: ptr("7"), Required: ptr(false)},
					},
					Types:           map[string]map[string]string{"com.example.demo.Filter": {"since": "java.util.Date"}},
					Attachments:     map[string]string{"app": "web"},
					Result:          DubboResult{KeepClass: true, LongAsNumber: true, BigAsNumber: true},
					ExceptionStatus: 502, MaxBodyBytesInFlight: DefaultDubboBodyBudget,
					Breaker: Breaker{Enabled: ptr(true), MaxFailures: 3, FailureRatio: ptr(0.25), Window: Duration(5 * time.Second),
						MinRequests: 10, OpenFor: Duration(2 * time.Second), HalfOpenProbes: 2},
				},
				Timeout:      Duration(500 * time.Millisecond), // from dubbo.timeout
				MaxBodyBytes: 1000 * 1000,
			},
			{
				Name:  "dubbo-generic",
				Match: Match{Methods: []string{"POST"}, Path: "/dubbo/{interface}/{method}"},
				Dubbo: &DubboRoute{
					Registry: "local", Passthrough: &Passthrough{Allow: []string{"com.example.demo.*", "org.acme.OrderService"}},
					Generic: ptr(true), Timeout: DefaultDubboTimeout, Cluster: DefaultDubboCluster, Retries: ptr(DefaultDubboRetries),
					Idempotent: ptr(false), LoadBalance: DefaultDubboLoadBalance, HashArguments: []int{0},
					ExceptionStatus: DefaultExceptionStatus, MaxBodyBytesInFlight: DefaultDubboBodyBudget,
					Breaker: Breaker{Enabled: ptr(true), MaxFailures: DefaultBreakerMaxFailures, FailureRatio: ptr(DefaultBreakerRatio),
						Window: DefaultBreakerWindow, MinRequests: DefaultBreakerMinRequests, OpenFor: DefaultBreakerOpenFor,
						HalfOpenProbes: DefaultBreakerProbes},
				},
				Timeout:      DefaultDubboTimeout,
				MaxBodyBytes: 1000 * 1000,
			},
		},
		Registries: map[string]*Registry{"local": {Type: "static", Providers: map[string][]string{
			"com.example.demo.UserService": {"127.0.0.1:20880", "dubbo://127.0.0.1:20881?version=1.0.0&group=g1&weight=200"},
		}, ReleaseAfter: DefaultRegistryReleaseAfter, StartupWait: DefaultRegistryStartupWait},
			"zk": {Type: "zookeeper", Address: "zookeeper://127.0.0.1:2181, 127.0.0.2:2181", Root: "dubbo-prod",
				SessionTimeout: Duration(10 * time.Second), Timeout: Duration(2 * time.Second), Register: ptr(false),
				Application: "edge", Username: "gw", Password: "secret", ReleaseAfter: Duration(time.Minute), WatchGC: Duration(5 * time.Minute),
				StartupWait: Duration(500 * time.Millisecond), Discovery: "application", ServicesRoot: "/g/services",
				Metadata: RegistryMetadata{Timeout: Duration(time.Second), Concurrency: 2, Cache: DefaultMetadataCache}}},
		Dubbo: DubboClient{ConnsPerAddr: 2, DialTimeout: Duration(time.Second), Heartbeat: Duration(30 * time.Second),
			MaxPayload: 4 << 20, MaxPending: 500, Types: map[string]map[string]string{"com.example.demo.User": {"createdAt": "java.util.Date"}},
			References: References{Max: 64, IdleTTL: Duration(time.Minute), NewPerSecond: 20, MaxSubscriptions: 500}},
		Demo: Demo{HTTP: "127.0.0.1:18081", Dubbo: "127.0.0.1:20880"},
		Tracing: Tracing{Endpoint: DefaultTracingEndpoint, SampleRatio: ptr(DefaultTracingSampleRatio),
			ServiceName: DefaultTracingService, Timeout: DefaultTracingTimeout, MaxQueueSize: DefaultTracingQueueSize},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(full) differs from the expected config")
		diffStructs(t, "Config", reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
	}
	if w := Warnings(got); len(w) != 0 {
		t.Errorf("Warnings = %v, want none", w)
	}
	if err := Validate(got); err != nil {
		t.Errorf("Validate(parsed) = %v", err)
	}
}

// diffStructs reports the first-level fields of two values that differ.
func diffStructs(t *testing.T, name string, got, want reflect.Value) {
	t.Helper()
	if got.Kind() != reflect.Struct {
		t.Errorf("%s:\n got  %#v\n want %#v", name, got.Interface(), want.Interface())
		return
	}
	for i := range got.NumField() {
		if g, w := got.Field(i), want.Field(i); !reflect.DeepEqual(g.Interface(), w.Interface()) {
			t.Errorf("%s.%s:\n got  %#v\n want %#v", name, got.Type().Field(i).Name, g.Interface(), w.Interface())
		}
	}
}

func TestDefaultsAreAsDocumented(t *testing.T) {
	c, err := Parse([]byte(`
upstreams:
  users:
    targets: [{url: "http://127.0.0.1:9001"}]
routes:
  - name: users
    match: {prefix: /users}
    upstream: users
    filters:
      - probe: {name: a}
`), "min.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, r := c.Upstreams["users"], c.Routes[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, ":8080"},
		{"admin.listen", c.Admin.Listen, "127.0.0.1:9090"},
		{"admin.pprof", c.Admin.Pprof, false},
		{"log.level", c.Log.Level, "info"},
		{"log.format", c.Log.Format, "json"},
		{"server.read_header_timeout", c.Server.ReadHeaderTimeout.D(), 10 * time.Second},
		{"server.idle_timeout", c.Server.IdleTimeout.D(), 120 * time.Second},
		{"server.max_header_bytes", c.Server.MaxHeaderBytes, ByteSize(64 * 1024)},
		{"server.max_body_bytes", c.Server.MaxBodyBytes, ByteSize(8 * 1024 * 1024)},
		{"server.max_in_flight", *c.Server.MaxInFlight, 10000},
		{"server.trusted_proxies", len(c.Server.TrustedProxies), 0},
		{"server.identity_headers", strings.Join(c.Server.IdentityHeaders, ","), "X-User-Id,X-Remote-User,Remote-User,X-Forwarded-User,X-Forwarded-Email,X-Auth-Request-User,X-Auth-Request-Email"},
		{"routes[0].allow_matrix_params", r.AllowMatrixParams, false},
		{"server.h2c", *c.Server.H2C, true},
		{"shutdown.delay", c.Shutdown.Delay.D(), 3 * time.Second},
		{"shutdown.drain_timeout", c.Shutdown.DrainTimeout.D(), 30 * time.Second},
		{"shutdown.idle_grace", c.Shutdown.IdleGrace.D(), time.Second},
		{"reload.watch", c.Reload.Watch, false},
		{"reload.interval", c.Reload.Interval.D(), 2 * time.Second},
		{"request_id.header", c.RequestID.Header, "X-Request-Id"},
		{"request_id.trust_incoming", *c.RequestID.TrustIncoming, true},
		{"access_log.enabled", *c.AccessLog.Enabled, true},
		{"access_log.output", c.AccessLog.Output, "stdout"},
		{"a filter's own default", r.Filters[0].Spec.(*probe).Count, 1},
		{"upstream.policy", u.Policy, "round_robin"},
		{"upstream.timeout", u.Timeout.D(), 30 * time.Second},
		{"upstream.connect_timeout", u.ConnectTimeout.D(), 2 * time.Second},
		{"upstream.preserve_host", u.PreserveHost, false},
		{"target.weight", u.Targets[0].Weight, 100},
		{"pool.max_idle_per_target", u.Pool.MaxIdlePerTarget, 64},
		{"pool.max_per_target", u.Pool.MaxPerTarget, 0},
		{"pool.idle_timeout", u.Pool.IdleTimeout.D(), 90 * time.Second},
		{"retry.retries", *u.Retry.Retries, 1},
		{"retry.on", strings.Join(u.Retry.On, ","), "connect_failure,502,503,504"},
		{"retry.methods", strings.Join(u.Retry.Methods, ","), "GET,HEAD,OPTIONS,PUT,DELETE"},
		{"passive_health.max_failures", *u.PassiveHealth.MaxFailures, 5},
		{"passive_health.ejection", u.PassiveHealth.Ejection.D(), 10 * time.Second},
		{"passive_health.max_ejection", u.PassiveHealth.MaxEjection.D(), 2 * time.Minute},
		{"route.timeout", r.Timeout.D(), 30 * time.Second},
		{"route.max_body_bytes", r.MaxBodyBytes, ByteSize(8 << 20)},
		{"demo.http", c.Demo.HTTP, ""},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestDefaultsIdempotentAndIndependent(t *testing.T) {
	c, err := Parse([]byte(base), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Parse([]byte(base), "", nil)
	Defaults(again)
	if !reflect.DeepEqual(c, again) {
		t.Error("Defaults changed an already defaulted config")
	}
	// Default slices are not shared between upstreams.
	c.Upstreams["users"].Retry.Methods[0] = "PATCH"
	if c.Upstreams["orders"].Retry.Methods[0] != "GET" {
		t.Error("upstreams share their default retry methods slice")
	}
	// An explicit empty list stays empty.
	c, err = Parse([]byte(oneRoute+"upstreams:\n  users:\n    targets: [{url: \"http://a:1\"}]\n    retry: {on: []}\n"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if on := c.Upstreams["users"].Retry.On; on == nil || len(on) != 0 {
		t.Errorf("retry.on = %#v, want an empty list", on)
	}
}

func TestDefaultsZeroConfig(t *testing.T) {
	var c Config
	Defaults(&c)
	if c.Listen != DefaultListen || *c.Server.MaxInFlight != DefaultMaxInFlight || !*c.Server.H2C {
		t.Errorf("Defaults(zero) = listen %q, max_in_flight %d, h2c %v", c.Listen, *c.Server.MaxInFlight, *c.Server.H2C)
	}
	// A zero config has no routes and no upstreams, which is allowed.
	if err := Validate(&c); err != nil {
		t.Errorf("Validate(defaulted zero config) = %v", err)
	}
}

func TestValidateBuiltConfig(t *testing.T) {
	c := &Config{
		Upstreams: map[string]*Upstream{"a": {Targets: []Target{{URL: "http://a:1"}}}},
		Routes:    []*Route{nil, {Name: "r", Match: Match{Prefix: "/"}, Upstream: "a", Timeout: Duration(-time.Second)}},
	}
	Defaults(c)
	err := Validate(c)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Validate = %v, want *Error", err)
	}
	want := "routes[0]: empty route\nroutes[1].timeout: must not be negative, got -1s"
	if err.Error() != want {
		t.Errorf("Validate error =\n%s\nwant\n%s", err, want)
	}
}

func TestWarnings(t *testing.T) {
	c, err := Parse([]byte(oneRoute+`
upstreams:
  users: {targets: [{url: "http://a:1"}]}
  spare: {targets: [{url: "http://b:1"}]}
  archive: {targets: [{url: "http://c:1"}]}
`), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := Warnings(c)
	want := []Problem{
		{Path: "upstreams.archive", Reason: "not used by any route"},
		{Path: "upstreams.spare", Reason: "not used by any route"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Warnings = %v, want %v", got, want)
	}
}

func TestExplicitZeroShutdownDelaySurvives(t *testing.T) {
	c, err := Parse([]byte("shutdown: {delay: 0s, idle_grace: 0s}\n"), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Shutdown.Delay == nil || *c.Shutdown.Delay != 0 {
		t.Fatalf("shutdown.delay: 0s became %v", c.Shutdown.Delay)
	}
	if c.Shutdown.IdleGrace == nil || *c.Shutdown.IdleGrace != 0 {
		t.Fatalf("shutdown.idle_grace: 0s became %v", c.Shutdown.IdleGrace)
	}
}
