package gateway

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// registryCollector reports the registries of the active table at scrape
// time: subscriptions, watches, references, providers per service, the
// connection state and its reconnects. Reading them when scraped keeps the
// registries free of metric bookkeeping, and a registry replaced by a
// reload disappears from the output with it.
type registryCollector struct {
	table *atomic.Pointer[table]

	subscriptions, watches, references, providers, connected, degraded, registered,
	reconnects, expiries, applications, instances, metadataFetches, metadataCached, metadataInFlight,
	refused, onDemand, rules, rulesRefused *prometheus.Desc
}

func newRegistryCollector(t *atomic.Pointer[table]) *registryCollector {
	l := []string{"registry"}
	return &registryCollector{
		table: t,
		subscriptions: prometheus.NewDesc("dubbogw_registry_subscriptions",
			"Live subscriptions (one per service key), including those waiting out release_after.", l, nil),
		watches: prometheus.NewDesc("dubbogw_registry_watches",
			"Registry watches set for the live subscriptions, and for the catalog of interfaces once the pass-through asked it (ZooKeeper: paths watched).", l, nil),
		references: prometheus.NewDesc("dubbogw_references",
			"Dubbo references (service key and call settings), pinned by routes or cached for the pass-through.", l, nil),
		providers: prometheus.NewDesc("dubbogw_providers",
			"Providers currently known for a service key.", []string{"registry", "service"}, nil),
		connected: prometheus.NewDesc("dubbogw_registry_connected",
			"1 while the registry's session is up (static registries: always).", l, nil),
		degraded: prometheus.NewDesc("dubbogw_registry_degraded",
			"1 while the registry cannot be reached and the last known providers serve.", l, nil),
		registered: prometheus.NewDesc("dubbogw_registry_registered_consumers",
			"Consumer nodes the gateway registered.", l, nil),
		reconnects: prometheus.NewDesc("dubbogw_registry_reconnects_total",
			"Connections to the registry re-established after a loss.", l, nil),
		expiries: prometheus.NewDesc("dubbogw_registry_session_expiries_total",
			"Registry sessions lost for good; every live subscription is then re-made once.", l, nil),
		applications: prometheus.NewDesc("dubbogw_registry_applications",
			"Applications watched for application-level discovery (named by the mapping nodes of the interfaces subscribed).", l, nil),
		instances: prometheus.NewDesc("dubbogw_registry_instances",
			"Instances of the applications watched whose node could be read and parsed.", l, nil),
		metadataFetches: prometheus.NewDesc("dubbogw_registry_metadata_fetches_total",
			"Fetches of application instances' metadata (MetadataService or remote node), by result (ok, failed); a failed instance is retried with a backoff, not used meanwhile.",
			[]string{"registry", "result"}, nil),
		metadataCached: prometheus.NewDesc("dubbogw_registry_metadata_cached",
			"Instance metadata entries cached (per instance and revision).", l, nil),
		metadataInFlight: prometheus.NewDesc("dubbogw_registry_metadata_fetches_in_flight",
			"Instance metadata fetches under way (at most the registry's metadata.concurrency).", l, nil),
		refused: prometheus.NewDesc("dubbogw_references_refused_total",
			"Pass-through calls answered without subscribing, by reason: not_registered (the registry lists nothing under the interface: 503 NO_PROVIDER from memory), rate or max (over dubbo.references.new_per_second or max_subscriptions: 503 SUBSCRIBE_LIMITED).",
			[]string{"registry", "reason"}, nil),
		rules: prometheus.NewDesc("dubbogw_registry_rules",
			"Dubbo governance rule nodes watched in the config centre (zookeeper registries with governance.enabled): those of the live services, of their providers' applications and of the gateway's application.", l, nil),
		rulesRefused: prometheus.NewDesc("dubbogw_registry_rules_refused_total",
			"Dubbo governance rule node contents refused as malformed or unsupported; the node's last good rule keeps applying (the reason is in the log and /admin/services).", l, nil),
		onDemand: prometheus.NewDesc("dubbogw_references_on_demand_subscriptions",
			"Subscriptions the pass-through made for services nobody else held, still live (bounded by dubbo.references.max_subscriptions).", l, nil),
	}
}

func (c *registryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.subscriptions, c.watches, c.references, c.providers, c.connected,
		c.degraded, c.registered, c.reconnects, c.expiries, c.applications, c.instances, c.metadataFetches, c.metadataCached, c.metadataInFlight,
		c.refused, c.onDemand, c.rules, c.rulesRefused} {
		ch <- d
	}
}

func (c *registryCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.table.Load()
	if t == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(t.registries)) {
		reg := t.registries[name]
		st := reg.Status()
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
		gauge(c.subscriptions, float64(st.Subscriptions))
		gauge(c.watches, float64(st.Watches))
		refs := t.references[name]
		gauge(c.references, float64(refs.Len()))
		gauge(c.onDemand, float64(refs.OnDemandSubscriptions()))
		refused := refs.Refusals()
		for reason, n := range map[string]uint64{"not_registered": refused.NotRegistered, "rate": refused.Rate, "max": refused.Max} {
			ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(n), name, reason)
		}
		gauge(c.connected, b2f(st.State == "connected" || st.State == "static"))
		gauge(c.degraded, b2f(st.Degraded))
		gauge(c.registered, float64(st.Registered))
		ch <- prometheus.MustNewConstMetric(c.reconnects, prometheus.CounterValue, float64(st.Reconnects), name)
		ch <- prometheus.MustNewConstMetric(c.expiries, prometheus.CounterValue, float64(st.SessionExpiries), name)
		gauge(c.applications, float64(st.Applications))
		gauge(c.instances, float64(st.Instances))
		gauge(c.metadataCached, float64(st.MetadataCached))
		gauge(c.metadataInFlight, float64(st.MetadataInFlight))
		gauge(c.rules, float64(st.Rules))
		ch <- prometheus.MustNewConstMetric(c.rulesRefused, prometheus.CounterValue, float64(st.RulesRefused), name)
		ch <- prometheus.MustNewConstMetric(c.metadataFetches, prometheus.CounterValue, float64(st.MetadataFetches-st.MetadataFailures), name, "ok")
		ch <- prometheus.MustNewConstMetric(c.metadataFetches, prometheus.CounterValue, float64(st.MetadataFailures), name, "failed")
		for _, d := range reg.Directories() {
			ch <- prometheus.MustNewConstMetric(c.providers, prometheus.GaugeValue, float64(len(d.Providers)), name, d.Service)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
