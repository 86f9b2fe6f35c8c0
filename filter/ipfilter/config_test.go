package ipfilter_test

import (
	"testing"

	"github.com/dubbogw/dubbogw/config/configtest"
)

func TestConfigProblems(t *testing.T) {
	const at = "routes[0].filters[0].ip"
	l := configtest.EntryLine
	configtest.Parse(t, configtest.WithFilter("ip: {}", ""), configtest.Want{Path: at, Reason: "empty ip filter", Line: l})
	configtest.Parse(t, configtest.WithFilter(`ip: {allow: [10.0.0.300], deny: [10.0.0.0/8, "::1/200"]}`, ""),
		configtest.Want{Path: at + ".allow[0]", Reason: `"10.0.0.300" is not an IP address or CIDR`, Line: l},
		configtest.Want{Path: at + ".deny[1]", Reason: `"::1/200"`, Line: l})
	configtest.Parse(t, configtest.WithFilter(`ip: {allow: ["10.0.0.0/8", "::1"], deny: [192.0.2.7]}`, ""))
}
