package zookeeper

import (
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/registry"
)

// This file reads Dubbo's governance rules (package governance) from the
// config centre in the registry's ZooKeeper, with Options.Governance:
//
//	<root>/<group>/<application>.configurators      the gateway's application
//	<root>/<group>/<application>.condition-router   the gateway's and each provider application
//	<root>/<group>/<application>.tag-router         each provider application
//	<root>/<group>/<interface>:<version>:<group>.configurators     each live service key
//	<root>/<group>/<interface>:<version>:<group>.condition-router  each live service key
//
// Each is a data watch, one per node whatever the number of interfaces
// using it, held by the interfaces whose directories it applies to and
// released with the last of them, like the other nodes (watches.go). An
// interface holds the nodes of its service keys, of the applications its
// providers name (at most maxRuleApps) and of the gateway's application;
// it is published once they have been read (or failed), so a gateway
// starting never routes without the rules, and again when one changes.

// maxRuleApps bounds the provider applications whose rules one interface
// reads: an interface is served by one application, rarely a few.
const maxRuleApps = 8

// ruleNode is one rule node: its last good rule and who holds it.
type ruleNode struct {
	key     string
	kind    governance.Kind
	pw      *pathWatch
	holders set[*ifaceState]
	rule    *governance.Rule // the last good rule; nil: none
	status  registry.RuleStatus
	sum     uint64 // of the data last read, to tell a change
	read    bool   // the node has been read once
}

// ruleNodes are the rule nodes the interfaces hold, by key.
type ruleNodes struct {
	z       *Registry
	watches *watches
	opts    GovernanceOptions
	byKey   map[string]*ruleNode
	seed    maphash.Seed
}

func newRuleNodes(z *Registry, ws *watches) *ruleNodes {
	return &ruleNodes{z: z, watches: ws, opts: *z.opts.Governance, byKey: make(map[string]*ruleNode), seed: maphash.MakeSeed()}
}

// hold has s hold key's node, watching it if nobody did.
func (rs *ruleNodes) hold(key string, s *ifaceState) *ruleNode {
	n := rs.byKey[key]
	if n == nil {
		kind := governance.KindConfigurators
		switch {
		case strings.HasSuffix(key, governance.SuffixTagRouter):
			kind = governance.KindTagRouter
		case strings.HasSuffix(key, governance.SuffixConditionRouter):
			kind = governance.KindConditionRouter
		}
		n = &ruleNode{key: key, kind: kind, status: registry.RuleStatus{Key: key, Kind: kind.String(), State: "absent"}}
		n.pw = rs.watches.watch(governance.Path(rs.opts.Root, rs.opts.Group, key), nodeRule, key, "")
		rs.byKey[key] = n
	}
	n.holders.add(s)
	return n
}

// release drops s's hold on n, and the node's watch with the last holder.
func (rs *ruleNodes) release(n *ruleNode, s *ifaceState) {
	n.holders.remove(s)
	if n.holders.len() == 0 {
		rs.watches.unwatch(n.pw)
		delete(rs.byKey, n.key)
	}
}

// take takes what a read of a rule node found: the new rule, or the
// refusal of its data (the last good rule keeps applying). It returns the
// node (nil for one nobody holds) and whether its data changed.
func (rs *ruleNodes) take(pw *pathWatch, r opResult) (*ruleNode, bool) {
	n := rs.byKey[pw.owner]
	if n == nil || n.pw != pw {
		return nil, false
	}
	sum := uint64(0)
	if r.exists {
		sum = maphash.Bytes(rs.seed, r.data) | 1 // an empty node differs from none
	}
	if n.read && sum == n.sum {
		return n, false // the same data: a watch re-armed after a reconnection
	}
	n.read, n.sum = true, sum
	st := registry.RuleStatus{Key: n.key, Kind: n.kind.String(), Changed: time.Now()}
	switch {
	case !r.exists:
		n.rule = nil
		st.State = "absent"
	default:
		rule, err := governance.Parse(n.key, r.data)
		if err != nil {
			rs.z.rulesRefused.Add(1)
			rs.z.log.Warn("refusing a Dubbo governance rule: the last good one keeps applying",
				"key", n.key, "path", pw.path, "error", err, "applying", n.rule != nil)
			st.State, st.Error = "refused", err.Error()
			break
		}
		n.rule = rule
		st.State, st.Ignored = "applied", ignoredParams(rule)
		if !ruleEnabled(rule) {
			st.State = "disabled"
		}
	}
	st.Applied = n.rule != nil && ruleEnabled(n.rule)
	n.status = st
	return n, true
}

