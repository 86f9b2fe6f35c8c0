package zookeeper

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/registry"
)

// This file turns the children of an interface's providers and
// configurators nodes into provider snapshots, without any I/O: the
// ZooKeeper worker lists the nodes, these functions parse each child once and
// build one snapshot per service key.

// validNodeName reports whether name can be a ZooKeeper node's name.
func validNodeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// providerNode is one usable provider: a child of a providers node,
// parsed once when it first appears and kept while it stays, or a service
// an application instance's metadata lists. A large registry keeps one
// for each of tens of thousands of providers, so it keeps only copies of
// what it needs (not the decoded URL that its strings would otherwise be
// slices of) and not its child's name (~500 bytes; listings are compared
// by nodeKey).
type providerNode struct {
	match    unique.Handle[nodeMatch] // what selection reads of the URL: shared by a service's nodes
	provider *cluster.Provider        // as the URL says, before overrides
	origin   *nodeOrigin              // nil for an interface-level node
}

// nodeMatch is what a provider node is matched on after it is parsed
// (registry.MatchesKey and override.appliesTo): the same for the nodes of
// one service, so interned.
type nodeMatch struct {
	iface, group, version string
	disabled              bool
}

// addr is the provider's host:port.
func (n *providerNode) addr() string { return n.provider.Addr }

// matches reports whether the provider serves key.
func (n *providerNode) matches(key registry.ServiceKey) bool {
	m := n.match.Value()
	return registry.MatchesKey(key, m.iface, m.group, m.version, m.disabled)
}

// nodeOrigin names the application instance metadata an application-level
// node was made from (shared by the nodes of one instance).
type nodeOrigin struct{ app, instance, revision string }

// nodeKey identifies a child of a providers node among its siblings: a
// 128-bit hash of its name. Two names hashing alike would make one
// provider stand for the other; with seeds chosen at random per registry
// (nodeKeys) that is as likely as guessing them, ~2^-100 at 50,000
// providers, and a registry writer cannot choose such names.
type nodeKey struct{ a, b uint64 }

// nodeKeys makes the nodeKeys of one registry.
type nodeKeys struct{ a, b maphash.Seed }

func newNodeKeys() nodeKeys { return nodeKeys{a: maphash.MakeSeed(), b: maphash.MakeSeed()} }

func (k nodeKeys) of(name string) nodeKey {
	return nodeKey{a: maphash.String(k.a, name), b: maphash.String(k.b, name)}
}

// ofData is the key of a node's data.
func (k nodeKeys) ofData(data []byte) nodeKey {
	return nodeKey{a: maphash.Bytes(k.a, data), b: maphash.Bytes(k.b, data)}
}

// parseProviderNode parses a child of a providers node. It returns nil and
// an empty reason for a child that names no provider (Dubbo's empty://
// marker), and nil with the reason for one this gateway cannot call.
func parseProviderNode(name string) (*providerNode, string) {
	raw, err := url.QueryUnescape(name)
	if err != nil {
		return nil, "not URL-encoded: " + err.Error()
	}
	if strings.HasPrefix(raw, "empty://") {
		return nil, ""
	}
	if n := quickProviderNode(raw); n != nil {
		return n, ""
	}
	u, err := registry.ParseProviderURL(raw)
	if err != nil {
		return nil, err.Error()
	}
	return newProviderNode(u)
}

