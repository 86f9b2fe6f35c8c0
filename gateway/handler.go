package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/admission"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/filter/accesslog"
	"github.com/dubbogw/dubbogw/filter/requestid"
	"github.com/dubbogw/dubbogw/router"
)

// ServeHTTP is the data plane: request id, admission, routing, body limit,
// the route's filter chain and upstream, then metrics and the access log.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	t := acquire(&g.table)
	defer t.release()

	// One allocation for the request's state and its response recorder.
	st := &requestState{info: exchange.Info{Start: start}, rec: recorder{ResponseWriter: w, upgraded: &g.hijacked}}
	info, rec := &st.info, &st.rec
	if conn, ok := w.(deadliner); ok {
		// http.Server's WriteTimeout set the first write deadline as the
		// request came in; writes renew it (see armWrite).
		rec.conn, rec.writeTimeout, rec.renewAt = conn, g.writeTimeout, start.Add(g.writeTimeout/4)
	}
	info.PathParams = st.params[:0]
	// Before the edge edits the headers: a trusted proxy's X-Forwarded-For as it sent it.
	info.ClientIP, info.TrustedPeer = exchange.ClientIP(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), t.trusted)
	// Then, before anything sets a header: hop-by-hop and identity headers out.
	g.cleanHeaders(t, r)
	clientSubject(t, r)
	info.RequestID = requestid.Pick(&st.idBytes, r.Header.Get(t.reqIDHeader), t.trustReqID)
	// One value slice for both headers (the name is canonical already;
	// each capped, so an Add on either copies rather than shares).
	st.id[0] = info.RequestID
	id := st.id[:]
	r.Header[t.reqIDHeader] = id
	w.Header()[t.reqIDHeader] = id[:1:1]
	if g.draining.Load() && r.Header.Get("Upgrade") == "" {
		// The connection ends after this response (HTTP/2: GOAWAY), so
		// the drain never has to close one under a client's next request.
		w.Header().Set("Connection", "close")
	}
	if info.TrustedPeer && !info.ClientIP.IsValid() {
		g.noteUnknownClient(r, info)
	}
	st.ctx.Init(r.Context(), info)
	var ctx context.Context = &st.ctx
	var span trace.Span // nil when tracing is off: no tracing work at all
	if g.tracer != nil {
		ctx, span = startServerSpan(ctx, g.tracer, r, info)
		// A response aborted after its headers went out (a panic in a
		// route, a broken upstream body) unwinds past the end of this
		// function: its span still ends, marked aborted.
		defer func() {
			if v := recover(); v != nil {
				abortServerSpan(span, info, rec.status, v)
				panic(v)
			}
		}()
	}
	st.req = *r.WithContext(ctx) // inlined: the copy's copy stays on the stack
	r = &st.req

	rm := g.serve(t, rec, r, info)
	now := time.Now()
	rec.armWriteAt(now) // net/http writes what is buffered once this returns

	status := rec.status
	if status == 0 {
		if info.ErrorCode == exchange.CodeClientClosed {
			status = 499
		} else {
			status = http.StatusOK
		}
	}
	d := now.Sub(start)
	rm.count(status)
	rm.observe(d)
	if info.ErrorCode != "" {
		g.metrics.errorCounter(info.ErrorCode).Inc()
	}
	var bytesIn int64
	if body, ok := r.Body.(*requestBody); ok {
		bytesIn = body.n
	}
	g.accessLog.Load().Log(r.Context(), &accesslog.Entry{
		Request: r, Info: info, Status: status, BytesIn: bytesIn, BytesOut: rec.bytes, Duration: d,
	})
	if span != nil {
		endServerSpan(span, info, status) // after the access log, which reads the recording span
	}
}

