package auth

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/observe"
)

// outcome is what became of one request, for dubbogw_auth_requests_total.
type outcome int

const (
	outcomeOK         outcome = iota // a valid token: identity set
	outcomeAnonymous                 // went on without identity by an anonymous rule
	outcomeMissing                   // 401: no token
	outcomeInvalid                   // 401: unknown or expired token, or no user id in its value
	outcomeStoreError                // 503: the store failed or timed out
	outcomeRejected                  // 503: the store refused at once (breaker open, overloaded, not connected), or too many unknown tokens in flight
	outcomeStale                     // the store failed; a token found valid within stale_if_error got its identity then
	numOutcomes
)

func (o outcome) String() string {
	return [...]string{"ok", "anonymous", "missing", "invalid", "store_error", "rejected", "stale"}[o]
}

// renewResult is what became of one renewal request.
type renewResult int

const (
	renewRenewed      renewResult = iota // the TTL was extended
	renewNotNeeded                       // the store found the TTL no longer low (another instance renewed it) or no TTL
	renewDeduplicated                    // already asked for within the interval
	renewDropped                         // the queue or the tracking map was full
	renewError                           // the store failed
	numRenewResults
)

func (r renewResult) String() string {
	return [...]string{"renewed", "not_needed", "deduplicated", "dropped", "error"}[r]
}

// lookupResult labels the lookup histogram.
type lookupResult int

const (
	lookupFound lookupResult = iota
	lookupNotFound
	lookupError
	numLookupResults
)

func (r lookupResult) String() string {
	return [...]string{"found", "not_found", "error"}[r]
}

// filterMetrics are one Filter's series (its route's), resolved once.
type filterMetrics struct {
	outcomes     [numOutcomes]prometheus.Counter
	renewals     [numRenewResults]prometheus.Counter
	lookup       [numLookupResults]prometheus.Observer
	renewQueue   prometheus.Gauge
	renewTracked prometheus.Gauge
	identities   prometheus.Gauge
	resets       prometheus.Counter
	known        prometheus.Gauge
	unknown      prometheus.Gauge
}

func newFilterMetrics(reg prometheus.Registerer, route string) *filterMetrics {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_auth_requests_total",
		Help: "Requests through the auth filter by route and result (ok, anonymous, missing, invalid, store_error, rejected, stale: served the identity last confirmed while the store failed).",
	}, []string{"route", "result"})
	renewals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_auth_renewals_total",
		Help: "Token renewals asked for by requests, by route and result (renewed, not_needed, deduplicated, dropped, error).",
	}, []string{"route", "result"})
	lookups := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dubbogw_auth_lookup_duration_seconds",
		Help:    "Time to look a token up in the store, by route and result (found, not_found, error).",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1},
	}, []string{"route", "result"})
	queue := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dubbogw_auth_renew_queue",
		Help: "Token renewals queued for the renewal workers (at most 1024 per route).",
	}, []string{"route"})
	tracked := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dubbogw_auth_renew_tracked_tokens",
		Help: "Tokens remembered as renewed within the renewal interval (at most 100000 per route).",
	}, []string{"route"})
	identities := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dubbogw_auth_identity_cache_entries",
		Help: "Token values whose parsed identity is cached (at most 65536 per route).",
	}, []string{"route"})
	resets := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_auth_identity_cache_resets_total",
		Help: "Times the identity cache was full and started over (often: more distinct tokens in use than it holds).",
	}, []string{"route"})
	known := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dubbogw_auth_known_tokens",
		Help: "Tokens found valid recently, remembered for stale_if_error and the unknown-token budget (at most 100000 per route).",
	}, []string{"route"})
	unknown := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dubbogw_auth_unknown_lookups",
		Help: "Lookups in flight of tokens not known to this instance (at most auth.unknown_lookups per route; beyond, 503 at once).",
	}, []string{"route"})
	if reg != nil {
		known = observe.MustRegister(reg, known)
		unknown = observe.MustRegister(reg, unknown)
		identities = observe.MustRegister(reg, identities)
		resets = observe.MustRegister(reg, resets)
		requests = observe.MustRegister(reg, requests)
		renewals = observe.MustRegister(reg, renewals)
		lookups = observe.MustRegister(reg, lookups)
		queue = observe.MustRegister(reg, queue)
		tracked = observe.MustRegister(reg, tracked)
	}
	m := &filterMetrics{renewQueue: queue.WithLabelValues(route), renewTracked: tracked.WithLabelValues(route),
		identities: identities.WithLabelValues(route), resets: resets.WithLabelValues(route),
		known: known.WithLabelValues(route), unknown: unknown.WithLabelValues(route)}
	for o := range numOutcomes {
		m.outcomes[o] = requests.WithLabelValues(route, o.String())
	}
	for r := range numRenewResults {
		m.renewals[r] = renewals.WithLabelValues(route, r.String())
	}
	for r := range numLookupResults {
		m.lookup[r] = lookups.WithLabelValues(route, r.String())
	}
	return m
}
