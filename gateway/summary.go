package gateway

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dubbogw/dubbogw/admission"
	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubboroute"
	"github.com/dubbogw/dubbogw/redisclient"
	"github.com/dubbogw/dubbogw/registry"
)

// summaryView is what /admin/summary answers: what the dashboard shows
// every second, from the gateway's own state. Its size and cost grow with
// the routes and registries, never with the providers or services a
// registry knows (TestAdminSummaryDoesNotGrowWithProviders).
type summaryView struct {
	Version   string    `json:"version"`
	Revision  string    `json:"revision,omitempty"`
	GoVersion string    `json:"go_version"`
	Started   time.Time `json:"started"`
	Uptime    float64   `json:"uptime_seconds"`
	// Status is /readyz's: ready, starting, draining or "reading the
	// registries"; Pending counts the routes' services not read yet.
	Status  string     `json:"status"`
	Ready   bool       `json:"ready"`
	Pending int        `json:"pending_services"`
	Reload  reloadView `json:"reload"`

	// Requests counts the answered requests, Errors those answered
	// 5xx, as dubbogw_http_requests_total has them: each route's since it
	// appeared, until a reload removes it (once its last request is done).
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	// ErrorCodes counts the errors the gateway answered itself, by code.
	ErrorCodes  map[string]uint64  `json:"error_codes"`
	Latency     latencyView        `json:"latency"`
	InFlight    int64              `json:"in_flight"`
	Connections connectionsView    `json:"connections"`
	Limits      []limitSummary     `json:"limits"`
	Routes      []routeSummary     `json:"routes"`
	Breakers    breakerTotals      `json:"breakers"`
	Registries  []registrySummary  `json:"registries"`
	Redis       *redisclient.State `json:"redis"` // null without a redis: section
}

// latencyView is the request duration histogram of every route together:
// the dashboard takes the difference of two polls for its quantiles.
type latencyView struct {
	Bounds     []float64 `json:"bounds"`     // bucket upper bounds, seconds (+Inf left out)
	Cumulative []uint64  `json:"cumulative"` // requests within each bound
	Count      uint64    `json:"count"`
	Sum        float64   `json:"sum"`
}

type connectionsView struct {
	Open     int64  `json:"open"`
	Rejected uint64 `json:"rejected"` // at the connection caps, in total
}

type limitSummary struct {
	limitView
	Saturation float64 `json:"saturation"` // in_flight / limit (0: unlimited)
}

type routeSummary struct {
	Name     string                `json:"name"`
	Requests uint64                `json:"requests"`
	Errors   uint64                `json:"errors"`             // 5xx
	Breakers *cluster.OpenBreakers `json:"breakers,omitempty"` // Dubbo routes: breakers not closed
}

// breakerTotals counts the Dubbo routes' breakers not closed, by scope.
type breakerTotals struct {
	Routes    int `json:"routes"`
	Providers int `json:"providers"`
	Services  int `json:"services"`
}

type registrySummary struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	State    string `json:"state"`
	Degraded bool   `json:"degraded"`
	Error    string `json:"error,omitempty"`
	Watches  int    `json:"watches"`
	// Services counts the live subscriptions (one per service key).
	Services int `json:"services"`
	// Providers counts the providers of those services (one per service
	// it serves); null when the registry type does not keep the count.
	Providers  *int `json:"providers"`
	References int  `json:"references"`
	// Pending counts the routes' services it has not answered for yet.
	Pending int `json:"pending"`
}

type reloadView struct {
	Successes      uint64    `json:"successes"` // reloads, the start's load not counted
	Failures       uint64    `json:"failures"`
	LastSuccessful bool      `json:"last_successful"`
	LastSuccess    time.Time `json:"last_success"` // of the configuration serving
	LastError      string    `json:"last_error,omitempty"`
}

// reloadLog is what the summary says of reloads; Reload records each.
type reloadLog struct {
	mu          sync.Mutex
	v           reloadView
	lastRefusal *refusedView // since the last success
}

func (l *reloadLog) record(err error, now time.Time, counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.v.Failures++
		l.v.LastSuccessful, l.v.LastError = false, err.Error()
		l.lastRefusal = &refusedView{At: now, Error: err.Error()}
		var ce *config.Error
		if errors.As(err, &ce) {
			l.lastRefusal.Problems = ce.Problems
		}
	default:
		l.lastRefusal = nil
		if counted {
			l.v.Successes++
		}
		l.v.LastSuccessful, l.v.LastSuccess, l.v.LastError = true, now, ""
	}
}

// refused is the last reload refused, unless one succeeded since.
func (l *reloadLog) refused() *refusedView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastRefusal
}

func (l *reloadLog) view() reloadView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v
}

// adminSummary answers /admin/summary. It reads counters the gateway
// keeps anyway: the request and error series (one per route and status,
// per error code), the limiters, the route breakers' counts, each
// registry's status and counts; never a provider or service list.
func (g *Gateway) adminSummary(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	// Compact, unlike the other endpoints: it is read every second by
	// programs, not by people.
	_ = json.NewEncoder(w).Encode(g.summary(time.Now()))
}