// ignoredParams names the parameters of a configurators rule this gateway
// does not apply, sorted, "" for none.
func ignoredParams(r *governance.Rule) string {
	if r.Configurators == nil {
		return ""
	}
	var names []string
	for _, it := range r.Configurators.Items {
		names = append(names, it.Ignored...)
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ", ")
}

func ruleEnabled(r *governance.Rule) bool {
	switch {
	case r.Configurators != nil:
		return r.Configurators.Enabled
	case r.TagRouter != nil:
		return r.TagRouter.Enabled
	case r.Condition != nil:
		return r.Condition.Enabled
	}
	return false
}

// count is the rule nodes held.
func (rs *ruleNodes) count() int {
	if rs == nil {
		return 0
	}
	return len(rs.byKey)
}

// ruleKeys are the rule keys interface s's directories depend on, given
// the nodes it publishes from: the gateway application's, each service
// key's, and each provider application's (sorted, at most maxRuleApps).
func (i *ifaces) ruleKeys(s *ifaceState, nodes []*providerNode) []string {
	app := i.z.opts.Application
	keys := []string{governance.Key(app, governance.KindConfigurators), governance.Key(app, governance.KindConditionRouter)}
	for _, d := range s.dirs {
		k := d.Key()
		sk := governance.ServiceKey(k.Interface, k.Version, k.Group)
		keys = append(keys, governance.Key(sk, governance.KindConfigurators), governance.Key(sk, governance.KindConditionRouter))
	}
	for _, a := range providerApps(s, nodes) {
		keys = append(keys, governance.Key(a, governance.KindTagRouter))
		if a != app {
			keys = append(keys, governance.Key(a, governance.KindConditionRouter))
		}
	}
	slices.Sort(keys)
	return slices.DeleteFunc(slices.Compact(keys), func(k string) bool { return !validNodeName(k) })
}

// providerApps are the applications of the providers among nodes that
// serve one of s's directories, sorted, at most maxRuleApps.
func providerApps(s *ifaceState, nodes []*providerNode) []string {
	var apps []string
	for _, n := range nodes {
		a := providerApp(n)
		if a == "" || slices.Contains(apps, a) {
			continue
		}
		for _, d := range s.dirs {
			if n.matches(d.Key()) {
				apps = append(apps, a)
				break
			}
		}
	}
	slices.Sort(apps)
	return apps[:min(len(apps), maxRuleApps)]
}

// providerApp is the application of a provider node.
func providerApp(n *providerNode) string {
	if a := n.provider.Params.Get("application"); a != "" {
		return a
	}
	if n.origin != nil {
		return n.origin.app
	}
	return ""
}

// rulesSettled makes s hold exactly the rule nodes its directories depend
// on and reports whether each has been read (or has failed: it does not
// hold a publication back).
func (i *ifaces) rulesSettled(s *ifaceState) bool {
	if i.rules == nil {
		return true
	}
	nodes := s.nodes
	if i.z.applicationLevel() {
		nodes = i.mergedNodes(s)
	}
	want := i.ruleKeys(s, nodes)
	next := make(map[string]*ruleNode, len(want))
	for _, k := range want {
		if n := s.rules[k]; n != nil {
			next[k] = n
		} else {
			next[k] = i.rules.hold(k, s)
		}
	}
	for k, n := range s.rules {
		if next[k] == nil {
			i.rules.release(n, s)
		}
	}
	s.rules = next
	for _, n := range s.rules {
		if !n.pw.read && !n.pw.failed {
			return false
		}
	}
	return true
}

// dropRules releases every rule node s holds.
func (i *ifaces) dropRules(s *ifaceState) {
	if i.rules == nil {
		return
	}
	for _, n := range s.rules {
		i.rules.release(n, s)
	}
	s.rules = nil
}

// takeRule takes a read of a rule node: its holders are published again
// when it changed, and looked at again either way (one may have waited
// for the read: after a reconnection, say).
func (i *ifaces) takeRule(pw *pathWatch, r opResult) {
	if i.rules == nil {
		return
	}
	n, changed := i.rules.take(pw, r)
	if n == nil {
		return
	}
	for s := range n.holders.all() {
		if changed {
			i.mark(s)
		} else {
			i.touched.add(s)
		}
	}
}

