package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/exchange"
)

// errAwaitUpgrade is the cause of an upgrade request whose target did not answer in time.
var errAwaitUpgrade = errors.New("no answer to the upgrade request in time")

// attemptError is the failure of the last attempt of a request.
type attemptError struct {
	target *target
	err    error
}

func (e *attemptError) Error() string {
	return "target " + e.target.series.target + ": " + e.err.Error()
}
func (e *attemptError) Unwrap() error { return e.err }

// roundTripper sends the attempts of a request: it picks a target for each,
// retries a failed attempt on another target when the request allows it and
// reports each outcome to passive health checking.
type roundTripper struct {
	u            *Upstream
	awaitUpgrade time.Duration // bounds the wait for the answer to an upgrade request
}

// RoundTrip implements http.RoundTripper. req is ReverseProxy's own outgoing
// request: the first attempt points its URL at the target in place.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	upgrade := upgradeType(req.Header)
	if upgrade == "" {
		return rt.u.roundTrip(ctx, req, "", nil)
	}
	// Bound only the wait for the answer; the upgraded connection outlives it.
	ctx, cancel := context.WithTimeoutCause(ctx, rt.awaitUpgrade, errAwaitUpgrade)
	return rt.u.roundTrip(ctx, req, upgrade, cancel)
}

// roundTrip sends the attempts of req under ctx. upgrade is the protocol an
// upgrade request asks for; cancel, if not nil, ends ctx and is called when
// the transport is done with it.
func (u *Upstream) roundTrip(ctx context.Context, req *http.Request, upgrade string, cancel context.CancelFunc) (*http.Response, error) {
	info := exchange.From(ctx)
	attempts := 1
	if u.retries > 0 && u.retryMethod(req.Method) {
		replayable, err := bufferBody(req)
		if err != nil {
			if cancel != nil {
				cancel()
			}
			return nil, err
		}
		if replayable {
			attempts += u.retries
		}
	}
	path, rawPath := req.URL.Path, req.URL.RawPath
	var triedBuf [4]*target
	tried := triedBuf[:0]
	for attempt := 1; ; attempt++ {
		t, ejected, probe := u.pick(tried)
		tried = append(tried, t)
		out := req
		if attempt > 1 || cancel != nil {
			out = req.WithContext(ctx)
			outURL := *req.URL
			out.URL = &outURL
			if attempt > 1 && req.GetBody != nil {
				out.Body, _ = req.GetBody() // bufferBody's GetBody cannot fail
			}
		}
		t.setURL(out.URL, path, rawPath)
		if info != nil {
			info.Upstream = t.label
		}
		var span trace.Span
		if u.tracer != nil {
			if out != req {
				out.Header = req.Header.Clone() // this attempt's own trace context
			}
			span = u.startAttempt(ctx, out, t, attempt)
		}

		t.inFlight.Add(1)
		t.series.inFlight.Inc()
		start := time.Now()
		res, err := u.send(out)
		u.series.duration.Observe(time.Since(start).Seconds())

		if err != nil {
			endAttemptError(span, err)
			t.attemptDone()
			t.series.errors.Inc()
			u.report(t, ejected, probe, failureOutcome(ctx, out, err))
			if attempt < attempts && u.retryConnect && ctx.Err() == nil && errors.As(err, new(*connectError)) {
				u.series.retries.Inc()
				continue
			}
			if errors.Is(context.Cause(ctx), errAwaitUpgrade) {
				err = fmt.Errorf("%w: %w", errAwaitUpgrade, err)
			}
			if cancel != nil {
				cancel()
			}
			return nil, &attemptError{target: t, err: err}
		}

		t.series.countStatus(res.StatusCode)
		attemptStatus(span, res.StatusCode)
		o := outcomeSuccess
		if res.StatusCode >= 500 {
			o = outcomeFailure
		}
		u.report(t, ejected, probe, o)
		body := &attemptBody{ReadCloser: res.Body, u: u, target: t, span: span}
		if attempt < attempts && u.retryOnStatus(res.StatusCode) && ctx.Err() == nil {
			_, _ = io.CopyN(io.Discard, res.Body, maxDrain)
			body.Close()
			u.series.retries.Inc()
			continue
		}
		if res.StatusCode != http.StatusSwitchingProtocols {
			body.cancel = cancel // the body still reads under ctx
			res.Body = body
			return res, nil
		}
		// The transport is done with ctx: the connection belongs to ReverseProxy now.
		if cancel != nil {
			cancel()
		}
		rwc, ok := res.Body.(io.ReadWriteCloser)
		got := upgradeType(res.Header)
		if !ok || !asciiEqualFold(got, upgrade) {
			body.Close()
			return nil, &attemptError{target: t, err: fmt.Errorf("target switched to protocol %q when %q was requested", got, upgrade)}
		}
		res.Body = &upgradeBody{attemptBody: body, rwc: rwc}
		return res, nil
	}
}

