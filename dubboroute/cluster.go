package dubboroute

import (
	"context"
	"errors"
	"fmt"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/triple"
)

// newCluster builds the route's cluster: policy, mode, retries and
// breakers (per provider address, and over the route's calls, or on a
// pass-through route over each service's).
func newCluster(route string, cfg *Config, d Deps) (*cluster.Cluster, error) {
	mode, err := cluster.ParseMode(cfg.Cluster)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var breaker cluster.BreakerOptions
	if b := cfg.Breaker; b.Enabled == nil || *b.Enabled {
		breaker = cluster.BreakerOptions{
			ConsecutiveFailures: b.MaxFailures,
			MinRequests:         b.MinRequests,
			Window:              b.Window.D(),
			CoolDown:            b.OpenFor.D(),
			HalfOpenProbes:      b.HalfOpenProbes,
		}
		if b.FailureRatio != nil {
			breaker.FailureRate = *b.FailureRatio
		}
	}
	opts := cluster.Options{
		Route:        route,
		Policy:       cfg.LoadBalance,
		Mode:         mode,
		Retries:      cfg.Retries,
		Idempotent:   cfg.Idempotent != nil && *cfg.Idempotent,
		Classify:     classify,
		Breaker:      breaker,
		RouteBreaker: breaker,
		Metrics:      d.ClusterMetrics,
		Logger:       d.Log,
	}
	if cfg.Passthrough != nil {
		// A pass-through route reaches many services: a breaker over all of
		// its calls would let a few dead services stop every other one.
		// Each service gets its own instead (bounded as its references are).
		opts.RouteBreaker, opts.ServiceBreaker = cluster.BreakerOptions{}, breaker
	}
	c, err := cluster.New(opts)
	if err != nil {
		return nil, fmt.Errorf("loadbalance: %w", err)
	}
	return c, nil
}

// classify tells the cluster which failures may be retried elsewhere:
// nothing ran when the connection failed or the provider refused the call
// for load or an unexported service; a business exception is the method's
// answer (never retried, and no sign of an unhealthy provider); a request
// the gateway could not encode is the client's mistake, the same everywhere.
func classify(err error) cluster.Class {
	var (
		se *dubbo.StatusError
		be *dubbo.BusinessError
		ts *triple.StatusError
		ae *argError
	)
	switch {
	case errors.As(err, &ts):
		switch {
		case ts.NotExecuted():
			return cluster.NotExecuted
		case ts.Business():
			return cluster.Business
		}
		return cluster.MaybeExecuted
	case errors.As(err, &ae), errors.As(err, &be), errors.Is(err, dubbo.ErrPayloadTooLarge):
		// The request's fault (or the provider's answer): the same request
		// fails on any provider, and says nothing about this one's health.
		return cluster.Business
	case errors.Is(err, context.Canceled):
		return cluster.Canceled
	case errors.Is(err, dubbo.ErrConnect), errors.Is(err, dubbo.ErrOverloaded):
		return cluster.NotExecuted
	case errors.As(err, &se) && (se.Status == protocol.StatusThreadpoolExhausted || se.Status == protocol.StatusServiceNotFound):
		return cluster.NotExecuted
	}
	return cluster.MaybeExecuted
}
