package rewrite_test

import (
	"testing"

	"github.com/dubbogw/dubbogw/config/configtest"
)

func TestConfigProblems(t *testing.T) {
	const at = "routes[0].filters[0].rewrite"
	l := configtest.EntryLine
	for _, c := range []struct {
		entry string
		want  configtest.Want
	}{
		{"rewrite: {strip_prefix: /users, path: /x}", configtest.Want{Path: at, Reason: "set at most one of strip_prefix, path and regex (got strip_prefix and path)"}},
		{`rewrite: {regex: "(", replacement: /x}`, configtest.Want{Path: at + ".regex", Reason: "does not compile"}},
		{"rewrite: {add_prefix: /v1, replacement: /x}", configtest.Want{Path: at + ".replacement", Reason: "only used with regex"}},
		{`rewrite: {path: "/v2/{uid}"}`, configtest.Want{Path: at + ".path", Reason: "{uid} is not a parameter of the route's match.path (it captures: id)"}},
		{"rewrite: {strip_prefix: users}", configtest.Want{Path: at + ".strip_prefix", Reason: "must start with"}},
		{"rewrite: {}", configtest.Want{Path: at, Reason: "empty rewrite"}},
	} {
		c.want.Line = l
		configtest.Parse(t, configtest.WithFilter(c.entry, ""), c.want)
	}
	configtest.Parse(t, configtest.WithFilter(`rewrite: {path: "/v2/users/{id}", add_prefix: /api}`, ""))
	// default_filters run on every route: they have no parameters to use.
	configtest.Parse(t, configtest.WithFilter("rewrite: {add_prefix: /v1}", "default_filters:\n  - rewrite: {path: \"/x/{id}\"}\n"),
		configtest.Want{Path: "default_filters[0].rewrite.path", Reason: "the route's path captures no parameters", Line: l + 2})
}
