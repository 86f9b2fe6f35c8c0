package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/router"
)

// Validate checks a defaulted configuration. It returns nil or an *Error
// listing every problem found, sorted by YAML path (lines are unknown here;
// Parse fills them in).
func Validate(c *Config) error {
	ps := validate(c)
	if len(ps) == 0 {
		return nil
	}
	sortProblems(ps)
	return &Error{Problems: ps}
}

// Warnings lists what is allowed but probably unintended: an admin
// listener reachable from other machines without a token, and what
// sections find (upstreams that no route uses). Sorted by path.
func Warnings(c *Config) []Problem {
	var ps problems
	adminWarnings(&ps, &c.Admin)
	for _, key := range sections.names() {
		if w, ok := c.Sections[key].(SectionWarner); ok {
			w.Warn(At{&ps, key}, c)
		}
	}
	sortProblems(ps)
	return ps
}

func validate(c *Config) problems {
	var ps problems
	check := func(path string, err error) {
		if err != nil {
			ps.add(path, 0, "%v", err)
		}
	}

	check("listen", checkListenAddr(c.Listen))
	check("admin.listen", checkListenAddr(c.Admin.Listen))
	if checkListenAddr(c.Listen) == nil && checkListenAddr(c.Admin.Listen) == nil {
		check("admin.listen", checkListenersApart(c.Listen, c.Admin.Listen))
	}
	validateAdmin(&ps, &c.Admin)
	check("log.level", checkLogLevel(c.Log.Level))
	check("log.format", checkLogFormat(c.Log.Format))

	s := &c.Server
	check("server.read_header_timeout", Positive(s.ReadHeaderTimeout))
	check("server.idle_timeout", Positive(s.IdleTimeout))
	if s.Engine != EngineLoop && s.Engine != EngineNetHTTP {
		ps.add("server.engine", 0, "%q: want %q or %q", s.Engine, EngineLoop, EngineNetHTTP)
	}
	if s.MaxHeaderBytes < 1<<10 {
		ps.add("server.max_header_bytes", 0, "%d bytes is too small: at least 1KiB", s.MaxHeaderBytes)
	}
	if s.MaxBodyBytes < 0 {
		ps.add("server.max_body_bytes", 0, "must not be negative")
	}
	if s.MaxInFlight != nil && *s.MaxInFlight < 0 {
		ps.add("server.max_in_flight", 0, "must be 0 (no limit) or more, got %d", *s.MaxInFlight)
	}
	check("server.body_grace", Positive(s.BodyGrace))
	check("server.write_timeout", Positive(s.WriteTimeout))
	if s.MaxConnections != nil && *s.MaxConnections < 0 {
		ps.add("server.max_connections", 0, "must be 0 (no cap) or more, got %d", *s.MaxConnections)
	}
	if s.MaxConnectionsPerIP != nil && *s.MaxConnectionsPerIP < 0 {
		ps.add("server.max_connections_per_ip", 0, "must be 0 (no cap) or more, got %d", *s.MaxConnectionsPerIP)
	}
	if s.MaxConcurrentStreams < 1 {
		ps.add("server.max_concurrent_streams", 0, "must be at least 1, got %d", s.MaxConcurrentStreams)
	}
	for i, p := range s.TrustedProxies {
		if _, err := exchange.ParsePrefix(p); err != nil {
			ps.add(indexPath("server.trusted_proxies", i), 0, "%q is not an IP address or CIDR", p)
		}
	}

	for i, h := range s.IdentityHeaders {
		if err := CheckIdentityHeader(h, c.RequestID.Header); err != nil {
			ps.add(indexPath("server.identity_headers", i), 0, "%v", err)
		}
	}

	if c.Shutdown.IdleGrace != nil {
		check("shutdown.idle_grace", NonNegative(*c.Shutdown.IdleGrace))
	}
	if c.Shutdown.Delay != nil {
		check("shutdown.delay", NonNegative(*c.Shutdown.Delay))
	}
	check("shutdown.drain_timeout", Positive(c.Shutdown.DrainTimeout))
	if c.Reload.Watch && c.Reload.Interval.D() < 100*time.Millisecond {
		ps.add("reload.interval", 0, "%s is too short for watching the file: at least 100ms", c.Reload.Interval.D())
	} else {
		check("reload.interval", NonNegative(c.Reload.Interval))
	}
	check("request_id.header", CheckHeaderName(c.RequestID.Header))
	check("access_log.output", checkLogOutput(c.AccessLog.Output))

	validateFilters(&ps, "default_filters", c.DefaultFilters, FilterContext{Redis: c.Redis.Address != ""})
	for _, key := range sections.names() {
		if s := c.Sections[key]; s != nil {
			s.Validate(At{&ps, key}, c)
		}
	}
	validateRegistries(&ps, c.Registries)
	validateRoutes(&ps, c)
	validateRisk(&ps, c)
	validateTracing(&ps, c)

	if c.Demo.HTTP != "" {
		check("demo.http", checkListenAddr(c.Demo.HTTP))
	}
	if c.Demo.Dubbo != "" {
		check("demo.dubbo", checkListenAddr(c.Demo.Dubbo))
	}
	if c.Demo.Triple != "" {
		check("demo.triple", checkListenAddr(c.Demo.Triple))
	}
	return ps
}

