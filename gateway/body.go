package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/exchange"
)

// deadliner is what net/http's response writers (HTTP/1 and HTTP/2) offer
// to bound one request's reads and writes on its connection or stream.
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// renewStep is how far past what the minimum rate requires a body's read
// deadline is set when it moves, so that a steady body moves it about
// once a second rather than at every read.
const renewStep = time.Second

// requestBody is the request body as a route reads it. It fails past the
// route's limit with *http.MaxBytesError (413). It bounds the body in
// time: a body of n bytes must be complete within grace + n/rate of the
// request's start, and never after hard (the route's timeout); the
// connection's (or stream's) read deadline follows as bytes arrive, so a
// client that stalls or drips costs its slot only that long. Any other
// read failure becomes an *exchange.BodyError: the client's fault, never
// an upstream's, counted by reason.
type requestBody struct {
	rc    io.ReadCloser
	n     int64 // bytes read
	left  int64 // bytes allowed before the limit
	limit int64

	conn     deadliner       // nil: no deadline (not served by an http.Server)
	ctx      context.Context // the request's: done when the client is gone
	start    time.Time
	grace    time.Duration
	rate     int64     // bytes per second after grace; 0: no minimum
	hard     time.Time // the body must be complete by then whatever its rate
	deadline time.Time // the read deadline in force
	http1    bool      // clear the deadline at the end (see Read)
	counters *bodyErrorCounters

	failure *exchange.BodyError // the first read failure, returned again
	eof     bool
}

// newRequestBody wraps r's body for a route whose body limit is limit and
// whose timeout is timeout, and sets the first read deadline.
func newRequestBody(r *http.Request, conn deadliner, limit int64, start time.Time, timeout, grace time.Duration, rate int64, counters *bodyErrorCounters) *requestBody {
	if grace <= 0 {
		rate = 0 // no grace configured (a config not through config.Defaults): no minimum rate
	}
	if max(timeout, grace) <= 0 {
		conn = nil // nothing bounds the body
	}
	b := &requestBody{
		rc: r.Body, left: limit, limit: limit,
		conn: conn, ctx: r.Context(), start: start, grace: grace, rate: rate,
		hard: start.Add(max(timeout, grace)), http1: r.ProtoMajor == 1, counters: counters,
	}
	if conn != nil {
		b.deadline = b.hard
		if rate > 0 {
			b.deadline = earliest(start.Add(grace), b.hard)
		}
		_ = conn.SetReadDeadline(b.deadline)
	}
	return b
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.failure != nil {
		return 0, b.failure
	}
	if b.left <= 0 {
		// Probe one byte: a body of exactly the limit is fine.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, &http.MaxBytesError{Limit: b.limit}
		}
		return 0, b.after(0, err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	b.left -= int64(n)
	return n, b.after(n, err)
}

// after moves the read deadline for the n bytes just read and classifies err.
func (b *requestBody) after(n int, err error) error {
	if n > 0 && b.rate > 0 && b.conn != nil && b.deadline.Before(b.hard) {
		due := b.start.Add(b.grace + time.Duration(float64(b.n)/float64(b.rate)*float64(time.Second)))
		if due.After(b.deadline) {
			b.deadline = earliest(due.Add(renewStep), b.hard)
			_ = b.conn.SetReadDeadline(b.deadline)
		}
	}
	switch {
	case err == nil:
		return nil
	case err == io.EOF:
		if !b.eof {
			b.eof = true
			if b.http1 && b.conn != nil {
				// net/http now reads ahead on the connection to notice a
				// client leaving; a deadline passing then would cancel the
				// request. The body is done: no deadline any more.
				_ = b.conn.SetReadDeadline(time.Time{})
			}
		}
		return err
	}
	b.failure = &exchange.BodyError{Kind: b.kind(err), Err: err}
	b.counters.inc(b.failure.Kind)
	return b.failure
}

// kind says why reading the body failed.
func (b *requestBody) kind(err error) exchange.BodyErrorKind {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		if b.deadline.Before(b.hard) {
			return exchange.BodyTooSlow
		}
		return exchange.BodyTimeout
	case errors.Is(err, io.ErrUnexpectedEOF):
		return exchange.BodyTruncated
	case b.ctx.Err() != nil || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed):
		return exchange.BodyAborted
	}
	return exchange.BodyMalformed
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (b *requestBody) Close() error { return b.rc.Close() }

// Failure implements exchange.ClientBody.
func (b *requestBody) Failure() *exchange.BodyError { return b.failure }

// Complete implements exchange.ClientBody.
func (b *requestBody) Complete() bool { return b.eof }

// bodyErrorCounters are dubbogw_request_body_errors_total's children, by kind.
type bodyErrorCounters [exchange.BodyAborted + 1]prometheus.Counter

func newBodyErrorCounters(v *prometheus.CounterVec) *bodyErrorCounters {
	var c bodyErrorCounters
	for k := exchange.BodyMalformed; k <= exchange.BodyAborted; k++ {
		c[k] = v.WithLabelValues(k.String())
	}
	return &c
}

func (c *bodyErrorCounters) inc(k exchange.BodyErrorKind) {
	if c != nil && int(k) < len(c) && c[k] != nil {
		c[k].Inc()
	}
}
