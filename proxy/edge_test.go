package proxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
)

// clientFailedBody fails as the gateway's body does when a client breaks it.
type clientFailedBody struct{ failure *exchange.BodyError }

func (b *clientFailedBody) Read([]byte) (int, error)     { return 0, b.failure }
func (b *clientFailedBody) Close() error                 { return nil }
func (b *clientFailedBody) Failure() *exchange.BodyError { return b.failure }
func (b *clientFailedBody) Complete() bool               { return false }

func TestClientBodyFailureIsNotTheTargets(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "app", 200, nil)
		u := newTestUpstream(t, transport, "svc", &config.Upstream{Targets: targets(b.URL), PassiveHealth: config.PassiveHealth{MaxFailures: intPtr(2)}})
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
