package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/internal/grpcwire"
)

// This file forwards a request that is not an upgrade, as
// httputil.ReverseProxy does, without its per-request copies: ReverseProxy
// clones the request and its header, and wraps the context once more to
// forward 1xx answers; here the outgoing request is a shallow copy that
// shares the incoming request's header, which the proxy owns from here on
// (it is the end of the route's chain), and edits it in place. Upgrades
// (WebSocket) still go through ReverseProxy, which hands the connection
// over. 1xx informational answers of a target are not forwarded.

// grpcDeadlineSlack is how close to a gRPC client's deadline a failed
// exchange counts as that deadline passing: the target, which was sent
// the same deadline, may end the call just before the gateway's timer.
const grpcDeadlineSlack = 20 * time.Millisecond

// hopHeaders are the hop-by-hop headers of RFC 9110 section 7.6.1 (and the
// Proxy-Connection of older clients): they describe one connection and are
// never forwarded.
var hopHeaders = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forward sends r to the upstream under the handler's timeout and copies
// the answer to w. Editing r's header in place is safe for the server:
// it decides keep-alive and close from the request when it reads it.
//
// A gRPC client's deadline (grpc-timeout) shortens the timeout, and the
// target is sent what is left of it.
func (h *handler) forward(w http.ResponseWriter, r *http.Request) {
	timeout := h.timeout
	rawGRPCTimeout := r.Header.Get("Grpc-Timeout")
	grpcTimeout, hasGRPCTimeout := grpcwire.ParseTimeout(rawGRPCTimeout)
	if hasGRPCTimeout && grpcTimeout < timeout {
		timeout = grpcTimeout
	}
	// One allocation for the outgoing request, its URL and its context.
	o := &outgoing{}
	o.ctx.init(r.Context(), timeout)
	defer o.ctx.release()
	ctx := &o.ctx
	o.req = *r.WithContext(ctx) // inlined: the copy's copy stays on the stack
	o.url = *r.URL              // the attempts point it at their target in place
	out := &o.req
	out.URL = &o.url
	if r.ContentLength == 0 {
		out.Body = nil // nothing to send; a nil body lets the transport retry on a fresh connection
	}
	if out.Body != nil {
		// The transport may still read the body after the handler returned
		// (its writer goroutine): closing it makes such a read fail rather
		// than race with the server's reuse of the request.
		defer out.Body.Close()
	}
	if out.Header == nil {
		out.Header = make(http.Header)
	}
	out.Close = false
	h.u.prepareHeader(r, out.Header, &o.values)
	if deadline, ok := ctx.Deadline(); ok && rawGRPCTimeout != "" {
		// What is left of the deadline (a malformed value is replaced).
		out.Header["Grpc-Timeout"] = []string{grpcwire.FormatTimeout(time.Until(deadline))}
	}
	out.URL.RawQuery = cleanQuery(out.URL.RawQuery)
	if !h.u.preserveHost {
		out.Host = "" // the transport sends the target's host
	}

	res, err := h.proxy.Transport.RoundTrip(out)
	if err != nil {
		if deadline, _ := ctx.Deadline(); hasGRPCTimeout && time.Until(deadline) < grpcDeadlineSlack {
			// The target gave up at the client's deadline (grpc-go resets
			// the stream), a moment before ours fired: a timeout, not a
			// broken target.
			exchange.Fail(w, out, exchange.CodeTimeout, "the gRPC deadline of "+grpcTimeout.String()+" passed")
			return
		}
		h.serveError(w, out, err)
		return
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		res.Body.Close()
		h.serveError(w, out, errors.New("the target switched protocols, which the request did not ask for"))
		return
	}
	removeHopHeaders(res.Header)
	dst := w.Header()
	for k, vv := range res.Header {
		if old := dst[k]; len(old) > 0 {
			dst[k] = append(old, vv...)
		} else {
			// The answer's own values, capped so that an Add copies:
			// res is not used once this handler returns.
			dst[k] = vv[:len(vv):len(vv)]
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		// The transport's answer lists its trailers in Trailer, not in a
		// header: announce them to the client.
		names := make([]string, 0, announced)
		for k := range res.Trailer {
			names = append(names, k)
		}
		dst.Add("Trailer", strings.Join(names, ", "))
	}
	w.WriteHeader(res.StatusCode)
	grpcCall := exchange.IsGRPC(r)

	if err := h.copyBody(w, res); err != nil {
		res.Body.Close()
		if r.Context().Value(http.ServerContextKey) == nil {
			return // not under an http.Server (a test's recorder): nothing to abort
		}
		// The status line is out: closing the connection is the only way
		// left to tell the client the answer is incomplete.
		panic(http.ErrAbortHandler)
	}
	res.Body.Close() // before reading res.Trailer, which the body's EOF fills in
	if grpcCall {
		h.countGRPC(r.URL.Path, res)
	}

	if len(res.Trailer) == 0 {
		return
	}
	// A flush forces chunked encoding, which trailers need, where a short
	// body would otherwise be sent with a Content-Length.
	_ = http.NewResponseController(w).Flush()
	for k, vv := range res.Trailer {
		if len(res.Trailer) != announced {
			k = http.TrailerPrefix + k // trailers not announced before the body
		}
		dst[k] = append(dst[k], vv...)
	}
}

// outgoing is the request forward sends, with its URL, its context and
// the values of the headers it sets.
type outgoing struct {
	ctx    deadlineCtx
	req    http.Request
	url    url.URL
	values headerValues
}

// headerValues backs the values of the headers prepareHeader sets: the
// forwarding headers (0 to 2), Te (3) and an empty User-Agent (4). Each
// header gets a capped slice of it, so that an append elsewhere copies
// rather than overwrites its neighbour.
type headerValues [5]string

// countGRPC counts a gRPC call the target answered, by method and
// grpc-status (in the trailers, or in the headers of a Trailers-Only
// answer; "unknown" when neither has one).
func (h *handler) countGRPC(path string, res *http.Response) {
	st := res.Trailer.Get("Grpc-Status")
	if st == "" {
		st = res.Header.Get("Grpc-Status")
	}
	label := "unknown"
	if code, err := strconv.Atoi(st); err == nil {
		if name, ok := grpcwire.CodeName(code); ok {
			label = name
		}
	}
	h.u.metrics.grpcCalls.WithLabelValues(h.u.name, h.u.grpcMethods.label(path), label).Inc()
}

// prepareHeader edits the outgoing header hdr (the incoming request's,
// shared) of in: it removes the hop-by-hop headers, keeps "Te: trailers",
// and replaces the forwarding headers (see forwardedFrom). A request
// without User-Agent is sent without one (not Go's).
//
// The headers the client's Connection header named are not removed here:
// the gateway removed them as the request entered, before any filter
// (gateway/edge.go). Removing them here, after the filters, would delete
// what the gateway and its filters set under those names (X-User-Id,
// X-Request-Id).
//
// vals backs the values it sets.
func (u *Upstream) prepareHeader(in *http.Request, hdr http.Header, vals *headerValues) {
	teTrailers := hasToken(hdr["Te"], "trailers")
	fwd := forwardedFrom(in) // before the edits: hdr is in's header
	for _, name := range hopHeaders {
		delete(hdr, name)
	}
	if teTrailers {
		vals[3] = "trailers"
		hdr["Te"] = vals[3:4:4]
	}
	fwd.set(in, hdr, vals)
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = vals[4:5:5] // ""
	}
}

