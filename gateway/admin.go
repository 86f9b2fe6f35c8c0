package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dubbogw/dubbogw/adminui"
	"github.com/dubbogw/dubbogw/admission"
	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/exchange"
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
	mux.HandleFunc("GET /admin/summary", g.adminSummary)
	mux.HandleFunc("GET /admin/routes", g.adminRoutes)
	mux.HandleFunc("GET /admin/upstreams", g.adminUpstreams)
	mux.HandleFunc("GET /admin/services", g.adminServices)
	mux.HandleFunc("GET /admin/breakers", g.adminBreakers)
	mux.HandleFunc("GET /admin/limits", g.adminLimits)
	mux.HandleFunc("GET /admin/config", g.adminConfig)
	mux.HandleFunc("POST /admin/reload", g.adminReload)
	ui := adminui.Handler()
	mux.Handle("GET "+adminui.Path, ui)
	mux.Handle("GET "+adminui.Path+"/", ui)
	if cfg.Admin.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// readyz answers 200 while the gateway serves. With admin.readiness
// strict (the default), not before every route's service has had its
// registry's first answer (a registry that cannot be reached answers with
// "stale" after its timeout); once it has, the gateway stays ready and a
// reload's unread services are only listed. A registry that cannot be
// reached makes it "degraded" in the body but keeps it ready: the last
// known providers serve, and taking every instance out of its load
// balancer because ZooKeeper is away would turn a registry outage into a
// full one. It reads registry state from memory, never over the network.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	t := g.table.Load()
	rd := g.readiness(t)
	body := map[string]any{"status": rd.status}
	if rd.pendingCount > 0 {
		body["pending_count"] = rd.pendingCount
		body["pending"] = rd.pending
	}
	if !rd.ok {
		writeJSON(w, r, http.StatusServiceUnavailable, body)
		return
	}
	var degraded []string
	for _, name := range slices.Sorted(maps.Keys(t.registries)) {
		if st := t.registries[name].Status(); st.Degraded || st.State == registry.StateConnecting || st.State == registry.StateDisconnected {
			msg := "registry " + name + ": " + st.State
			if st.Error != "" {
				msg += " (" + st.Error + ")"
			}
			degraded = append(degraded, msg+"; serving the last known providers")
		}
	}
	if g.redis != nil {
		// Still ready: a Redis outage must not take every instance out of
		// the load balancer (seed 003); the routes that need it follow
		// their own policy (auth's on_store_error, the limits' fallback).
		if st := g.redis.State(); !st.Connected || st.Breaker != "closed" {
			state := "disconnected"
			if st.Connected {
				state = "breaker " + st.Breaker
			}
			degraded = append(degraded, "redis: "+state+"; routes that need it follow their on_store_error policy")
		}
	}
	if len(degraded) > 0 {
		body["degraded"] = degraded
	}
	writeJSON(w, r, http.StatusOK, body)
}

// readiness is what /readyz says of the gateway (and /admin/summary shows).
type readiness struct {
	status string // ready, starting, draining or "reading the registries"
	ok     bool   // 200 or 503
	// pendingCount counts the routes' services not read yet, pending names
	// the first pendingShown of them, sorted; only when serving.
	pendingCount int
	pending      []string
}

// pendingShown bounds the unread services /readyz names: a large registry
// may have thousands.
const pendingShown = 20

// readiness reports whether the gateway serves: not while starting or
// draining, nor (strict readiness) before every route's service was read
// once; that first time is remembered.
func (g *Gateway) readiness(t *table) readiness {
	switch {
	case g.draining.Load():
		return readiness{status: "draining"}
	case !g.ready.Load():
		return readiness{status: "starting"}
	}
	rd := readiness{status: "ready", ok: true}
	rd.pendingCount, rd.pending = t.pendingServices(pendingShown)
	if rd.pendingCount == 0 {
		g.answered.Store(true)
	} else if !g.answered.Load() && t.cfg.Admin.Readiness != config.ReadinessLenient {
		rd.status, rd.ok = "reading the registries", false
	}
	return rd
}

