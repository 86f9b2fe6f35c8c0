package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
)

// Defaults of the Dubbo client and routes, as Java Dubbo users expect them.
const (
	DefaultDubboConnsPerAddr  = 1
	DefaultDubboDialTimeout   = Duration(3 * time.Second)
	DefaultDubboHeartbeat     = Duration(60 * time.Second)
	DefaultDubboMaxPayload    = ByteSize(8 << 20)
	DefaultDubboMaxPending    = 10000
	DefaultDubboTimeout       = Duration(time.Second)
	DefaultDubboRetries       = 2
	DefaultDubboCluster       = "failover" // cluster.Failover
	DefaultDubboLoadBalance   = "random"
	DefaultExceptionStatus    = 500
	DefaultBreakerMaxFailures = 5
	DefaultBreakerRatio       = 0.5
	DefaultBreakerWindow      = Duration(10 * time.Second)
	DefaultBreakerMinRequests = 20
	DefaultBreakerOpenFor     = Duration(10 * time.Second)
	DefaultBreakerProbes      = 1

	DefaultZooKeeperRoot           = "dubbo"
	DefaultZooKeeperSessionTimeout = Duration(30 * time.Second)
	DefaultZooKeeperTimeout        = Duration(5 * time.Second)
	DefaultRegistryApplication     = "dubbogw"
	DefaultRegistryReleaseAfter    = Duration(30 * time.Second)
	DefaultRegistryStartupWait     = Duration(3 * time.Second)
	DefaultZooKeeperWatchGC        = Duration(time.Minute)
	DefaultZooKeeperDiscovery      = DiscoveryAuto
	DefaultMetadataTimeout         = Duration(3 * time.Second)
	DefaultMetadataConcurrency     = 8
	DefaultMetadataCache           = 1024
	DefaultMaxReferences           = 1024
	DefaultReferenceIdleTTL        = Duration(10 * time.Minute)
	DefaultReferenceNewPerSecond   = 100
	DefaultReferenceSubscriptions  = 2048
)

// DefaultDubboBodyBudget is a route's default max_body_bytes_in_flight:
// four bodies of the default size limit at once, or thousands of small ones.
const DefaultDubboBodyBudget = ByteSize(32 << 20)

// Registry types.
const (
	RegistryStatic    = "static"
	RegistryZooKeeper = "zookeeper"
)

// Sources of a DubboParam.
const (
	FromPath     = "path"
	FromQuery    = "query"
	FromHeader   = "header"
	FromBody     = "body"
	FromConstant = "constant"
)

var (
	paramSources = []string{FromPath, FromQuery, FromHeader, FromBody, FromConstant}
)

