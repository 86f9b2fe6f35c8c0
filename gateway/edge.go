package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
)

// This file is what the gateway does to every request as it enters, before
// routing and before any filter, so that nothing a client sends can make a
// server behind the gateway read the request differently from how the
// gateway routed and filtered it:
//
//   - the headers the client's Connection header names are removed (they
//     were meant for the hop that ends here), and Connection keeps only
//     its hop-by-hop tokens, so nothing later (the proxy, ReverseProxy)
//     deletes a header the gateway or a filter set under such a name;
//   - identity headers (server.identity_headers and every auth filter's
//     headers) are removed, with their look-alikes: any case, '_' for '-';
//   - a trailing dot of the host is removed ("api.example.com." is
//     api.example.com, never the catch-all's);
//   - a path a server behind could read as another path is refused (see
//     checkPath).
//
// A request with none of these (no Connection header beyond keep-alive or
// close, no identity header, a plain path) costs one pass over its header
// names and one over its path, and allocates nothing.

// identitySet is the set of identity header names, folded: lower case,
// '-' for '_'.
type identitySet struct {
	names []string
	lens  [4]uint64 // lengths of names (all under 256): most header names are skipped on length alone
}

// newIdentitySet collects the identity headers of cfg:
// server.identity_headers and the headers every identity filter (auth)
// sets, on every route: an upstream that trusts X-User-Id from the gateway
// cannot tell which route, authenticated or not, a request came through.
func newIdentitySet(cfg *config.Config) identitySet {
	var s identitySet
	for _, h := range cfg.Server.IdentityHeaders {
		s.add(h)
	}
	for _, h := range config.IdentityHeaders(cfg) {
		s.add(h)
	}
	return s
}

func (s *identitySet) add(name string) {
	if name == "" || len(name) > 255 {
		return // config refuses them; a longer name cannot be a header the server read anyway
	}
	folded := make([]byte, len(name))
	for i := 0; i < len(name); i++ {
		folded[i] = foldHeaderByte(name[i])
	}
	f := string(folded)
	for _, n := range s.names {
		if n == f {
			return
		}
	}
	s.names = append(s.names, f)
	s.lens[len(f)/64] |= 1 << (len(f) % 64)
}

// mayHave reports whether an identity header is n bytes long: most
// header names are ruled out by this alone.
func (s *identitySet) mayHave(n int) bool {
	return n < 256 && s.lens[(n>>6)&3]&(1<<(n&63)) != 0
}

// has reports whether the header name is an identity header or a look-alike.
func (s *identitySet) has(name string) bool {
	if !s.mayHave(len(name)) {
		return false
	}
	for _, n := range s.names {
		if len(n) == len(name) && foldedEqual(name, n) {
			return true
		}
	}
	return false
}

// foldedEqual reports whether name, folded, is folded.
func foldedEqual(name, folded string) bool {
	for i := 0; i < len(name); i++ {
		if foldHeaderByte(name[i]) != folded[i] {
			return false
		}
	}
	return true
}

// foldHeaderByte maps a byte of a header name to what upstreams that
// treat '_' as '-' and ignore case (nginx with underscores_in_headers,
// CGI's HTTP_X_USER_ID, Spring) compare.
func foldHeaderByte(c byte) byte {
	switch {
	case c == '_':
		return '-'
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return c
}

// hopTokens may stay in the Connection header: they name the connection's
// options and the hop-by-hop headers the proxy removes itself, or keeps
// for the next hop when it must (Upgrade for WebSocket, "TE: trailers").
var hopTokens = [...]string{"close", "keep-alive", "upgrade", "te", "trailer", "transfer-encoding",
	"proxy-connection", "proxy-authenticate", "proxy-authorization", "connection"}

func isHopToken(s string) bool {
	for _, t := range hopTokens {
		if len(s) == len(t) && strings.EqualFold(s, t) {
			return true
		}
	}
	return false
}

// edgeCounters count what the edge did to requests: dubbogw_edge_total{action}.
type edgeCounters struct {
	identityRemoved   prometheus.Counter // a client's identity header or look-alike
	connectionRemoved prometheus.Counter // a header the client's Connection named
	hostDot           prometheus.Counter // a host's trailing dot
	forwardedUnknown  prometheus.Counter // a trusted proxy's X-Forwarded-For with a malformed hop
	pathRefused       prometheus.Counter // a path refused with 400
}

func newEdgeCounters(reg prometheus.Registerer) edgeCounters {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_edge_total",
		Help: "What the gateway did to requests as they entered, before routing: identity_header_removed, " +
			"connection_listed_removed, host_trailing_dot_removed, forwarded_for_unknown (a trusted proxy " +
			"relayed a malformed X-Forwarded-For hop: the client is unknown), path_refused (400).",
	}, []string{"action"})
	reg.MustRegister(v)
	return edgeCounters{
		identityRemoved:   v.WithLabelValues("identity_header_removed"),
		connectionRemoved: v.WithLabelValues("connection_listed_removed"),
		hostDot:           v.WithLabelValues("host_trailing_dot_removed"),
		forwardedUnknown:  v.WithLabelValues("forwarded_for_unknown"),
		pathRefused:       v.WithLabelValues("path_refused"),
	}
}

