package main

import (
	"fmt"
	"slices"
	"time"
)

// kind is what a row measures.
type kind int

const (
	kindDirect              kind = iota // 1. the load generator straight to the upstream
	kindNginx                           // 2. through nginx
	kindGatewayHTTP                     // 3. through dubbogw, HTTP route
	kindGatewayDubbo                    // 4. through dubbogw, HTTP→Dubbo route (generic getUser)
	kindGatewayHTTPAuth                 // 5. row 3 with Redis token auth
	kindGatewayDubboAuth                // 5. row 4 with Redis token auth
	kindGatewayHTTPStandard             // 3. row 3 through net/http's Transport instead of the direct one
	kindNginxTLS                        // 6. row 2 over HTTPS (TLS between the client and nginx)
	kindGatewayHTTPTLS                  // 6. row 3 over HTTPS, the same certificate
	kindGatewayTriple                   // 7. row 4 over Triple, to the same provider process (issue 15)
	kindEngine                          // 8. a bare server engine's proxy (-engines: issue 18's candidates)
	kindPixiuDubbo                      // 9. row 4's request through Apache dubbo-go-pixiu, the same provider (-pixiu)
)

// Base sizes: rows with other route or provider counts are the cost-growth rows.
const (
	baseRoutes    = 10
	baseProviders = 1
)

// row is one line of the table: one path under one load, measured over
// several rounds.
type row struct {
	kind      kind
	conns     int
	routes    int // gateway rows: routes of its gateway
	providers int // Dubbo rows: providers the route balances over
	url       string
	header    []string      // name, value pairs
	admin     string        // gateway rows: its admin URL, for profiles
	peaks     []*loadResult // closed loop, one per round
	lats      []*loadResult // open loop at rate, one per round
	rate      float64       // calls per second of the latency runs
	engine    string        // kindEngine: which engine
}

func (r *row) name() string {
	switch r.kind {
	case kindDirect:
		return "1. direct → upstream"
	case kindNginx:
		return "2. nginx → upstream"
	case kindGatewayHTTP:
		if r.routes != baseRoutes {
			return fmt.Sprintf("3. dubbogw → upstream, %d routes", r.routes)
		}
		return "3. dubbogw → upstream"
	case kindGatewayDubbo:
		if r.providers != baseProviders {
			return fmt.Sprintf("4. dubbogw → Dubbo, %d providers", r.providers)
		}
		return "4. dubbogw → Dubbo provider"
	case kindGatewayHTTPAuth:
		return "5. dubbogw → upstream, Redis token auth"
	case kindGatewayDubboAuth:
		return "5. dubbogw → Dubbo, Redis token auth"
	case kindGatewayHTTPStandard:
		return "3. dubbogw → upstream, standard transport"
	case kindNginxTLS:
		return "6. HTTPS → nginx → upstream"
	case kindGatewayHTTPTLS:
		return "6. HTTPS → dubbogw → upstream"
	case kindGatewayTriple:
		return "7. dubbogw → Triple provider"
	case kindEngine:
		return "8. bare " + r.engine + " proxy → upstream"
	case kindPixiuDubbo:
		return "9. pixiu → Dubbo provider"
	}
	return "?"
}

// id names the row in file names.
func (r *row) id() string {
	names := map[kind]string{
		kindDirect: "direct", kindNginx: "nginx", kindGatewayHTTP: "gateway-http", kindGatewayDubbo: "gateway-dubbo",
		kindGatewayHTTPAuth: "gateway-http-auth", kindGatewayDubboAuth: "gateway-dubbo-auth",
		kindGatewayHTTPStandard: "gateway-http-standard", kindNginxTLS: "nginx-tls", kindGatewayHTTPTLS: "gateway-http-tls",
		kindGatewayTriple: "gateway-triple", kindEngine: "engine-" + r.engine, kindPixiuDubbo: "pixiu-dubbo",
	}
	return fmt.Sprintf("%s-c%d-r%d-p%d", names[r.kind], r.conns, r.routes, r.providers)
}

// isBase reports whether r is the row others of its kind are compared to.
func (r *row) isBase() bool { return r.routes == baseRoutes && r.providers == baseProviders }

// plan is the rows of one run.
type plan struct {
	rows []*row
}

// planSpec says which rows to measure.
type planSpec struct {
	scalingConns   []int // rows 1–4 at each
	mainConns      int   // rows 5, the standard transport row and the cost-growth rows at this
	routeCounts    []int // must include baseRoutes
	providerCounts []int // must include baseProviders
}