func validateRoutes(ps *problems, c *Config) {
	firstByName := make(map[string]int)
	for i, r := range c.Routes {
		path := indexPath("routes", i)
		if r == nil {
			ps.add(path, 0, "empty route")
			continue
		}
		switch first, dup := firstByName[r.Name]; {
		case r.Name == "":
			ps.add(path+".name", 0, "required: every route has a unique name")
		case !CheckName(r.Name):
			ps.add(path+".name", 0, "%q: use only letters, digits, '-', '_' and '.'", r.Name)
		case dup:
			ps.add(path+".name", 0, "duplicate route name %q (first used by routes[%d])", r.Name, first)
		default:
			firstByName[r.Name] = i
		}

		params := validateMatch(ps, path+".match", &r.Match)
		validatePredicates(At{ps, path + ".match"}, c, &r.Match)

		if r.Spec == nil {
			// Decoding reports this at the same path; a configuration built
			// in code meets it here.
			ps.add(path, 0, "say what the route calls: set one of %s", strings.Join(RouteKinds(), ", "))
		} else {
			r.Spec.Validate(At{ps, path}, RouteContext{Config: c, Route: r, Params: params})
		}
		if err := NonNegative(r.Timeout); err != nil {
			ps.add(path+".timeout", 0, "%v", err)
		}
		if r.MaxBodyBytes < 0 {
			ps.add(path+".max_body_bytes", 0, "must not be negative")
		}
		validateFilters(ps, path+".filters", r.Filters, FilterContext{Params: params, Redis: c.Redis.Address != ""})
	}
}

var routeName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CheckName reports whether name is fit to name a route, an upstream or
// a registry: letters, digits, '-', '_' and '.'.
func CheckName(name string) bool { return routeName.MatchString(name) }

// validateRegistries checks every registry: its name, the settings every
// type shares and its type's own.
func validateRegistries(ps *problems, regs map[string]*Registry) {
	for _, name := range slices.Sorted(maps.Keys(regs)) {
		reg := regs[name]
		path := keyPath("registries", name)
		if !CheckName(name) && (reg == nil || reg.DerivedFrom == "") {
			ps.add(path, 0, "registry name %q: use only letters, digits, '-', '_' and '.'", name)
		}
		if reg == nil {
			ps.add(path, 0, "empty registry: set its type and settings")
			continue
		}
		if err := NonNegative(reg.ReleaseAfter); err != nil {
			ps.add(path+".release_after", 0, "%v", err)
		}
		if err := NonNegative(reg.StartupWait); err != nil {
			ps.add(path+".startup_wait", 0, "%v", err)
		}
		if reg.Spec == nil {
			ps.add(path+".type", 0, "unknown registry type %q (known: %s)", reg.Type, strings.Join(RegistryTypes(), ", "))
			continue
		}
		reg.Spec.Validate(At{ps, path})
	}
}

