package gateway_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/observe"
)

// teapot is a filter no package of the gateway knows: this test registers
// it, and a configuration names it, with no other change anywhere.
type teapot struct {
	Status int    `yaml:"status"`
	Body   string `yaml:"body"`
}

func (t *teapot) Defaults() {
	if t.Status == 0 {
		t.Status = http.StatusTeapot
	}
}

func (t *teapot) Validate(at config.At, ctx config.FilterContext) {
	if t.Status < 400 || t.Status > 599 {
		at.Field("status").Errorf("want an error status (400-599), got %d", t.Status)
	}
}

func (t *teapot) Build(d filter.Deps) (filter.Filter, error) {
	body := t.Body + " on " + d.Route
	return filter.Func(func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(t.Status)
			io.WriteString(w, body)
		})
	}), nil
}

func init() { filter.Register("teapot", func() filter.Spec { return new(teapot) }) }

const teapotYAML = `
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
access_log: {enabled: false}
shutdown: {delay: 0s, drain_timeout: 5s, idle_grace: 0s}
upstreams:
  nowhere: {targets: [{url: "http://127.0.0.1:9"}]}
routes:
  - name: pot
    match: {prefix: /pot}
    upstream: nowhere
    filters:
      - teapot: {body: short and stout}
`

// TestRegisteredFilterValidatesAndServes: a filter registered from
// outside the gateway is decoded, defaulted, validated (its problems with
// file and line, beside the others) and built into the route.
func TestRegisteredFilterValidatesAndServes(t *testing.T) {
	cfg, err := config.Parse([]byte(teapotYAML), "gw.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := gateway.Check(cfg); err != nil {
		t.Fatalf("Check: %v", err)
	}

	bad := strings.Replace(teapotYAML, "{body: short and stout}", "{status: 200}", 1) +
		"  - {name: other, match: {prefix: /x}, upstream: nowhere, filters: [{cors: {allow_origins: [\"x\"]}}]}\n"
	_, err = config.Parse([]byte(bad), "gw.yaml", nil)
	var e *config.Error
	if !errors.As(err, &e) || len(e.Problems) != 2 ||
		e.Problems[0].Path != "routes[0].filters[0].teapot.status" || e.Problems[0].Line != 13 ||
		e.Problems[1].Path != "routes[1].filters[0].cors.allow_origins[0]" {
		t.Fatalf("want the teapot's problem and the cors one, in one pass, with lines; got %v", err)
	}

	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(teapotYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{
		Load:     func() (*config.Config, error) { return config.Load(path) },
		Logger:   slog.New(slog.DiscardHandler),
		Registry: observe.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + g.Addr() + "/pot")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || string(body) != "short and stout on pot" {
		t.Errorf("got %d %q, want 418 from the registered filter", resp.StatusCode, body)
	}
}
