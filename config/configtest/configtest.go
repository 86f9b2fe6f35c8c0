// Package configtest parses configuration snippets in tests and checks
// the problems `dubbogw validate` would report, path and line included:
// how a filter's package tests its own rules as a user meets them.
package configtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/config"
	_ "github.com/dubbogw/dubbogw/proxy" // the upstream route kind and upstreams: WithFilter writes
)

// Want is a problem a test expects: its path, a substring of its reason,
// and its line when not 0.
type Want struct {
	Path   string
	Reason string
	Line   int
}

// EntryLine is the line of the filter entry in WithFilter's configuration.
const EntryLine = 8

// WithFilter returns a valid configuration whose one route "r", matching
// the path pattern /users/{id}, carries one filter entry (such as
// `cors: {allow_origins: ["*"]}`) at line EntryLine; extra is appended as
// top-level YAML (a redis: section, say).
func WithFilter(entry, extra string) string {
	return `upstreams:
  users: {targets: [{url: "http://127.0.0.1:9001"}]}
routes:
  - name: r
    match: {path: "/users/{id}"}
    upstream: users
    filters:
      - ` + entry + "\n" + extra
}

// Parse parses yaml (no ${ENV} is set) and checks that it reports exactly
// wants, in order; without wants the configuration must be accepted. It
// returns the configuration, or nil.
func Parse(t testing.TB, yaml string, wants ...Want) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(yaml), "t.yaml", nil)
	if len(wants) == 0 {
		if err != nil {
			t.Fatalf("refused:\n%v", err)
		}
		return c
	}
	var e *config.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want problems %+v", err, err, wants)
	}
	if len(e.Problems) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%v", len(e.Problems), len(wants), err)
	}
	for i, w := range wants {
		g := e.Problems[i]
		if g.Path != w.Path || !strings.Contains(g.Reason, w.Reason) || (w.Line != 0 && g.Line != w.Line) {
			t.Errorf("problem %d = %d %s: %q\nwant        %d %s: ...%q...", i, g.Line, g.Path, g.Reason, w.Line, w.Path, w.Reason)
		}
	}
	return c
}
