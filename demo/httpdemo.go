// Package demo provides the in-process demo services the quickstart routes
// to, an HTTP service and a Dubbo service (served by dubbo/provider), so
// `dubbogw run --config examples/quickstart.yaml` needs nothing external.
package demo

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// HTTPHandler serves the demo HTTP service:
//
//	GET  /users/{id}  {"id": "<id>", "name": "user <id>", "source": "demo-http"}
//	ANY  /echo/...    the request as JSON: method, path, query, headers, body size
//	GET  /slow?ms=N   answers after N milliseconds (at most 10 s), or when the client leaves
func HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		writeJSON(w, map[string]any{"id": id, "name": "user " + id, "source": "demo-http"})
	})
	mux.HandleFunc("/echo/", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
		writeJSON(w, map[string]any{
			"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery,
			"host": r.Host, "headers": r.Header, "body_bytes": n,
		})
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		d := min(time.Duration(ms)*time.Millisecond, 10*time.Second)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			writeJSON(w, map[string]any{"slept_ms": d.Milliseconds()})
		case <-r.Context().Done():
		}
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
