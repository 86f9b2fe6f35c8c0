package exchange

import (
	"net/http"
	"strconv"
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
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	info := From(r.Context())
	var route, id string
	if info != nil {
		info.ErrorCode = code
		route, id = info.Route, info.RequestID
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

const hexDigits = "0123456789abcdef"

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
