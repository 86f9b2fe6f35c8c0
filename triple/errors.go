package triple

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/dubbogw/dubbogw/internal/grpcwire"
)

// Code is a gRPC status code, as Triple providers answer with them
// (grpc-status).
type Code uint32

// The gRPC status codes.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
	// BizError is dubbo-go's own status for a method's error (not gRPC's).
	BizError Code = 17
)

func (c Code) String() string {
	if c == BizError {
		return "BIZ_ERROR"
	}
	if name, ok := grpcwire.CodeName(int(c)); ok {
		return name
	}
	return "CODE(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// codeOfHTTPStatus maps an HTTP status other than 200 to a gRPC code, as
// gRPC's http-grpc-status-mapping does: a response without grpc-status
// came from something in front of the provider (a proxy, a server that
// does not know the path).
func codeOfHTTPStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return Internal
	case http.StatusUnauthorized:
		return Unauthenticated
	case http.StatusForbidden:
		return PermissionDenied
	case http.StatusNotFound:
		return Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return Unavailable
	}
	return Unknown
}

// StatusError is a call that ended with a gRPC status other than OK:
// the provider's method failed (UNKNOWN carries a Go provider's error or a
// Java exception's message; dubbo-go answers an IDL method's error with
// its own code 17, BIZ_ERROR), or the provider refused the call
// (UNIMPLEMENTED, UNAVAILABLE, RESOURCE_EXHAUSTED...).
type StatusError struct {
	Addr    string
	Code    Code
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("triple provider %s answered %s: %s", e.Addr, e.Code, e.Message)
}

// NotExecuted reports whether the status says the provider did not run
// the method (so another provider may be tried): it does not serve the
// method, is shutting down or overloaded.
func (e *StatusError) NotExecuted() bool {
	switch e.Code {
	case Unimplemented, Unavailable, ResourceExhausted:
		return true
	}
	return false
}

// Business reports whether the status is the method's own failure (an
// exception or error it returned), which no other provider would answer
// differently.
func (e *StatusError) Business() bool {
	switch e.Code {
	case Unknown, InvalidArgument, NotFound, AlreadyExists, PermissionDenied,
		FailedPrecondition, Aborted, OutOfRange, Unauthenticated, BizError:
		return true
	}
	return false
}