func (g *Gateway) summary(now time.Time) summaryView {
	t := g.table.Load()
	ready := g.readiness(t)
	s := summaryView{
		Version: g.build.Version, Revision: g.build.Revision, GoVersion: g.build.GoVersion,
		Started: g.started, Uptime: now.Sub(g.started).Seconds(),
		Status: ready.status, Ready: ready.ok, Pending: ready.pendingCount,
		Reload:     g.reloads.view(),
		ErrorCodes: map[string]uint64{},
		InFlight:   g.inFlight.Load(),
		Limits:     []limitSummary{},
		Routes:     make([]routeSummary, 0, len(t.routes)+1),
		Registries: []registrySummary{},
	}
	if g.redis != nil {
		st := g.redis.State()
		s.Redis = &st
	}

	byRoute := make(map[string]*routeSummary, len(t.routes)+1)
	for _, rt := range t.routes {
		s.Routes = append(s.Routes, routeSummary{Name: rt.name})
	}
	for i := range s.Routes {
		byRoute[s.Routes[i].Name] = &s.Routes[i]
	}
	var unrouted routeSummary
	eachSeries(g.metrics.requests, func(m *dto.Metric) {
		n := uint64(m.GetCounter().GetValue())
		code := labelValue(m, "code")
		failed := len(code) == 3 && code[0] == '5'
		s.Requests += n
		if failed {
			s.Errors += n
		}
		rs := byRoute[labelValue(m, "route")]
		switch {
		case rs != nil:
		case labelValue(m, "route") == noRoute:
			rs = &unrouted
		default:
			return // a route a reload removed, its series not deleted yet
		}
		rs.Requests += n
		if failed {
			rs.Errors += n
		}
	})
	if unrouted.Requests > 0 {
		unrouted.Name = noRoute
		s.Routes = append(s.Routes, unrouted)
	}
	eachSeries(g.metrics.errors, func(m *dto.Metric) {
		s.ErrorCodes[labelValue(m, "code")] += uint64(m.GetCounter().GetValue())
	})
	eachSeries(g.metrics.duration, func(m *dto.Metric) { s.Latency.add(m.GetHistogram()) })
	if s.Latency.Bounds == nil {
		s.Latency.Bounds, s.Latency.Cumulative = []float64{}, []uint64{}
	}
	eachSeries(g.metrics.connections, func(m *dto.Metric) { s.Connections.Open = int64(m.GetGauge().GetValue()) })
	eachSeries(g.metrics.connRejected, func(m *dto.Metric) { s.Connections.Rejected += uint64(m.GetCounter().GetValue()) })

	s.Limits = append(s.Limits, newLimitSummary(newLimitView(admission.ScopeGlobal, t.cfg.Server.AdaptiveConcurrency != nil, t.global)))
	pending := map[string]int{} // by registry
	seen := map[*registry.Directory]bool{}
	for i, rt := range t.routes {
		if rt.limiter != nil {
			s.Limits = append(s.Limits, newLimitSummary(newLimitView(rt.name, rt.cfg.AdaptiveConcurrency != nil, rt.limiter)))
		}
		if rt.dubbo == nil {
			continue
		}
		ob := rt.dubbo.OpenBreakers()
		s.Routes[i].Breakers = &ob
		if ob.Route {
			s.Breakers.Routes++
		}
		s.Breakers.Providers += ob.Providers
		s.Breakers.Services += ob.Services
		if d := rt.dubboDirectory(); d != nil && !seen[d] && d.State() == registry.DirPending {
			seen[d] = true
			dr, _ := dubboroute.RouteOf(rt.cfg)
			pending[dr.Registry]++
		}
	}

	for _, name := range slices.Sorted(maps.Keys(t.registries)) {
		reg := t.registries[name]
		st := reg.Status()
		rs := registrySummary{Name: name, Type: st.Type, State: st.State, Degraded: st.Degraded, Error: st.Error,
			Watches: st.Watches, Services: st.Subscriptions, References: t.references[name].Len(), Pending: pending[name]}
		if c, ok := reg.(registry.ProviderCounter); ok {
			n := c.ProviderCount()
			rs.Providers = &n
		}
		s.Registries = append(s.Registries, rs)
	}
	return s
}

func newLimitSummary(v limitView) limitSummary {
	s := limitSummary{limitView: v}
	if v.Limit > 0 {
		s.Saturation = float64(v.InFlight) / float64(v.Limit)
	}
	return s
}

// add merges one route's histogram into l (every route has the same buckets).
func (l *latencyView) add(h *dto.Histogram) {
	if h == nil {
		return
	}
	if l.Bounds == nil {
		for _, b := range h.GetBucket() {
			l.Bounds = append(l.Bounds, b.GetUpperBound())
			l.Cumulative = append(l.Cumulative, 0)
		}
	}
	for i, b := range h.GetBucket() {
		if i < len(l.Cumulative) {
			l.Cumulative[i] += b.GetCumulativeCount()
		}
	}
	l.Count += h.GetSampleCount()
	l.Sum += h.GetSampleSum()
}

// eachSeries calls f with each series c collects, written out. The
// families the summary reads this way have a series per route (and
// status code), per error code or per reason: their cost is the routes'.
func eachSeries(c prometheus.Collector, f func(*dto.Metric)) {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var m dto.Metric
	for s := range ch {
		m.Reset()
		if s.Write(&m) == nil {
			f(&m)
		}
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
