// Package auth implements the auth route filter: it authenticates a
// request by the token it carries, looked up in a store (Redis, or memory
// for the quickstart), sends the user's identity upstream as headers and
// Dubbo attachments, and extends the token's TTL off the request path
// while it is in use (sliding expiry).
package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/textproto"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/redisclient"
)

// Defaults for zero fields of config.Auth.
const (
	defaultStore        = "redis"
	defaultKeyPrefix    = "token:"
	defaultHeader       = "Authorization"
	defaultUserIDField  = "userId"
	defaultUserIDHeader = "X-User-Id"
	defaultThreshold    = 4 * time.Hour
	defaultWindow       = 4 * time.Hour
	defaultInterval     = time.Minute
	defaultOnStoreError = "reject"
	defaultTimeout      = 50 * time.Millisecond
	defaultStaleIfError = 5 * time.Minute
	defaultUnknown      = 256

	// maxKnownTokens bounds the tokens remembered as valid (stale_if_error
	// and the unknown-lookup budget), per route.
	maxKnownTokens = 100000

	// maxTokenLen: a longer token is invalid without a lookup.
	maxTokenLen = 4096
	// maxIdentities bounds the parsed identities kept (by token value).
	maxIdentities = 65536
)

// Deps are what the filter needs from the gateway.
type Deps struct {
	// Redis is the gateway's Redis client; needed by the redis store only.
	Redis *redisclient.Client
	// Metrics registers the filter's metrics; nil: none.
	Metrics prometheus.Registerer
	// Log is the gateway's logger; nil: discard.
	Log *slog.Logger
	// Route names the route in metrics.
	Route string
}

// Filter is a compiled config.Auth. It owns the workers that renew
// tokens: Close stops them.
type Filter struct {
	store        Store
	timeout      time.Duration
	token        tokenSource
	stripHeaders []string // canonical names of the identity headers, removed from every request
	fields       fields
	identities   identityCache
	known        knownTokens
	unknownSlots chan struct{} // one per lookup in flight of a token not known
	anonymous    []anonymousRule
	anonOnError  bool // on_store_error: anonymous
	threshold    time.Duration
	renewer      *renewer // nil when sliding expiry is off
	m            *filterMetrics
	log          *slog.Logger
}

// tokenSource is a compiled config.TokenSource.
type tokenSource struct {
	header string // canonical; "" = not read
	bearer bool
	cookie string
	query  string
}

// anonymousRule is a compiled config.AnonymousRule.
type anonymousRule struct {
	path    string // exact path, or the prefix with its trailing "/" when prefix
	prefix  bool
	methods []string // upper case; empty = any
}

// headers a token's fields may not be sent as: they frame the request or
// route it, or carry the token or the client's own credentials.
var reservedHeaders = []string{"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection",
	"Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade", "Cookie", "Authorization", "Proxy-Authorization"}

