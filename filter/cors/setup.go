// Package cors implements the cors route filter: it answers CORS preflight
// requests itself and gives actual cross-origin requests from allowed origins
// the Access-Control-* response headers, replacing any the upstream sent.
package cors

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
)

// policy is a compiled config.CORS; it is read-only once New returns.
type policy struct {
	anyOrigin bool       // "*" listed
	exact     []string   // lower-case "scheme://host[:port]"
	wildcards []wildcard // "scheme://*.domain[:port]"

	anyMethod    bool // "*" listed: echo the requested method
	methods      []string
	allowMethods string // methods joined for Access-Control-Allow-Methods

	echoHeaders  bool   // "*" listed: echo Access-Control-Request-Headers
	allowHeaders string // joined, "" for none

	exposeHeaders string // joined, "" for none
	credentials   bool
	maxAge        string // seconds, "" for none

	// stripHook is the response hook of requests that get no CORS headers,
	// kept as a method value so that such requests allocate no closure.
	stripHook func(h http.Header, status int)
	// anyOriginHook is the response hook of allowed requests when the answer
	// does not depend on the origin ("*" without credentials).
	anyOriginHook func(h http.Header, status int)
}

// wildcard matches "prefix<one or more labels>suffix", e.g. prefix
// "https://" and suffix ".example.com".
type wildcard struct {
	prefix, suffix string
}

// New compiles cfg into the cors filter. Errors name the offending field.
func New(cfg *config.CORS) (filter.Filter, error) {
	if cfg == nil {
		return nil, errors.New("cors: no configuration")
	}
	p := &policy{credentials: cfg.AllowCredentials}
	if err := p.compileOrigins(cfg.AllowOrigins); err != nil {
		return nil, err
	}
	if p.anyOrigin && p.credentials {
		return nil, errors.New(`allow_credentials: cannot be true when allow_origins lists "*": browsers refuse credentialed responses allowed for any origin; list the origins instead`)
	}
	if err := p.compileMethods(cfg.AllowMethods); err != nil {
		return nil, err
	}

	allowHeaders, err := headerList("allow_headers", cfg.AllowHeaders)
	if err != nil {
		return nil, err
	}
	for _, h := range allowHeaders {
		if h == "*" {
			p.echoHeaders = true
		}
	}
	if !p.echoHeaders {
		p.allowHeaders = strings.Join(allowHeaders, ", ")
	}

	expose, err := headerList("expose_headers", cfg.ExposeHeaders)
	if err != nil {
		return nil, err
	}
	for _, h := range expose {
		if h == "*" && p.credentials {
			return nil, errors.New(`expose_headers: "*" is not a wildcard for credentialed requests (allow_credentials is true): list the header names`)
		}
	}
	p.exposeHeaders = strings.Join(expose, ", ")

	if d := cfg.MaxAge.D(); d > 0 {
		if d < time.Second {
			return nil, fmt.Errorf("max_age: %s is below the one-second resolution of Access-Control-Max-Age", d)
		}
		p.maxAge = strconv.FormatInt(int64(d/time.Second), 10)
	}

	p.stripHook = p.strip
	p.anyOriginHook = func(h http.Header, _ int) { p.setActual(h, "*") }
	return p, nil
}

func (p *policy) compileOrigins(origins []string) error {
	if len(origins) == 0 {
		return errors.New(`allow_origins: list at least one origin, e.g. "https://app.example.com" or "*"`)
	}
	for _, o := range origins {
		if o == "*" {
			p.anyOrigin = true
			continue
		}
		exact, wc, err := parseOrigin(o)
		if err != nil {
			return fmt.Errorf("allow_origins: %q: %w", o, err)
		}
		if wc != nil {
			p.wildcards = append(p.wildcards, *wc)
		} else {
			p.exact = append(p.exact, exact)
		}
	}
	return nil
}

func (p *policy) compileMethods(methods []string) error {
	if len(methods) == 0 {
		methods = []string{http.MethodGet, http.MethodHead, http.MethodPost}
	}
	for _, m := range methods {
		if m == "*" {
			p.anyMethod = true
			continue
		}
		if !httpguts.ValidHeaderFieldName(m) {
			return fmt.Errorf("allow_methods: %q is not a method name", m)
		}
		p.methods = append(p.methods, strings.ToUpper(m))
	}
	p.allowMethods = strings.Join(p.methods, ", ")
	return nil
}

// parseOrigin checks an origin, "scheme://host[:port]", where host may start
// with the label "*." to match subdomains. It returns the lower-cased exact
// origin, or the wildcard.
func parseOrigin(o string) (string, *wildcard, error) {
	const shape = `want "scheme://host[:port]", e.g. "https://app.example.com" or "https://*.example.com"`
	o = strings.ToLower(o)
	scheme, hostPort, ok := strings.Cut(o, "://")
	if !ok || !validScheme(scheme) {
		return "", nil, errors.New("no scheme: " + shape)
	}
	if i := strings.IndexAny(hostPort, "/?#"); i >= 0 {
		return "", nil, errors.New(`an origin has no path, query or fragment (a trailing "/" is a path): ` + shape)
	}
	if strings.Contains(hostPort, "@") {
		return "", nil, errors.New("an origin has no user info: " + shape)
	}
	host, port := splitHostPort(hostPort)
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", nil, fmt.Errorf("bad port %q: %s", port, shape)
		}
		port = ":" + port
	}
	domain, isWildcard := strings.CutPrefix(host, "*.")
	if strings.Contains(domain, "*") {
		return "", nil, errors.New(`"*" may only be the whole origin or the first label of the host, as in "https://*.example.com"`)
	}
	if !validHost(domain) {
		return "", nil, fmt.Errorf("bad host %q: %s", host, shape)
	}
	if isWildcard {
		return "", &wildcard{prefix: scheme + "://", suffix: "." + domain + port}, nil
	}
	return o, nil, nil
}

// splitHostPort splits "host:port" or "[v6]:port"; port is "" when absent.
func splitHostPort(hp string) (host, port string) {
	if strings.HasPrefix(hp, "[") {
		if end := strings.IndexByte(hp, ']'); end >= 0 {
			host, rest := hp[:end+1], hp[end+1:]
			if p, ok := strings.CutPrefix(rest, ":"); ok {
				return host, p
			}
			if rest != "" {
				return hp, "" // let validHost reject it
			}
			return host, ""
		}
		return hp, ""
	}
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		return hp[:i], hp[i+1:]
	}
	return hp, ""
}

func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validHost accepts a DNS name, an IPv4 address or a bracketed IPv6 address.
func validHost(h string) bool {
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		for i := 1; i < len(h)-1; i++ {
			c := h[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == ':' || c == '.') {
				return false
			}
		}
		return true
	}
	return validLabels(h)
}

// validLabels reports whether s is one or more non-empty dot-separated
// labels of letters, digits, '-' and '_'.
func validLabels(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// headerList checks a list of header names, where "*" is allowed.
func headerList(field string, items []string) ([]string, error) {
	out := make([]string, 0, len(items))
	for _, s := range items {
		if s != "*" && !httpguts.ValidHeaderFieldName(s) {
			return nil, fmt.Errorf("%s: %q is not a header name", field, s)
		}
		out = append(out, s)
	}
	return out, nil
}