// forwarded is what a trusted peer (another proxy) said of the request in
// its X-Forwarded-* headers; empty for anyone else, whose are forgeries.
type forwarded struct {
	priorFor    []string
	proto, host string
}

func forwardedFrom(in *http.Request) forwarded {
	if info := exchange.From(in.Context()); info != nil && info.TrustedPeer {
		h := in.Header
		return forwarded{priorFor: h["X-Forwarded-For"], proto: h.Get("X-Forwarded-Proto"), host: h.Get("X-Forwarded-Host")}
	}
	return forwarded{}
}

// set replaces the forwarding headers of hdr, the outgoing header of in:
// X-Forwarded-For is the trusted chain, if any, and in's peer;
// X-Forwarded-Host and -Proto are the trusted peer's, else in's own;
// Forwarded is dropped.
func (f forwarded) set(in *http.Request, hdr http.Header, vals *headerValues) {
	delete(hdr, "Forwarded")
	delete(hdr, "X-Forwarded-For")
	if clientIP, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		if len(f.priorFor) > 0 {
			clientIP = strings.Join(f.priorFor, ", ") + ", " + clientIP
		}
		vals[0] = clientIP
		hdr["X-Forwarded-For"] = vals[0:1:1]
	}
	host := f.host
	if host == "" {
		host = in.Host
	}
	vals[1] = host
	hdr["X-Forwarded-Host"] = vals[1:2:2]
	proto := f.proto
	if proto == "" {
		proto = "http"
		if in.TLS != nil {
			proto = "https"
		}
	}
	vals[2] = proto
	hdr["X-Forwarded-Proto"] = vals[2:3:3]
}

// removeHopHeaders deletes the hop-by-hop headers of a target's answer,
// and those its Connection header names.
func removeHopHeaders(hdr http.Header) {
	for _, v := range hdr["Connection"] {
		for v != "" {
			var name string
			name, v, _ = strings.Cut(v, ",")
			if name = strings.TrimSpace(name); name != "" {
				delete(hdr, http.CanonicalHeaderKey(name))
			}
		}
	}
	for _, name := range hopHeaders {
		delete(hdr, name)
	}
}

// cleanQuery returns the raw query q with the parameters a target could
// read differently from us dropped: when q holds a ';' (a separator to
// some servers, not to Go's) or a malformed escape, it is parsed and
// encoded again, which leaves those out. Other queries are sent as they
// are, byte for byte.
func cleanQuery(q string) string {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return reencodeQuery(q)
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return reencodeQuery(q)
			}
			i += 2
		}
	}
	return q
}

func reencodeQuery(q string) string {
	v, _ := url.ParseQuery(q) // keeps what parses
	return v.Encode()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// copyBody copies res's body to w with a pooled buffer. A streamed answer
// (unknown length, or server-sent events) is flushed after each read, so
// the client sees each piece as the target sends it.
func (h *handler) copyBody(w http.ResponseWriter, res *http.Response) error {
	buf := h.u.buffers.Get()
	defer h.u.buffers.Put(buf)
	var flush func() error
	if res.ContentLength == -1 || isEventStream(res.Header.Get("Content-Type")) {
		rc := http.NewResponseController(w)
		flush = rc.Flush
	}
	for {
		n, rerr := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flush != nil {
				if err := flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			if !errors.Is(rerr, context.Canceled) {
				h.u.log.Debug("upstream response body read failed", "upstream", h.u.name, "error", rerr)
			}
			return rerr
		}
	}
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}