func defaultDubbo(c *Config) {
	d := &c.Dubbo
	setDefault(&d.ConnsPerAddr, DefaultDubboConnsPerAddr)
	setDefault(&d.DialTimeout, DefaultDubboDialTimeout)
	setDefault(&d.Heartbeat, DefaultDubboHeartbeat)
	setDefault(&d.MaxPayload, DefaultDubboMaxPayload)
	setDefault(&d.MaxPending, DefaultDubboMaxPending)
	setDefault(&d.References.Max, DefaultMaxReferences)
	setDefault(&d.References.IdleTTL, DefaultReferenceIdleTTL)
	setDefault(&d.References.NewPerSecond, DefaultReferenceNewPerSecond)
	setDefault(&d.References.MaxSubscriptions, DefaultReferenceSubscriptions)
	for _, reg := range c.Registries {
		if reg == nil {
			continue
		}
		setDefault(&reg.Type, RegistryStatic)
		setDefault(&reg.ReleaseAfter, DefaultRegistryReleaseAfter)
		setDefault(&reg.StartupWait, DefaultRegistryStartupWait)
		if reg.Type == RegistryZooKeeper {
			setDefault(&reg.Root, DefaultZooKeeperRoot)
			setDefault(&reg.SessionTimeout, DefaultZooKeeperSessionTimeout)
			setDefault(&reg.Timeout, DefaultZooKeeperTimeout)
			setDefault(&reg.Application, DefaultRegistryApplication)
			setDefault(&reg.WatchGC, DefaultZooKeeperWatchGC)
			setDefaultPtr(&reg.Register, true)
			setDefault(&reg.Discovery, DefaultZooKeeperDiscovery)
			setDefault(&reg.Metadata.Timeout, DefaultMetadataTimeout)
			setDefault(&reg.Metadata.Concurrency, DefaultMetadataConcurrency)
			setDefault(&reg.Metadata.Cache, DefaultMetadataCache)
		}
	}
	for _, r := range c.Routes {
		if r == nil || r.Dubbo == nil {
			continue
		}
		dr := r.Dubbo
		deriveRegistry(c, dr)
		setDefaultPtr(&dr.Generic, true)
		setDefault(&dr.Timeout, r.Timeout)
		setDefault(&dr.Timeout, DefaultDubboTimeout)
		setDefault(&r.Timeout, dr.Timeout)
		setDefault(&dr.Cluster, DefaultDubboCluster)
		setDefaultPtr(&dr.Retries, DefaultDubboRetries)
		setDefaultPtr(&dr.Idempotent, readOnlyMethods(r.Match.Methods))
		setDefault(&dr.LoadBalance, DefaultDubboLoadBalance)
		if dr.HashArguments == nil {
			dr.HashArguments = []int{0}
		}
		setDefault(&dr.ExceptionStatus, DefaultExceptionStatus)
		maxBody := r.MaxBodyBytes
		if maxBody == 0 {
			maxBody = c.Server.MaxBodyBytes
		}
		setDefault(&dr.MaxBodyBytesInFlight, max(DefaultDubboBodyBudget, maxBody))
		b := &dr.Breaker
		setDefaultPtr(&b.Enabled, true)
		setDefault(&b.MaxFailures, DefaultBreakerMaxFailures)
		setDefaultPtr(&b.FailureRatio, DefaultBreakerRatio)
		setDefault(&b.Window, DefaultBreakerWindow)
		setDefault(&b.MinRequests, DefaultBreakerMinRequests)
		setDefault(&b.OpenFor, DefaultBreakerOpenFor)
		setDefault(&b.HalfOpenProbes, DefaultBreakerProbes)
		for i := range dr.Params {
			p := &dr.Params[i]
			setDefault(&p.From, FromBody)
			setDefaultPtr(&p.Required, p.From == FromPath)
		}
	}
}

// readOnlyMethods reports whether methods are all GET or HEAD (and not empty):
// only then may a call that reached a provider be sent again by default.
func readOnlyMethods(methods []string) bool {
	if len(methods) == 0 {
		return false
	}
	for _, m := range methods {
		if m != "GET" && m != "HEAD" {
			return false
		}
	}
	return true
}

