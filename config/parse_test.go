package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// base is a minimal valid configuration that top-level cases append to.
const base = `
backends:
  users:
    targets: [{url: "http://127.0.0.1:9001"}]
  orders:
    targets: [{url: "http://127.0.0.1:9002"}]
routes:
  - name: users
    match: {prefix: /users}
    backend: users
  - name: orders
    match: {prefix: /orders}
    backend: orders
`

// backendsOnly defines the upstreams for cases that write their own routes.
const backendsOnly = `
backends:
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
    backend: users
`

// withRoute returns the upstreams plus one route "r" whose match and
// upstream are given, with extra lines (indented by 4) added to the route.
func withRoute(match, extra string) string {
	return backendsOnly + `
routes:
  - name: r
    match: ` + match + `
    backend: users
` + extra
}

// withFilter returns a valid route carrying one filter entry.
func withFilter(filter string) string {
	return withRoute(`{path: "/users/{id}"}`, "    filters:\n      - "+filter+"\n")
}

type want struct {
	path   string
	reason string // substring of the reason
	line   int    // checked when non-zero
}

func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	if err == nil {
		t.Fatal("no error, want problems")
	}
	var e *Error
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

func TestErrorFormat(t *testing.T) {
	e := &Error{Source: "quickstart.yaml", Problems: []Problem{
		{Path: "routes[2].filters[0].probe.nmae", Line: 14, Reason: "unknown key (known: name, count)"},
		{Path: "listen", Reason: "bad"},
		{Reason: "empty configuration"},
	}}
	want := "quickstart.yaml:14: routes[2].filters[0].probe.nmae: unknown key (known: name, count)\n" +
		"quickstart.yaml: listen: bad\n" +
		"quickstart.yaml: empty configuration"
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	e.Source = ""
	if got := e.Error(); !strings.HasPrefix(got, "line 14: routes[2]") || !strings.Contains(got, "\nlisten: bad\n") {
		t.Errorf("Error() without source =\n%s", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(path, []byte(base+"listen: \"${DUBBOGW_TEST_LOAD_ADDR:-:7070}\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":7070" {
		t.Errorf("Listen = %q, want :7070", c.Listen)
	}

	if err := os.WriteFile(path, []byte(base+"listen: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":14: listen: ") {
		t.Errorf("Load error = %v, want it to start with %s:14: listen:", err, path)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist", err)
	}
}
