package cors_test

import (
	"slices"
	"testing"

	"github.com/dubbogw/dubbogw/config/configtest"
	"github.com/dubbogw/dubbogw/filter/cors"
)

// TestConfigProblemsInOnePass: every problem of a cors entry is reported
// at once, at its path and line, as dubbogw validate shows them.
func TestConfigProblemsInOnePass(t *testing.T) {
	const at = "routes[0].filters[0].cors"
	l := configtest.EntryLine
	configtest.Parse(t, configtest.WithFilter(`cors:
          allow_origins: ["https://a.example", "https://b.example/"]
          allow_methods: [get]
          allow_headers: ["X Bad"]
          max_age: 100ms`, ""),
		configtest.Want{Path: at + ".allow_headers[0]", Reason: "not a valid header name", Line: l + 3},
		configtest.Want{Path: at + ".allow_methods[0]", Reason: "write GET", Line: l + 2},
		configtest.Want{Path: at + ".allow_origins[1]", Reason: "drop the trailing", Line: l + 1},
		configtest.Want{Path: at + ".max_age", Reason: "below the one-second resolution", Line: l + 4},
	)
	configtest.Parse(t, configtest.WithFilter(`cors: {allow_origin: ["*"], allow_origins: ["*"]}`, ""),
		configtest.Want{Path: at + ".allow_origin", Reason: "unknown key (known: allow_origins, allow_methods, allow_headers, expose_headers, allow_credentials, max_age)", Line: l})
}

func TestConfigDefaults(t *testing.T) {
	c := configtest.Parse(t, configtest.WithFilter(`cors: {allow_origins: ["http://[::1]:8080", "https://*.example.com"]}`, ""))
	got := c.Routes[0].Filters[0].Spec.(*cors.Config)
	if !slices.Equal(got.AllowMethods, []string{"GET", "HEAD", "POST"}) {
		t.Errorf("allow_methods default %v", got.AllowMethods)
	}
}
