package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkProxy compares a GET of a small JSON body sent straight to the
// backend, through a plain httputil.ReverseProxy and through Upstream.Handler,
// (with the standard and the direct transport), all over loopback with
// keep-alive connections.
func BenchmarkProxy(b *testing.B) {
	payload := []byte(`{"id":42,"name":"dubbogw","tags":["gateway","proxy"],"active":true}`)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(payload)))
		_, _ = w.Write(payload)
	}))
	defer backend.Close()
	backendURL, err := url.Parse(backend.URL)
	if err != nil {
		b.Fatal(err)
	}
	plain := httptest.NewServer(httputil.NewSingleHostReverseProxy(backendURL))
	defer plain.Close()
	upstreamServer := func(transport string) *httptest.Server {
		u, err := New("bench-"+transport, &Config{Targets: targets(backend.URL), Transport: transport}, NewMetrics(prometheus.NewRegistry()), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(u.Close)
		srv := httptest.NewServer(u.Handler(0))
		b.Cleanup(srv.Close)
		return srv
	}
	standard, direct := upstreamServer(TransportStandard), upstreamServer(TransportDirect)

	for _, bc := range []struct{ name, url string }{
		{"direct", backend.URL},
		{"httputil", plain.URL},
		{"upstream", standard.URL},
		{"upstream-direct-transport", direct.URL},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 8}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			req, err := http.NewRequest(http.MethodGet, bc.url+"/api/items/42?view=full", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK || n != int64(len(payload)) {
					b.Fatalf("got %d, %d bytes, %v", res.StatusCode, n, err)
				}
			}
		})
	}
}