func validateDubbo(ps *problems, c *Config) {
	d := &c.Dubbo
	if d.ConnsPerAddr < 1 || d.ConnsPerAddr > 64 {
		ps.add("dubbo.conns_per_addr", 0, "must be 1..64, got %d", d.ConnsPerAddr)
	}
	if err := positive(d.DialTimeout); err != nil {
		ps.add("dubbo.dial_timeout", 0, "%v", err)
	}
	if d.Heartbeat.D() < 100*time.Millisecond {
		ps.add("dubbo.heartbeat", 0, "%s is too short: at least 100ms", d.Heartbeat.D())
	}
	if d.MaxPayload < 1<<10 {
		ps.add("dubbo.max_payload", 0, "%d bytes is too small: at least 1KiB", d.MaxPayload)
	}
	if d.MaxPending < 1 {
		ps.add("dubbo.max_pending", 0, "must be at least 1, got %d", d.MaxPending)
	}
	validateTypes(ps, "dubbo.types", d.Types)
	validateAllowedClasses(ps, "dubbo.allowed_classes", d.AllowedClasses)

	for _, name := range slices.Sorted(maps.Keys(c.Registries)) {
		reg := c.Registries[name]
		path := keyPath("registries", name)
		if !routeName.MatchString(name) && (reg == nil || reg.derivedFrom == "") {
			ps.add(path, 0, "registry name %q: use only letters, digits, '-', '_' and '.'", name)
		}
		if reg == nil {
			ps.add(path, 0, "empty registry: set type and providers")
			continue
		}
		switch reg.Type {
		case RegistryZooKeeper:
			validateZooKeeper(ps, path, reg)
			continue
		case RegistryStatic:
		default:
			ps.add(path+".type", 0, "unknown registry type %q (known: static, zookeeper)", reg.Type)
			continue
		}
		if len(reg.Providers) == 0 {
			ps.add(path+".providers", 0, "a static registry needs providers: interface → [\"host:port\", ...]")
		}
		for _, iface := range slices.Sorted(maps.Keys(reg.Providers)) {
			ipath := keyPath(path+".providers", iface)
			if !JavaName(iface) {
				ps.add(ipath, 0, "%q is not a Java interface name", iface)
			}
			for i, u := range reg.Providers[iface] {
				if err := checkProviderURL(u); err != nil {
					ps.add(indexPath(ipath, i), 0, "%v", err)
				}
			}
		}
	}
	if d.References.Max < 1 {
		ps.add("dubbo.references.max", 0, "must be at least 1, got %d", d.References.Max)
	}
	if d.References.NewPerSecond < 1 {
		ps.add("dubbo.references.new_per_second", 0, "must be at least 1, got %d", d.References.NewPerSecond)
	}
	if d.References.MaxSubscriptions < 1 {
		ps.add("dubbo.references.max_subscriptions", 0, "must be at least 1, got %d", d.References.MaxSubscriptions)
	}
	if c.Demo.Dubbo != "" {
		if err := checkListenAddr(c.Demo.Dubbo); err != nil {
			ps.add("demo.dubbo", 0, "%v", err)
		}
	}
}

// deriveRegistry points a route asking for another discovery mode than its
// (zookeeper) registry's at "<registry>@<mode>", a copy of that registry
// with the mode, made once for every route asking for it. Anything else is
// left to validation.
func deriveRegistry(c *Config, dr *DubboRoute) {
	mode := dr.Discovery
	reg := c.Registries[dr.Registry]
	if mode == "" || !slices.Contains(discoveryModes, mode) || reg == nil || reg.Type != RegistryZooKeeper ||
		reg.Discovery == mode || reg.derivedFrom != "" {
		return
	}
	name := dr.Registry + "@" + mode
	if c.Registries[name] == nil {
		cp := *reg
		cp.Discovery, cp.derivedFrom = mode, dr.Registry
		c.Registries[name] = &cp
	}
	dr.Registry = name
}

