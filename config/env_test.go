package config

import (
	"strings"
	"testing"
)

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestSubstitution(t *testing.T) {
	vars := map[string]string{
		"ADDR":      "127.0.0.1:8181",
		"EMPTY":     "",
		"N":         "42",
		"ZERO":      "0",
		"YES":       "true",
		"HOST":      "users.internal",
		"STRUCTURE": "a: b\nc: [d]",
		"LIST":      "[GET, POST]",
		"NESTED":    "${ADDR}",
	}
	cases := []struct {
		name  string
		yaml  string
		check func(*Config) (got, want any)
	}{
		{"whole value", "listen: ${ADDR}\n",
			func(c *Config) (any, any) { return c.Listen, "127.0.0.1:8181" }},
		{"quoted whole value", "listen: \"${ADDR}\"\n",
			func(c *Config) (any, any) { return c.Listen, "127.0.0.1:8181" }},
		{"default when unset", "listen: ${UNSET:-:7000}\n",
			func(c *Config) (any, any) { return c.Listen, ":7000" }},
		{"default when empty", "listen: ${EMPTY:-:7001}\n",
			func(c *Config) (any, any) { return c.Listen, ":7001" }},
		{"set value beats default", "listen: ${ADDR:-:7002}\n",
			func(c *Config) (any, any) { return c.Listen, "127.0.0.1:8181" }},
		{"empty default", "access_log: {output: \"/var/log/gw${UNSET:-}.log\"}\n",
			func(c *Config) (any, any) { return c.AccessLog.Output, "/var/log/gw.log" }},
		{"inside a string", "backends:\n  users: {targets: [{url: \"http://${HOST}:9001/v${N}\"}]}\n",
			func(c *Config) (any, any) {
				return (*c.Section("backends").(*standInBackends))["users"].Targets[0].URL, "http://users.internal:9001/v42"
			}},
		{"escape", "access_log: {output: \"/tmp/$${HOME}/$HOME/a$$b.log\"}\n",
			func(c *Config) (any, any) { return c.AccessLog.Output, "/tmp/${HOME}/$HOME/a$$b.log" }},
		{"escape next to a reference", "access_log: {output: \"/tmp/$${N}${N}\"}\n",
			func(c *Config) (any, any) { return c.AccessLog.Output, "/tmp/${N}42" }},
		{"value is not expanded again", "access_log: {output: \"${NESTED}\"}\n",
			func(c *Config) (any, any) { return c.AccessLog.Output, "${ADDR}" }},
		{"number into an integer", "server:\n  max_in_flight: ${N}\n",
			func(c *Config) (any, any) { return *c.Server.MaxInFlight, 42 }},
		{"quoted number into an integer", "server: {max_in_flight: \"${ZERO}\"}\n",
			func(c *Config) (any, any) { return *c.Server.MaxInFlight, 0 }},
		{"number into a string", "request_id:\n  header: X-${N}\n",
			func(c *Config) (any, any) { return c.RequestID.Header, "X-42" }},
		{"boolean", "admin:\n  pprof: ${YES}\nserver:\n  h2c: ${UNSET:-false}\n",
			func(c *Config) (any, any) { return [2]bool{c.Admin.Pprof, *c.Server.H2C}, [2]bool{true, false} }},
		{"explicit string tag stays a string", "routes:\n  - {name: !!str \"${N}\", match: {prefix: /}, backend: users}\n",
			func(c *Config) (any, any) { return c.Routes[0].Name, "42" }},
		{"no structure injection", "access_log: {output: \"${STRUCTURE}\"}\n",
			func(c *Config) (any, any) { return c.AccessLog.Output, "a: b\nc: [d]" }},
		{"anchor substituted once for every alias", "listen: &a ${ADDR}\ndemo: {http: *a}\nadmin: {listen: \"127.0.0.1:9999\"}\n",
			func(c *Config) (any, any) { return c.Demo.HTTP, "127.0.0.1:8181" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.yaml
			switch {
			case strings.Contains(doc, "backends:"):
				doc += oneRoute
			case strings.Contains(doc, "routes:"):
				doc += backendsOnly
			default:
				doc += base
			}
			c, err := Parse([]byte(doc), "env.yaml", envOf(vars))
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if got, want := tc.check(c); got != want {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

func TestSubstitutionProblems(t *testing.T) {
	vars := map[string]string{"LIST": "[GET, POST]", "MAP": "{a: 1}", "N": "42"}
	cases := []struct {
		name  string
		yaml  string
		wants []want
	}{
		{"unset without default", "listen: ${NOPE}\n",
			[]want{{"listen", "environment variable NOPE is not set (write ${NOPE:-default} to give a default)", 1}}},
		{"two unset", base + "access_log: {output: \"${A}/${B}\"}\n",
			[]want{{"access_log.output", "environment variables A, B are not set", 14}}},
		{"unset deep", withFilter("probe: {name: a, methods: [GET, \"${METHOD}\"]}"),
			[]want{{"routes[0].filters[0].probe.methods[1]", "METHOD is not set", 13}}},
		{"unset in a map key's value", withFilter("probe: {name: a, secrets: {X-Token: \"${TOKEN}\"}}"),
			[]want{{"routes[0].filters[0].probe.secrets.X-Token", "TOKEN is not set", 13}}},
		{"unterminated", "listen: \"${ADDR\"\n", []want{{"listen", `unterminated "${"`, 1}}},
		{"shell default syntax", "listen: \"${ADDR-:80}\"\n", []want{{"listen", "a default is written ${NAME:-default}", 1}}},
		{"empty name", "listen: \"${}\"\n", []want{{"listen", `bad environment variable name ""`, 1}}},
		{"keys are not substituted", base + "${N}: 1\n", []want{{`["${N}"]`, "unknown key", 14}}},
		{"a list value stays a string", withRoute("\n      prefix: /\n      methods: ${LIST}", ""),
			[]want{{"routes[0].match.methods", `want a list, got the string "[GET, POST]"`, 12}}},
		{"a mapping value stays a string", base + "admin: ${MAP}\n",
			[]want{{"admin", `want a mapping, got the string "{a: 1}"`, 14}}},
		{"partial reference is a string", base + "server:\n  max_in_flight: 1${N}\n",
			[]want{{"server.max_in_flight", `want an integer, got the string "142"`, 15}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.yaml
			if !strings.Contains(doc, "routes:") {
				doc += base
			}
			_, err := Parse([]byte(doc), "env.yaml", envOf(vars))
			checkProblems(t, err, tc.wants)
		})
	}
}

func TestApplyEnvOverrides(t *testing.T) {
	parse := func(t *testing.T) *Config {
		t.Helper()
		c, err := Parse([]byte(base), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := parse(t)
	err := ApplyEnvOverrides(c, envOf(map[string]string{
		"DUBBOGW_LISTEN":       ":8181",
		"DUBBOGW_ADMIN_LISTEN": "127.0.0.1:9191",
		"DUBBOGW_LOG_LEVEL":    "debug",
		"DUBBOGW_LOG_FORMAT":   "text",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":8181" || c.Admin.Listen != "127.0.0.1:9191" || c.Log.Level != "debug" || c.Log.Format != "text" {
		t.Errorf("after overrides: listen %q, admin %q, log %+v", c.Listen, c.Admin.Listen, c.Log)
	}

	c = parse(t)
	if err := ApplyEnvOverrides(c, envOf(map[string]string{"DUBBOGW_LOG_LEVEL": ""})); err != nil || c.Log.Level != "info" {
		t.Errorf("empty variable: err %v, level %q; want it ignored", err, c.Log.Level)
	}

	c = parse(t)
	err = ApplyEnvOverrides(c, envOf(map[string]string{
		"DUBBOGW_LISTEN":     ":8181",
		"DUBBOGW_LOG_LEVEL":  "loud",
		"DUBBOGW_LOG_FORMAT": "XML",
	}))
	checkProblems(t, err, []want{
		{"log.format", `from DUBBOGW_LOG_FORMAT: "XML": want json or text (lower case)`, 0},
		{"log.level", `from DUBBOGW_LOG_LEVEL: "loud"`, 0},
	})
	if c.Listen != DefaultListen || c.Log.Level != DefaultLogLevel {
		t.Errorf("a refused override changed the config: listen %q, level %q", c.Listen, c.Log.Level)
	}

	c = parse(t)
	err = ApplyEnvOverrides(c, envOf(map[string]string{"DUBBOGW_ADMIN_LISTEN": DefaultListen}))
	checkProblems(t, err, []want{{"admin.listen", "also listen's address", 0}})
}
