// Package exchange holds the state of one request as it crosses the gateway
// (request id, matched route, chosen upstream, client address, error code),
// and writes the gateway's own JSON error responses.
//
// The gateway core creates one *Info per request and stores it in the request
// context; filters and upstreams read and annotate it; the access log and the
// metrics read it once the response is done.
package exchange

import (
	"context"
	"net/http"
	"net/netip"
	"time"
)

// Info is the per-request state shared by the gateway core, filters and upstreams.
// It is owned by the request's goroutine; fields are written before the
// response completes and read after it.
type Info struct {
	// RequestID is the id echoed in the request id header and in error bodies.
	RequestID string
	// Route is the name of the matched route; empty when none matched.
	Route string
	// Upstream names where the request went: an upstream and target, e.g. "users http://10.0.0.1:8080".
	Upstream string
	// ClientIP is the client address, after trusted-proxy X-Forwarded-For resolution.
	ClientIP netip.Addr
	// TrustedPeer is true when the connection's peer is a configured trusted
	// proxy: its X-Forwarded-* headers are then kept and extended upstream
	// instead of replaced.
	TrustedPeer bool
	// Start is when the gateway accepted the request.
	Start time.Time
	// ErrorCode is set when the gateway itself answered with an error (see Code* constants).
	ErrorCode string
	// UserID is the authenticated user, set by the auth filter; empty when anonymous.
	UserID string
	// Attachments are identity values the auth filter asks to send to Dubbo
	// providers as attachments; nil when none.
	Attachments map[string]string
	// PathParams are the values the route's path pattern captured, in
	// order; read them with PathValue.
	PathParams []PathParam
}

// PathParam is one value a route's path pattern captured: {Name} = Value.
type PathParam struct {
	Name, Value string
}

// PathValue returns the value the matched route's path pattern captured
// for name: from the request's Info, where the gateway puts them (no
// allocation per request), else from r.PathValue (a request routed by an
// http.ServeMux, or built by a test); "" when there is none.
func PathValue(r *http.Request, name string) string {
	if info := From(r.Context()); info != nil {
		for _, p := range info.PathParams {
			if p.Name == name {
				return p.Value
			}
		}
	}
	return r.PathValue(name)
}

type ctxKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, ctxKey{}, info)
}

// InfoContext is a context carrying an Info, as WithInfo returns, for
// embedding beside the Info it carries: one allocation for both.
type InfoContext struct {
	context.Context
	info *Info
}

// Init sets c to parent carrying info.
func (c *InfoContext) Init(parent context.Context, info *Info) {
	c.Context, c.info = parent, info
}

// Value implements context.Context.
func (c *InfoContext) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return c.info
	}
	return c.Context.Value(key)
}

// AfterFunc arranges for f to run once c ends, as context.AfterFunc
// does, through the parent's own AfterFunc when it has one (the loop
// engine's request context, which runs it without the context and the
// children map context.AfterFunc would make). context.AfterFunc, and
// every context derived from c, call it when the parent is not one of
// package context's own.
func (c *InfoContext) AfterFunc(f func()) (stop func() bool) { return AfterFunc(c.Context, f) }

// AfterFunc is context.AfterFunc, through ctx's own AfterFunc method
// when it has one.
func AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// From returns the request's Info, or nil when the context carries none.
func From(ctx context.Context) *Info {
	info, _ := ctx.Value(ctxKey{}).(*Info)
	return info
}
