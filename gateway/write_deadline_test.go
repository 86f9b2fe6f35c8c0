package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The write deadline must cut a client that reads nothing, never a
// route that answers later than write_timeout, on either protocol.

// TestLateAnswerOverH2CWithinTheRouteTimeout: an HTTP/2 stream's write
// deadline resets the stream when it fires, writing or not; a route that
// answers after write_timeout (but within its timeout) still answers.
func TestLateAnswerOverH2CWithinTheRouteTimeout(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(2500 * time.Millisecond)
		_, _ = io.WriteString(w, "late")
	}))
	t.Cleanup(slow.Close)
	tg := startGWRaw(t, fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
shutdown: {delay: 0s}
access_log: {enabled: false}
server: {write_timeout: 1s}
upstreams:
  slow: {targets: [{url: %q}]}
routes:
  - {name: slow, match: {prefix: /}, upstream: slow, timeout: 20s}
`, slow.URL))
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: protocols}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, tg.base+"/x", nil)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s over h2c: %v", method, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.ProtoMajor != 2 || res.StatusCode != 200 || string(b) != "late" {
			t.Fatalf("%s over h2c: HTTP/%d %d %q %v, want HTTP/2 200 \"late\"", method, res.ProtoMajor, res.StatusCode, b, err)
		}
	}
}

// TestLongPauseBeforeTheEndOfAStreamedAnswer: net/http writes the end of
// a chunked answer after the handler returns; a pause longer than
// write_timeout before it must not cut it.
func TestLongPauseBeforeTheEndOfAStreamedAnswer(t *testing.T) {
	pausing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first")
		http.NewResponseController(w).Flush()
		time.Sleep(2500 * time.Millisecond)
	}))
	t.Cleanup(pausing.Close)
	tg := startGWRaw(t, fmt.Sprintf(`
listen: "127.0.0.1:0"
admin: {listen: "127.0.0.1:0"}
shutdown: {delay: 0s}
access_log: {enabled: false}
server: {write_timeout: 1s}
upstreams:
  pausing: {targets: [{url: %q}]}
routes:
  - {name: pausing, match: {prefix: /}, upstream: pausing, timeout: 20s}
`, pausing.URL))
	client := &http.Client{Timeout: 20 * time.Second}
	res, err := client.Get(tg.base + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || string(b) != "first" {
		t.Fatalf("streamed answer: %q, %v; want \"first\" complete", b, err)
	}
}
