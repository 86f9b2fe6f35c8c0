package all_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	_ "github.com/dubbogw/dubbogw/all"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/proxy"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/dubbogw/dubbogw/registry/zookeeper"
	"github.com/dubbogw/dubbogw/servertls"
)

// full sets every field of the schema to a non-default value, every
// kind registered by package all included (filters are config's and each
// filter's own tests).
const full = `
listen: "127.0.0.1:8080"
admin:
  listen: "127.0.0.1:9091"
  pprof: true
  readiness: lenient
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
  engine: net/http
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
tls:
  listen: "127.0.0.1:8443"
  certificates:
    - {cert_file: TLS_CERT, key_file: TLS_KEY}
  min_version: "1.3"
  client_auth: request
  client_ca_file: TLS_CA
  client_subject_header: X-Client-Subject
  reload_interval: 2s
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
    tls: {ca_file: TLS_CA, server_name: users.internal, min_version: "1.3"}
  orders:
    targets: [{url: "http://127.0.0.1:9002"}]
    policy: least_request
routes:
  - name: users.get
    match:
      host: "*.example.com"
      methods: [GET, HEAD]
      path: /users/{id}
    upstream: users
    timeout: 2s
    max_body_bytes: 64KiB
    upgrades: [websocket, mqtt]
  - name: orders_v1
    match: {prefix: /orders, host: api.example.com}
    upstream: orders
  - name: orders_canary
    match:
      prefix: /orders
      host: api.example.com
      headers: [{name: X-Env, exact: canary}, {name: X-Build, regex: "v[0-9]+"}]
      query: [{name: beta, present: true}]
      cookies: [{name: group, prefix: b}]
      weight: 10
    upstream: orders
  - name: orders_stable
    match:
      prefix: /orders
      host: api.example.com
      headers: [{name: X-Env, exact: canary}, {name: X-Build, regex: "v[0-9]+"}]
      query: [{name: beta, present: true}]
      cookies: [{name: group, prefix: b}]
      weight: 90
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
      attachments_from: {X-Region: region}
      tag_header: X-Env-Tag
      result: {keep_class: true, long_as_number: true, big_as_number: true}
      exception_status: 502
      breaker: {enabled: true, max_failures: 3, failure_ratio: 0.25, window: 5s, min_requests: 10, open_for: 2s, half_open_probes: 2}
  - name: dubbo-generic
    match: {methods: [POST], path: "/dubbo/{interface}/{method}"}
    dubbo:
      registry: local
      passthrough: {allow: [com.example.demo.*, org.acme.OrderService]}
      tag: gray
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
    governance: {enabled: true, root: /gov/config, group: edge-rules}
dubbo:
  references: {max: 64, idle_ttl: 1m, new_per_second: 20, max_subscriptions: 500}
  conns_per_addr: 2
  dial_timeout: 1s
  heartbeat: 30s
  max_payload: 4MiB
  max_pending: 500
  types:
    com.example.demo.User: {createdAt: java.util.Date}
  metrics: {per_provider: true}
demo:
  http: 127.0.0.1:18081
  dubbo: 127.0.0.1:20880
`

func ptr[T any](v T) *T { return &v }