// cleanHeaders removes from r what a client may not send past the edge:
// the headers its Connection header names and identity headers. It runs
// before the request id is picked and before any filter, so whatever the
// gateway sets later is never removed.
func (g *Gateway) cleanHeaders(t *table, r *http.Request) {
	h := r.Header
	var conn []string
	for name, v := range h { // one pass over the names, no lookup
		if len(name) == len("Connection") && name == "Connection" {
			conn = v
		} else if t.identity.mayHave(len(name)) && t.identity.has(name) {
			delete(h, name) // deleting during range is safe: the entry is not visited again
			g.metrics.edge.identityRemoved.Inc()
		}
	}
	if conn != nil {
		if n := removeConnectionListed(h, conn); n > 0 {
			g.metrics.edge.connectionRemoved.Add(float64(n))
		}
	}
	if host := trimHostDots(r.Host); host != r.Host {
		r.Host = host
		g.metrics.edge.hostDot.Inc()
	}
}

// removeConnectionListed deletes the headers the Connection values conn
// name, other than hop-by-hop ones, and leaves in Connection only its
// hop-by-hop tokens (none: no Connection header). It returns how many
// names it removed; it allocates only when there were some.
func removeConnectionListed(h http.Header, conn []string) int {
	if len(conn) == 1 && (conn[0] == "keep-alive" || conn[0] == "close" || conn[0] == "Keep-Alive") {
		return 0 // what nearly every client sends
	}
	removed := 0
	for _, v := range conn {
		for v != "" {
			var name string
			name, v, _ = strings.Cut(v, ",")
			if name = strings.TrimSpace(name); name == "" || isHopToken(name) {
				continue
			}
			delete(h, http.CanonicalHeaderKey(name))
			removed++
		}
	}
	if removed == 0 {
		return 0
	}
	var kept []string
	for _, v := range conn {
		for v != "" {
			var name string
			name, v, _ = strings.Cut(v, ",")
			if name = strings.TrimSpace(name); name != "" && isHopToken(name) {
				kept = append(kept, name)
			}
		}
	}
	if len(kept) == 0 {
		delete(h, "Connection")
	} else {
		h["Connection"] = []string{strings.Join(kept, ", ")}
	}
	return removed
}

// trimHostDots removes the trailing dots of a host's name, keeping its
// port: "api.example.com.:8080" is "api.example.com:8080". A bracketed
// IPv6 host is returned as it is.
func trimHostDots(host string) string {
	if host == "" || host[len(host)-1] != '.' && (host[len(host)-1] < '0' || host[len(host)-1] > '9') {
		return host // no trailing dot, no port: nearly every host
	}
	name, port := host, ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[:i], ':') < 0 {
		name, port = host[:i], host[i:]
	}
	if !strings.HasSuffix(name, ".") {
		return host
	}
	return strings.TrimRight(name, ".") + port
}

