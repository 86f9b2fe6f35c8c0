package gateway

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/pprof"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/proxy"
	"github.com/dubbogw/dubbogw/registry"
)

// adminHandler serves the admin listener. /livez depends on nothing: no
// lock, no dependency, no route table; it answers as long as the process
// schedules goroutines.
func (g *Gateway) adminHandler(cfg *config.Config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.registry, promhttp.HandlerOpts{
		Registry:            g.registry,
		MaxRequestsInFlight: 4,
		EnableOpenMetrics:   false,
	}))
	mux.HandleFunc("GET /admin/routes", g.adminRoutes)
	mux.HandleFunc("GET /admin/upstreams", g.adminUpstreams)
	mux.HandleFunc("GET /admin/services", g.adminServices)
	mux.HandleFunc("POST /admin/reload", g.adminReload)
	if cfg.Admin.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	switch {
	case g.draining.Load():
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "draining"})
	case !g.ready.Load():
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "starting"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
	}
}

type routeView struct {
	Name         string   `json:"name"`
	Host         string   `json:"host,omitempty"`
	Methods      []string `json:"methods,omitempty"`
	Path         string   `json:"path,omitempty"`
	Prefix       string   `json:"prefix,omitempty"`
	Filters      []string `json:"filters"`
	Upstream     string   `json:"upstream,omitempty"`
	Dubbo        string   `json:"dubbo,omitempty"` // registry and service key.method, or the pass-through's allow list
	Timeout      string   `json:"timeout,omitempty"`
	MaxBodyBytes int64    `json:"max_body_bytes"`
}

func (g *Gateway) adminRoutes(w http.ResponseWriter, r *http.Request) {
	t := g.table.Load()
	out := make([]routeView, 0, len(t.routes))
	for _, rt := range t.routes {
		v := routeView{
			Name: rt.name, Host: rt.cfg.Match.Host, Methods: rt.cfg.Match.Methods,
			Path: rt.cfg.Match.Path, Prefix: rt.cfg.Match.Prefix, Filters: rt.filters,
			Upstream: rt.upstream, MaxBodyBytes: rt.maxBody,
		}
		if d := rt.cfg.Dubbo; d != nil {
			if d.Passthrough != nil {
				v.Dubbo = d.Registry + ": pass-through to " + strings.Join(d.Passthrough.Allow, ", ")
			} else {
				key := registry.ServiceKey{Interface: d.Interface, Group: d.Group, Version: d.Version}
				v.Dubbo = d.Registry + ": " + key.String() + "." + d.Method
			}
		}
		if v.Filters == nil {
			v.Filters = []string{}
		}
		if rt.cfg.Timeout > 0 {
			v.Timeout = rt.cfg.Timeout.D().String()
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"routes": out})
}

func (g *Gateway) adminUpstreams(w http.ResponseWriter, r *http.Request) {
	t := g.table.Load()
	names := make([]string, 0, len(t.upstreams))
	for n := range t.upstreams {
		names = append(names, n)
	}
	sort.Strings(names)
	type view struct {
		Name    string               `json:"name"`
		Policy  string               `json:"policy"`
		Targets []proxy.TargetStatus `json:"targets"`
	}
	out := make([]view, 0, len(names))
	for _, n := range names {
		out = append(out, view{Name: n, Policy: t.cfg.Upstreams[n].Policy, Targets: t.upstreams[n].Targets()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"upstreams": out})
}

// adminServices lists, per registry, each subscribed service key with its
// references and providers: a subscription leak shows here in minutes.
func (g *Gateway) adminServices(w http.ResponseWriter, r *http.Request) {
	t := g.table.Load()
	type view struct {
		Registry string `json:"registry"`
		registry.DirectoryStatus
	}
	out := []view{}
	for _, name := range slices.Sorted(maps.Keys(t.registries)) {
		for _, d := range t.registries[name].Directories() {
			out = append(out, view{Registry: name, DirectoryStatus: d})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"services": out})
}

func (g *Gateway) adminReload(w http.ResponseWriter, r *http.Request) {
	if err := g.Reload(r.Context()); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code":    "CONFIG_INVALID",
			"message": "configuration refused; the previous one keeps serving: " + err.Error(),
		}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "reloaded", "routes": len(g.table.Load().routes)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