// pendingServices counts the services (a directory per registry and
// service key) of the table's Dubbo method routes that their registry has
// not answered for yet, and returns the first max of their keys, sorted. /readyz asks it on every probe while the
// registries read, so its cost is one pass over the routes and a string
// per unread service, never a sort of them all.
func (t *table) pendingServices(max int) (count int, first []string) {
	if t.allAnswered.Load() {
		return 0, nil // a directory is pending only until its first answer
	}
	var seen map[*registry.Directory]struct{} // made at the first unread one
	for _, rt := range t.routes {
		d := rt.dubboDirectory()
		if d == nil || d.State() != registry.DirPending {
			continue
		}
		if seen == nil {
			seen = make(map[*registry.Directory]struct{})
		}
		if _, dup := seen[d]; dup {
			continue
		}
		seen[d] = struct{}{}
		first = insertBounded(first, d.Key().String(), max)
	}
	if len(seen) == 0 {
		t.allAnswered.Store(true)
	}
	return len(seen), first
}

// insertBounded inserts s into sorted, keeping it sorted and at most max
// long (the largest are dropped). Distinct directories may share a key
// (routes of two registries): it is listed once.
func insertBounded(sorted []string, s string, max int) []string {
	i, found := slices.BinarySearch(sorted, s)
	if found || i >= max {
		return sorted
	}
	if len(sorted) == max {
		sorted = sorted[:max-1]
	}
	return slices.Insert(sorted, i, s)
}

type routeView struct {
	Name         string   `json:"name"`
	Host         string   `json:"host,omitempty"`
	Methods      []string `json:"methods,omitempty"`
	Path         string   `json:"path,omitempty"`
	Prefix       string   `json:"prefix,omitempty"`
	Predicates   []string `json:"predicates,omitempty"` // "header X-Env exact canary"
	Weight       *int     `json:"weight,omitempty"`
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
			Upstream: rt.upstream, MaxBodyBytes: rt.maxBody, Weight: rt.cfg.Match.Weight,
		}
		for _, p := range rt.cfg.Match.Predicates() {
			v.Predicates = append(v.Predicates, strings.TrimSuffix(fmt.Sprintf("%s %s %s %s", p.In, p.Name, p.Op, p.Value), " "))
		}
		if d, ok := dubboroute.RouteOf(rt.cfg); ok {
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
	writeJSON(w, r, http.StatusOK, map[string]any{"routes": out})
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
		out = append(out, view{Name: n, Policy: proxy.UpstreamsOf(t.cfg)[n].Policy, Targets: t.upstreams[n].Targets()})
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"upstreams": out})
}

// adminServices lists each registry's state and, per subscribed service
// key, its state, references, the breaker each pass-through route keeps
// for it when not closed, and its providers (weight, readonly, and the
// state of every route's breaker for that provider): a subscription leak
// shows here in minutes.
func (g *Gateway) adminServices(w http.ResponseWriter, r *http.Request) {
	q, err := parseServicesQuery(r)
	if err != nil {
		exchange.Fail(w, r, exchange.CodeBadRequest, err.Error())
		return
	}
	t := g.table.Load()
	type providerView struct {
		registry.ProviderStatus
		Readonly bool                            `json:"readonly"`
		Breakers map[string]cluster.BreakerState `json:"breakers"` // by route
	}
	type serviceView struct {
		Registry  string    `json:"registry"`
		Service   string    `json:"service"`
		State     string    `json:"state"`
		Refs      int       `json:"references"`
		Updated   time.Time `json:"updated,omitzero"`
		Discovery string    `json:"discovery,omitempty"` // interface, application or both
		// ServiceBreakers are the service's breakers, by pass-through
		// route, that are open or half-open.
		ServiceBreakers map[string]cluster.BreakerState `json:"service_breakers,omitempty"`
		Providers       []providerView                  `json:"providers"`
		// Rules are the Dubbo governance rules read for the service
		// (zookeeper registries with governance.enabled): applied,
		// disabled or refused with the reason.
		Rules []registry.RuleStatus `json:"rules,omitempty"`
	}
	type registryView struct {
		Name string `json:"name"`
		registry.Status
		References int `json:"references"`
	}
	regs := []registryView{}
	services := []serviceView{}
	total := 0
	more := false // services match after the last one listed
	for _, name := range slices.Sorted(maps.Keys(t.registries)) {
		reg := t.registries[name]
		if q.registry != "" && name != q.registry {
			continue
		}
		regs = append(regs, registryView{Name: name, Status: reg.Status(), References: t.references[name].Len()})
		f := q.filter
		if name != q.afterRegistry {
			f.After = ""
		}
		earlier := q.afterRegistry != "" && name < q.afterRegistry // listed on an earlier page
		left := q.limit - len(services)
		if earlier {
			left = 0
		}
		f.Limit = left + 1 // one more: is there a next page?
		page, matched := reg.SelectDirectories(f)
		total += matched
		if earlier {
			continue // counted, so that every page has the same total
		}
		if left <= 0 {
			more = more || matched > 0 // counted, not listed
			continue
		}
		if len(page) > left {
			page = page[:left]
			more = true
		}
		idx := t.dubboRoutes()[name]
		for _, d := range page {
			sv := serviceView{Registry: name, Service: d.Service, State: d.State, Refs: d.Refs, Updated: d.Updated,
				Discovery: d.Discovery, Providers: make([]providerView, 0, len(d.Providers)), Rules: d.Rules}
			// Provider breakers of the routes that may call the service, by
			// address: its method routes', and every pass-through route's
			// of its registry (read for the services listed only: the cost
			// is that of the page).
			var routes []routeBreakers
			if idx != nil {
				for _, rt := range idx.byService[d.Service] {
					routes = append(routes, providerBreakers(rt))
				}
				for _, rt := range idx.passthrough {
					routes = append(routes, providerBreakers(rt))
					if st, ok := rt.dubbo.ServiceBreaker(d.Service); ok && st.State != cluster.BreakerClosed {
						if sv.ServiceBreakers == nil {
							sv.ServiceBreakers = map[string]cluster.BreakerState{}
						}
						sv.ServiceBreakers[rt.name] = st.State
					}
				}
			}
			for _, p := range d.Providers {
				bs := map[string]cluster.BreakerState{}
				for _, rt := range routes {
					if st, ok := rt.byAddr[p.Addr]; ok {
						bs[rt.route] = st
					}
				}
				sv.Providers = append(sv.Providers, providerView{ProviderStatus: p, Readonly: g.dubbo.Readonly(p.Addr), Breakers: bs})
			}
			services = append(services, sv)
		}
	}
	body := map[string]any{"registries": regs, "services": services, "total": total}
	if more { // then the page is full: the next one starts after its last
		last := services[len(services)-1]
		body["next"] = last.Registry + "/" + last.Service
	}
	writeJSON(w, r, http.StatusOK, body)
}

