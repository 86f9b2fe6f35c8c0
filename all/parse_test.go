package all_test

// Whole configurations parsed with every kind registered: the problems a
// user meets in `dubbogw validate`, each at its path and line, across
// config's own keys and the kinds' (upstreams, routes, registries).

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/proxy"
)

// base is a minimal valid configuration that top-level cases append to.
const base = `
upstreams:
  users:
    targets: [{url: "http://127.0.0.1:9001"}]
  orders:
    targets: [{url: "http://127.0.0.1:9002"}]
routes:
  - name: users
    match: {prefix: /users}
    upstream: users
  - name: orders
    match: {prefix: /orders}
    upstream: orders
`

// upstreamsOnly defines the upstreams for cases that write their own routes.
const upstreamsOnly = `
upstreams:
  users:
    targets: [{url: "http://127.0.0.1:9001"}]
  orders:
    targets: [{url: "http://127.0.0.1:9002"}]
`

// oneRoute is a valid route list for cases that write their own upstreams.
const oneRoute = `
routes:
  - name: users
    match: {prefix: /users}
    upstream: users
`

// withRoute returns the upstreams plus one route "r" whose match and
// upstream are given, with extra lines (indented by 4) added to the route.
func withRoute(match, extra string) string {
	return upstreamsOnly + `
routes:
  - name: r
    match: ` + match + `
    upstream: users
` + extra
}

// withUpstream returns the base routes and one upstream "users" with the given body.
func withUpstream(body string) string {
	return oneRoute + "upstreams:\n  users:\n" + body
}

type want struct {
	path   string
	reason string // substring of the reason
	line   int    // checked when non-zero
}

func problemsOf(t *testing.T, err error) []config.Problem {
	t.Helper()
	if err == nil {
		t.Fatal("no error, want problems")
	}
	var e *config.Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T (%v), want *config.Error", err, err)
	}
	return e.Problems
}

func checkProblems(t *testing.T, err error, wants []want) {
	t.Helper()
	got := problemsOf(t, err)
	if len(got) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(wants), err)
	}
	for i, w := range wants {
		g := got[i]
		if g.Path != w.path || !strings.Contains(g.Reason, w.reason) || (w.line != 0 && g.Line != w.line) {
			t.Errorf("problem %d = %d %q: %q\nwant        %d %q: ...%q...", i, g.Line, g.Path, g.Reason, w.line, w.path, w.reason)
		}
		if strings.Contains(g.Reason, "\n") {
			t.Errorf("problem %d reason spans lines: %q", i, g.Reason)
		}
	}
}