// RegistryNamed returns the registry of c called name, for a route kind's
// rules; the error says it is missing and names those defined.
func RegistryNamed(c *Config, name string) (*Registry, error) {
	reg, ok := c.Registries[name]
	switch {
	case name == "":
		return nil, errors.New("required: name an entry of registries")
	case !ok:
		return nil, NotDefined("registry", name, slices.Collect(maps.Keys(c.Registries)))
	}
	return reg, nil
}

// NotDefined is the error of a reference to an entry of a named section
// that has none called name: `upstream "x" is not defined; defined: a, b`.
func NotDefined(what, name string, defined []string) error {
	if len(defined) == 0 {
		return fmt.Errorf("%s %q is not defined; no %ss are defined", what, name, what)
	}
	return fmt.Errorf("%s %q is not defined; defined: %s", what, name, strings.Join(slices.Sorted(slices.Values(defined)), ", "))
}

// validateMatch checks a route's match and returns the names of the
// parameters of its path pattern (nil for a prefix route).
func validateMatch(ps *problems, path string, m *Match) []string {
	if m.Host != "" {
		if err := router.CheckHost(m.Host); err != nil {
			ps.add(path+".host", 0, "%q: %v", m.Host, err)
		}
	}
	CheckMethods(At{ps, path + ".methods"}, m.Methods)
	var params []string
	switch {
	case m.Path != "" && m.Prefix != "":
		ps.add(path, 0, "set either path or prefix, not both")
	case m.Path != "":
		var err error
		if params, err = parsePathPattern(m.Path); err != nil {
			ps.add(path+".path", 0, "%v", err)
		}
	case m.Prefix != "":
		if err := checkPrefix(m.Prefix); err != nil {
			ps.add(path+".prefix", 0, "%v", err)
		}
	default:
		ps.add(path, 0, `one of path or prefix is required (prefix "/" matches everything)`)
	}
	return params
}

// parsePathPattern checks "/users/{id}", "/files/{path...}" and returns the
// parameter names.
func parsePathPattern(p string) ([]string, error) {
	if err := CheckPath(p); err != nil {
		return nil, err
	}
	params, err := router.PatternParams(p)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", p, err)
	}
	return params, nil
}

func checkPrefix(p string) error {
	if err := CheckPath(p); err != nil {
		return err
	}
	if err := router.CheckPrefix(p); err != nil {
		return fmt.Errorf("%q: %w", p, err)
	}
	return nil
}

// CheckPath checks what every configured path shares: a leading "/", and
// no query, fragment, space or control character.
func CheckPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must start with \"/\"", p)
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return fmt.Errorf("%q: a path has no %q part", p, p[i:i+1])
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("%q contains a space or control character", p)
		}
	}
	return nil
}

// CheckMethods checks a list of HTTP methods at at: each one the router
// accepts (router.CheckMethod), listed once.
func CheckMethods(at At, methods []string) {
	for i, m := range methods {
		if err := router.CheckMethod(m); err != nil {
			at.Index(i).Err(err)
		} else if j := slices.Index(methods[:i], m); j >= 0 {
			at.Index(i).Errorf("%s repeats %s", m, indexPath(lastKey(at.path), j))
		}
	}
}

// lastKey returns the last key of a path: "methods" for "routes[0].match.methods".
func lastKey(path string) string {
	segs := splitPath(path)
	if len(segs) == 0 {
		return path
	}
	return segs[len(segs)-1].key
}

// validHost accepts DNS names, IPv4 addresses and bracketed IPv6 addresses.
func validHost(h string) bool {
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		a, err := netip.ParseAddr(inner)
		return ok && err == nil && a.Is6()
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// checkListenAddr accepts "host:port" with an optional host and a port 0..65535.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, nerr := strconv.Atoi(addr); nerr == nil {
			return fmt.Errorf("%q: want host:port; for any host write \":%s\"", addr, addr)
		}
		return fmt.Errorf("%q: want host:port, as in \":8080\" or \"127.0.0.1:9090\"", addr)
	}
	if err := CheckPort(port, true); err != nil {
		return fmt.Errorf("%q: %v", addr, err)
	}
	if host != "" && !validHost(host) {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("%q: %q is not a host name or IP address", addr, host)
		}
	}
	return nil
}