func TestParseFullConfig(t *testing.T) {
	// The TLS files are loaded by validation: real ones, made here.
	dir := t.TempDir()
	ca := testcert.NewCA(t, "full config CA")
	leaf := ca.Server(t, time.Time{}, "127.0.0.1")
	caFile, certFile, keyFile := testcert.Write(t, dir, "ca.pem", ca.PEM), testcert.Write(t, dir, "c.pem", leaf.CertPEM), testcert.Write(t, dir, "k.pem", leaf.KeyPEM)
	text := strings.NewReplacer("TLS_CA", caFile, "TLS_CERT", certFile, "TLS_KEY", keyFile).Replace(full)
	got, err := config.Parse([]byte(text), "full.yaml", nil)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	D := func(d time.Duration) config.Duration { return config.Duration(d) }
	want := &config.Config{
		Listen: "127.0.0.1:8080",
		Admin:  config.Admin{Listen: "127.0.0.1:9091", Pprof: true, Readiness: config.ReadinessLenient},
		Log:    config.Log{Level: "debug", Format: "text"},
		Server: config.Server{
			ReadHeaderTimeout: D(5 * time.Second),
			IdleTimeout:       D(time.Minute),
			MaxHeaderBytes:    32 << 10,
			MaxBodyBytes:      1000 * 1000,
			MaxInFlight:       ptr(0),
			TrustedProxies:    []string{"10.0.0.0/8", "192.0.2.7", "::1"},
			IdentityHeaders:   []string{"X-User-Id", "X-Tenant-Admin"},
			H2C:               ptr(false),
			Engine:            "net/http",

			BodyGrace:            D(5 * time.Second),
			MinBodyRate:          ptr(config.ByteSize(0)),
			WriteTimeout:         D(20 * time.Second),
			MaxConnections:       ptr(0),
			MaxConnectionsPerIP:  ptr(16),
			MaxConcurrentStreams: 32,
		},
		Shutdown:  config.Shutdown{Delay: ptr(D(time.Second)), DrainTimeout: D(10 * time.Second), IdleGrace: ptr(D(2 * time.Second))},
		Reload:    config.Reload{Watch: true, Interval: D(500 * time.Millisecond)},
		RequestID: config.RequestID{Header: "X-Trace-Id", TrustIncoming: ptr(false)},
		AccessLog: config.AccessLog{Enabled: ptr(false), Output: "/var/log/dubbogw/access.log"},
		Sections: map[string]config.Section{
			"upstreams": &proxy.Upstreams{
				"users": {
					Targets: []proxy.Target{
						{URL: "http://127.0.0.1:9001", Weight: 3},
						{URL: "https://users.internal:8443/base", Weight: proxy.DefaultTargetWeight},
					},
					Policy:         proxy.PolicyWeightedRandom,
					Protocol:       proxy.ProtocolHTTP1,
					Timeout:        D(5 * time.Second),
					ConnectTimeout: D(500 * time.Millisecond),
					PreserveHost:   true,
					Pool:           proxy.Pool{MaxIdlePerTarget: 8, MaxPerTarget: 100, IdleTimeout: D(30 * time.Second)},
					Retry:          proxy.Retry{Retries: ptr(2), On: []string{"connect_failure", "503"}, Methods: []string{"GET"}},
					PassiveHealth:  proxy.PassiveHealth{MaxFailures: ptr(0), Ejection: D(time.Second), MaxEjection: D(30 * time.Second)},
					TLS:            config.ClientTLS{CAFile: caFile, ServerName: "users.internal", MinVersion: "1.3"},
				},
				"orders": {
					Targets:        []proxy.Target{{URL: "http://127.0.0.1:9002", Weight: proxy.DefaultTargetWeight}},
					Policy:         proxy.PolicyLeastRequest,
					Protocol:       proxy.ProtocolHTTP1,
					Timeout:        proxy.DefaultTimeout,
					ConnectTimeout: proxy.DefaultConnectTimeout,
					Pool:           proxy.Pool{MaxIdlePerTarget: proxy.DefaultMaxIdlePerTarget, IdleTimeout: proxy.DefaultPoolIdleTimeout},
					Retry:          proxy.Retry{Retries: ptr(proxy.DefaultRetries), On: proxy.DefaultRetryOn(), Methods: proxy.DefaultRetryMethods()},
					PassiveHealth:  proxy.PassiveHealth{MaxFailures: ptr(proxy.DefaultMaxFailures), Ejection: proxy.DefaultEjection, MaxEjection: proxy.DefaultMaxEjection},
				},
			},
			"tls": &servertls.Config{Listen: "127.0.0.1:8443", Certificates: []servertls.Certificate{{CertFile: certFile, KeyFile: keyFile}},
				MinVersion: "1.3", ClientAuth: servertls.ClientAuthRequest, ClientCAFile: caFile, ClientSubjectHeader: "X-Client-Subject",
				ReloadInterval: D(2 * time.Second)},
			"dubbo": &dubboroute.Client{ConnsPerAddr: 2, DialTimeout: D(time.Second), Heartbeat: D(30 * time.Second),
				MaxPayload: 4 << 20, MaxPending: 500, Types: map[string]map[string]string{"com.example.demo.User": {"createdAt": "java.util.Date"}},
				References: dubboroute.References{Max: 64, IdleTTL: D(time.Minute), NewPerSecond: 20, MaxSubscriptions: 500},
				Metrics:    dubboroute.Metrics{PerProvider: true}},
		},
		Routes: []*config.Route{
			{
				Name:         "users.get",
				Match:        config.Match{Host: "*.example.com", Methods: []string{"GET", "HEAD"}, Path: "/users/{id}"},
				Kind:         "upstream",
				Spec:         &proxy.Route{Upstream: "users", Upgrades: []string{"websocket", "mqtt"}},
				Timeout:      D(2 * time.Second),
				MaxBodyBytes: 64 << 10,
			},
			{
				Name:         "orders_v1",
				Match:        config.Match{Host: "api.example.com", Prefix: "/orders"},
				Kind:         "upstream",
				Spec:         &proxy.Route{Upstream: "orders", Upgrades: proxy.DefaultUpgrades()},
				Timeout:      proxy.DefaultTimeout, // from the upstream
				MaxBodyBytes: 1000 * 1000,          // from server.max_body_bytes
			},
			{
				Name: "orders_canary",
				Match: config.Match{Host: "api.example.com", Prefix: "/orders",
					Headers: []config.ValueMatch{{Name: "X-Env", Exact: ptr("canary")}, {Name: "X-Build", Regex: "v[0-9]+"}},
					Query:   []config.ValueMatch{{Name: "beta", Present: true}},
					Cookies: []config.ValueMatch{{Name: "group", Prefix: "b"}},
					Weight:  ptr(10)},
				Kind:         "upstream",
				Spec:         &proxy.Route{Upstream: "orders", Upgrades: proxy.DefaultUpgrades()},
				Timeout:      proxy.DefaultTimeout,
				MaxBodyBytes: 1000 * 1000,
			},
			{
				Name: "orders_stable",
				Match: config.Match{Host: "api.example.com", Prefix: "/orders",
					Headers: []config.ValueMatch{{Name: "X-Env", Exact: ptr("canary")}, {Name: "X-Build", Regex: "v[0-9]+"}},
					Query:   []config.ValueMatch{{Name: "beta", Present: true}},
					Cookies: []config.ValueMatch{{Name: "group", Prefix: "b"}},
					Weight:  ptr(90)},
				Kind:         "upstream",
				Spec:         &proxy.Route{Upstream: "orders", Upgrades: proxy.DefaultUpgrades()},
				Timeout:      proxy.DefaultTimeout,
				MaxBodyBytes: 1000 * 1000,
			},
			{
				Name:  "user-dubbo",
				Match: config.Match{Methods: []string{"GET"}, Path: "/api/users/{id}"},
				Kind:  "dubbo",
				Spec: &dubboroute.Route{Dubbo: dubboroute.Config{
					TagHeader: ptr("X-Env-Tag"),
					Registry:  "local", Interface: "com.example.demo.UserService", Version: "1.0.0", Group: "g1", Method: "getUser",
					Protocol: dubboroute.ProtocolAuto, Generic: ptr(false), Timeout: D(500 * time.Millisecond), Cluster: "failfast", Retries: ptr(0),
					Idempotent: ptr(false), LoadBalance: "consistenthash", HashArguments: []int{0},
					Params: []dubboroute.Param{
						{Type: "java.lang.String", From: "path", Name: "id", Required: ptr(true)},
						{Type: "int", From: "query", Name: "limit", Value: ptr("10"), Required: ptr(false)},
						{Type: "java.lang.String", From: "header", Name: "X-Tenant", Required: ptr(false)},
						{Type: "com.example.demo.Filter", From: "body", Pointer: "/filter", Required: ptr(false)},
						{Type: "long", From: "constant", Value: ptr("7"), Required: ptr(false)},
					},
					Types:           map[string]map[string]string{"com.example.demo.Filter": {"since": "java.util.Date"}},
					Attachments:     map[string]string{"app": "web"},
					AttachmentsFrom: map[string]string{"X-Region": "region"},
					Result:          dubboroute.Result{KeepClass: true, LongAsNumber: true, BigAsNumber: true},
					ExceptionStatus: 502, MaxBodyBytesInFlight: dubboroute.DefaultDubboBodyBudget,
					Breaker: dubboroute.Breaker{Enabled: ptr(true), MaxFailures: 3, FailureRatio: ptr(0.25), Window: D(5 * time.Second),
						MinRequests: 10, OpenFor: D(2 * time.Second), HalfOpenProbes: 2},
				}},
				Timeout:      D(500 * time.Millisecond), // from dubbo.timeout
				MaxBodyBytes: 1000 * 1000,
			},
			{
				Name:  "dubbo-generic",
				Match: config.Match{Methods: []string{"POST"}, Path: "/dubbo/{interface}/{method}"},
				Kind:  "dubbo",
				Spec: &dubboroute.Route{Dubbo: dubboroute.Config{
					Tag: "gray", TagHeader: ptr(dubboroute.DefaultTagHeader),
					Registry: "local", Passthrough: &dubboroute.Passthrough{Allow: []string{"com.example.demo.*", "org.acme.OrderService"}},
					Protocol: dubboroute.ProtocolAuto, Generic: ptr(true), Timeout: dubboroute.DefaultDubboTimeout, Cluster: dubboroute.DefaultDubboCluster, Retries: ptr(dubboroute.DefaultDubboRetries),
					Idempotent: ptr(false), LoadBalance: dubboroute.DefaultDubboLoadBalance, HashArguments: []int{0},
					ExceptionStatus: dubboroute.DefaultExceptionStatus, MaxBodyBytesInFlight: dubboroute.DefaultDubboBodyBudget,
					Breaker: dubboroute.Breaker{Enabled: ptr(true), MaxFailures: dubboroute.DefaultBreakerMaxFailures, FailureRatio: ptr(dubboroute.DefaultBreakerRatio),
						Window: dubboroute.DefaultBreakerWindow, MinRequests: dubboroute.DefaultBreakerMinRequests, OpenFor: dubboroute.DefaultBreakerOpenFor,
						HalfOpenProbes: dubboroute.DefaultBreakerProbes},
				}},
				Timeout:      dubboroute.DefaultDubboTimeout,
				MaxBodyBytes: 1000 * 1000,
			},
		},
		Registries: map[string]*config.Registry{
			"local": {Type: "static", Spec: &registry.StaticConfig{Providers: map[string][]string{
				"com.example.demo.UserService": {"127.0.0.1:20880", "dubbo://127.0.0.1:20881?version=1.0.0&group=g1&weight=200"},
			}}, ReleaseAfter: config.DefaultRegistryReleaseAfter, StartupWait: config.DefaultRegistryStartupWait},
			"zk": {Type: "zookeeper", Spec: &zookeeper.Config{Address: "zookeeper://127.0.0.1:2181, 127.0.0.2:2181", Root: "dubbo-prod",
				SessionTimeout: D(10 * time.Second), Timeout: D(2 * time.Second), Register: ptr(false),
				Application: "edge", Username: "gw", Password: "secret", WatchGC: D(5 * time.Minute),
				Discovery: "application", ServicesRoot: "/g/services",
				Metadata:   zookeeper.Metadata{Timeout: D(time.Second), Concurrency: 2, Cache: zookeeper.DefaultMetadataCache},
				Governance: zookeeper.Governance{Enabled: true, Root: "/gov/config", Group: "edge-rules"}},
				ReleaseAfter: D(time.Minute), StartupWait: D(500 * time.Millisecond)},
		},
		Demo: config.Demo{HTTP: "127.0.0.1:18081", Dubbo: "127.0.0.1:20880"},
		Tracing: config.Tracing{Endpoint: config.DefaultTracingEndpoint, SampleRatio: ptr(config.DefaultTracingSampleRatio),
			ServiceName: config.DefaultTracingService, Timeout: config.DefaultTracingTimeout, MaxQueueSize: config.DefaultTracingQueueSize},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(full) differs from the expected config")
		diffStructs(t, "Config", reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
	}
	if w := config.Warnings(got); len(w) != 0 {
		t.Errorf("Warnings = %v, want none", w)
	}
	if err := config.Validate(got); err != nil {
		t.Errorf("Validate(parsed) = %v", err)
	}

	// Written back (as the admin API shows it), the configuration reads
	// the same: every kind's keys sit where a user writes them.
	out, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	again, err := config.Parse(out, "marshalled.yaml", nil)
	if err != nil {
		t.Fatalf("Parse(Marshal(full)):\n%v\n%s", err, out)
	}
	// (A nil list is written as [], so compare what is written.)
	if out2, _ := yaml.Marshal(again); string(out2) != string(out) {
		t.Errorf("Marshal(Parse(Marshal(full))) differs:\n%s\nfirst:\n%s", out2, out)
	}
	for _, key := range []string{"\nupstreams:\n", "\ndubbo:\n", "\n      upstream: users\n", "\n      dubbo:\n", "\n        type: zookeeper\n", "\n        address: ", "\ntls:\n    listen: 127.0.0.1:8443\n"} {
		if !strings.Contains(string(out), key) {
			t.Errorf("Marshal(full) has no %q:\n%s", key, out)
		}
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