// quickProviderNode parses, in one pass and without maps, a provider URL
// of the usual shape: dubbo://host:port/interface?k=v&... with nothing to
// unescape, no IPv6 literal, user or fragment, and parameters this
// gateway accepts. It returns nil for anything else (then the precise
// path, registry.ParseProviderURL and newProviderNode, parses it or says
// why not); where it returns a node, it is the one the precise path makes
// (TestQuickProviderNode). At start a registry parses every provider of
// every routed service on its one worker: 50,000 at 5,000 services.
func quickProviderNode(raw string) *providerNode {
	proto := cluster.ProtocolDubbo
	rest, ok := strings.CutPrefix(raw, "dubbo://")
	if !ok {
		if rest, ok = strings.CutPrefix(raw, "tri://"); ok {
			proto = cluster.ProtocolTriple
		}
	}
	if !ok || strings.ContainsAny(rest, "%+;#@[") || !quickChars(rest) {
		return nil
	}
	hostPort, rest, _ := strings.Cut(rest, "?")
	hostPort, iface, _ := strings.Cut(hostPort, "/")
	host, port, ok := strings.Cut(hostPort, ":")
	if !ok || host == "" || !quickHost(host) || !quickPort(port) || strings.Contains(iface, "/") {
		return nil
	}
	p := &cluster.Provider{Addr: strings.Clone(hostPort), Weight: cluster.DefaultWeight, Warmup: cluster.DefaultWarmup, Protocol: proto}
	var match nodeMatch
	match.iface = iface
	pairs := make([]cluster.Pair, 0, 24)
	var serialization, prefer string
	for rest != "" {
		var kv string
		kv, rest, _ = strings.Cut(rest, "&")
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return nil
		}
		pairs = append(pairs, cluster.Pair{Key: k, Value: v})
	}
	// url.Values keeps every value of a key and Provider takes the first:
	// a stable sort keeps that one first among equal keys.
	slices.SortStableFunc(pairs, func(a, b cluster.Pair) int { return strings.Compare(a.Key, b.Key) })
	kept := pairs[:0]
	for i, kv := range pairs {
		if i > 0 && pairs[i-1].Key == kv.Key {
			continue
		}
		switch taken, err := p.TakeParam(kv.Key, kv.Value); {
		case err != nil:
			return nil // the precise path says which
		case taken:
			continue
		}
		switch kv.Key {
		case "category":
			if kv.Value != "" && kv.Value != "providers" {
				return nil
			}
		case "serialization":
			serialization = kv.Value
		case "prefer.serialization":
			prefer = kv.Value
		case "group":
			match.group = kv.Value
		case "version":
			match.version = kv.Value
		case "enabled":
			match.disabled = match.disabled || kv.Value == "false"
		case "disabled":
			match.disabled = match.disabled || kv.Value == "true"
		}
		kept = append(kept, kv)
	}
	if !speaksHessian2(serialization, prefer) && !idlTriple(p.Protocol.String(), serialization) {
		return nil
	}
	p.Params = cluster.NewParamsSorted(kept)
	return &providerNode{match: unique.Make(match), provider: p}
}

