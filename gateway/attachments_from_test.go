package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/observe"
)

// attachmentProvider runs a provider of com.example.Echo whose ping
// sends the attachments of every call it receives to the returned channel.
func attachmentProvider(t *testing.T) (addr string, calls <-chan map[string]any) {
	t.Helper()
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	got := make(chan map[string]any, 16)
	s.Register(provider.Service{Interface: "com.example.Echo", Methods: map[string][]provider.Method{
		"ping": {{Func: func(ctx context.Context, _ []any) (any, error) {
			got <- provider.Attachments(ctx)
			return "pong", nil
		}}},
	}})
	a, err := s.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return a.String(), got
}

const attachmentsFromRoutes = `
registries:
  r: {providers: {com.example.Echo: [%q]}}
routes:
  - name: ping
    match: {path: /ping}
    filters: [{auth: {store: memory, tokens: {tok1: '{"userId":"u1"}'}}}]
    dubbo:
      registry: r
      interface: com.example.Echo
      method: ping
      attachments: {app: gw}
      attachments_from: {X-Tenant: tenant, x-region: region}
`

// TestDubboAttachmentsFrom: mapped request headers reach a real provider
// as attachments; an absent header adds none; a repeated or oversized
// one is refused with 400 before any call; and identity attachments of
// the auth filter win over a header mapped onto their key, even when a
// configuration that validation would refuse maps one (the run-time rule
// holds by itself).
func TestDubboAttachmentsFrom(t *testing.T) {
	addr, calls := attachmentProvider(t)
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(baseYAML+fmt.Sprintf(attachmentsFromRoutes, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{
		// The attack validation refuses (userId is the auth filter's
		// identity attachment), made in code past validation.
		Load: func() (*config.Config, error) {
			cfg, err := config.Load(path)
			if err == nil {
				dr, _ := dubboroute.RouteOf(cfg.Routes[0])
				dr.AttachmentsFrom["X-Evil"] = "userId"
			}
			return cfg, err
		},
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
	base := "http://" + g.Addr()

	r := do(t, "GET", base+"/ping", nil, "Authorization", "Bearer tok1", "x-tenant", "acme", "X-Evil", "admin", "userId", "admin")
	if r.status != 200 {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	a := <-calls
	for k, want := range map[string]string{"tenant": "acme", "app": "gw", "userId": "u1"} {
		if fmt.Sprint(a[k]) != want {
			t.Errorf("attachment %s = %v, want %s (all: %v)", k, a[k], want, a)
		}
	}
	if _, ok := a["region"]; ok {
		t.Errorf("region attachment without an X-Region header: %v", a)
	}

	for _, tc := range []struct {
		name string
		hdr  http.Header
		want string
	}{
		{"repeated", http.Header{"X-Tenant": {"acme", "other"}}, "header X-Tenant is sent 2 times: send it once"},
		{"too long", http.Header{"X-Region": {strings.Repeat("r", dubboroute.MaxMappedValue+1)}}, "header X-Region has 1025 bytes: at most 1024"},
		{"not UTF-8", http.Header{"X-Tenant": {"acme\xff"}}, "header X-Tenant is not UTF-8 text"},
	} {
		req, _ := http.NewRequest("GET", base+"/ping", nil)
		req.Header = tc.hdr
		req.Header.Set("Authorization", "Bearer tok1")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ans := readAnswer(t, resp)
		code, msg, _, _ := errorBody(t, ans)
		if ans.status != 400 || code != "BAD_REQUEST" || msg != tc.want {
			t.Errorf("%s: %d %s %q; want 400 BAD_REQUEST %q", tc.name, ans.status, code, msg, tc.want)
		}
	}
	select {
	case a := <-calls:
		t.Errorf("a refused request reached the provider: %v", a)
	default:
	}
}

func readAnswer(t *testing.T, resp *http.Response) answer {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// TestAttachmentsFromValidation: a header may not be mapped onto a key
// Dubbo reserves, an identity key or a route constant; each refusal names
// the place and the reason.
func TestAttachmentsFromValidation(t *testing.T) {
	addr, _ := attachmentProvider(t)
	for _, tc := range []struct{ mapping, want string }{
		{"{X-Tag: dubbo.tag}", `routes[0].dubbo.attachments_from.X-Tag: "dubbo.tag" is an attachment Dubbo reserves`},
		{"{X-Timeout: timeout}", `routes[0].dubbo.attachments_from.X-Timeout: "timeout" is an attachment Dubbo reserves`},
		{"{X-Path: path}", `routes[0].dubbo.attachments_from.X-Path: "path" is an attachment Dubbo reserves`},
		{"{X-Rid: request-id}", `routes[0].dubbo.attachments_from.X-Rid: "request-id" is an attachment Dubbo reserves`},
		{"{X-User: userId}", `routes[0].dubbo.attachments_from.X-User: "userId" carries identity (a filter that authenticates sets it): a client may never set it`},
		{"{X-User: USERID}", `routes[0].dubbo.attachments_from.X-User: "USERID" carries identity`},
		{"{X-App: app}", `routes[0].dubbo.attachments_from.X-App: "app" is a constant of attachments: a header may not change it`},
		{"{X-A: t, X-B: t}", `routes[0].dubbo.attachments_from.X-B: "t" is mapped from X-A already`},
		{"{X-A: a, x-a: b}", `routes[0].dubbo.attachments_from.x-a: "x-a" is the header "X-A": header names are case-insensitive`},
		{`{"X A": a}`, `routes[0].dubbo.attachments_from["X A"]: "X A" is not a header name`},
		{`{X-A: " "}`, `routes[0].dubbo.attachments_from.X-A: " ": an attachment key is a non-empty word`},
	} {
		yamlText := strings.Replace(fmt.Sprintf(attachmentsFromRoutes, addr), "{X-Tenant: tenant, x-region: region}", tc.mapping, 1)
		err := checkConfig(t, baseYAML+yamlText)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\n want %s", tc.mapping, err, tc.want)
		}
	}
}