func TestParseRefusesMistakes(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		wants []want
	}{
		// Document.
		{"empty", "", []want{{"", "empty configuration", 0}}},
		{"only comments", "# nothing\n", []want{{"", "empty configuration", 0}}},
		{"null document", "~\n", []want{{"", "empty configuration", 1}}},
		{"two documents", base + "---\nlisten: :1\n", []want{{"", "more than one YAML document", 14}}},
		{"syntax error", "listen: :1\n  admin: x\n", []want{{"", "YAML syntax: mapping values are not allowed", 2}}},
		// yaml.v3 reports these one line early or at the enclosing block; the line is corrected.
		{"bad indentation in a mapping", "log:\n  level: info\n  format: json\n format: text\nlisten: :1\n", []want{{"", "YAML syntax: did not find expected key", 4}}},
		{"bad indentation in a list", "server:\n  trusted_proxies:\n    - 10.0.0.1\n    - 10.0.0.2\n    h2c: true\n", []want{{"", "YAML syntax: did not find expected '-' indicator", 5}}},
		{"unclosed flow list", "log: {level: info}\nserver:\n  trusted_proxies: [10.0.0.1, 10.0.0.2\nlisten: :1\n", []want{{"", "YAML syntax: did not find expected ',' or ']'", 3}}},
		{"tab indentation", "log:\n  level: info\n\tformat: json\n", []want{{"", "YAML syntax: found a tab character", 3}}},
		{"unknown anchor", "log: {level: info}\nlisten: *addr\n", []want{{"", "YAML syntax: unknown anchor 'addr' referenced", 2}}},
		{"unquoted reference in flow", "log: {level: info}\nserver: {max_in_flight: ${N}}\n", []want{{"", `inside {...} or [...] write "${NAME}" in quotes`, 2}}},
		{"document is a list", "- a\n", []want{{"", "want a mapping, got a list", 1}}},

		// Unknown keys at several depths.
		{"unknown top-level key", base + "listn: :8080\n", []want{{"listn", "unknown key (known: listen, admin, log, server,", 14}}},
		{"unknown key needing quotes", base + "\"my key\": 1\n", []want{{`["my key"]`, "unknown key", 14}}},
		{"identity header that frames the request", base + "server: {identity_headers: [X-User-Id, Content_Length, \"bad name\", X-Request-Id]}\n",
			[]want{{"server.identity_headers[1]", `"Content_Length" is not an identity header`, 14}, {"server.identity_headers[2]", "is not a valid header name", 14}, {"server.identity_headers[3]", `"X-Request-Id" is not an identity header`, 14}}},
		{"unknown server key", base + "server: {max_inflight: 3}\n", []want{{"server.max_inflight", "unknown key (known: read_header_timeout,", 14}}},
		{"unknown retry key", withUpstream("    targets: [{url: \"http://a:1\"}]\n    retry: {attempts: 3}\n"),
			[]want{{"upstreams.users.retry.attempts", "unknown key (known: retries, on, methods)", 9}}},
		{"unknown match key", withRoute("{prefix: /, verb: GET}", ""), []want{{"routes[0].match.verb", "unknown key", 10}}},

		// Duplicate keys.
		{"duplicate top-level key", base + "listen: :1\nlisten: :2\n", []want{{"listen", "duplicate key (first set on line 14)", 15}}},
		{"duplicate route key", withRoute("{prefix: /}", "    upstream: orders\n"), []want{{"routes[0].upstream", "duplicate key (first set on line 11)", 12}}},

		// Wrong types.
		{"list where a mapping goes", base + "admin: [a]\n", []want{{"admin", "want a mapping, got a list", 14}}},
		{"mapping where a list goes", upstreamsOnly + "routes: {users: {}}\n", []want{{"routes", "want a list, got a mapping", 7}}},
		{"list of upstreams", oneRoute + "upstreams: [users]\n", []want{
			{"routes[0].upstream", `upstream "users" is not defined; no upstreams are defined`, 5},
			{"upstreams", "want a mapping, got a list", 6},
		}},
		{"mapping where a string goes", base + "listen: {port: 1}\n", []want{{"listen", "want a string, got a mapping", 14}}},
		{"scalar where a list goes", withRoute("{prefix: /, methods: GET}", ""), []want{{"routes[0].match.methods", `want a list, got the string "GET"`, 10}}},
		{"word for an integer", base + "server: {max_in_flight: many}\n", []want{{"server.max_in_flight", `want an integer, got the string "many"`, 14}}},
		{"quoted integer", base + "server: {max_in_flight: \"5\"}\n", []want{{"server.max_in_flight", "(drop the quotes)", 14}}},
		{"float for an integer", withUpstream("    targets: [{url: \"http://a:1\", weight: 1.5}]\n"),
			[]want{{"upstreams.users.targets[0].weight", "want an integer, got the number 1.5", 8}}},
		{"yes for a bool", base + "admin: {pprof: yes}\n", []want{{"admin.pprof", "want true or false", 14}}},
		{"string for a bool pointer", base + "server: {h2c: \"true\"}\n", []want{{"server.h2c", "(drop the quotes)", 14}}},
		{"unknown engine", base + "server: {engine: fasthttp}\n", []want{{"server.engine", `"fasthttp": want "loop" or "net/http"`, 14}}},

		// Durations and sizes.
		{"duration without unit", base + "server: {idle_timeout: 5}\n", []want{{"server.idle_timeout", `duration "5" has no unit`, 14}}},
		{"duration with bad unit", base + "shutdown: {drain_timeout: 5x}\n", []want{{"shutdown.drain_timeout", `bad duration "5x"`, 14}}},
		{"negative duration", base + "shutdown: {delay: -1s}\n", []want{{"shutdown.delay", `duration "-1s" is negative`, 14}}},
		{"duration as a list", base + "server: {read_header_timeout: [1s]}\n", []want{{"server.read_header_timeout", "want a duration", 14}}},
		{"route duration", withRoute("{prefix: /}", "    timeout: 3 s\n"), []want{{"routes[0].timeout", `bad duration "3 s"`, 12}}},
		{"bad size unit", base + "server: {max_body_bytes: 8XB}\n", []want{{"server.max_body_bytes", `bad size "8XB"`, 14}}},
		{"negative size", base + "server: {max_body_bytes: -1}\n", []want{{"server.max_body_bytes", `bad size "-1"`, 14}}},
		{"size as a mapping", withRoute("{prefix: /}", "    max_body_bytes: {mib: 1}\n"), []want{{"routes[0].max_body_bytes", "want a size", 12}}},

		// Listeners and log.
		{"listen is a port", base + "listen: 8080\n", []want{{"listen", `for any host write ":8080"`, 14}}},
		{"listen port out of range", base + "listen: localhost:99999\n", []want{{"listen", `port "99999" is not a number 0..65535`, 14}}},
		{"listen bad host", base + "listen: \"no host!:80\"\n", []want{{"listen", `"no host!" is not a host name or IP address`, 14}}},
		{"admin listen bad", base + "admin: {listen: \"127.0.0.1\"}\n", []want{{"admin.listen", "want host:port", 14}}},
		{"admin listen equals listen", base + "listen: \":9000\"\nadmin: {listen: \":9000\"}\n", []want{{"admin.listen", "also listen's address", 15}}},
		{"admin listen overlaps listen", base + "listen: \":9000\"\nadmin: {listen: \"127.0.0.1:9000\"}\n", []want{{"admin.listen", "overlaps listen", 15}}},
		{"log level", base + "log: {level: verbose}\n", []want{{"log.level", `"verbose": want debug, info, warn or error`, 14}}},
		{"log level upper case", base + "log: {level: INFO}\n", []want{{"log.level", "(lower case)", 14}}},
		{"log format", base + "log: {format: xml}\n", []want{{"log.format", "want json or text", 14}}},

		// Server, shutdown, reload, request id, access log, demo.
		{"negative max in flight", base + "server: {max_in_flight: -1}\n", []want{{"server.max_in_flight", "must be 0 (no limit) or more", 14}}},
		{"negative connection caps", base + "server: {max_connections: -1, max_connections_per_ip: -2}\n", []want{
			{"server.max_connections", "must be 0 (no cap) or more", 14},
			{"server.max_connections_per_ip", "must be 0 (no cap) or more", 14},
		}},
		{"no h2 streams", base + "server: {max_concurrent_streams: -1}\n", []want{{"server.max_concurrent_streams", "at least 1", 14}}},
		{"negative body rate", base + "server: {min_body_rate: -1}\n", []want{{"server.min_body_rate", "want a non-negative number of bytes", 14}}},
		{"negative write timeout", base + "server: {write_timeout: -1s}\n", []want{{"server.write_timeout", "", 14}}},
		{"bad upgrade protocol", withRoute("{prefix: /}", "    upgrades: [websocket, \"h2c upgrade\"]\n"),
			[]want{{"routes[0].upgrades[1]", `"h2c upgrade" is not a protocol name`, 0}}},
		{"tiny max header bytes", base + "server: {max_header_bytes: 512}\n", []want{{"server.max_header_bytes", "at least 1KiB", 14}}},
		{"bad trusted proxy", base + "server:\n  trusted_proxies: [10.0.0.0/8, 10.0.0.0/33, proxy.local]\n", []want{
			{"server.trusted_proxies[1]", `"10.0.0.0/33" is not an IP address or CIDR`, 15},
			{"server.trusted_proxies[2]", `"proxy.local"`, 15},
		}},
		{"reload interval too short", base + "reload: {watch: true, interval: 50ms}\n", []want{{"reload.interval", "at least 100ms", 14}}},
		{"short interval without watch", base + "reload: {interval: 50ms}\n", nil},
		{"IPv6 listeners", base + "listen: \"[::1]:8080\"\nadmin: {listen: \"[::1]:9090\"}\n", nil},
		{"listeners on port 0", base + "listen: \":0\"\nadmin: {listen: \":0\"}\n", nil},
		{"request id header", base + "request_id: {header: \"X Request\"}\n", []want{{"request_id.header", `"X Request" is not a valid header name`, 14}}},
		{"access log upper case", base + "access_log: {output: STDOUT}\n", []want{{"access_log.output", "write stdout in lower case", 14}}},
		{"access log directory", base + "access_log: {output: /var/log/}\n", []want{{"access_log.output", "is a directory", 14}}},
		{"demo http", base + "demo: {http: nowhere}\n", []want{{"demo.http", "want host:port", 14}}},

		// Routes.
		{"empty route", upstreamsOnly + "routes: [~]\n", []want{{"routes[0]", "empty route", 7}}},
		{"route without name", upstreamsOnly + "routes:\n  - {match: {prefix: /}, upstream: users}\n", []want{{"routes[0].name", "required", 8}}},
		{"route name with space", upstreamsOnly + "routes:\n  - {name: \"my route\", match: {prefix: /}, upstream: users}\n", []want{{"routes[0].name", "use only letters, digits", 8}}},
		{"duplicate route name", base + "  - {name: users, match: {prefix: /u2}, upstream: users}\n", []want{{"routes[2].name", `duplicate route name "users" (first used by routes[0])`, 14}}},
		{"path and prefix", withRoute("{path: /a, prefix: /b}", ""), []want{{"routes[0].match", "set either path or prefix, not both", 10}}},
		{"neither path nor prefix", withRoute("{host: a.example}", ""), []want{{"routes[0].match", "one of path or prefix is required", 10}}},
		{"no match at all", upstreamsOnly + "routes:\n  - {name: r, upstream: users}\n", []want{{"routes[0].match", "one of path or prefix is required", 8}}},
		{"relative path", withRoute("{path: users}", ""), []want{{"routes[0].match.path", `"users" must start with "/"`, 10}}},
		{"partial parameter", withRoute("{path: \"/a/{id}x\"}", ""), []want{{"routes[0].match.path", "must be a whole segment", 10}}},
		{"rest parameter not last", withRoute("{path: \"/a/{p...}/b\"}", ""), []want{{"routes[0].match.path", "must be the final segment", 10}}},
		{"repeated parameter", withRoute("{path: \"/a/{id}/{id}\"}", ""), []want{{"routes[0].match.path", "duplicate parameter name", 10}}},
		{"prefix with query", withRoute("{prefix: \"/a?x=1\"}", ""), []want{{"routes[0].match.prefix", `a path has no "?" part`, 10}}},
		{"prefix with parameter", withRoute("{prefix: \"/a/{id}\"}", ""), []want{{"routes[0].match.prefix", "use path with", 10}}},
		{"lower-case method", withRoute("{prefix: /, methods: [GET, post]}", ""), []want{{"routes[0].match.methods[1]", "write POST", 10}}},
		{"repeated method", withRoute("{prefix: /, methods: [GET, HEAD, GET]}", ""), []want{{"routes[0].match.methods[2]", "GET repeats methods[0]", 10}}},
		{"method not a token", withRoute("{prefix: /, methods: [\"GE T\"]}", ""), []want{{"routes[0].match.methods[0]", "is not an HTTP method", 10}}},
		{"host with port", withRoute("{prefix: /, host: \"api.example.com:8080\"}", ""), []want{{"routes[0].match.host", "must not include a port", 10}}},
		{"host inner wildcard", withRoute("{prefix: /, host: \"a.*.example.com\"}", ""), []want{{"routes[0].match.host", "a wildcard is \"*.\" followed by a domain", 10}}},
		{"host star", withRoute("{prefix: /, host: \"*\"}", ""), []want{{"routes[0].match.host", "leave host empty", 10}}},
		{"host bad characters", withRoute("{prefix: /, host: \"api!.example\"}", ""), []want{{"routes[0].match.host", "invalid character", 10}}},
		{"IPv6 route host", withRoute("{prefix: /, host: \"[::1]\"}", ""), nil},
		{"IPv6 route host without brackets", withRoute("{prefix: /, host: \"::1\"}", ""), []want{{"routes[0].match.host", "in brackets", 10}}},
		{"route without upstream", upstreamsOnly + "routes:\n  - {name: r, match: {prefix: /}}\n", []want{{"routes[0]", "say what the route calls: set one of dubbo, upstream", 8}}},
		{"route of two kinds", upstreamsOnly + "routes:\n  - {name: r, match: {prefix: /}, upstream: users, dubbo: {registry: x}}\n",
			[]want{{"routes[0]", "set one of dubbo, upstream, not upstream and dubbo", 8}}},
		{"a key of another route kind", upstreamsOnly + "registries: {local: {providers: {a.B: [\"127.0.0.1:1\"]}}}\n" +
			"routes:\n  - {name: r, match: {prefix: /}, dubbo: {registry: local, interface: a.B, method: m}, upgrades: [websocket]}\n",
			[]want{{"routes[0].upgrades", "upgrades is a setting of routes with upstream, not of routes with dubbo", 9}}},
		{"a key of no route kind", withRoute("{prefix: /}", "    upstreams: [x]\n"),
			[]want{{"routes[0].upstreams", "unknown key (known: name, match, filters, timeout, max_body_bytes, max_in_flight, adaptive_concurrency, allow_matrix_params, upstream, upgrades)", 12}}},
		{"a key of another registry type", base + "registries: {zk: {type: zookeeper, address: \"127.0.0.1:2181\", providers: {a.B: [x]}}}\n",
			[]want{{"registries.zk.providers", "providers is a setting of static registries, not of zookeeper ones", 14}}},
		{"empty registry type is static", base + "registries: {local: {type: \"\", providers: {a.B: [\"127.0.0.1:1\"]}}}\n", nil},
		{"registry type not a string", base + "registries: {r: {type: [x], providers: {a.B: [\"127.0.0.1:1\"]}}}\n",
			[]want{{"registries.r.type", "want a string, got a list", 14}}},
		{"unknown registry type", base + "registries: {e: {type: etcd, address: x}}\n",
			[]want{{"registries.e.type", `unknown registry type "etcd" (known: static, zookeeper)`, 14}}},
		{"undefined upstream", upstreamsOnly + "routes:\n  - {name: r, match: {prefix: /}, upstream: userz}\n",
			[]want{{"routes[0].upstream", `upstream "userz" is not defined; defined: orders, users`, 8}}},

		// Upstreams.
		{"upstream without targets", withUpstream("    targets: []\n"), []want{{"upstreams.users.targets", "at least one target", 8}}},
		{"upstream empty mapping", withUpstream("    {}\n"), []want{{"upstreams.users.targets", "at least one target", 7}}},
		{"upstream null", oneRoute + "upstreams:\n  users: ~\n", []want{{"upstreams.users", "empty upstream", 7}}},
		{"upstream bad name", oneRoute + "upstreams:\n  users: {targets: [{url: \"http://a:1\"}]}\n  \"my svc\": {targets: [{url: \"http://a:1\"}]}\n",
			[]want{{`upstreams["my svc"]`, `upstream name "my svc"`, 8}}},
		{"target without scheme", withUpstream("    targets: [{url: \"localhost:8080\"}]\n"), []want{{"upstreams.users.targets[0].url", `has no scheme: write "http://localhost:8080"`, 8}}},
		{"target ftp", withUpstream("    targets: [{url: \"ftp://files:21\"}]\n"), []want{{"upstreams.users.targets[0].url", "scheme must be http or https", 8}}},
		{"target without host", withUpstream("    targets: [{url: \"http://\"}]\n"), []want{{"upstreams.users.targets[0].url", "has no host", 8}}},
		{"target with query", withUpstream("    targets: [{url: \"http://a:1/?x=1\"}]\n"), []want{{"upstreams.users.targets[0].url", "no query", 8}}},
		{"target with credentials", withUpstream("    targets: [{url: \"http://u:p@a:1\"}]\n"), []want{{"upstreams.users.targets[0].url", "credentials", 8}}},
		{"target port zero", withUpstream("    targets: [{url: \"http://a:0\"}]\n"), []want{{"upstreams.users.targets[0].url", `port "0" is not a number 1..65535`, 8}}},
		{"target url missing", withUpstream("    targets: [{weight: 3}]\n"), []want{{"upstreams.users.targets[0].url", "required", 8}}},
		{"repeated target", withUpstream("    targets: [{url: \"http://a:1\"}, {url: \"http://a:1\"}]\n"), []want{{"upstreams.users.targets[1].url", "repeats targets[0]", 8}}},
		{"weight too high", withUpstream("    targets: [{url: \"http://a:1\", weight: 10001}]\n"), []want{{"upstreams.users.targets[0].weight", "must be 1..10000, got 10001", 8}}},
		{"weight negative", withUpstream("    targets: [{url: \"http://a:1\", weight: -1}]\n"), []want{{"upstreams.users.targets[0].weight", "got -1", 8}}},
		{"policy", withUpstream("    targets: [{url: \"http://a:1\"}]\n    policy: random\n"), []want{{"upstreams.users.policy", `"random" is not a policy`, 9}}},
		{"transport", withUpstream("    targets: [{url: \"http://a:1\"}]\n    transport: fast\n"), []want{{"upstreams.users.transport", `"fast" is not a transport: want standard or direct`, 9}}},
		{"transport direct", withUpstream("    targets: [{url: \"http://a:1\"}]\n    transport: direct\n"), nil},
		{"retry on", withUpstream("    targets: [{url: \"http://a:1\"}]\n    retry: {on: [connect_failure, 404, timeout, 502, 502]}\n"), []want{
			{"upstreams.users.retry.on[1]", `"404": want connect_failure or a status code 500..599`, 9},
			{"upstreams.users.retry.on[2]", `"timeout"`, 9},
			{"upstreams.users.retry.on[4]", "502 repeats on[3]", 9},
		}},
		{"retries too many", withUpstream("    targets: [{url: \"http://a:1\"}]\n    retry: {retries: 11}\n"), []want{{"upstreams.users.retry.retries", "must be 0..10, got 11", 9}}},
		{"retry lower-case method", withUpstream("    targets: [{url: \"http://a:1\"}]\n    retry: {methods: [GET, put]}\n"), []want{{"upstreams.users.retry.methods[1]", "write PUT", 9}}},
		{"max ejection below ejection", withUpstream("    targets: [{url: \"http://a:1\"}]\n    passive_health: {ejection: 1m, max_ejection: 30s}\n"),
			[]want{{"upstreams.users.passive_health.max_ejection", "30s is shorter than ejection (1m0s)", 9}}},
		{"negative max failures", withUpstream("    targets: [{url: \"http://a:1\"}]\n    passive_health: {max_failures: -1}\n"), []want{{"upstreams.users.passive_health.max_failures", "must be 0 (no ejection) or more", 9}}},
		{"negative pool cap", withUpstream("    targets: [{url: \"http://a:1\"}]\n    pool: {max_per_target: -1}\n"), []want{{"upstreams.users.pool.max_per_target", "must be 0 (no cap) or more", 9}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.yaml), "test.yaml", nil)
			if tc.wants == nil {
				if err != nil {
					t.Fatalf("unexpected error:\n%v", err)
				}
				return
			}
			if c != nil {
				t.Error("Parse returned a config along with problems")
			}
			checkProblems(t, err, tc.wants)
		})
	}
}

