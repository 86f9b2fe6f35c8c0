package proxy

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/exchange"
)

func TestUpgradesAllowList(t *testing.T) {
	h := &handler{upgrades: []string{"websocket", "mqtt"}}
	for _, c := range []struct {
		upgrade []string
		want    bool
	}{
		{[]string{"websocket"}, true},
		{[]string{"WebSocket"}, true},
		{[]string{"mqtt, websocket"}, true},
		{[]string{"h2c"}, false},
		{[]string{"websocket, h2c"}, false}, // the target could pick h2c
		{[]string{"websocket", "h2c"}, false},
		{[]string{" , "}, false},
	} {
		if got := h.allowsUpgrade(c.upgrade); got != c.want {
			t.Errorf("allowsUpgrade(%q) = %v, want %v", c.upgrade, got, c.want)
		}
	}
	if (&handler{}).allowsUpgrade([]string{"websocket"}) {
		t.Error("Upgrades() (none) allows websocket")
	}
}

func TestUpgradeNotAllowedIsServedPlain(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "app", 200, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "upgrade="+r.Header.Get("Upgrade"))
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(0, Upgrades()))
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		res := do(t, testClient(t), req)
		if res.status != 200 || res.body != "upgrade=" {
			t.Fatalf("got %d %q, want the plain answer with no Upgrade sent", res.status, res.body)
		}
	})
}

// clientFailedBody fails as the gateway's body does when a client breaks it.
type clientFailedBody struct{ failure *exchange.BodyError }

func (b *clientFailedBody) Read([]byte) (int, error)     { return 0, b.failure }
func (b *clientFailedBody) Close() error                 { return nil }
func (b *clientFailedBody) Failure() *exchange.BodyError { return b.failure }
func (b *clientFailedBody) Complete() bool               { return false }

func TestClientBodyFailureIsNotTheTargets(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "app", 200, nil)
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL), PassiveHealth: PassiveHealth{MaxFailures: intPtr(2)}})
		h := u.Handler(0)
		for range 5 {
			srv, _ := serveProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Body = &clientFailedBody{failure: &exchange.BodyError{Kind: exchange.BodyMalformed, Err: errors.New("invalid byte in chunk length")}}
				r.ContentLength = -1
				h.ServeHTTP(w, r)
			}))
			res := do(t, testClient(t), mustRequest(t, http.MethodPost, srv.URL+"/", "x"))
			if e := decodeError(t, res); res.status != 400 || e.Error.Code != exchange.CodeBadRequest {
				t.Fatalf("got %d %+v, want 400 BAD_REQUEST", res.status, e)
			}
		}
		if st := u.Targets()[0]; st.State != "healthy" || st.ConsecutiveFailures != 0 {
			t.Fatalf("target after 5 broken client bodies: %+v, want healthy with no failure", st)
		}
	})
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