// validateDubboRoute checks routes[i].dubbo; params are the route path's parameters.
func validateDubboRoute(ps *problems, c *Config, path string, r *Route, params []string) {
	dr := r.Dubbo
	switch reg := dr.Registry; {
	case reg == "":
		ps.add(path+".registry", 0, "required: name an entry of registries")
	case !hasKey(c.Registries, reg):
		defined := "no registries are defined"
		if len(c.Registries) > 0 {
			defined = "defined: " + strings.Join(slices.Sorted(maps.Keys(c.Registries)), ", ")
		}
		ps.add(path+".registry", 0, "registry %q is not defined; %s", reg, defined)
	}
	if m := dr.Discovery; m != "" {
		switch reg := c.Registries[dr.Registry]; {
		case !slices.Contains(discoveryModes, m):
			ps.add(path+".discovery", 0, "unknown mode %q (known: %s)", m, strings.Join(discoveryModes, ", "))
		case reg != nil && reg.Type != RegistryZooKeeper:
			ps.add(path+".discovery", 0, "registry %q is %s: discovery modes are for zookeeper registries", dr.Registry, reg.Type)
		}
	}
	if dr.Passthrough != nil {
		for _, want := range []string{"interface", "method"} {
			if !slices.Contains(params, want) {
				ps.add(path+".passthrough", 0, "the route's match.path must capture {%s} (e.g. /dubbo/{interface}/{method})", want)
			}
		}
		if len(dr.Passthrough.Allow) == 0 {
			ps.add(path+".passthrough.allow", 0, "required: list the interfaces that may be called (exact names or a prefix such as com.example.*)")
		}
		for i, a := range dr.Passthrough.Allow {
			if !JavaName(strings.TrimSuffix(a, ".*")) {
				ps.add(indexPath(path+".passthrough.allow", i), 0, "%q is neither an interface name nor a package prefix ending in .*", a)
			}
		}
		identity := identityAttachments(c)
		for i, k := range dr.Passthrough.Attachments {
			kp := indexPath(path+".passthrough.attachments", i)
			switch {
			case strings.TrimSpace(k) == "":
				ps.add(kp, 0, "empty attachment key")
			case protocol.ReservedAttachment(k):
				ps.add(kp, 0, "%q is an attachment Dubbo reserves (service, group, version, token, generic, timeout, routing...): a client may never set it", k)
			case slices.Contains(identity, strings.ToLower(k)):
				ps.add(kp, 0, "%q carries identity (a filter that authenticates sets it): a client may never set it", k)
			case slices.Contains(dr.Passthrough.Attachments[:i], k):
				ps.add(kp, 0, "%q is listed twice", k)
			}
		}
		if dr.Interface != "" || dr.Method != "" || len(dr.Params) > 0 {
			ps.add(path+".passthrough", 0, "a pass-through route takes interface, method and arguments from the request: remove interface, method and params")
		}
	} else {
		if !JavaName(dr.Interface) {
			ps.add(path+".interface", 0, "required: a Java interface name such as com.example.UserService, got %q", dr.Interface)
		}
		if !JavaIdent(dr.Method) {
			ps.add(path+".method", 0, "required: a Java method name, got %q", dr.Method)
		}
	}
	if err := positive(dr.Timeout); err != nil {
		ps.add(path+".timeout", 0, "%v", err)
	}
	if dr.Async && dr.Generic != nil && !*dr.Generic {
		ps.add(path+".async", 0, "async ($invokeAsync) is a generic call: set generic: true or drop async")
	}
	if _, err := cluster.ParseMode(dr.Cluster); err != nil {
		ps.add(path+".cluster", 0, "%v", err)
	}
	if !slices.Contains(cluster.PolicyNames(), dr.LoadBalance) {
		ps.add(path+".loadbalance", 0, "unknown load balance %q (known: %s)", dr.LoadBalance, strings.Join(cluster.PolicyNames(), ", "))
	}
	if dr.Retries != nil && (*dr.Retries < 0 || *dr.Retries > 10) {
		ps.add(path+".retries", 0, "must be 0..10, got %d", *dr.Retries)
	}
	if dr.ExceptionStatus < 400 || dr.ExceptionStatus > 599 {
		ps.add(path+".exception_status", 0, "must be an HTTP error status 400..599, got %d", dr.ExceptionStatus)
	}
	if dr.LoadBalance == cluster.PolicyConsistentHash && dr.Passthrough == nil {
		for i, a := range dr.HashArguments {
			if a < 0 || a >= len(dr.Params) {
				ps.add(indexPath(path+".hash_arguments", i), 0, "argument %d does not exist: the method has %d parameters", a, len(dr.Params))
			}
		}
	}
	validateTypes(ps, path+".types", dr.Types)
	validateAllowedClasses(ps, path+".allowed_classes", dr.AllowedClasses)
	for _, class := range slices.Sorted(maps.Keys(dr.Types)) {
		if jsonbridge.DeniedClass(class) {
			ps.add(keyPath(path+".types", class), 0, "%q is a known deserialization gadget: never allowed", class)
		}
	}
	for i, p := range dr.Params {
		if jsonbridge.DeniedClass(p.Type) {
			ps.add(indexPath(path+".params", i)+".type", 0, "%q is a known deserialization gadget: never allowed", p.Type)
		}
	}
	if dr.MaxBodyBytesInFlight < r.MaxBodyBytes {
		ps.add(path+".max_body_bytes_in_flight", 0, "%d bytes is less than the route's max_body_bytes (%d): a body within the limit could never be taken", dr.MaxBodyBytesInFlight, r.MaxBodyBytes)
	}
	b := &dr.Breaker
	if b.MaxFailures < 1 {
		ps.add(path+".breaker.max_failures", 0, "must be at least 1, got %d", b.MaxFailures)
	}
	if b.FailureRatio != nil && (*b.FailureRatio < 0 || *b.FailureRatio > 1) {
		ps.add(path+".breaker.failure_ratio", 0, "must be 0..1 (0 turns the ratio rule off), got %v", *b.FailureRatio)
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"window", b.Window}, {"open_for", b.OpenFor}} {
		if err := positive(d.v); err != nil {
			ps.add(path+".breaker."+d.key, 0, "%v", err)
		}
	}
	if b.HalfOpenProbes < 1 {
		ps.add(path+".breaker.half_open_probes", 0, "must be at least 1, got %d", b.HalfOpenProbes)
	}
	validateParams(ps, path, dr.Params, params)
}

