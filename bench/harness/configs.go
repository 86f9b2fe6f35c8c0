package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/demo"
)

// gatewaySpec is what one gateway process is configured with.
type gatewaySpec struct {
	listen, admin  string // 127.0.0.1:port
	accessLog      string // file path
	redis          string // host:port
	upstream       string // http://127.0.0.1:port
	tokenPrefix    string // auth key prefix in Redis
	providers      []string
	triple         string // the demo provider's Triple address: registry tri and route /tri/api/users/{id}
	providerCounts []int  // a registry and a route per count: p1, p10, p100
	routes         int    // total routes, filler routes added to reach it
	idlePerTarget  int
	redisTimeout   time.Duration // 0: the gateway's default
	// tlsListen, when set, adds the TLS listener of the HTTPS rows,
	// serving certFile and keyFile.
	tlsListen, certFile, keyFile string
}

// timeoutField is ", timeout: d" for a flow mapping, "" for 0.
func timeoutField(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return ", timeout: " + d.String()
}

// measuredRoutes is how many routes gatewayYAML writes before fillers,
// for providerCounts of length n.
func measuredRoutes(n int) int { return 5 + n }

// gatewayYAML renders the configuration of one gateway: the measured
// routes, then filler routes (distinct first segments, half patterns half
// exact paths) up to spec.routes.
func gatewayYAML(spec gatewaySpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# written by bench/harness
listen: %q
admin: {listen: %q, pprof: true}
log: {level: warn}
access_log: {output: %q}
shutdown: {delay: 0s, drain_timeout: 5s}
# The load generator is one client on loopback with up to 512 connections:
# exempt it from the per-client connection cap, as a load balancer in
# front would be (and as gateways before the cap accept this key too).
server: {trusted_proxies: ["127.0.0.1/32"]}
redis: {address: %q%s}
`, spec.listen, spec.admin, spec.accessLog, spec.redis, timeoutField(spec.redisTimeout))
	if spec.tlsListen != "" {
		fmt.Fprintf(&b, "tls:\n  listen: %q\n  certificates: [{cert_file: %q, key_file: %q}]\n", spec.tlsListen, spec.certFile, spec.keyFile)
	}
	b.WriteString("registries:\n")
	for _, n := range spec.providerCounts {
		fmt.Fprintf(&b, "  p%d:\n    providers:\n      %s: [%s]\n", n, demo.UserInterface, quoteJoin(spec.providers[:n]))
	}
	fmt.Fprintf(&b, "  tri:\n    providers:\n      %s: [%q]\n", demo.UserInterface, "tri://"+spec.triple)
	fmt.Fprintf(&b, `upstreams:
  echo:
    targets: [{url: %q}]
    pool: {max_idle_per_target: %d}
  echo-standard:
    targets: [{url: %q}]
    pool: {max_idle_per_target: %d}
    transport: standard
routes:
  - name: http-users
    match: {methods: [GET], path: "/http/users/{id}"}
    upstream: echo
  - name: standard-http-users
    match: {methods: [GET], path: "/standard/http/users/{id}"}
    filters: [{rewrite: {strip_prefix: /standard}}]
    upstream: echo-standard
  - name: auth-http-users
    match: {methods: [GET], path: "/auth/http/users/{id}"}
    filters: [{rewrite: {strip_prefix: /auth}}, {auth: {key_prefix: %q%s}}]
    upstream: echo
  - name: auth-api-users
    match: {methods: [GET], path: "/auth/api/users/{id}"}
    filters: [{auth: {key_prefix: %q%s}}]
    dubbo: {registry: p1, interface: %s, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
  - name: triple-users
    match: {methods: [GET], path: "/tri/api/users/{id}"}
    dubbo: {registry: tri, protocol: tri, interface: %s, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
`, spec.upstream, spec.idlePerTarget, spec.upstream, spec.idlePerTarget, spec.tokenPrefix, timeoutField(spec.redisTimeout), spec.tokenPrefix, timeoutField(spec.redisTimeout), demo.UserInterface, demo.UserInterface)
	for _, n := range spec.providerCounts {
		path := fmt.Sprintf("/p%d/api/users/{id}", n)
		if n == 1 {
			path = "/api/users/{id}"
		}
		fmt.Fprintf(&b, `  - name: dubbo-users-p%d
    match: {methods: [GET], path: %q}
    dubbo: {registry: p%d, interface: %s, method: getUser, params: [{type: java.lang.String, from: path, name: id}]}
`, n, path, n, demo.UserInterface)
	}
	for i := measuredRoutes(len(spec.providerCounts)); i < spec.routes; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&b, "  - {name: filler-%d, match: {methods: [GET], path: \"/svc%d/v1/items/{id}\"}, upstream: echo}\n", i, i)
		} else {
			fmt.Fprintf(&b, "  - {name: filler-%d, match: {path: \"/svc%d/status\"}, upstream: echo}\n", i, i)
		}
	}
	return b.String()
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// nginxConf renders nginx's configuration: a reverse proxy on listen to
// the upstream over keep-alive connections, everything under prefix.
//
// worker_processes auto (one worker per core, 2 here): the gateway's Go
// runtime may use every core (GOMAXPROCS = 2), so nginx gets the same.
// keepalive_requests is raised on both sides: nginx's default of 1,000
// requests per connection would make it reconnect where the gateway and the
// load generator do not. Its access log goes to a file, buffered as the
// gateway's is (64 KiB, flushed every second).
func nginxConf(prefix, listen, upstream string, idle int, tlsListen string, certs *benchCerts) string {
	return fmt.Sprintf(`# written by bench/harness
daemon off;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events {
    worker_connections 8192;
}
http {
    access_log %[1]s/access.log combined buffer=64k flush=1s;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    keepalive_timeout 120s;
    keepalive_requests 100000000;
    upstream echo {
        server %[3]s;
        keepalive %[4]d;
        keepalive_requests 100000000;
        keepalive_timeout 90s;
    }
    server {
        listen %[2]s;
        location / {
            proxy_pass http://echo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
%[5]s}
`, prefix, listen, upstream, idle, nginxTLSServer(tlsListen, certs))
}

// nginxTLSServer is the server block of the HTTPS rows: the same proxy
// behind TLS, with the gateway's certificate and what an HTTPS edge
// sets (TLS 1.2 and 1.3, a shared session cache); "" without tlsListen.
func nginxTLSServer(tlsListen string, certs *benchCerts) string {
	if tlsListen == "" {
		return ""
	}
	return fmt.Sprintf(`    server {
        listen %s ssl;
        ssl_certificate %s;
        ssl_certificate_key %s;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        location / {
            proxy_pass http://echo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
`, tlsListen, certs.certFile, certs.keyFile)
}
