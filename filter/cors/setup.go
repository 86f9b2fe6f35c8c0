// Package cors implements the cors route filter: it answers CORS preflight
// requests itself and gives actual cross-origin requests from allowed origins
// the Access-Control-* response headers, replacing any the upstream sent.
package cors

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/filter"
	"github.com/dubbogw/dubbogw/router"
)

// policy is a compiled Config; it is read-only once New returns.
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

// New compiles cfg into the cors filter, with defaults for the fields left
// unset (cfg is not modified). Its error lists every problem, each naming
// its field.
func New(cfg *Config) (filter.Filter, error) {
	c := *cfg
	c.Defaults()
	var p *policy
	if err := config.Check("", func(at config.At) { p = compile(&c, at) }); err != nil {
		return nil, err
	}
	return p, nil
}

// compile builds the policy of the defaulted cfg, reporting its problems
// at at: the rules of the cors filter, written once for Validate and New.
func compile(cfg *Config, at config.At) *policy {
	p := &policy{credentials: cfg.AllowCredentials}
	if len(cfg.AllowOrigins) == 0 {
		at.Field("allow_origins").Errorf(`required: list the allowed origins ("*" allows any)`)
	}
	for i, o := range cfg.AllowOrigins {
		if o == "*" {
			p.anyOrigin = true
			continue
		}
		exact, wc, err := parseOrigin(o)
		switch {
		case err != nil:
			at.Field("allow_origins").Index(i).Errorf("origin %q: %v", o, err)
		case wc != nil:
			p.wildcards = append(p.wildcards, *wc)
		default:
			p.exact = append(p.exact, exact)
		}
	}
	if p.anyOrigin && p.credentials {
		at.Field("allow_credentials").Errorf(`cannot be true with allow_origins "*": browsers refuse credentials for any origin; list the origins`)
	}

	config.CheckMethods(at.Field("allow_methods"), cfg.AllowMethods)
	for _, m := range cfg.AllowMethods {
		if m == "*" {
			p.anyMethod = true
		} else {
			p.methods = append(p.methods, m)
		}
	}
	p.allowMethods = strings.Join(p.methods, ", ")

	allowHeaders := headerList(at.Field("allow_headers"), cfg.AllowHeaders)
	p.echoHeaders = slices.Contains(allowHeaders, "*")
	if !p.echoHeaders {
		p.allowHeaders = strings.Join(allowHeaders, ", ")
	}
	expose := headerList(at.Field("expose_headers"), cfg.ExposeHeaders)
	if p.credentials && slices.Contains(expose, "*") {
		at.Field("expose_headers").Errorf(`"*" is not a wildcard for credentialed requests (allow_credentials is true): list the header names`)
	}
	p.exposeHeaders = strings.Join(expose, ", ")

	switch d := cfg.MaxAge.D(); {
	case d < 0:
		at.Field("max_age").Errorf("must not be negative, got %s", d)
	case d > 0 && d < time.Second:
		at.Field("max_age").Errorf("%s is below the one-second resolution of Access-Control-Max-Age", d)
	case d > 0:
		p.maxAge = strconv.FormatInt(int64(d/time.Second), 10)
	}

	p.stripHook = p.strip
	p.anyOriginHook = func(h http.Header, _ int) { p.setActual(h, "*") }
	return p
}

// parseOrigin checks an origin, "scheme://host[:port]", where host may
// start with the label "*." to match subdomains; browsers send origins in
// lower case, so that is how they are written. It returns the exact
// origin, or the wildcard.
func parseOrigin(o string) (string, *wildcard, error) {
	scheme, hostPort, ok := strings.Cut(o, "://")
	if !ok || !validScheme(scheme) {
		return "", nil, errors.New(`want scheme://host[:port], as in "https://app.example.com"`)
	}
	if i := strings.IndexAny(hostPort, "/?#"); i >= 0 {
		if i == len(hostPort)-1 && hostPort[i] == '/' {
			return "", nil, errors.New(`drop the trailing "/" (an origin has no path)`)
		}
		return "", nil, errors.New("has a path, query or fragment; an origin is only scheme://host[:port]")
	}
	if strings.Contains(hostPort, "@") {
		return "", nil, errors.New("has user info; an origin is only scheme://host[:port]")
	}
	if lower := strings.ToLower(o); o != lower {
		return "", nil, fmt.Errorf("browsers send origins in lower case; write %q", lower)
	}
	host, port := splitHostPort(hostPort)
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", nil, fmt.Errorf("port %q: want 1-65535", port)
		}
		port = ":" + port
	}
	if host == "" || router.CheckHost(host) != nil {
		return "", nil, errors.New(`bad host (a wildcard is only allowed as in "https://*.example.com")`)
	}
	if domain, ok := strings.CutPrefix(host, "*."); ok {
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

// headerList checks a list of header names, where "*" is allowed.
func headerList(at config.At, items []string) []string {
	out := make([]string, 0, len(items))
	for i, s := range items {
		if s != "*" {
			if err := config.CheckHeaderName(s); err != nil {
				at.Index(i).Err(err)
				continue
			}
		}
		out = append(out, s)
	}
	return out
}
