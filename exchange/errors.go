package exchange

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error codes of responses the gateway produces itself. They appear in the JSON
// error body, the access log and the dubbogw_errors_total metric.
const (
	CodeBadRequest       = "BAD_REQUEST"            // 400
	CodeUnauthorized     = "UNAUTHORIZED"           // 401
	CodeForbidden        = "FORBIDDEN"              // 403
	CodeNoRoute          = "NO_ROUTE"               // 404
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"     // 405
	CodeRequestTimeout   = "REQUEST_TIMEOUT"        // 408: the request body did not arrive in time
	CodeTooLarge         = "PAYLOAD_TOO_LARGE"      // 413
	CodeUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE" // 415
	CodeRateLimited      = "RATE_LIMITED"           // 429
	CodeInternal         = "INTERNAL"               // 500
	CodeDubboException   = "DUBBO_EXCEPTION"        // 500 (or the route's exception_status): the provider's method threw
	CodeBadGateway       = "BAD_GATEWAY"            // 502
	CodeNoProvider       = "NO_PROVIDER"            // 503
	CodeNoHealthyTarget  = "NO_HEALTHY_UPSTREAM"    // 503
	CodeShed             = "SHED"                   // 503
	CodeBreakerOpen      = "BREAKER_OPEN"           // 503
	CodeOverloaded       = "UPSTREAM_OVERLOADED"    // 503: the provider, or the connection to it, is at its limit
	CodeDraining         = "DRAINING"               // 503
	CodeConnectionLimit  = "CONNECTION_LIMIT"       // 503: the client (or everyone) is at the connection cap
	CodeAuthUnavailable  = "AUTH_UNAVAILABLE"       // 503: the token store cannot answer in time
	CodeSubscribeLimit   = "SUBSCRIBE_LIMITED"      // 503: the pass-through may not subscribe to another new service now
	CodeTimeout          = "TIMEOUT"                // 504
	CodeClientClosed     = "CLIENT_CLOSED"          // 499 (logged only; nobody reads the answer)
)

// Status is the HTTP status the gateway answers with code: each code has
// one (DUBBO_EXCEPTION's default; a route may choose another).
func Status(code string) int {
	switch code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNoRoute:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeRequestTimeout:
		return http.StatusRequestTimeout
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeBadGateway:
		return http.StatusBadGateway
	case CodeNoProvider, CodeNoHealthyTarget, CodeShed, CodeBreakerOpen, CodeOverloaded,
		CodeDraining, CodeConnectionLimit, CodeAuthUnavailable, CodeSubscribeLimit:
		return http.StatusServiceUnavailable
	case CodeTimeout:
		return http.StatusGatewayTimeout
	case CodeClientClosed:
		return 499
	default: // CodeInternal, CodeDubboException, and a code nobody listed here
		return http.StatusInternalServerError
	}
}

// Fail answers r with code's status (Status) and the gateway's JSON
// error body; see WriteError.
func Fail(w http.ResponseWriter, r *http.Request, code, message string) {
	WriteError(w, r, Status(code), code, message)
}

// WriteError answers r with the gateway's JSON error body:
//
//	{"error": {"code": "...", "message": "...", "route": "...", "request_id": "..."}}
//
// and records code in the request's Info. A 503 (every one of them is
// transient: no provider yet, shed, a breaker open, draining, ...) carries
// Retry-After: 1 unless the caller set a Retry-After of its own. It must be
// called before anything else was written to w.
//
// A gRPC request (Content-Type application/grpc, or application/grpc+...)
// is answered as gRPC clients expect instead: see WriteGRPCError.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	info := From(r.Context())
	var route, id string
	if info != nil {
		info.ErrorCode = code
		route, id = info.Route, info.RequestID
	}
	if IsGRPC(r) {
		WriteGRPCError(w, GRPCCode(code), message)
		return
	}
	b := make([]byte, 0, 96+len(message)+len(route)+len(id))
	b = append(b, `{"error":{"code":`...)
	b = AppendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = AppendJSONString(b, message)
	if route != "" {
		b = append(b, `,"route":`...)
		b = AppendJSONString(b, route)
	}
	if id != "" {
		b = append(b, `,"request_id":`...)
		b = AppendJSONString(b, id)
	}
	b = append(b, "}}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// IsGRPC reports whether r is a gRPC request: its Content-Type is
// application/grpc, alone or with a +codec or parameters.
func IsGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if len(ct) < 16 || !strings.EqualFold(ct[:16], "application/grpc") {
		return false
	}
	return len(ct) == 16 || ct[16] == '+' || ct[16] == ';'
}

// GRPCCode is the gRPC status code a gateway error code is answered with
// to gRPC clients.
func GRPCCode(code string) int {
	switch code {
	case CodeBadRequest:
		return 3 // INVALID_ARGUMENT
	case CodeUnauthorized:
		return 16 // UNAUTHENTICATED
	case CodeForbidden:
		return 7 // PERMISSION_DENIED
	case CodeNoRoute, CodeMethodNotAllowed:
		return 12 // UNIMPLEMENTED
	case CodeRequestTimeout, CodeTimeout:
		return 4 // DEADLINE_EXCEEDED
	case CodeTooLarge, CodeRateLimited:
		return 8 // RESOURCE_EXHAUSTED
	case CodeDubboException:
		return 2 // UNKNOWN: the method's own failure
	case CodeClientClosed:
		return 1 // CANCELLED
	case CodeBadGateway, CodeNoProvider, CodeNoHealthyTarget, CodeShed, CodeBreakerOpen, CodeOverloaded,
		CodeDraining, CodeConnectionLimit, CodeAuthUnavailable, CodeSubscribeLimit:
		return 14 // UNAVAILABLE: transient, a client may retry
	}
	return 13 // INTERNAL
}

// WriteGRPCError answers a gRPC request with a Trailers-Only response:
// HTTP 200, Content-Type application/grpc, and the status in grpc-status
// and grpc-message (percent-encoded as gRPC requires). It must be called
// before anything else was written to w.
func WriteGRPCError(w http.ResponseWriter, grpcCode int, message string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(grpcCode))
	h.Set("Grpc-Message", percentEncode(message))
	w.WriteHeader(http.StatusOK)
}

// percentEncode encodes what grpc-message may not carry as is: bytes
// outside printable ASCII, and '%'.
func percentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '%' {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '%' {
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

const (
	hexDigits = "0123456789abcdef"
	upperHex  = "0123456789ABCDEF"
)

// AppendJSONString appends s as a JSON string, escaping what JSON requires and
// replacing invalid UTF-8, without reflection.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