func newPlan(s *stack, spec planSpec) *plan {
	p := &plan{}
	base := s.gateways[baseRoutes]
	add := func(r *row) { p.rows = append(p.rows, r) }
	gwRow := func(k kind, conns int, gw *gatewayProc, providers int, path string, header ...string) *row {
		return &row{kind: k, conns: conns, routes: gw.routes, providers: providers, url: gw.url + path, header: header, admin: gw.admin}
	}
	auth := []string{"Authorization", "Bearer " + s.token}
	conns := slices.Sorted(slices.Values(append(slices.Clone(spec.scalingConns), spec.mainConns)))
	conns = slices.Compact(conns)
	for _, c := range conns {
		if slices.Contains(spec.scalingConns, c) || c == spec.mainConns {
			add(&row{kind: kindDirect, conns: c, routes: baseRoutes, providers: baseProviders, url: s.upstream + "/http/users/42"})
			add(&row{kind: kindNginx, conns: c, routes: baseRoutes, providers: baseProviders, url: s.nginx + "/http/users/42"})
			add(gwRow(kindGatewayHTTP, c, base, baseProviders, "/http/users/42"))
			add(gwRow(kindGatewayDubbo, c, base, baseProviders, "/api/users/42"))
			if s.pixiu != "" {
				add(&row{kind: kindPixiuDubbo, conns: c, routes: baseRoutes, providers: baseProviders, url: s.pixiu + "/api/users/42"})
			}
			for _, e := range s.engines {
				add(&row{kind: kindEngine, engine: e.name, conns: c, routes: baseRoutes, providers: baseProviders, url: e.url + "/http/users/42"})
			}
		}
		if c != spec.mainConns {
			continue
		}
		add(gwRow(kindGatewayHTTPStandard, c, base, baseProviders, "/standard/http/users/42"))
		add(&row{kind: kindNginxTLS, conns: c, routes: baseRoutes, providers: baseProviders, url: s.nginxTLS + "/http/users/42"})
		tls := gwRow(kindGatewayHTTPTLS, c, base, baseProviders, "")
		tls.url = base.tlsURL + "/http/users/42"
		add(tls)
		add(gwRow(kindGatewayTriple, c, base, baseProviders, "/tri/api/users/42"))
		add(gwRow(kindGatewayHTTPAuth, c, base, baseProviders, "/auth/http/users/42", auth...))
		add(gwRow(kindGatewayDubboAuth, c, base, baseProviders, "/auth/api/users/42", auth...))
		for _, n := range spec.routeCounts {
			if n != baseRoutes {
				add(gwRow(kindGatewayHTTP, c, s.gateways[n], baseProviders, "/http/users/42"))
			}
		}
		for _, n := range spec.providerCounts {
			if n != baseProviders {
				add(gwRow(kindGatewayDubbo, c, base, n, fmt.Sprintf("/p%d/api/users/42", n)))
			}
		}
	}
	return p
}

// nginxOf is the nginx row r compares to: over HTTPS for an HTTPS row.
func (p *plan) nginxOf(r *row) *row {
	if r.kind == kindGatewayHTTPTLS || r.kind == kindNginxTLS {
		return p.find(kindNginxTLS, r.conns)
	}
	return p.find(kindNginx, r.conns)
}

// find returns the base row of kind k at conns, nil when there is none.
func (p *plan) find(k kind, conns int) *row {
	for _, r := range p.rows {
		if r.kind == k && r.conns == conns && r.isBase() {
			return r
		}
	}
	return nil
}

// setLatencyRates gives every row the open-loop rate of its connection
// count: load (a fraction) of the lowest peak throughput among the rows with
// that many connections, so their latencies are compared at the same
// offered load, one every row sustains.
func (p *plan) setLatencyRates(load float64) {
	lowest := map[int]float64{}
	for _, r := range p.rows {
		t := r.throughput()
		if cur, ok := lowest[r.conns]; !ok || t < cur {
			lowest[r.conns] = t
		}
	}
	for _, r := range p.rows {
		r.rate = max(load*lowest[r.conns], 1)
	}
}

// throughput is the median of the rounds' peak throughputs.
func (r *row) throughput() float64 {
	return median(r.peaks, func(l *loadResult) float64 { return l.Throughput })
}

// latency is the median of the rounds' open-loop quantile q.
func (r *row) latency(q func(*loadResult) time.Duration) time.Duration {
	return time.Duration(median(r.lats, func(l *loadResult) float64 { return float64(q(l)) }))
}

// failures counts calls that failed or were dropped, over every run.
func (r *row) failures() (errors, dropped uint64, first string) {
	for _, l := range slices.Concat(r.peaks, r.lats) {
		errors += l.Errors
		dropped += l.Dropped
		if first == "" {
			first = l.FirstError
		}
	}
	return errors, dropped, first
}