func TestParseReportsAllProblemsSorted(t *testing.T) {
	var routes strings.Builder
	for i := range 12 {
		fmt.Fprintf(&routes, "  - {name: r%d, match: {prefix: /r%d}, upstream: users}\n", i, i)
	}
	doc := `log: {level: loud}
routes:
` + routes.String() + `  - {name: r2, match: {prefix: /x}, upstream: nobody}
upstreams:
  users: {targets: [{url: "http://a:1"}], policy: fastest}
listen: nope
`
	// routes[12] is line 15: a duplicate name and an undefined upstream.
	doc = strings.Replace(doc, "{name: r10, match: {prefix: /r10}", "{name: r10, match: {prefix: r10}", 1)
	_, err := config.Parse([]byte(doc), "all.yaml", nil)
	checkProblems(t, err, []want{
		{"listen", "want host:port", 18},
		{"log.level", `"loud"`, 1},
		{"routes[10].match.prefix", "must start with", 13},
		{"routes[12].name", "first used by routes[2]", 15},
		{"routes[12].upstream", `upstream "nobody" is not defined; defined: users`, 15},
		{"upstreams.users.policy", `"fastest"`, 17},
	})
	want := `all.yaml:18: listen: "nope": want host:port, as in ":8080" or "127.0.0.1:9090"
all.yaml:1: log.level: "loud": want debug, info, warn or error`
	if got := err.Error(); !strings.HasPrefix(got, want+"\n") || strings.Count(got, "\n") != 5 {
		t.Errorf("Error() =\n%s\nwant it to start with\n%s\nand have 6 lines", got, want)
	}
}

