// Package filter defines the interface every route filter implements.
// Each filter lives in its own folder below this one (filter/cors,
// filter/headers, ...) with a README, a constructor taking its config, the
// handler (the hot path) and tests beside it.
package filter

import "net/http"

// Filter wraps the next handler of a route's chain. Wrap is called once per
// route when the route table is built, never per request, so a filter does
// its parsing and allocation up front and keeps the request path lean.
//
// A filter that answers the request itself (a CORS preflight, a denied
// client) writes the response and does not call next; gateway-produced errors
// go through exchange.WriteError so they carry the JSON error body.
type Filter interface {
	Wrap(next http.Handler) http.Handler
}

// Func adapts a middleware function to Filter.
type Func func(next http.Handler) http.Handler

// Wrap calls f.
func (f Func) Wrap(next http.Handler) http.Handler { return f(next) }

// Chain wraps h in filters so that filters[0] runs first.
func Chain(h http.Handler, filters ...Filter) http.Handler {
	for i := len(filters) - 1; i >= 0; i-- {
		h = filters[i].Wrap(h)
	}
	return h
}