// touchRuleHolders has the interfaces holding a rule node that could not
// be read looked at again: a failed node does not hold them back.
func (i *ifaces) touchRuleHolders(pw *pathWatch) {
	if i.rules == nil {
		return
	}
	if n := i.rules.byKey[pw.owner]; n != nil {
		for s := range n.holders.all() {
			i.touched.add(s)
		}
	}
}

// serviceRules are the rules of s that apply to key's directory, as the
// gateway (consumer c) sees them.
type serviceRules struct {
	consumer     governance.Consumer
	appConf      *governance.ConfiguratorRule // the gateway application's
	serviceConf  *governance.ConfiguratorRule
	tag          *governance.TagRule // the first provider application's with one
	provAppConds []*governance.ConditionRule
	appCond      *governance.ConditionRule // the gateway application's
	serviceCond  *governance.ConditionRule
	status       []registry.RuleStatus
}

// rulesFor collects what s's rule nodes say of key's directory.
func (i *ifaces) rulesFor(s *ifaceState, key registry.ServiceKey, nodes []*providerNode) *serviceRules {
	if i.rules == nil {
		return nil
	}
	app := i.z.opts.Application
	sr := &serviceRules{consumer: governance.Consumer{Application: app, Host: i.consumerHost(),
		Interface: key.Interface, Version: key.Version, Group: key.Group}}
	sk := governance.ServiceKey(key.Interface, key.Version, key.Group)
	get := func(name string, kind governance.Kind) *governance.Rule {
		n := s.rules[governance.Key(name, kind)]
		if n == nil {
			return nil
		}
		if n.read && n.status.State != "absent" {
			sr.status = append(sr.status, n.status)
		}
		return n.rule
	}
	if r := get(app, governance.KindConfigurators); r != nil {
		sr.appConf = r.Configurators
	}
	if r := get(sk, governance.KindConfigurators); r != nil {
		sr.serviceConf = r.Configurators
	}
	var apps []string
	for _, n := range nodes {
		if a := providerApp(n); a != "" && !slices.Contains(apps, a) && n.matches(key) {
			apps = append(apps, a)
		}
	}
	slices.Sort(apps)
	for _, a := range apps {
		if r := get(a, governance.KindTagRouter); r != nil && sr.tag == nil {
			sr.tag = r.TagRouter
		}
		if a == app {
			continue
		}
		if r := get(a, governance.KindConditionRouter); r != nil {
			sr.provAppConds = append(sr.provAppConds, r.Condition)
		}
	}
	if r := get(app, governance.KindConditionRouter); r != nil {
		sr.appCond = r.Condition
	}
	if r := get(sk, governance.KindConditionRouter); r != nil {
		sr.serviceCond = r.Condition
	}
	slices.SortFunc(sr.status, func(a, b registry.RuleStatus) int { return strings.Compare(a.Key, b.Key) })
	return sr
}

// consumerHost is the gateway's host as its consumer URLs name it.
func (i *ifaces) consumerHost() string {
	if h := i.z.opts.ConsumerHost; h != "" {
		return h
	}
	if h := i.z.localHost.Load(); h != nil {
		return *h
	}
	return ""
}

// configure applies the configurators of sr to provider node n of key:
// the gateway application's, then the service's (Dubbo's order).
func (sr *serviceRules) configure(key registry.ServiceKey, n *providerNode, o *governance.Override) {
	if sr == nil || (sr.appConf == nil && sr.serviceConf == nil) {
		return
	}
	t := governance.Target{Addr: n.addr(), Application: providerApp(n), Interface: key.Interface, Version: key.Version, Group: key.Group}
	sr.appConf.Apply(&t, &sr.consumer, o)
	sr.serviceConf.Apply(&t, &sr.consumer, o)
}

// governance is the directory's governance for snapshot snap: nil when no
// rule applies and no provider has a static tag.
func (sr *serviceRules) governance(prev *registry.Governance, snap []*cluster.Provider) *registry.Governance {
	if sr == nil {
		return nil
	}
	conds := append(slices.Clone(sr.provAppConds), sr.appCond, sr.serviceCond)
	router := governance.NewRouter(sr.consumer, sr.tag, conds...)
	if router.Empty() && !governance.NeedsRouter(snap) {
		if len(sr.status) == 0 {
			return nil
		}
		router = nil
	}
	if prev != nil && slices.Equal(prev.Rules, sr.status) && (prev.Router == nil) == (router == nil) {
		return prev // the same rules: the router (and its cache) carries over
	}
	return &registry.Governance{Router: router, Rules: sr.status}
}