// failureOutcome tells whether a failed attempt is the target's fault. It
// is not when the client went away, sent too much, failed its body (broken
// framing, too slow...), or was still sending the body when the time ran
// out: a client choosing how to send its body must not eject a target.
func failureOutcome(ctx context.Context, req *http.Request, err error) outcome {
	if errors.Is(ctx.Err(), context.Canceled) || errors.As(err, new(*http.MaxBytesError)) ||
		exchange.BodyFailure(req, err) != nil {
		return outcomeNeutral
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && clientStillSending(req) {
		return outcomeNeutral
	}
	return outcomeFailure
}

// clientStillSending reports whether req's body is the gateway's and its
// client has not sent all of it yet.
func clientStillSending(req *http.Request) bool {
	cb, ok := req.Body.(exchange.ClientBody)
	return ok && !cb.Complete()
}

func (u *Upstream) retryMethod(method string) bool {
	for _, m := range u.retryMethods {
		if m == method {
			return true
		}
	}
	return false
}

func (u *Upstream) retryOnStatus(code int) bool {
	return code >= 0 && code < 640 && u.retryStatus[code/64]&(1<<(code%64)) != 0
}

// bufferBody reads a small request body into memory so that each attempt can
// send it. It reports whether the request can be sent more than once: it has
// no body, or one of known length up to maxReplayBody.
func bufferBody(req *http.Request) (bool, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return true, nil
	}
	if req.ContentLength <= 0 || req.ContentLength > maxReplayBody {
		return false, nil
	}
	buf := make([]byte, req.ContentLength)
	if _, err := io.ReadFull(req.Body, buf); err != nil {
		return false, fmt.Errorf("reading request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(buf))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	return true, nil
}

// setURL points u at t, with path (and its escaped form rawPath) below t's base path.
func (t *target) setURL(u *url.URL, path, rawPath string) {
	u.Scheme = t.url.Scheme
	u.Host = t.url.Host
	if t.basePath == "" && !t.rawBase {
		u.Path, u.RawPath = path, rawPath
		return
	}
	u.Path = joinPath(t.basePath, path)
	if rawPath == "" && !t.rawBase {
		u.RawPath = ""
		return
	}
	if rawPath == "" {
		rawPath = (&url.URL{Path: path}).EscapedPath()
	}
	u.RawPath = joinPath(t.escapedBase, rawPath)
}

// joinPath joins base (without a trailing slash) and p with a single slash.
func joinPath(base, p string) string {
	switch {
	case p == "":
		return base
	case p[0] == '/':
		return base + p
	default:
		return base + "/" + p
	}
}

// attemptDone ends an attempt on t.
func (t *target) attemptDone() {
	t.inFlight.Add(-1)
	t.series.inFlight.Dec()
}

// attemptBody is a response body whose Close ends the attempt.
type attemptBody struct {
	io.ReadCloser
	u      *Upstream
	target *target
	cancel context.CancelFunc // ends the attempt's own context, if any
	span   trace.Span         // the attempt's client span; nil when not tracing
	closed atomic.Bool
}

// Close closes the body and ends the attempt, once.
func (b *attemptBody) Close() error {
	err := b.ReadCloser.Close()
	if b.closed.CompareAndSwap(false, true) {
		b.target.attemptDone()
		if b.span != nil {
			b.span.End()
		}
		if b.cancel != nil {
			b.cancel()
		}
		if b.u.closed.Load() {
			// The connection went back to the pool of a closed upstream.
			b.u.transport.CloseIdleConnections()
		}
	}
	return err
}

// upgradeBody is the body of a 101 Switching Protocols response: the
// connection itself, which ReverseProxy needs to write to.
type upgradeBody struct {
	*attemptBody
	rwc io.ReadWriteCloser
}

func (b *upgradeBody) Write(p []byte) (int, error) { return b.rwc.Write(p) }

// upgradeType returns the protocol an upgrade request or response asks for, or "".
func upgradeType(h http.Header) string {
	up := h["Upgrade"]
	if len(up) == 0 || !hasToken(h["Connection"], "upgrade") {
		return ""
	}
	return up[0]
}

// hasToken reports whether the comma-separated values hold token (ASCII case-insensitive).
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for v != "" {
			var item string
			item, v, _ = strings.Cut(v, ",")
			if asciiEqualFold(strings.TrimSpace(item), token) {
				return true
			}
		}
	}
	return false
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
