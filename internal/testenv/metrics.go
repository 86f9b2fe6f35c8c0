package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricValue returns the value of the series name{labels} gathered from
// g (labels not named may have any value): a counter's or gauge's value, a
// histogram's sample count; -1 when there is no such series.
func MetricValue(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			default:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}
