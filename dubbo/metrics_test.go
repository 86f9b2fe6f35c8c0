package dubbo

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// refusedAddrs returns n distinct provider addresses that refuse
// connections at once: loopback addresses on a port just closed.
func refusedAddrs(t *testing.T, n int) []string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.%d.%d:%d", i/250, 1+i%250, port)
	}
	return addrs
}

// seriesCount gathers reg and counts the dubbogw_dubbo_* series (a
// histogram counts as one).
func seriesCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n
}

// TestMetricsDoNotGrowWithProviders calls 100 distinct provider
// addresses (each refuses the connection), then 1,900 more: by default
// the client exports as many series after either, one set for every
// provider; with per-address series, a set per address, which Forget
// deletes.
func TestMetricsDoNotGrowWithProviders(t *testing.T) {
	addrs := refusedAddrs(t, 2000)
	callAll := func(c *Client, addrs []string) {
		t.Helper()
		for _, addr := range addrs {
			if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, echoCall("x")); !errors.Is(err, ErrConnect) {
				t.Fatalf("calling %s: %v, want ErrConnect", addr, err)
			}
		}
	}

	reg := prometheus.NewRegistry()
	c := newClient(t, Options{Registerer: reg})
	callAll(c, addrs[:100])
	few := seriesCount(t, reg)
	callAll(c, addrs[100:])
	if many := seriesCount(t, reg); few != many || few == 0 {
		t.Errorf("default: %d series after calling 100 providers, %d after 2,000: want the same", few, many)
	}
	if got := metricValue(t, c.metrics.forAddr("").calls[outcomeConnectError]); got != 2000 {
		t.Errorf("connect errors counted: %v, want 2000 (every provider in the one series)", got)
	}
	c.Forget(addrs[0])
	if got := seriesCount(t, reg); got != few {
		t.Errorf("default: Forget deleted shared series: %d left, want %d", got, few)
	}

	reg = prometheus.NewRegistry()
	c = newClient(t, Options{Registerer: reg, PerAddrMetrics: true})
	callAll(c, addrs[:100])
	few = seriesCount(t, reg)
	callAll(c, addrs[100:300])
	many := seriesCount(t, reg)
	perAddr := (many - few) / 200
	if perAddr < 10 || many != few+200*perAddr {
		t.Errorf("per address: %d series after calling 100 providers, %d after 300: want a set per provider", few, many)
	}
	c.Forget(addrs[0])
	if got := seriesCount(t, reg); got != many-perAddr {
		t.Errorf("per address: %d series after Forget, want %d (the address's deleted)", got, many-perAddr)
	}
	if got := metricValue(t, c.metrics.forAddr(addrs[1]).calls[outcomeConnectError]); got != 1 {
		t.Errorf("connect errors of one address: %v, want 1", got)
	}
}