func validateParams(ps *problems, path string, ps0 []DubboParam, routeParams []string) {
	wholeBody, positional := -1, 0
	for i, p := range ps0 {
		pp := indexPath(path+".params", i)
		if strings.TrimSpace(p.Type) == "" {
			ps.add(pp+".type", 0, "required: the parameter's Java type, e.g. java.lang.String, int, com.example.User")
		}
		if !slices.Contains(paramSources, p.From) {
			ps.add(pp+".from", 0, "unknown source %q (known: %s)", p.From, strings.Join(paramSources, ", "))
			continue
		}
		switch p.From {
		case FromPath:
			if !slices.Contains(routeParams, p.Name) {
				ps.add(pp+".name", 0, "path parameter %q is not captured by the route's match.path (it captures: %s)", p.Name, strings.Join(routeParams, ", "))
			}
		case FromQuery, FromHeader:
			if p.Name == "" {
				ps.add(pp+".name", 0, "required: the %s parameter to read", p.From)
			}
		case FromConstant:
			if p.Value == nil {
				ps.add(pp+".value", 0, "required: the constant's value")
			}
		case FromBody:
			switch {
			case p.Pointer != "" && p.Name != "":
				ps.add(pp, 0, "set name (a top-level field) or pointer, not both")
			case p.Pointer != "":
				if !strings.HasPrefix(p.Pointer, "/") {
					ps.add(pp+".pointer", 0, "a JSON pointer starts with /, got %q", p.Pointer)
				}
			case p.Name == "":
				positional++
				if wholeBody < 0 {
					wholeBody = i
				}
			}
		}
		if p.Pointer != "" && p.From != FromBody {
			ps.add(pp+".pointer", 0, "pointer applies to from: body only")
		}
	}
	// One unnamed body parameter takes the whole body; several take the
	// elements of a JSON array body by position. Mixing them with named or
	// pointer body parameters would read the body two ways.
	if positional > 0 {
		for i, p := range ps0 {
			if p.From == FromBody && (p.Name != "" || p.Pointer != "") {
				ps.add(indexPath(path+".params", i), 0, "params[%d] takes the whole body (no name or pointer): bind every body parameter by name or pointer, or none", wholeBody)
				break
			}
		}
	}
}

// validateAllowedClasses checks allowed_classes: class names or package
// prefixes ending in ".*", none of them a known gadget.
func validateAllowedClasses(ps *problems, path string, classes []string) {
	for i, c := range classes {
		name := strings.TrimSuffix(c, ".*")
		switch {
		case !JavaName(name):
			ps.add(indexPath(path, i), 0, "%q is neither a class name nor a package prefix ending in .*", c)
		case jsonbridge.DeniedClass(name + "."), jsonbridge.DeniedClass(name):
			ps.add(indexPath(path, i), 0, "%q is or contains known deserialization gadgets: never allowed", c)
		}
	}
}

// DefaultIdentityAttachment is the attachment key (lower-case) that
// carries the user's id when a filter authenticates: no Dubbo route may
// set it, even where no filter does.
const DefaultIdentityAttachment = "userid"

// identityAttachments are the attachment keys (lower-case) that carry
// identity: those any identity filter of the configuration sets, and
// DefaultIdentityAttachment.
func identityAttachments(c *Config) []string {
	keys := []string{DefaultIdentityAttachment}
	identityOf(c, func(s IdentitySource) {
		for _, k := range s.IdentityAttachments() {
			keys = append(keys, strings.ToLower(k))
		}
	})
	return keys
}

