package headers_test

import (
	"testing"

	"github.com/dubbogw/dubbogw/config/configtest"
)

func TestConfigProblems(t *testing.T) {
	const at = "routes[0].filters[0].headers"
	l := configtest.EntryLine
	configtest.Parse(t, configtest.WithFilter("headers: {}", ""), configtest.Want{Path: at, Reason: "empty headers filter", Line: l})
	configtest.Parse(t, configtest.WithFilter(`headers:
          request: {set: {"Bad Header": x, Connection: close}}
          response: {add: {X-A: "a\nb"}, remove: [Server, ""]}`, ""),
		configtest.Want{Path: at + `.request.set["Bad Header"]`, Reason: "not a valid header name", Line: l + 1},
		configtest.Want{Path: at + ".request.set.Connection", Reason: `"Connection" cannot be set here: it is a hop-by-hop header`, Line: l + 1},
		configtest.Want{Path: at + ".response.add.X-A", Reason: "control character", Line: l + 2},
		configtest.Want{Path: at + ".response.remove[1]", Reason: `"" is not a valid header name`, Line: l + 2},
	)
	configtest.Parse(t, configtest.WithFilter("headers: {request: {set: {X-A: a, X-A: b}}}", ""),
		configtest.Want{Path: at + ".request.set.X-A", Reason: "duplicate key", Line: l})
}
