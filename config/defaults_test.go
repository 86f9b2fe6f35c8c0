package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultsAreAsDocumented(t *testing.T) {
	c, err := Parse([]byte(`
backends:
  users:
    targets: [{url: "http://127.0.0.1:9001"}]
routes:
  - name: users
    match: {prefix: /users}
    backend: users
    filters:
      - probe: {name: a}
`), "min.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Routes[0]
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
		{"route.timeout (the stand-in backend's)", r.Timeout.D(), 30 * time.Second},
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
	// Default slices are not shared between routes.
	c.Server.IdentityHeaders[0] = "X-Changed"
	if again.Server.IdentityHeaders[0] != "X-User-Id" {
		t.Error("configurations share their default identity headers slice")
	}
	// An explicit empty list stays empty.
	c, err = Parse([]byte(base+"server: {identity_headers: []}\n"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Server.IdentityHeaders; h == nil || len(h) != 0 {
		t.Errorf("server.identity_headers = %#v, want an empty list", h)
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
		Sections: map[string]Section{"backends": &standInBackends{"a": {Targets: []struct {
			URL string `yaml:"url"`
		}{{URL: "http://a:1"}}}}},
		Routes: []*Route{nil, {Name: "r", Match: Match{Prefix: "/"}, Kind: "backend", Spec: &standInBackendRoute{Backend: "a"}, Timeout: Duration(-time.Second)}},
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

	// A route built without a kind, and a registry whose type names none.
	c = &Config{Routes: []*Route{{Name: "r", Match: Match{Prefix: "/"}}}, Registries: map[string]*Registry{"r": {Type: "etcd"}}}
	Defaults(c)
	err = Validate(c)
	want = "registries.r.type: unknown registry type \"etcd\" (known: listed, remote)\nroutes[0]: say what the route calls: set one of backend, call"
	if err.Error() != want {
		t.Errorf("Validate error =\n%s\nwant\n%s", err, want)
	}
}

func TestWarnings(t *testing.T) {
	c, err := Parse([]byte(oneRoute+`
backends:
  users: {targets: [{url: "http://a:1"}]}
  spare: {targets: [{url: "http://b:1"}]}
  archive: {targets: [{url: "http://c:1"}]}
`), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := Warnings(c)
	want := []Problem{
		{Path: "backends.archive", Reason: "not used by any route"},
		{Path: "backends.spare", Reason: "not used by any route"},
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
