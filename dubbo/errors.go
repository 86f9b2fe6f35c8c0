package dubbo

import (
	"errors"
	"fmt"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// Errors an Invoke can be tested for with errors.Is. Every error returned
// also names the provider address and the call.
var (
	// ErrClosed: the Client is closed, or was closed while the call waited.
	ErrClosed = errors.New("dubbo client closed")
	// ErrOverloaded: the connection already has MaxPending calls waiting
	// (or its write queue is full); the request was not sent.
	ErrOverloaded = errors.New("too many pending calls")
	// ErrConnect: there is no connection to the address (the dial failed and
	// the client is reconnecting in the background); the request was not sent.
	ErrConnect = errors.New("not connected")
	// ErrConnectionLost: the connection broke while the call waited for its
	// response; the provider may or may not have run the call.
	ErrConnectionLost = errors.New("connection lost")
	// ErrPayloadTooLarge: the request body is over MaxPayload; it was not sent.
	ErrPayloadTooLarge = errors.New("payload too large")
)

// StatusError is a response with a status other than OK: the provider could
// not run the call (service not found, bad request, thread pool exhausted,
// server timeout...). Message is the provider's error message.
type StatusError struct {
	Addr    string
	Status  protocol.Status
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("dubbo provider %s answered %s: %s", e.Addr, e.Status, e.Message)
}

// BusinessError is a response carrying an exception: the provider's method
// threw. Raw is the Throwable as decoded; Exception is it converted by
// hessian.AsException (nil when Raw is not a Throwable).
type BusinessError struct {
	Addr      string
	Exception *hessian.Exception
	Raw       any
}

func (e *BusinessError) Error() string {
	if e.Exception == nil {
		return fmt.Sprintf("dubbo provider %s threw a %T that is not a Throwable", e.Addr, e.Raw)
	}
	return "dubbo provider " + e.Addr + " threw " + e.Exception.Error()
}

// Unwrap returns the exception, so errors.As finds a *hessian.Exception.
func (e *BusinessError) Unwrap() error {
	if e.Exception == nil {
		return nil
	}
	return e.Exception
}
