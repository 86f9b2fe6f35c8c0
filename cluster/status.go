package cluster

// OpenBreakers counts a cluster's circuit breakers that are not closed
// (open or half-open). Reading it costs the same whatever the number of
// providers or services: it is what a summary polled every second reads,
// where Breakers lists them one by one.
type OpenBreakers struct {
	// Route is true when the breaker over all of the route's calls is not
	// closed (false when the route has none).
	Route bool `json:"route"`
	// Providers counts the provider breakers not closed.
	Providers int `json:"providers"`
	// Services counts the service breakers not closed (Options.ServiceBreaker).
	Services int `json:"services"`
}

// OpenBreakers reports how many of the cluster's breakers are not closed.
func (c *Cluster) OpenBreakers() OpenBreakers {
	o := OpenBreakers{Providers: int(c.openBreakers.Load()), Services: int(c.openServices.Load())}
	if c.routeBreak != nil {
		o.Route = c.routeBreak.state() != BreakerClosed
	}
	return o
}

// ServiceBreaker reports the breaker the cluster keeps for service (a
// service key, as Call.Service names it); ok is false when it keeps none:
// no Options.ServiceBreaker, the service not called yet, or its breaker
// evicted by the bound (it was closed, or the least recently used).
func (c *Cluster) ServiceBreaker(service string) (_ BreakerStatus, ok bool) {
	if c.services == nil {
		return BreakerStatus{}, false
	}
	b := c.services.lookup(service)
	if b == nil {
		return BreakerStatus{}, false
	}
	return b.status(c.now().UnixNano()), true
}