// routeBreakers are a Dubbo route's provider breakers, by address.
type routeBreakers struct {
	route  string
	byAddr map[string]cluster.BreakerState
}

func providerBreakers(rt *route) routeBreakers {
	rb := routeBreakers{route: rt.name, byAddr: map[string]cluster.BreakerState{}}
	for _, b := range rt.dubbo.Breakers() {
		if b.Scope == cluster.ScopeProvider {
			rb.byAddr[b.Key] = b.State
		}
	}
	return rb
}

// servicesQuery is what /admin/services is asked for: ?registry=,
// ?service= (one service key), ?prefix= (service keys starting with it),
// ?limit= (default 200, at most 5000) and ?after= (the "next" of the
// previous page: "<registry>/<service key>").
type servicesQuery struct {
	registry      string
	filter        registry.DirectoryFilter
	afterRegistry string
	limit         int
}

func parseServicesQuery(r *http.Request) (servicesQuery, error) {
	v := r.URL.Query()
	q := servicesQuery{registry: v.Get("registry"), limit: 200,
		filter: registry.DirectoryFilter{Service: v.Get("service"), Prefix: v.Get("prefix")}}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 5000 {
			return q, fmt.Errorf("limit %q: want 1..5000", l)
		}
		q.limit = n
	}
	if a := v.Get("after"); a != "" {
		reg, svc, ok := strings.Cut(a, "/")
		if !ok || reg == "" || svc == "" {
			return q, fmt.Errorf("after %q: want the \"next\" of a previous answer, <registry>/<service>", a)
		}
		q.afterRegistry, q.filter.After = reg, svc
	}
	return q, nil
}

// adminBreakers lists the circuit breakers of every Dubbo route (the
// route's own and one per provider it called) and the passive-health state
// of every HTTP upstream's targets.
func (g *Gateway) adminBreakers(w http.ResponseWriter, r *http.Request) {
	t := g.table.Load()
	type routeView struct {
		Route    string                  `json:"route"`
		Service  string                  `json:"service,omitempty"` // "" for a pass-through route
		Breakers []cluster.BreakerStatus `json:"breakers"`
	}
	type upstreamView struct {
		Name    string               `json:"name"`
		Targets []proxy.TargetStatus `json:"targets"`
	}
	routes := []routeView{}
	for _, rt := range t.routes {
		if rt.dubbo == nil {
			continue
		}
		v := routeView{Route: rt.name, Breakers: rt.dubbo.Breakers()}
		if d := rt.dubboDirectory(); d != nil {
			v.Service = d.Key().String()
		}
		if v.Breakers == nil {
			v.Breakers = []cluster.BreakerStatus{}
		}
		routes = append(routes, v)
	}
	upstreams := []upstreamView{}
	for _, name := range slices.Sorted(maps.Keys(t.upstreams)) {
		upstreams = append(upstreams, upstreamView{Name: name, Targets: t.upstreams[name].Targets()})
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"routes": routes, "upstreams": upstreams})
}

