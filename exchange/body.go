package exchange

import (
	"errors"
	"net/http"
)

// BodyErrorKind says how reading a client's request body failed.
type BodyErrorKind uint8

// The ways a request body can fail, each the client's doing.
const (
	// BodyMalformed: the framing is broken (a bad chunk size, ...).
	BodyMalformed BodyErrorKind = iota + 1
	// BodyTruncated: the body ended before the length it declared.
	BodyTruncated
	// BodyTooSlow: the body arrived below the minimum rate.
	BodyTooSlow
	// BodyTimeout: the body was not complete within the route's timeout.
	BodyTimeout
	// BodyAborted: the client reset the connection or the stream.
	BodyAborted
)

// String is the kind's label in metrics and logs.
func (k BodyErrorKind) String() string {
	switch k {
	case BodyMalformed:
		return "malformed"
	case BodyTruncated:
		return "truncated"
	case BodyTooSlow:
		return "too_slow"
	case BodyTimeout:
		return "timeout"
	case BodyAborted:
		return "aborted"
	}
	return "unknown"
}

// BodyError is a failure reading the client's request body. It is the
// client's fault, never an upstream's: it must not count against a target
// or a provider, and it is logged at debug level only (a client chooses
// how many it sends).
type BodyError struct {
	Kind BodyErrorKind
	Err  error // what the body's reader returned
}

func (e *BodyError) Error() string {
	switch e.Kind {
	case BodyTooSlow:
		return "request body arrived too slowly: " + e.Err.Error()
	case BodyTimeout:
		return "request body not complete within the route's timeout: " + e.Err.Error()
	}
	return "reading the request body: " + e.Err.Error()
}

func (e *BodyError) Unwrap() error { return e.Err }

// ClientBody is a request body that knows how its client delivered it
// (the gateway's own): upstreams ask it whose fault a failed exchange is.
type ClientBody interface {
	// Failure is the first read failure, nil when none.
	Failure() *BodyError
	// Complete reports whether the body was read to its end.
	Complete() bool
}

// BodyFailure returns the failure met reading r's body, from err or from
// the body itself (an exchange may report a cancellation while the cause
// was the client's body), or nil.
func BodyFailure(r *http.Request, err error) *BodyError {
	var be *BodyError
	if errors.As(err, &be) {
		return be
	}
	if cb, ok := r.Body.(ClientBody); ok {
		return cb.Failure()
	}
	return nil
}

// WriteBodyError answers a request whose body could not be read: 400
// BAD_REQUEST for a malformed or truncated body, 408 REQUEST_TIMEOUT for
// one too slow or late; for a client that reset the connection nothing is
// written (nobody reads it) and the request is recorded as
// CLIENT_CLOSED (499). It reports whether the failure was the body's
// (see BodyFailure); when not, it writes nothing.
func WriteBodyError(w http.ResponseWriter, r *http.Request, err error) bool {
	be := BodyFailure(r, err)
	if be == nil {
		return false
	}
	switch be.Kind {
	case BodyTooSlow, BodyTimeout:
		w.Header().Set("Connection", "close")
		Fail(w, r, CodeRequestTimeout, be.Error())
	case BodyAborted:
		if info := From(r.Context()); info != nil {
			info.ErrorCode = CodeClientClosed
		}
	default:
		w.Header().Set("Connection", "close")
		Fail(w, r, CodeBadRequest, be.Error())
	}
	return true
}
