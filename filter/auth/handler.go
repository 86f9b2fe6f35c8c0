package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/redisclient"
)

// Wrap returns the auth handler in front of next.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return &handler{Filter: f, next: next}
}

type handler struct {
	*Filter
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, name := range h.stripHeaders {
		delete(r.Header, name) // a client cannot send its own identity
	}
	token := h.token.read(r)
	switch {
	case token == "":
		h.withoutIdentity(w, r, outcomeMissing, "missing token")
		return
	case len(token) > maxTokenLen:
		h.withoutIdentity(w, r, outcomeInvalid, "invalid token")
		return
	}

	start := time.Now()
	kt := h.known.get(token)
	if kt == nil {
		// Not found valid here recently: its lookup takes the bounded
		// budget of unknown tokens, so a flood of random ones cannot
		// queue in front of known users.
		if !h.acquireUnknown(r.Context()) {
			h.storeFailed(w, r, errUnknownBudget)
			return
		}
		h.m.unknown.Inc()
		defer func() { <-h.unknownSlots; h.m.unknown.Dec() }()
	}
	value, pttl, found, err := h.store.Lookup(r.Context(), token) // within the timeout: the store's
	now := time.Now()
	took := now.Sub(start).Seconds()
	var id *identity
	switch {
	case err != nil:
		h.m.lookup[lookupError].Observe(took)
		if id = h.known.stale(kt, now); id == nil || r.Context().Err() != nil {
			h.storeFailed(w, r, err)
			return
		}
		// The store cannot answer; this token was valid moments ago.
		h.m.outcomes[outcomeStale].Inc()
		h.serve(w, r, id)
		return
	case found:
		h.m.lookup[lookupFound].Observe(took)
		id = h.identities.get(value, h.fields.parse)
	default:
		h.m.lookup[lookupNotFound].Observe(took)
	}
	if id == nil {
		h.known.forget(kt, token) // revoked, expired, or no identity any more
		if kt != nil {
			h.m.known.Set(float64(h.known.size()))
		}
		h.withoutIdentity(w, r, outcomeInvalid, "invalid token")
		return
	}
	h.known.confirm(kt, token, id, pttl, now)
	if kt == nil {
		h.m.known.Set(float64(h.known.size()))
	}

	if h.renewer != nil && pttl >= 0 && pttl < h.threshold {
		h.renewer.request(token, start)
	}
	h.m.outcomes[outcomeOK].Inc()
	h.serve(w, r, id)
}

// serve sends r on with identity id.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, id *identity) {
	for _, hv := range id.headers {
		r.Header[hv.name] = hv.values
	}
	if info := exchange.From(r.Context()); info != nil {
		info.UserID = id.userID
		info.Attachments = id.attachments
	}
	h.next.ServeHTTP(w, r)
}

// withoutIdentity lets a request without a valid token go on where an
// anonymous rule allows it, and answers 401 otherwise.
func (h *handler) withoutIdentity(w http.ResponseWriter, r *http.Request, why outcome, message string) {
	if h.anonymousAllowed(r) {
		h.m.outcomes[outcomeAnonymous].Inc()
		h.next.ServeHTTP(w, r)
		return
	}
	h.m.outcomes[why].Inc()
	if h.token.header != "" && h.token.bearer {
		challenge := "Bearer"
		if why == outcomeInvalid {
			challenge = `Bearer error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	exchange.Fail(w, r, exchange.CodeUnauthorized, message)
}

// acquireUnknown takes a slot of the unknown-token budget, waiting for one
// at most the lookup timeout (a gateway that just started knows nobody:
// many first requests at once wait their turn rather than fail).
func (h *handler) acquireUnknown(ctx context.Context) bool {
	select {
	case h.unknownSlots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(h.timeout)
	defer t.Stop()
	select {
	case h.unknownSlots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// errUnknownBudget: auth.unknown_lookups lookups of unknown tokens are in
// flight already.
var errUnknownBudget = errors.New("too many lookups of unknown tokens in flight")

// storeFailed answers a request whose token the store could not look up
// in time, as on_store_error says.
func (h *handler) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil { // the client went away: nobody reads the answer
		exchange.Fail(w, r, exchange.CodeClientClosed, "client closed the request")
		return
	}
	if h.anonOnError && h.anonymousAllowed(r) {
		h.m.outcomes[outcomeAnonymous].Inc()
		h.next.ServeHTTP(w, r)
		return
	}
	why := outcomeStoreError
	if errors.Is(err, redisclient.ErrBreakerOpen) || errors.Is(err, redisclient.ErrOverloaded) || errors.Is(err, redisclient.ErrUnavailable) ||
		errors.Is(err, errUnknownBudget) {
		why = outcomeRejected
	}
	h.m.outcomes[why].Inc()
	h.log.Debug("token store failed", "error", err)
	exchange.Fail(w, r, exchange.CodeAuthUnavailable, "the token store is unavailable; retry later")
}

// anonymousAllowed reports whether a rule lets r go on without identity.
// Only clean paths match (the gateway cleans them before filters run), so
// "/public/../admin" is never anonymous.
func (f *Filter) anonymousAllowed(r *http.Request) bool {
	if len(f.anonymous) == 0 {
		return false
	}
	p := r.URL.Path
	if (strings.Contains(p, "//") || strings.Contains(p, "/.")) && cleanPath(p) != p {
		return false
	}
	for _, rule := range f.anonymous {
		if len(rule.methods) > 0 && !slices.Contains(rule.methods, r.Method) {
			continue
		}
		if p == rule.path || rule.prefix && (strings.HasPrefix(p, rule.path) || p == rule.path[:len(rule.path)-1]) {
			return true
		}
	}
	return false
}

// cleanPath is path.Clean keeping a trailing slash, as the gateway does.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// read returns the request's token: from the header (without its "Bearer "
// prefix), else the cookie, else the query parameter; "" when none.
func (s *tokenSource) read(r *http.Request) string {
	if s.header != "" {
		if vs := r.Header[s.header]; len(vs) > 0 {
			v := vs[0]
			if s.bearer && len(v) >= 6 && strings.EqualFold(v[:6], "bearer") && (len(v) == 6 || v[6] == ' ' || v[6] == '\t') {
				v = v[6:]
			}
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	if s.cookie != "" {
		if c, err := r.Cookie(s.cookie); err == nil && c.Value != "" {
			return c.Value
		}
	}
	if s.query != "" {
		return queryValue(r.URL.RawQuery, s.query)
	}
	return ""
}

// queryValue returns the first value of the query parameter name, without
// parsing the whole query.
func queryValue(rawQuery, name string) string {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				continue
			}
		}
		if k != name {
			continue
		}
		v, err := url.QueryUnescape(v)
		if err != nil {
			return ""
		}
		return v
	}
	return ""
}