// limitView is one in-flight limiter, for /admin/limits.
type limitView struct {
	Scope          string `json:"scope"` // "global" or the route's name
	Kind           string `json:"kind"`  // "static" or "adaptive"
	Limit          int    `json:"limit"` // 0: unlimited
	InFlight       int    `json:"in_flight"`
	Rejected       uint64 `json:"rejected"`
	LimitIncreases uint64 `json:"limit_increases"`
	LimitDecreases uint64 `json:"limit_decreases"`
}

func newLimitView(scope string, adaptive bool, l admission.Limiter) limitView {
	st := l.Stats()
	v := limitView{Scope: scope, Kind: "static", Limit: l.Limit(), InFlight: l.InFlight(),
		Rejected: st.Rejected, LimitIncreases: st.LimitIncreases, LimitDecreases: st.LimitDecreases}
	if adaptive {
		v.Kind = "adaptive"
	}
	return v
}

// adminLimits shows the gateway-wide in-flight limiter and those of the
// routes that have one: limit, requests in flight, refusals.
func (g *Gateway) adminLimits(w http.ResponseWriter, r *http.Request) {
	t := g.table.Load()
	routes := []limitView{}
	for _, rt := range t.routes {
		if rt.limiter != nil {
			routes = append(routes, newLimitView(rt.name, rt.cfg.AdaptiveConcurrency != nil, rt.limiter))
		}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{
		"global": newLimitView(admission.ScopeGlobal, t.cfg.Server.AdaptiveConcurrency != nil, t.global),
		"routes": routes,
	})
}

// adminConfig shows the active configuration, defaults applied, with its
// secrets (passwords, tokens, secrets, URL passwords) redacted, and
// under "_source" (not a configuration key) where it came from and the
// last reload refused since the last accepted, with its problems.
func (g *Gateway) adminConfig(w http.ResponseWriter, r *http.Request) {
	body := adminui.Redact(g.table.Load().cfg)
	if m, ok := body.(map[string]any); ok {
		m["_source"] = g.sourceView()
	}
	writeJSON(w, r, http.StatusOK, body)
}

// fileSource is what /admin/config says of a configuration file.
type fileSource struct {
	Kind     string       `json:"kind"` // "file"
	Location string       `json:"location,omitempty"`
	Refused  *refusedView `json:"refused,omitempty"`
}

type refusedView struct {
	At       time.Time        `json:"at"`
	Error    string           `json:"error"`
	Problems []config.Problem `json:"problems,omitempty"`
}

func (g *Gateway) sourceView() any {
	if g.opts.Source != nil {
		return g.opts.Source.Describe()
	}
	v := fileSource{Kind: "file", Location: g.opts.WatchPath}
	if r := g.reloads.refused(); r != nil {
		v.Refused = r
	}
	return v
}

func (g *Gateway) adminReload(w http.ResponseWriter, r *http.Request) {
	if err := g.Reload(r.Context()); err != nil {
		// Nothing read (a file missing, ZooKeeper out of reach) is the
		// source's trouble, worth a retry: 503. What was read and refused
		// is the configuration's: 400.
		status, code, what := http.StatusBadRequest, "CONFIG_INVALID", "configuration refused"
		if _, unread := errors.AsType[*config.ReadError](err); unread {
			status, code, what = http.StatusServiceUnavailable, "CONFIG_UNREADABLE", "configuration could not be read"
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, r, status, map[string]any{"error": map[string]any{
			"code":    code,
			"message": what + "; the previous one keeps serving: " + err.Error(),
		}})
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"status": "reloaded", "routes": len(g.table.Load().routes)})
}

// writeJSON writes v as compact JSON, or indented when the request asks
// ?pretty (as Kubernetes and Elasticsearch do): indenting doubles the
// work and the size, which matters for /admin/services on a large
// registry, and programs read most of these answers.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	if r.URL.RawQuery != "" && r.URL.Query().Has("pretty") {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v)
}