// serve admits, routes and runs one request; it returns the metrics to count it under.
func (g *Gateway) serve(t *table, w *recorder, r *http.Request, info *exchange.Info) *routeMetrics {
	g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	release, ok := t.global.Acquire()
	if !ok {
		// Shed at once: queueing here is how a slow dependency becomes an outage.
		shed(w, r, "the gateway is at its in-flight limit; retry later")
		return t.notFound
	}
	defer func() { release(outcome(info)) }()

	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		exchange.Fail(w, r, exchange.CodeNoRoute, "no route for "+r.Method+" "+r.RequestURI)
		return t.notFound
	}
	matrix, problem := checkPath(p, r.URL.RawPath)
	if problem != "" {
		g.refuse(w, r, info, "the request path has "+problem+", which a server behind the gateway could read as another path")
		return t.notFound
	}
	if c := cleanPath(p); c != p {
		// Match and forward the cleaned path, so "/public/../admin" cannot
		// slip past the filters of the route that owns "/admin".
		r.URL.Path, r.URL.RawPath = c, ""
		p = c
		matrix = matrix && strings.IndexByte(p, ';') >= 0
	}
	matchPath := p
	if matrix {
		// Routed as Tomcat and Spring read it: "/private;x" is /private's,
		// whose route decides whether it takes path parameters.
		matchPath = withoutMatrix(p)
	}
	method := r.Method
	if method == http.MethodOptions && r.Header.Get("Origin") != "" {
		if m := r.Header.Get("Access-Control-Request-Method"); m != "" {
			method = m // a CORS preflight belongs to the route of the method it asks about
		}
	}
	var buf [8]router.Param
	req := router.Request{Header: r.Header, RawQuery: r.URL.RawQuery} // read only by routes with predicates
	rt, params, st := t.router.MatchRequest(r.Host, method, matchPath, &req, buf[:0])
	switch st {
	case router.NotFound:
		exchange.Fail(w, r, exchange.CodeNoRoute, "no route for "+r.Method+" "+p)
		return t.notFound
	case router.MethodNotAllowed:
		w.Header().Set("Allow", strings.Join(t.router.Allowed(r.Host, matchPath), ", "))
		exchange.Fail(w, r, exchange.CodeMethodNotAllowed, "method "+r.Method+" is not allowed on "+p)
		return t.notFound
	}
	info.Route = rt.name
	if matrix && !rt.allowMatrix {
		g.refuse(w, r, info, "the request path has ';' path parameters, which route "+rt.name+" does not accept (allow_matrix_params)")
		return rt.metrics
	}
	if g.tracer != nil {
		nameServerSpan(r, rt)
	}
	if r.ProtoMajor == 2 {
		w.deferWriteDeadline(info.Start.Add(max(rt.bodyTimeout, t.bodyGrace) + rt.bodyTimeout))
	}
	if rt.limiter != nil {
		// Before any filter: a saturated route costs no Redis lookup, no upstream work.
		release, ok := rt.limiter.Acquire()
		if !ok {
			shed(w, r, "route "+rt.name+" is at its in-flight limit; retry later")
			return rt.metrics
		}
		defer func() { release(outcome(info)) }()
	}
	// The captured values go into the request's Info (backed by its state:
	// no allocation for up to four), not r.SetPathValue (a map per request).
	for _, pa := range params {
		info.PathParams = append(info.PathParams, exchange.PathParam{Name: pa.Name, Value: pa.Value})
	}
	if r.ContentLength > rt.maxBody {
		exchange.Fail(w, r, exchange.CodeTooLarge,
			fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, rt.maxBody))
		return rt.metrics
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = newRequestBody(r, w.conn, rt.maxBody, info.Start, rt.bodyTimeout, t.bodyGrace, t.minBodyRate, g.metrics.bodyErrorCounters)
	}
	g.runRoute(rt, w, r)
	return rt.metrics
}

// shed refuses a request at once with 503 SHED (and Retry-After, as
// every 503).
func shed(w http.ResponseWriter, r *http.Request, msg string) {
	exchange.Fail(w, r, exchange.CodeShed, msg)
}