func TestParseHidesFollowOnProblems(t *testing.T) {
	// The route's match could not be decoded: no second "path or prefix
	// required" problem for it. The sibling problem on upstream stays.
	doc := upstreamsOnly + "routes:\n  - name: r\n    match: [/users]\n    upstream: nobody\n"
	_, err := config.Parse([]byte(doc), "", nil)
	checkProblems(t, err, []want{
		{"routes[0].match", "want a mapping, got a list", 9},
		{"routes[0].upstream", "not defined", 10},
	})
}

func TestParseMergeKeys(t *testing.T) {
	doc := oneRoute + `
upstreams:
  users: &common
    targets: [{url: "http://a:1"}]
    timeout: 3s
    retry: {retries: 0}
  orders:
    <<: *common
    timeout: 4s
`
	c, err := config.Parse([]byte(doc), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := proxy.UpstreamsOf(c)["orders"]
	if o.Timeout.D().String() != "4s" || len(o.Targets) != 1 || o.Targets[0].URL != "http://a:1" || *o.Retry.Retries != 0 {
		t.Errorf("merged upstream = %+v", o)
	}

	doc = oneRoute + `
upstreams:
  users: &common
    targets: [{url: "http://a:1"}]
    timeout: 3s
  orders: &orders
    <<: *common
    timeout: 4s
  billing:
    <<: [*orders, {policy: least_request, timeout: 9s}]
`
	c, err = config.Parse([]byte(doc), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := proxy.UpstreamsOf(c)["billing"]; b.Timeout.D().String() != "4s" || b.Policy != proxy.PolicyLeastRequest || len(b.Targets) != 1 {
		t.Errorf("upstream merged from a merge = %+v", b)
	}

	_, err = config.Parse([]byte(oneRoute+"upstreams:\n  users:\n    <<: [x]\n    targets: [{url: \"http://a:1\"}]\n"), "", nil)
	checkProblems(t, err, []want{{"upstreams.users", "<< merges a mapping or a list of mappings", 8}})
}
