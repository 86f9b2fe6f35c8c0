// Package auth implements the auth route filter: it authenticates a
// request by the token it carries, looked up in a store (Redis, or memory
// for the quickstart), sends the user's identity upstream as headers and
// Dubbo attachments, and extends the token's TTL off the request path
// while it is in use (sliding expiry).
package auth

import (
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

// Defaults of the fields of Config.
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

// Filter is a compiled Config. It owns the workers that renew
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

// tokenSource is a compiled TokenSource.
type tokenSource struct {
	header string // canonical; "" = not read
	bearer bool
	cookie string
	query  string
}

// anonymousRule is a compiled AnonymousRule.
type anonymousRule struct {
	path    string // exact path, or the prefix with its trailing "/" when prefix
	prefix  bool
	methods []string // upper case; empty = any
}

// headers a token's fields may not be sent as: they frame the request or
// route it, or carry the token or the client's own credentials.
var reservedHeaders = []string{"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection",
	"Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade", "Cookie", "Authorization", "Proxy-Authorization"}

// New compiles cfg into the auth filter, with defaults for the fields
// left unset (cfg is not modified). Its error lists every problem, each
// naming its field.
func New(cfg *Config, deps Deps) (*Filter, error) {
	c := *cfg
	c.Defaults()
	var f *Filter
	if err := config.Check("", func(at config.At) { f = compile(&c, deps.Redis != nil, at) }); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f.log = log.With("filter", "auth", "route", deps.Route)
	sliding := *c.Sliding.Enabled
	switch c.Store {
	case "redis":
		f.store = &redisStore{client: deps.Redis, prefix: c.KeyPrefix, timeout: f.timeout}
	case "memory":
		var ttl time.Duration
		if sliding {
			ttl = c.Sliding.Window.D()
		}
		f.store = newMemoryStore(c.Tokens, ttl)
	}
	f.m = newFilterMetrics(deps.Metrics, deps.Route)
	f.identities.entries, f.identities.resets = f.m.identities, f.m.resets
	if sliding {
		f.threshold = c.Sliding.Threshold.D()
		f.renewer = newRenewer(f.store, f.threshold, c.Sliding.Window.D(), c.Sliding.Interval.D(), f.timeout, f.m, f.log)
	}
	return f, nil
}

// compile builds what a Filter keeps of the defaulted cfg, reporting its
// problems at at: the rules of the auth filter, written once for Validate
// and New. redis says whether the gateway has a Redis client.
func compile(cfg *Config, redis bool, at config.At) *Filter {
	f := &Filter{timeout: cfg.Timeout.D(), anonOnError: cfg.OnStoreError == "anonymous"}
	f.identities.limit = maxIdentities
	if f.timeout < 0 {
		at.Field("timeout").Errorf("must not be negative, got %s", f.timeout)
	}
	staleIfError := cfg.StaleIfError.D()
	if staleIfError < 0 {
		at.Field("stale_if_error").Errorf("must not be negative, got %s", staleIfError)
	}
	f.known = knownTokens{maxStale: staleIfError, keep: max(staleIfError, defaultStaleIfError), limit: maxKnownTokens}
	if cfg.UnknownLookups < 1 {
		at.Field("unknown_lookups").Errorf("must be at least 1, got %d", cfg.UnknownLookups)
	} else {
		f.unknownSlots = make(chan struct{}, cfg.UnknownLookups)
	}
	if p := cfg.OnStoreError; p != "reject" && p != "anonymous" {
		at.Field("on_store_error").Errorf("unknown policy %q (known: reject, anonymous)", p)
	}
	f.token = compileTokenSource(at.Field("token"), cfg.Token)
	f.fields, f.stripHeaders = compileFields(at, cfg, f.token.header)
	f.anonymous = compileAnonymous(at.Field("anonymous"), cfg.Anonymous)

	s := cfg.Sliding
	for _, d := range []struct {
		name string
		v    config.Duration
	}{{"threshold", s.Threshold}, {"window", s.Window}, {"interval", s.Interval}} {
		if d.v < 0 {
			at.Field("sliding").Field(d.name).Errorf("must not be negative, got %s", d.v.D())
		}
	}
	if s.Window.D() < s.Threshold.D() {
		at.Field("sliding").Field("window").Errorf("the window (%s) must be at least the threshold (%s), or renewed tokens would be renewed again at once",
			s.Window.D(), s.Threshold.D())
	}

	switch cfg.Store {
	case "redis":
		if len(cfg.Tokens) > 0 {
			at.Field("tokens").Errorf("tokens are for the memory store")
		}
		if !redis {
			at.Field("store").Errorf("the redis store needs the top-level redis: section (redis.address); or use store: memory")
		}
	case "memory":
		if len(cfg.Tokens) == 0 {
			at.Field("tokens").Errorf("the memory store needs tokens: token → JSON value")
		}
		for _, tok := range sortedKeys(cfg.Tokens) {
			if tok == "" || len(tok) > maxTokenLen {
				at.Field("tokens").Errorf("%d-byte token: want 1 to %d bytes", len(tok), maxTokenLen)
			} else if f.fields.parse(cfg.Tokens[tok]) == nil {
				at.Field("tokens").Errorf("the value of token %.4s…: want a JSON object with a non-empty string %q", tok, f.fields.list[f.fields.userID].name)
			}
		}
	default:
		at.Field("store").Errorf("unknown store %q (known: redis, memory)", cfg.Store)
	}
	return f
}

// Close stops the renewal workers. The filter keeps answering requests,
// without renewing tokens.
func (f *Filter) Close() {
	if f.renewer != nil {
		f.renewer.close()
	}
}

func compileTokenSource(at config.At, ts TokenSource) tokenSource {
	s := tokenSource{
		header: textproto.CanonicalMIMEHeaderKey(ts.Header),
		bearer: ts.Bearer == nil || *ts.Bearer,
		cookie: ts.Cookie,
		query:  ts.Query,
	}
	if err := config.CheckHeaderName(ts.Header); err != nil {
		at.Field("header").Err(err)
	}
	return s
}

// compileFields builds the list of JSON fields the filter reads and the
// headers it strips from requests.
func compileFields(at config.At, cfg *Config, tokenHeader string) (fields, []string) {
	var fs fields
	index := func(name string) int {
		for i := range fs.list {
			if fs.list[i].name == name {
				return i
			}
		}
		fs.list = append(fs.list, field{name: name})
		return len(fs.list) - 1
	}
	fs.userID = index(cfg.UserIDField)
	var strip []string
	for _, name := range sortedKeys(cfg.Headers) {
		h, at := cfg.Headers[name], at.Field("headers").Field(name)
		canon := textproto.CanonicalMIMEHeaderKey(h)
		switch {
		case name == "" || !httpguts.ValidHeaderFieldName(h):
			at.Errorf("want a JSON field name mapped to an HTTP header name, got %q", h)
			continue
		case slices.Contains(reservedHeaders, canon) || canon == tokenHeader:
			at.Errorf("%q may not carry identity (it frames the request or carries credentials)", h)
			continue
		case slices.Contains(strip, canon):
			at.Errorf("two fields are sent as %q", h)
			continue
		}
		fs.list[index(name)].header = canon
		strip = append(strip, canon)
	}
	for _, name := range sortedKeys(cfg.Attachments) {
		if name == "" || cfg.Attachments[name] == "" {
			at.Field("attachments").Field(name).Errorf("want a JSON field name mapped to an attachment name, got %q", cfg.Attachments[name])
			continue
		}
		fs.list[index(name)].attachment = cfg.Attachments[name]
	}
	return fs, strip
}

func compileAnonymous(at config.At, rules []AnonymousRule) []anonymousRule {
	out := make([]anonymousRule, 0, len(rules))
	for i, r := range rules {
		at := at.Index(i)
		exact := strings.TrimSuffix(r.Path, "/*")
		if !strings.HasPrefix(r.Path, "/") || strings.Contains(exact, "*") {
			at.Field("path").Errorf("%q: want an exact path or a prefix ending in /*", r.Path)
		}
		rule := anonymousRule{path: r.Path}
		if exact != r.Path {
			rule.path, rule.prefix = exact+"/", true
		}
		config.CheckMethods(at.Field("methods"), r.Methods)
		rule.methods = r.Methods
		out = append(out, rule)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