// outcome is how a request ended, for adaptive limits: its latency;
// whether it timed out or its upstream refused it for load (Dropped); or
// whether the gateway answered it itself before any upstream work (a
// route's limit, a rate limit, a missing token, no provider...): such an
// answer says nothing about upstream latency and is Skipped.
func outcome(info *exchange.Info) admission.Outcome {
	o := admission.Outcome{Latency: time.Since(info.Start)}
	switch info.ErrorCode {
	case exchange.CodeTimeout, exchange.CodeOverloaded:
		o.Dropped = true
	case exchange.CodeShed, exchange.CodeNoRoute, exchange.CodeMethodNotAllowed, exchange.CodeTooLarge,
		exchange.CodeUnauthorized, exchange.CodeForbidden, exchange.CodeRateLimited, exchange.CodeAuthUnavailable,
		exchange.CodeBadRequest, exchange.CodeNoProvider, exchange.CodeBreakerOpen, exchange.CodeNoHealthyTarget,
		exchange.CodeSubscribeLimit:
		o.Skipped = true
	}
	return o
}

// runRoute runs the route's chain; a panic becomes a 500 for this request only.
func (g *Gateway) runRoute(rt *route, w *recorder, r *http.Request) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v) // the proxy aborting a broken response: let net/http close the connection quietly
		}
		rt.metrics.panicked()
		g.log.Error("panic in route", "route", rt.name, "request_id", exchange.From(r.Context()).RequestID,
			"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if w.status != 0 || w.hijacked {
			panic(http.ErrAbortHandler) // headers are out: only closing the connection tells the client
		}
		exchange.Fail(w, r, exchange.CodeInternal, "internal error in route "+rt.name)
	}()
	rt.handler.ServeHTTP(w, r)
}

// cleanPath is path.Clean keeping a trailing slash.
func cleanPath(p string) string {
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

type requestState struct {
	info    exchange.Info
	rec     recorder
	params  [4]exchange.PathParam // backs info.PathParams
	id      [1]string             // backs the request id headers' value
	idBytes requestid.Buf         // a new request id's bytes
	ctx     exchange.InfoContext  // the request's context, carrying info
	req     http.Request          // the request as the route sees it
}

// recorder notes the status and the bytes written, for metrics and the
// access log, and keeps the response's write deadline moving.
type recorder struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked bool
	upgraded *connSet // where hijacked connections are tracked for the drain

	conn         deadliner     // the request's connection or stream; nil when not served by an http.Server
	writeTimeout time.Duration // server.write_timeout; 0: no deadline to renew
	renewAt      time.Time     // when the write deadline is next renewed
}

// armWrite renews the write deadline before a write once a quarter of
// write_timeout has passed since it was set, so that every write has at
// least half of it (a long or late response is not cut; the connection
// may keep a deadline up to a quarter earlier than asked, see
// limitedConn.SetWriteDeadline), while a client that reads nothing blocks
// a write, and holds its slot, no longer than write_timeout. Most
// responses renew it never.
func (w *recorder) armWrite() {
	if w.writeTimeout == 0 || w.conn == nil {
		return
	}
	w.armWriteAt(time.Now())
}

// armWriteAt is armWrite at now.
func (w *recorder) armWriteAt(now time.Time) {
	if w.writeTimeout == 0 || w.conn == nil {
		return
	}
	if !now.Before(w.renewAt) {
		_ = w.conn.SetWriteDeadline(now.Add(w.writeTimeout))
		w.renewAt = now.Add(w.writeTimeout / 4)
	}
}

// deferWriteDeadline moves an HTTP/2 stream's write deadline to
// write_timeout after answerBy, the latest the route can start its answer
// (its body, then its call, each within the route's timeout). A stream's
// deadline is a timer that resets the stream when it fires, writing or
// not, unlike a connection's, which fails only a write in progress: left
// at write_timeout after the request came in (http.Server's
// WriteTimeout), it would cut a route that answers later than that. From
// answerBy on, writes renew it as on HTTP/1.
func (w *recorder) deferWriteDeadline(answerBy time.Time) {
	if w.writeTimeout == 0 || w.conn == nil || !answerBy.After(w.renewAt) {
		return
	}
	_ = w.conn.SetWriteDeadline(answerBy.Add(w.writeTimeout))
	w.renewAt = answerBy
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.armWrite()
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.armWrite()
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client (streaming responses).
func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.armWrite()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over (WebSocket upgrades).
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	w.conn = nil // net/http cleared the connection's deadlines: it is the hijacker's
	w.status = http.StatusSwitchingProtocols
	return w.upgraded.add(c), brw, nil
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
