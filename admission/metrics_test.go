package admission

import (
	"math"

	"github.com/dubbogw/dubbogw/config"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gathered maps "name{label values}" to the value of every series reg has.
func gathered(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]float64)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName() + "{"
			for i, lp := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += lp.GetName() + "=" + lp.GetValue()
			}
			key += "}"
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func expectSeries(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("series %s missing; have %v", k, got)
			continue
		}
		if math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

func TestMetricsReadLimitersAtScrapeTime(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	global, route := NewStatic(4), NewStatic(1)
	m.Observe(ScopeGlobal, global)
	m.Observe("orders", route)
	for range 3 {
		global.Acquire()
	}
	route.Acquire()
	route.Acquire() // refused
	global.Acquire()
	global.Acquire() // refused
	got := gathered(t, reg)
	expectSeries(t, got, map[string]float64{
		"dubbogw_inflight{scope=global}":                                   4,
		"dubbogw_inflight_limit{scope=global}":                             4,
		"dubbogw_saturation{scope=global}":                                 1,
		"dubbogw_admission_rejected_total{scope=global}":                   1,
		"dubbogw_admission_limit_changes_total{direction=up,scope=global}": 0,
		"dubbogw_inflight{scope=orders}":                                   1,
		"dubbogw_inflight_limit{scope=orders}":                             1,
		"dubbogw_saturation{scope=orders}":                                 1,
		"dubbogw_admission_rejected_total{scope=orders}":                   1,
	})
	if len(got) != 12 {
		t.Errorf("%d series, want 6 per scope: %v", len(got), got)
	}

	// A reload replaces the route's limiter: its counters carry on; an
	// unlimited one has saturation 0.
	unlimited := NewStatic(0)
	unlimited.Acquire()
	m.Observe(ScopeGlobal, unlimited)
	route2, _ := NewAdaptive(adaptiveConfigForMetrics, 0, nil)
	m.Observe("orders", route2)
	m.Observe("orders", route2) // observing the same limiter again changes nothing
	for range 2 {
		route2.Acquire() // the first probe admits min_limit 1
	}
	expectSeries(t, gathered(t, reg), map[string]float64{
		"dubbogw_inflight{scope=orders}":                 1,
		"dubbogw_inflight_limit{scope=orders}":           2,
		"dubbogw_saturation{scope=orders}":               0.5,
		"dubbogw_admission_rejected_total{scope=orders}": 2,
		"dubbogw_inflight{scope=global}":                 1,
		"dubbogw_inflight_limit{scope=global}":           0,
		"dubbogw_saturation{scope=global}":               0,
		"dubbogw_admission_rejected_total{scope=global}": 1,
	})

	m.Forget("orders")
	for k := range gathered(t, reg) {
		if k == "dubbogw_inflight{scope=orders}" {
			t.Error("a forgotten scope is still exported")
		}
	}
}

func TestMetricsCountAdaptiveLimitChanges(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	s := newSim(t, adaptiveConfigForMetrics)
	m.Observe("r", s.l)
	s.run(backend{base: 10 * time.Millisecond, knee: 1}, 10*time.Second)
	st := s.l.Stats()
	if st.LimitIncreases == 0 && st.LimitDecreases == 0 {
		t.Fatal("the simulated limiter never changed its limit")
	}
	expectSeries(t, gathered(t, reg), map[string]float64{
		"dubbogw_admission_limit_changes_total{direction=up,scope=r}":   float64(st.LimitIncreases),
		"dubbogw_admission_limit_changes_total{direction=down,scope=r}": float64(st.LimitDecreases),
	})
}

func TestNewMetricsRefusesASecondRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	defer func() {
		if recover() == nil {
			t.Error("registering the admission metrics twice did not panic")
		}
	}()
	NewMetrics(reg)
}

var adaptiveConfigForMetrics = config.AdaptiveConcurrency{MinLimit: 1, InitialLimit: 2, MaxLimit: 8}