// New compiles cfg into the auth filter, applying defaults to zero fields
// (cfg is not modified). Errors name the field at fault.
func New(cfg *config.Auth, deps Deps) (*Filter, error) {
	if cfg == nil {
		return nil, errors.New("auth: no configuration")
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Filter{
		timeout:     orDefault(cfg.Timeout.D(), defaultTimeout),
		anonOnError: orDefault(cfg.OnStoreError, defaultOnStoreError) == "anonymous",
		log:         log.With("filter", "auth", "route", deps.Route),
	}
	f.identities.limit = maxIdentities
	staleIfError := defaultStaleIfError
	if cfg.StaleIfError != nil {
		staleIfError = cfg.StaleIfError.D()
	}
	if staleIfError < 0 {
		return nil, errors.New("stale_if_error: must not be negative")
	}
	f.known = knownTokens{maxStale: staleIfError, keep: max(staleIfError, defaultStaleIfError), limit: maxKnownTokens}
	unknown := orDefault(cfg.UnknownLookups, defaultUnknown)
	if unknown < 1 {
		return nil, fmt.Errorf("unknown_lookups: %d: must be at least 1", unknown)
	}
	f.unknownSlots = make(chan struct{}, unknown)
	if p := orDefault(cfg.OnStoreError, defaultOnStoreError); p != "reject" && p != "anonymous" {
		return nil, fmt.Errorf("on_store_error: unknown policy %q (known: reject, anonymous)", p)
	}
	if f.timeout < 0 {
		return nil, errors.New("timeout: must not be negative")
	}
	var err error
	if f.token, err = compileTokenSource(cfg.Token); err != nil {
		return nil, err
	}
	if f.fields, f.stripHeaders, err = compileFields(cfg, f.token.header); err != nil {
		return nil, err
	}
	if f.anonymous, err = compileAnonymous(cfg.Anonymous); err != nil {
		return nil, err
	}

	sliding := cfg.Sliding.Enabled == nil || *cfg.Sliding.Enabled
	threshold := orDefault(cfg.Sliding.Threshold.D(), defaultThreshold)
	window := orDefault(cfg.Sliding.Window.D(), defaultWindow)
	interval := orDefault(cfg.Sliding.Interval.D(), defaultInterval)
	if threshold < 0 || window < 0 || interval < 0 {
		return nil, errors.New("sliding: durations must not be negative")
	}
	if window < threshold {
		return nil, fmt.Errorf("sliding.window: the window (%s) must be at least the threshold (%s), or renewed tokens would be renewed again at once", window, threshold)
	}

	switch store := orDefault(cfg.Store, defaultStore); store {
	case "redis":
		if len(cfg.Tokens) > 0 {
			return nil, errors.New("tokens: tokens are for the memory store")
		}
		if deps.Redis == nil {
			return nil, errors.New("store: the redis store needs the top-level redis: section (redis.address); or use store: memory")
		}
		f.store = &redisStore{client: deps.Redis, prefix: orDefault(cfg.KeyPrefix, defaultKeyPrefix), timeout: f.timeout}
	case "memory":
		if len(cfg.Tokens) == 0 {
			return nil, errors.New("tokens: the memory store needs tokens: token → JSON value")
		}
		for _, tok := range sortedKeys(cfg.Tokens) {
			if tok == "" || len(tok) > maxTokenLen {
				return nil, fmt.Errorf("tokens: %d-byte token: want 1 to %d bytes", len(tok), maxTokenLen)
			}
			if f.fields.parse(cfg.Tokens[tok]) == nil {
				return nil, fmt.Errorf("tokens: the value of token %.4s…: want a JSON object with a non-empty string %q", tok, f.fields.list[f.fields.userID].name)
			}
		}
		var ttl time.Duration
		if sliding {
			ttl = window
		}
		f.store = newMemoryStore(cfg.Tokens, ttl)
	default:
		return nil, fmt.Errorf("store: unknown store %q (known: redis, memory)", store)
	}

	f.m = newFilterMetrics(deps.Metrics, deps.Route)
	f.identities.entries, f.identities.resets = f.m.identities, f.m.resets
	if sliding {
		f.threshold = threshold
		f.renewer = newRenewer(f.store, threshold, window, interval, f.timeout, f.m, f.log)
	}
	return f, nil
}

// Close stops the renewal workers. The filter keeps answering requests,
// without renewing tokens.
func (f *Filter) Close() {
	if f.renewer != nil {
		f.renewer.close()
	}
}

// HeaderNames returns the headers a filter built from cfg sends upstream
// (the targets of its headers, X-User-Id by default), canonical and
// sorted. The gateway removes them, and their look-alikes, from every
// request as it enters, on every route: an upstream that trusts them from
// the gateway cannot tell which route a request took.
func HeaderNames(cfg *config.Auth) []string {
	if cfg == nil {
		return nil
	}
	if cfg.Headers == nil {
		return []string{defaultUserIDHeader}
	}
	names := make([]string, 0, len(cfg.Headers))
	for _, h := range cfg.Headers {
		names = append(names, textproto.CanonicalMIMEHeaderKey(h))
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func compileTokenSource(ts config.TokenSource) (tokenSource, error) {
	s := tokenSource{
		header: textproto.CanonicalMIMEHeaderKey(orDefault(ts.Header, defaultHeader)),
		bearer: ts.Bearer == nil || *ts.Bearer,
		cookie: ts.Cookie,
		query:  ts.Query,
	}
	if !httpguts.ValidHeaderFieldName(s.header) {
		return s, fmt.Errorf("token.header: %q is not a header name", ts.Header)
	}
	return s, nil
}

// compileFields builds the list of JSON fields the filter reads and the
// headers it strips from requests.
func compileFields(cfg *config.Auth, tokenHeader string) (fields, []string, error) {
	var fs fields
	userID := orDefault(cfg.UserIDField, defaultUserIDField)
	headers := cfg.Headers
	if headers == nil {
		headers = map[string]string{defaultUserIDField: defaultUserIDHeader}
	}
	attachments := cfg.Attachments
	if attachments == nil {
		attachments = make(map[string]string, len(headers))
		for name := range headers {
			attachments[name] = name
		}
	}
	index := func(name string) int {
		for i := range fs.list {
			if fs.list[i].name == name {
				return i
			}
		}
		fs.list = append(fs.list, field{name: name})
		return len(fs.list) - 1
	}
	fs.userID = index(userID)
	var strip []string
	for _, name := range sortedKeys(headers) {
		h := headers[name]
		canon := textproto.CanonicalMIMEHeaderKey(h)
		switch {
		case name == "" || !httpguts.ValidHeaderFieldName(h):
			return fs, nil, fmt.Errorf("headers: want a JSON field name mapped to an HTTP header name, got %q: %q", name, h)
		case slices.Contains(reservedHeaders, canon) || canon == tokenHeader:
			return fs, nil, fmt.Errorf("headers: %q may not carry identity (it frames the request or carries credentials)", h)
		case slices.Contains(strip, canon):
			return fs, nil, fmt.Errorf("headers: two fields are sent as %q", h)
		}
		fs.list[index(name)].header = canon
		strip = append(strip, canon)
	}
	for _, name := range sortedKeys(attachments) {
		if name == "" || attachments[name] == "" {
			return fs, nil, fmt.Errorf("attachments: want a JSON field name mapped to an attachment name, got %q: %q", name, attachments[name])
		}
		fs.list[index(name)].attachment = attachments[name]
	}
	return fs, strip, nil
}

func compileAnonymous(rules []config.AnonymousRule) ([]anonymousRule, error) {
	out := make([]anonymousRule, 0, len(rules))
	for i, r := range rules {
		exact := strings.TrimSuffix(r.Path, "/*")
		if !strings.HasPrefix(r.Path, "/") || strings.Contains(exact, "*") {
			return nil, fmt.Errorf("anonymous[%d].path: %q: want an exact path or a prefix ending in /*", i, r.Path)
		}
		rule := anonymousRule{path: r.Path}
		if exact != r.Path {
			rule.path, rule.prefix = exact+"/", true
		}
		for _, m := range r.Methods {
			if !httpguts.ValidHeaderFieldName(m) { // a method is a token too
				return nil, fmt.Errorf("anonymous[%d].methods: %q is not a method", i, m)
			}
			rule.methods = append(rule.methods, strings.ToUpper(m))
		}
		out = append(out, rule)
	}
	return out, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
