package filter

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/redisclient"
)

// Spec is the configuration of a kind of filter, owned by its package: it
// decodes from the filter's entry of a filter list, fills its defaults,
// reports its problems (config.FilterSpec) and builds the filter.
type Spec interface {
	config.FilterSpec
	// Build compiles the defaulted, valid configuration into the filter of
	// one route. It applies the rules Validate reports, so a configuration
	// that gets past validation builds.
	Build(d Deps) (Filter, error)
}

// Deps are what the gateway gives a filter it builds.
type Deps struct {
	// Route names the route, in metrics and logs.
	Route string
	// Params are the path parameters of the route's pattern.
	Params []string
	// Redis is the gateway's Redis client; nil without a redis: section,
	// and offline.
	Redis *redisclient.Client
	// Metrics registers the filter's metrics.
	Metrics prometheus.Registerer
	// Log is the gateway's logger.
	Log *slog.Logger
	// Offline is set when the gateway is built only to check a
	// configuration (dubbogw validate): a filter must not connect anywhere
	// and may stand in with PassThrough for what it would need to.
	Offline bool
}

// Register makes name a filter of filter lists: an entry `- name: {...}`
// decodes into newSpec(), and builds with its Build. Called from the init
// function of the filter's package; adding a filter to the gateway is its
// package and one import line in filter/all.
func Register(name string, newSpec func() Spec) {
	config.RegisterFilter(name, func() config.FilterSpec { return newSpec() })
}

// PassThrough is a filter that does nothing: what a filter builds offline
// in place of one that would need a connection.
var PassThrough Filter = Func(func(next http.Handler) http.Handler { return next })
