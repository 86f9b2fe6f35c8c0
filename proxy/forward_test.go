package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestTrailersForwarded: trailers the target announced and trailers it
// did not announce both reach the client.
func TestTrailersForwarded(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "a", 200, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum")
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Checksum", "abc")
			w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(0))
		res, err := testClient(t).Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || string(body) != "body" {
			t.Fatalf("body %q, %v", body, err)
		}
		if res.Trailer.Get("X-Checksum") != "abc" || res.Trailer.Get("X-Late") != "late" {
			t.Errorf("trailers %v, want X-Checksum: abc and X-Late: late", res.Trailer)
		}
	})
}

// TestForwardedRequestHeaders: "Te: trailers" goes through (other Te
// values do not), a request without User-Agent is sent without one (not
// Go's), and a query a target could split differently (';', a malformed
// escape) loses those parameters while a clean one is sent byte for byte.
func TestForwardedRequestHeaders(t *testing.T) {
	forEachTransport(t, func(t *testing.T, transport string) {
		b := newBackend(t, "a", 200, func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"header": r.Header, "query": r.URL.RawQuery})
		})
		u := newTestUpstream(t, transport, "svc", &Config{Targets: targets(b.URL)})
		srv, _ := serveProxy(t, u.Handler(0))
		send := func(query, te string, ua bool) (http.Header, string) {
			t.Helper()
			req, _ := http.NewRequest("GET", srv.URL+"/q?"+query, nil)
			if te != "" {
				req.Header.Set("Te", te)
			}
			if !ua {
				req.Header["User-Agent"] = nil // the client sends none
			}
			res := do(t, testClient(t), req)
			var got struct {
				Header http.Header
				Query  string
			}
			if err := json.Unmarshal([]byte(res.body), &got); err != nil {
				t.Fatalf("body %q: %v", res.body, err)
			}
			return got.Header, got.Query
		}
		h, q := send("x=1&y=%20z", "trailers", false)
		if q != "x=1&y=%20z" {
			t.Errorf("clean query sent as %q", q)
		}
		if h.Get("Te") != "trailers" {
			t.Errorf("Te %q, want trailers", h.Get("Te"))
		}
		if v, ok := h["User-Agent"]; ok && len(v) > 0 && v[0] != "" {
			t.Errorf("User-Agent %q sent for a request without one", v)
		}
		h, q = send("a=1;b=2&c=%zz&d=4", "gzip", true)
		if q != "d=4" {
			t.Errorf("query with ';' and a bad escape sent as %q, want d=4", q)
		}
		if h.Get("Te") != "" {
			t.Errorf("Te %q forwarded", h.Get("Te"))
		}
		if h.Get("User-Agent") == "" {
			t.Error("the client's User-Agent was not forwarded")
		}
	})
}

func TestCleanQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":              "",
		"a=1&b=2":       "a=1&b=2",
		"a=%41&b=%2f":   "a=%41&b=%2f",
		"a=1;b=2":       "",
		"a=1&b=2;c=3":   "a=1",
		"a=%4&b=2":      "b=2",
		"a=%":           "",
		"b=2&a=%zz&c=3": "b=2&c=3",
	} {
		if got := cleanQuery(in); got != want {
			t.Errorf("cleanQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