// CheckPort accepts a port number 1..65535 (0.. with zeroOK).
func CheckPort(port string, zeroOK bool) error {
	n, err := strconv.Atoi(port)
	low := 1
	if zeroOK {
		low = 0
	}
	if err != nil || n < low || n > 65535 || port[0] == '+' {
		return fmt.Errorf("port %q is not a number %d..65535", port, low)
	}
	return nil
}

// checkListenersApart reports when the admin listener would collide with the
// data-plane listener. Both addresses are valid.
// Port 0 asks for any free port, so two such listeners never collide.
func checkListenersApart(listen, admin string) error {
	lh, lp, _ := net.SplitHostPort(listen)
	ah, ap, _ := net.SplitHostPort(admin)
	if lp != ap || lp == "0" {
		return nil
	}
	if listen == admin {
		return fmt.Errorf("%q is also listen's address; the admin listener needs its own", admin)
	}
	if wildcardHost(lh) || wildcardHost(ah) || lh == ah {
		return fmt.Errorf("%q overlaps listen %q (same port); the admin listener needs its own", admin, listen)
	}
	return nil
}

func wildcardHost(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }

func checkLogLevel(level string) error {
	switch level {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("%q: want debug, info, warn or error%s", level, lowerHint(level))
}

func checkLogFormat(format string) error {
	switch format {
	case "json", "text":
		return nil
	}
	return fmt.Errorf("%q: want json or text%s", format, lowerHint(format))
}

func lowerHint(s string) string {
	if s != strings.ToLower(s) {
		return " (lower case)"
	}
	return ""
}

func checkLogOutput(out string) error {
	switch {
	case out == "stdout" || out == "stderr":
		return nil
	case strings.EqualFold(out, "stdout") || strings.EqualFold(out, "stderr"):
		return fmt.Errorf("%q: write %s in lower case (anything else is a file path)", out, strings.ToLower(out))
	case out == "":
		return errors.New("want stdout, stderr or a file path")
	case strings.ContainsRune(out, 0):
		return fmt.Errorf("%q: a file path cannot contain NUL", out)
	case strings.HasSuffix(out, "/"):
		return fmt.Errorf("%q is a directory; name a file", out)
	}
	return nil
}

// CheckHeaderName accepts an HTTP header field name (an RFC 9110 token).
func CheckHeaderName(name string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Errorf("%q is not a valid header name", name)
	}
	return nil
}

// notIdentity are headers that may not be listed as identity headers: the
// gateway removes identity headers from every request, and these frame
// the request, carry the client's credentials or the request id, or tell
// the gateway who the client is.
var notIdentity = []string{"host", "content-length", "content-type", "transfer-encoding", "connection",
	"keep-alive", "te", "trailer", "upgrade", "authorization", "proxy-authorization", "cookie",
	"x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "forwarded"}

// CheckIdentityHeader checks a header named as carrying who the client is
// (a server.identity_headers entry, or one a filter or the TLS listener
// sets): the gateway removes it from every request as it enters.
func CheckIdentityHeader(name, requestIDHeader string) error {
	if err := CheckHeaderName(name); err != nil {
		return err
	}
	folded := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	if slices.Contains(notIdentity, folded) || folded == strings.ToLower(requestIDHeader) {
		return fmt.Errorf("%q is not an identity header: removing it from every request would break the request, its credentials or its id", name)
	}
	return nil
}

// Positive accepts a duration of more than 0.
func Positive(d Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be more than 0, got %s", d.D())
	}
	return nil
}

// NonNegative accepts a duration of 0 or more.
func NonNegative(d Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative, got %s", d.D())
	}
	return nil
}

// URLErrorDetail is ": <why url.Parse refused raw>", or "" when raw has
// user info or a query: the reason may quote a piece of them (a bad
// escape in a password).
func URLErrorDetail(raw string, err error) string {
	if strings.ContainsAny(raw, "@?#") {
		return " (check its escapes, host and port)"
	}
	return ": " + errors.Unwrap(err).Error()
}