func median(rs []*loadResult, f func(*loadResult) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

// goal is one of the targets, judged on one row.
type goal struct {
	row    *row
	text   string // what is asked and what was measured
	met    bool
	checks bool // false when a row it needs is missing
}

// Goals of issue 7.
const (
	goalGatewayVsNginx    = 1.0 // dubbogw → HTTP throughput ≥ this × nginx's
	goalGatewayP99VsNginx = 1.2 // and p99 ≤ this × nginx's
	goalDubboVsHTTP       = 0.8 // HTTP→Dubbo ≥ this × dubbogw → HTTP
	goalAuthVsNoAuth      = 0.9 // auth on ≥ this × auth off
	goalTLSVsNginx        = 0.8 // HTTPS through dubbogw ≥ this × through nginx (issue 16)
	goalTripleVsDubbo     = 0.8 // HTTP→Triple ≥ this × HTTP→Dubbo, same provider process (issue 15)
	goalTripleP99VsDubbo  = 1.5 // and p99 ≤ this × HTTP→Dubbo's
)

// Goals against Apache dubbo-go-pixiu (-pixiu), row 4 to the same request
// through pixiu, to the same provider.
const (
	goalDubboVsPixiu    = 3.0     // HTTP→Dubbo req/s ≥ this × pixiu's
	goalDubboP99VsPixiu = 1.0 / 3 // and p99 ≤ this × pixiu's
)

// goals judges every row that has a goal.
func (p *plan) goals() []*goal {
	var gs []*goal
	for _, r := range p.rows {
		if !r.isBase() {
			continue
		}
		switch r.kind {
		case kindGatewayHTTP, kindGatewayHTTPStandard:
			if n := p.find(kindNginx, r.conns); n != nil {
				thr := ratio(r.throughput(), n.throughput())
				p99 := ratio(float64(r.latency(p99)), float64(n.latency(p99)))
				gs = append(gs, &goal{row: r, checks: true,
					met:  thr >= goalGatewayVsNginx && p99 <= goalGatewayP99VsNginx,
					text: fmt.Sprintf("req/s ≥ %.1f× nginx (%.2f×), p99 ≤ %.1f× nginx (%.2f×)", goalGatewayVsNginx, thr, goalGatewayP99VsNginx, p99)})
			}
		case kindGatewayHTTPTLS:
			if n := p.find(kindNginxTLS, r.conns); n != nil {
				thr := ratio(r.throughput(), n.throughput())
				gs = append(gs, &goal{row: r, checks: true, met: thr >= goalTLSVsNginx,
					text: fmt.Sprintf("req/s ≥ %.1f× HTTPS through nginx (%.2f×)", goalTLSVsNginx, thr)})
			}
		case kindGatewayDubbo:
			if h := p.find(kindGatewayHTTP, r.conns); h != nil {
				thr := ratio(r.throughput(), h.throughput())
				gs = append(gs, &goal{row: r, checks: true, met: thr >= goalDubboVsHTTP,
					text: fmt.Sprintf("req/s ≥ %.1f× dubbogw → upstream (%.2f×)", goalDubboVsHTTP, thr)})
			}
			if px := p.find(kindPixiuDubbo, r.conns); px != nil {
				gs = append(gs, pixiuGoal(r, px))
			}
		case kindGatewayTriple:
			if d := p.find(kindGatewayDubbo, r.conns); d != nil {
				thr := ratio(r.throughput(), d.throughput())
				p99 := ratio(float64(r.latency(p99)), float64(d.latency(p99)))
				gs = append(gs, &goal{row: r, checks: true, met: thr >= goalTripleVsDubbo && p99 <= goalTripleP99VsDubbo,
					text: fmt.Sprintf("req/s ≥ %.1f× HTTP→Dubbo (%.2f×), p99 ≤ %.1f× (%.2f×)", goalTripleVsDubbo, thr, goalTripleP99VsDubbo, p99)})
			}
		case kindGatewayHTTPAuth, kindGatewayDubboAuth:
			off := p.find(kindGatewayHTTP, r.conns)
			if r.kind == kindGatewayDubboAuth {
				off = p.find(kindGatewayDubbo, r.conns)
			}
			if off != nil {
				thr := ratio(r.throughput(), off.throughput())
				gs = append(gs, &goal{row: r, checks: true, met: thr >= goalAuthVsNoAuth,
					text: fmt.Sprintf("req/s ≥ %.1f× auth off (%.2f×)", goalAuthVsNoAuth, thr)})
			}
		}
	}
	return gs
}

// pixiuGoal judges row 4 (r) against the same request through pixiu (px):
// req/s at least goalDubboVsPixiu × pixiu's, p99 at most
// goalDubboP99VsPixiu × pixiu's.
func pixiuGoal(r, px *row) *goal {
	thr := ratio(r.throughput(), px.throughput())
	p99 := ratio(float64(r.latency(p99)), float64(px.latency(p99)))
	return &goal{row: r, checks: true, met: thr >= goalDubboVsPixiu && p99 <= goalDubboP99VsPixiu,
		text: fmt.Sprintf("req/s ≥ %.0f× pixiu (%.2f×), p99 ≤ ⅓ pixiu's (%.2f×)", goalDubboVsPixiu, thr, p99)}
}

func p50(l *loadResult) time.Duration  { return l.P50 }
func p99(l *loadResult) time.Duration  { return l.P99 }
func p999(l *loadResult) time.Duration { return l.P999 }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