// checkPath says what makes a request path ambiguous: something a server
// behind the gateway could read as another path than the one the gateway
// routed and filtered (Tomcat drops ";..." path parameters, so
// "/open/..;/admin" is its "/admin"; Windows servers drop trailing dots;
// some decode twice or treat '\' as '/'). p is the decoded path, raw its
// escaped form when it differs from p's default encoding (URL.RawPath).
// It refuses:
//
//   - control characters (a NUL from %00 among them) and backslashes;
//   - escaped dots, slashes and backslashes (%2e, %2f, %5c): the gateway
//     decodes them, a server behind may not, or may decode them again;
//     also double-escaped ones (%252e);
//   - a segment ending in a dot ("/private./x"), other than "." and "..",
//     which the gateway resolves itself;
//   - a "." or ".." segment with path parameters ("..;", "..;x=1").
//
// matrix reports ';' path parameters in p: refused unless the route the
// path without them matches opts in. problem is "" when p is fine.
func checkPath(p, raw string) (matrix bool, problem string) {
	seg, semi := 1, -1 // start of the current segment, and of its parameters (-1: none)
	for i := 1; i <= len(p); i++ {
		c := byte('/')
		if i < len(p) {
			c = p[i]
			if c >= '0' && c != ';' && c != '\\' && c != 0x7f {
				continue // letters, digits and most punctuation: nothing to check
			}
		}
		switch {
		case c == '/':
			name := p[seg:i]
			if semi >= 0 {
				name = p[seg:semi]
			}
			if name == "." || name == ".." {
				if semi >= 0 {
					return matrix, `a "." or ".." segment with path parameters ("..;")`
				}
			} else if strings.HasSuffix(name, ".") {
				return matrix, "a segment ending in a dot"
			}
			seg, semi = i+1, -1
		case c < 0x20 || c == 0x7f:
			return matrix, "a control character"
		case c == '\\':
			return matrix, "a backslash"
		case c == ';':
			matrix = true
			if semi < 0 {
				semi = i
			}
		case c == '%':
			if hasEscapedSeparator(p[i:]) {
				return matrix, "a double-escaped dot, slash or backslash"
			}
		}
	}
	if raw != "" {
		for i := strings.IndexByte(raw, '%'); i >= 0; {
			if hasEscapedSeparator(raw[i:]) {
				return matrix, "an escaped dot, slash or backslash (%2e, %2f, %5c)"
			}
			j := strings.IndexByte(raw[i+1:], '%')
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return matrix, ""
}

// hasEscapedSeparator reports whether s starts with %2e, %2f or %5c, any case.
func hasEscapedSeparator(s string) bool {
	if len(s) < 3 || s[0] != '%' {
		return false
	}
	switch s[1] {
	case '2':
		return s[2] == 'e' || s[2] == 'E' || s[2] == 'f' || s[2] == 'F'
	case '5':
		return s[2] == 'c' || s[2] == 'C'
	}
	return false
}

// withoutMatrix returns p without its ';' path parameters: the path Tomcat
// and Spring route ("/cars;color=red/x" is "/cars/x").
func withoutMatrix(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	for p != "" {
		i := strings.IndexByte(p, ';')
		if i < 0 {
			b.WriteString(p)
			break
		}
		b.WriteString(p[:i])
		p = p[i:]
		if j := strings.IndexByte(p, '/'); j >= 0 {
			p = p[j:]
		} else {
			p = ""
		}
	}
	return b.String()
}

// refuse answers 400 BAD_REQUEST for a request the edge will not pass, and
// logs it, at most one line per second (the lines not written are counted
// in the next one): a client sending many cannot flood the log.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, info *exchange.Info, message string) {
	g.metrics.edge.pathRefused.Inc()
	exchange.Fail(w, r, exchange.CodeBadRequest, message)
	if ok, dropped := g.edgeLog.Allow(time.Now()); ok {
		g.log.Warn("request refused at the edge", "reason", message, "request_id", info.RequestID,
			"client", info.ClientIP.String(), "uri", truncate(r.RequestURI, 256), "not_logged_before", dropped)
	}
}

// noteUnknownClient counts, and logs at most once a second, a trusted
// proxy's X-Forwarded-For with a malformed hop.
func (g *Gateway) noteUnknownClient(r *http.Request, info *exchange.Info) {
	g.metrics.edge.forwardedUnknown.Inc()
	if ok, dropped := g.edgeLog.Allow(time.Now()); ok {
		g.log.Warn("malformed X-Forwarded-For from a trusted proxy: the client is unknown", "request_id", info.RequestID,
			"peer", r.RemoteAddr, "x_forwarded_for", truncate(strings.Join(r.Header.Values("X-Forwarded-For"), ", "), 256),
			"not_logged_before", dropped)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