func validateTypes(ps *problems, path string, types map[string]map[string]string) {
	for _, class := range slices.Sorted(maps.Keys(types)) {
		if !JavaName(class) {
			ps.add(keyPath(path, class), 0, "%q is not a Java class name", class)
		}
		for _, field := range slices.Sorted(maps.Keys(types[class])) {
			if !JavaIdent(field) {
				ps.add(keyPath(keyPath(path, class), field), 0, "%q is not a Java field name", field)
			}
		}
	}
}

// checkProviderURL accepts "host:port" or "dubbo://host:port[/path][?params]".
// Its errors show the URL redacted (RedactURL): parameters such as token
// are secrets.
func checkProviderURL(s string) error {
	if !strings.Contains(s, "://") {
		s = "dubbo://" + s
	}
	shown := RedactURL(s)
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a provider URL%s", shown, urlErrorDetail(s, err))
	}
	if u.Scheme != "dubbo" {
		return fmt.Errorf("%q: protocol %q is not supported (dubbo only)", shown, u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return fmt.Errorf("%q: want host:port", shown)
	}
	return checkPort(port, false)
}

// JavaIdent reports whether s is a Java identifier (a method or field name).
func JavaIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 0x7f || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// JavaName reports whether s is a dotted Java name (a class or interface).
func JavaName(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !JavaIdent(part) {
			return false
		}
	}
	return true
}

// ZooKeeperAddrs splits a zookeeper registry address ("h:p,h2:p", with or
// without "zookeeper://") into host:port entries.
func ZooKeeperAddrs(address string) []string {
	address = strings.TrimPrefix(strings.TrimSpace(address), "zookeeper://")
	var out []string
	for _, a := range strings.Split(address, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func validateZooKeeper(ps *problems, path string, reg *Registry) {
	if len(reg.Providers) > 0 {
		ps.add(path+".providers", 0, "providers are for static registries; a zookeeper registry reads them from ZooKeeper")
	}
	addrs := ZooKeeperAddrs(reg.Address)
	if len(addrs) == 0 {
		ps.add(path+".address", 0, "required: ZooKeeper's host:port (several separated by commas)")
	}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			ps.add(path+".address", 0, "%q is not host:port", RedactURL(a))
		}
	}
	if strings.Contains(strings.Trim(reg.Root, "/"), "/") || strings.Trim(reg.Root, "/") == "" {
		ps.add(path+".root", 0, "%q: want one node name, such as \"dubbo\"", reg.Root)
	}
	if reg.SessionTimeout.D() < 2*time.Second {
		ps.add(path+".session_timeout", 0, "must be at least 2s, got %s", reg.SessionTimeout.D())
	}
	if (reg.Username == "") != (reg.Password == "") {
		ps.add(path+".username", 0, "username and password go together")
	}
	if !slices.Contains(discoveryModes, reg.Discovery) {
		ps.add(path+".discovery", 0, "unknown mode %q (known: %s)", reg.Discovery, strings.Join(discoveryModes, ", "))
	}
	if root := strings.Trim(reg.ServicesRoot, "/"); reg.ServicesRoot != "" && (root == "" || strings.Contains(root, "//")) {
		ps.add(path+".services_root", 0, "%q: want a ZooKeeper path, such as \"/services\"", reg.ServicesRoot)
	}
	if reg.Metadata.Timeout.D() <= 0 {
		ps.add(path+".metadata.timeout", 0, "must be positive")
	}
	if reg.Metadata.Concurrency < 1 || reg.Metadata.Concurrency > 1024 {
		ps.add(path+".metadata.concurrency", 0, "must be between 1 and 1024, got %d", reg.Metadata.Concurrency)
	}
	if reg.Metadata.Cache < 1 {
		ps.add(path+".metadata.cache", 0, "must be at least 1, got %d", reg.Metadata.Cache)
	}
}

// Discovery modes of a zookeeper registry.
const (
	DiscoveryInterface   = "interface"
	DiscoveryApplication = "application"
	DiscoveryAuto        = "auto"
)

var discoveryModes = []string{DiscoveryAuto, DiscoveryInterface, DiscoveryApplication}