// quickHost reports whether host is a name or IPv4 address the quick
// path takes as it is (url.Parse would too).
func quickHost(host string) bool {
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// quickChars reports whether s has no control character or space (which
// url.Parse refuses in places, or must be escaped).
func quickChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// quickPort reports whether port is a port number in decimal digits.
func quickPort(port string) bool {
	if port == "" || len(port) > 5 || port[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
		n = n*10 + int(port[i]-'0')
	}
	return n <= 65535
}

// newProviderNode checks that this gateway can call the provider u names
// and parses it.
func newProviderNode(u *registry.ProviderURL) (*providerNode, string) {
	if _, ok := cluster.ParseProtocol(u.Protocol); !ok {
		return nil, fmt.Sprintf("protocol %q: only dubbo and tri are spoken", u.Protocol)
	}
	if c := u.Params.Get("category"); c != "" && c != "providers" {
		return nil, fmt.Sprintf("category %q is not providers", c)
	}
	if !speaksHessian2(u.Params.Get("serialization"), u.Params.Get("prefer.serialization")) && !idlTriple(u.Protocol, u.Params.Get("serialization")) {
		return nil, fmt.Sprintf("serialization %q without hessian2 in prefer.serialization: only hessian2 is spoken", u.Params.Get("serialization"))
	}
	p, err := u.Provider()
	if err != nil {
		return nil, err.Error()
	}
	p.Addr = strings.Clone(p.Addr)
	match := nodeMatch{iface: u.Interface, group: u.Params.Get("group"), version: u.Params.Get("version"), disabled: u.Disabled()}
	return &providerNode{match: unique.Make(match), provider: p}, ""
}

// nodeOffer is one service of a metadata revision made ready for the
// instances at that revision, which differ only in their address: the
// provider node parsed once (its address empty), or, in Skip, why the
// service is not used.
type nodeOffer struct {
	registry.Offer // URL dropped once parsed into node
	node           providerNode
}

// nodeOffers prepares the services of a fetched metadata for its
// instances (apps.instanceNodes).
func nodeOffers(info *registry.MetadataInfo) []nodeOffer {
	offers := info.Offers()
	nodes := make([]nodeOffer, len(offers))
	for i, o := range offers {
		nodes[i].Offer = o
		if o.Skip != "" {
			continue
		}
		n, reason := newProviderNode(o.URL)
		if n == nil {
			nodes[i].Skip = reason
		} else {
			nodes[i].node = *n
		}
		nodes[i].URL = nil
	}
	return nodes
}

// offerNodes are the providers inst offers, its revision's offers each
// with the instance's address; skip is told each offer it cannot use.
func offerNodes(offers []nodeOffer, inst *registry.Instance, origin *nodeOrigin, skip func(service, reason string)) []*providerNode {
	nodes := make([]*providerNode, 0, len(offers))
	// The instance's nodes and providers live and go together: one
	// allocation holds them all.
	backing := make([]struct {
		node     providerNode
		provider cluster.Provider
	}, len(offers))
	// The instance's endpoint port of each protocol, looked up once.
	var endpointPorts [2]int
	for proto := range endpointPorts {
		endpointPorts[proto] = inst.EndpointPort(cluster.Protocol(proto).String())
	}
	lastPort, lastAddr := -1, "" // the address last made, and its port (never -1)
	for i := range offers {
		o := &offers[i]
		if o.Skip != "" {
			skip(o.Key, o.Skip)
			continue
		}
		endpointPort := endpointPorts[o.node.provider.Protocol]
		port := endpointPort
		if port <= 0 {
			port = o.Port
		}
		if port != lastPort { // the services of an instance mostly share one port
			addr, ok := o.Addr(inst.Host, endpointPort)
			if !ok {
				skip(o.Key, registry.NoPortReason)
				continue
			}
			lastPort, lastAddr = port, addr
		}
		b := &backing[i]
		b.provider = *o.node.provider
		b.provider.Addr = lastAddr
		b.node = providerNode{match: o.node.match, provider: &b.provider, origin: origin}
		nodes = append(nodes, &b.node)
	}
	return nodes
}

// idlTriple reports whether a provider is an IDL (protobuf) Triple
// service, which routes with an idl section call.
func idlTriple(protocol, serialization string) bool {
	return protocol == "tri" && serialization == "protobuf"
}

// speaksHessian2 reports whether a provider accepts hessian2: it names no
// serialization (Dubbo's default is hessian2), names hessian2, or lists
// hessian2 among those it prefers (Dubbo 3 negotiates from that list):
// serialization and prefer are the URL's parameters of those names.
func speaksHessian2(serialization, prefer string) bool {
	if serialization == "" || serialization == "hessian2" {
		return true
	}
	for s := range strings.SplitSeq(prefer, ",") {
		if strings.TrimSpace(s) == "hessian2" {
			return true
		}
	}
	return false
}

// override is one child of a configurators node, as far as this gateway
// applies it: a weight, or disabling (or re-enabling) providers.
type override struct {
	name           string
	anyHost        bool   // host 0.0.0.0: every provider
	host, port     string // otherwise the providers on host (and port, when set)
	version, group string // when set, only providers with that version / group
	weight         int
	setsWeight     bool
	disabled       bool
	setsDisabled   bool
}

// parseOverrideNode parses a child of iface's configurators node. It
// returns nil and an empty reason for an override that does not apply to
// providers here (enabled=false, side=consumer, or nothing this gateway
// applies), and nil with the reason for a malformed one.
func parseOverrideNode(iface, name string) (*override, string) {
	raw, err := url.QueryUnescape(name)
	if err != nil {
		return nil, "not URL-encoded: " + err.Error()
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err.Error()
	}
	if u.Scheme != "override" {
		return nil, fmt.Sprintf("scheme %q is not override", u.Scheme)
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" && p != iface {
		return nil, fmt.Sprintf("interface %q is not %q", p, iface)
	}
	q := u.Query()
	if q.Get("enabled") == "false" || q.Get("side") == "consumer" {
		return nil, ""
	}
	o := &override{name: name, host: u.Hostname(), port: u.Port(), version: q.Get("version"), group: q.Get("group")}
	if o.host == "" {
		return nil, "no host: want 0.0.0.0 or a provider's host"
	}
	o.anyHost = o.host == "0.0.0.0"
	if w := q.Get("weight"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil {
			return nil, fmt.Sprintf("weight %q is not an integer", w)
		}
		o.weight, o.setsWeight = n, true
	}
	switch q.Get("disabled") {
	case "true":
		o.disabled, o.setsDisabled = true, true
	case "false":
		o.setsDisabled = true
	}
	if !o.setsWeight && !o.setsDisabled {
		return nil, ""
	}
	return o, ""
}

// appliesTo reports whether o targets the provider n.
func (o *override) appliesTo(n *providerNode) bool {
	host, port, _ := net.SplitHostPort(n.addr()) // ParseProviderURL checked it
	m := n.match.Value()
	return (o.anyHost || o.host == host) &&
		(o.port == "" || o.port == port) &&
		matchCondition(o.version, m.version) &&
		matchCondition(o.group, m.group)
}

func matchCondition(want, got string) bool { return want == "" || want == "*" || want == got }

// sortOverrides orders overrides as Dubbo applies them: those for every
// host first, so that one naming a provider's host has the last word; by
// name within each kind, so the order does not depend on listing order.
func sortOverrides(list []*override) {
	slices.SortFunc(list, func(a, b *override) int {
		if a.anyHost != b.anyHost {
			if a.anyHost {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
}

// sortProviderNodes orders nodes by address, then application-level nodes
// before interface-level ones (as in Dubbo's application-first
// migration), then by application and instance, then the newest first
// (a provider restarted at the same address, before the old node
// expires), then by parameters: so that a snapshot is sorted by address
// and the same node wins a duplicate address each time, in every
// gateway instance.
func sortProviderNodes(ns []*providerNode) {
	slices.SortFunc(ns, func(a, b *providerNode) int {
		if c := strings.Compare(a.addr(), b.addr()); c != 0 {
			return c
		}
		if (a.origin == nil) != (b.origin == nil) {
			if a.origin != nil {
				return -1
			}
			return 1
		}
		if a.origin != nil {
			if c := cmp.Or(strings.Compare(a.origin.app, b.origin.app), strings.Compare(a.origin.instance, b.origin.instance)); c != 0 {
				return c
			}
		}
		if c := b.provider.Timestamp.Compare(a.provider.Timestamp); c != 0 {
			return c
		}
		return cmp.Or(a.provider.Params.Compare(b.provider.Params), compareMatches(a.match.Value(), b.match.Value()))
	})
}

// compareMatches orders what two nodes are matched on.
func compareMatches(a, b nodeMatch) int {
	if c := cmp.Or(strings.Compare(a.iface, b.iface), strings.Compare(a.group, b.group), strings.Compare(a.version, b.version)); c != 0 {
		return c
	}
	switch {
	case a.disabled == b.disabled:
		return 0
	case a.disabled:
		return 1
	}
	return -1
}

// overridden identifies a provider as published after overrides changed
// its weight (or a configurator its timeout), so that an unchanged result
// keeps its *cluster.Provider.
type overridden struct {
	node    *providerNode
	weight  int
	timeout time.Duration
}

// buildSnapshot returns key's providers among nodes (sorted by
// sortProviderNodes) with overrides (sorted by sortOverrides), then the
// configurators of rules (nil: none), applied: one per address, in address
// order. A provider keeps its node's *cluster.Provider when nothing
// changes it; a reweighted one is taken from prev when it was built
// before, and recorded in next either way.
func buildSnapshot(key registry.ServiceKey, nodes []*providerNode, overrides []*override, rules *serviceRules, prev, next map[overridden]*cluster.Provider) []*cluster.Provider {
	out := make([]*cluster.Provider, 0, len(nodes))
	for _, n := range nodes {
		if !n.matches(key) {
			continue
		}
		weight, disabled := n.provider.Weight, false
		for _, o := range overrides {
			if !o.appliesTo(n) {
				continue
			}
			if o.setsWeight {
				weight = o.weight
			}
			if o.setsDisabled {
				disabled = o.disabled
			}
		}
		var timeout time.Duration
		if rules != nil {
			o := governance.Override{Weight: weight, Disabled: disabled}
			rules.configure(key, n, &o)
			weight, disabled, timeout = o.Weight, o.Disabled, o.Timeout
		}
		if disabled {
			continue
		}
		if len(out) > 0 && out[len(out)-1].Addr == n.addr() {
			continue // a second URL for an address already taken
		}
		p := n.provider
		if weight != p.Weight || timeout != p.Timeout {
			k := overridden{n, weight, timeout}
			if p = next[k]; p == nil {
				if p = prev[k]; p == nil {
					cp := *n.provider
					cp.Weight, cp.Timeout = weight, timeout
					p = &cp
				}
				next[k] = p
			}
		}
		out = append(out, p)
	}
	return out
}

// consumerURL is the URL the gateway registers under a service's consumers
// node, as a Java consumer of key would.
func consumerURL(host string, key registry.ServiceKey, application string, timestampMs int64, pid int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	var b strings.Builder
	b.WriteString("consumer://")
	b.WriteString(host)
	b.WriteByte('/')
	b.WriteString(key.Interface)
	b.WriteString("?application=")
	b.WriteString(url.QueryEscape(application))
	b.WriteString("&category=consumers&check=false&dubbo=2.0.2&interface=")
	b.WriteString(url.QueryEscape(key.Interface))
	b.WriteString("&side=consumer&timestamp=")
	b.WriteString(strconv.FormatInt(timestampMs, 10))
	b.WriteString("&pid=")
	b.WriteString(strconv.Itoa(pid))
	if key.Version != "" {
		b.WriteString("&version=")
		b.WriteString(url.QueryEscape(key.Version))
	}
	if key.Group != "" {
		b.WriteString("&group=")
		b.WriteString(url.QueryEscape(key.Group))
	}
	return b.String()
}
