package adminui

import (
	"encoding/json"
	"strings"
	"testing"

	_ "github.com/dubbogw/dubbogw/all" // every kind the configuration names
	"github.com/dubbogw/dubbogw/config"
)

// secretsYAML is a valid configuration holding a secret in every place
// one can hide: each string containing "s3cr3t" must not survive Redact.
const secretsYAML = `
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
redis:
  address: 127.0.0.1:6379
  username: gw
  password: redis-s3cr3t
registries:
  zk:
    type: zookeeper
    address: 127.0.0.1:2181
    username: zkuser
    password: zk-s3cr3t
  static:
    providers:
      com.example.Svc: ["dubbo://u:prov-s3cr3t@127.0.0.1:20880?version=1.0.0"]
      com.example.Other: ["127.0.0.1:20881?token=prov-tok-s3cr3t"]
upstreams:
  api:
    targets: [{url: "http://127.0.0.1:8081"}]
routes:
  - name: api
    match: {prefix: /api}
    upstream: api
    filters:
      - headers:
          request:
            set: {Authorization: "Bearer hdr-s3cr3t", X-Api-Key: key-s3cr3t, Cookie: "session=cookie-s3cr3t"}
          response:
            add: {X-Plain: plain-s3cr3t}
      - auth:
          store: memory
          tokens: {tok-s3cr3t: '{"userId": "user-s3cr3t"}'}
  - name: svc
    match: {path: /svc}
    dubbo: {registry: static, interface: com.example.Svc, method: get, attachments: {sign: sign-s3cr3t}}
  - name: zk
    match: {path: /zk}
    dubbo: {registry: zk, interface: com.example.Svc, method: get}
`

func TestRedactHidesEverySecret(t *testing.T) {
	cfg, err := config.Parse([]byte(secretsYAML), "test.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	out, err := json.Marshal(Redact(cfg))
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if strings.Contains(text, "s3cr3t") {
		t.Errorf("a secret survived redaction: %s", text)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	at := func(path ...any) any {
		var v any = doc
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v
	}
	for _, c := range []struct {
		path []any
		want any
	}{
		{[]any{"redis", "password"}, Redacted},
		{[]any{"redis", "username"}, "gw"},
		{[]any{"redis", "address"}, "127.0.0.1:6379"},
		{[]any{"redis", "timeout"}, "50ms"}, // a default, written like the YAML
		{[]any{"registries", "zk", "password"}, Redacted},
		{[]any{"registries", "zk", "username"}, "zkuser"},
		{[]any{"registries", "static", "providers", "com.example.Svc", 0}, "dubbo://REDACTED@127.0.0.1:20880?version=REDACTED"},
		{[]any{"registries", "static", "providers", "com.example.Other", 0}, "127.0.0.1:20881?token=REDACTED"},
		{[]any{"upstreams", "api", "targets", 0, "url"}, "http://127.0.0.1:8081"},
		{[]any{"routes", 0, "filters", 0, "headers", "request", "set", "Authorization"}, Redacted},
		{[]any{"routes", 0, "filters", 0, "headers", "request", "set", "X-Api-Key"}, Redacted},
		// any header value a headers filter sets may be a credential (Cookie)
		{[]any{"routes", 0, "filters", 0, "headers", "request", "set", "Cookie"}, Redacted},
		{[]any{"routes", 0, "filters", 0, "headers", "response", "add", "X-Plain"}, Redacted},
		{[]any{"routes", 1, "dubbo", "attachments", "sign"}, Redacted},
		{[]any{"routes", 1, "dubbo", "interface"}, "com.example.Svc"},
		{[]any{"routes", 0, "filters", 1, "auth", "tokens"}, Redacted},
		// where the token is read is no secret: the struct keeps its fields
		{[]any{"routes", 0, "filters", 1, "auth", "token", "header"}, "Authorization"},
		{[]any{"routes", 0, "filters", 1, "auth", "key_prefix"}, "token:"},
		{[]any{"routes", 1, "name"}, "svc"},
	} {
		if got := at(c.path...); got != c.want {
			t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
		}
	}
	if _, ok := doc["routes"].([]any)[0].(map[string]any)["filters"].([]any)[0].(map[string]any)["cors"]; ok {
		t.Error("unset (nil) filter sections are shown")
	}
}
