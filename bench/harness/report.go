package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// runInfo describes a run in the report's heading.
type runInfo struct {
	date         time.Time
	goVersion    string
	nginxVersion string
	cores        int
	duration     time.Duration
	rounds       int
	latencyLoad  float64
	loadBefore   string // /proc/loadavg at the start and the end: other work on the machine
	loadAfter    string
}

// writeReport writes the markdown table, the goals and the profiles.
func writeReport(w io.Writer, info runInfo, p *plan, goals []*goal, profiles []*rowProfile) {
	fmt.Fprintf(w, "Run of %s, %s, %s, %d cores; %d rounds of %v per row and phase, interleaved; medians of the rounds.\n\n",
		info.date.Format("2006-01-02 15:04 MST"), info.goVersion, info.nginxVersion, info.cores, info.rounds, info.duration)
	if info.loadBefore != "" {
		fmt.Fprintf(w, "Load average (1, 5, 15 min) at the start %s, at the end %s (the harness itself adds about 2; more means other work shared the cores).\n\n", info.loadBefore, info.loadAfter)
	}
	fmt.Fprintf(w, "req/s: peak, closed loop (each connection sends again as soon as it is answered). "+
		"Latencies: open loop at %.0f%% of the lowest peak among the rows with the same connections (column \"at\"), "+
		"from each call's scheduled send time (coordinated omission corrected), generator bench/loadgen in its own process.\n\n", 100*info.latencyLoad)
	goalOf := map[*row][]*goal{} // row 4 has two with -pixiu
	for _, g := range goals {
		goalOf[g.row] = append(goalOf[g.row], g)
	}
	fmt.Fprintln(w, "| path | conns | req/s | rounds' range | vs 1 | vs 2 | at req/s | p50 | p99 | p99.9 | p99 vs 2 | errors / dropped | goal |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range p.rows {
		direct, nginx := p.find(kindDirect, r.conns), p.nginxOf(r)
		lo, hi := rangeOf(r.peaks)
		errs, dropped, _ := r.failures()
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f–%.0f | %s | %s | %.0f | %s | %s | %s | %s | %d / %d | %s |\n",
			r.name(), r.conns, r.throughput(), lo, hi,
			ratioCell(r, direct, func(x *row) float64 { return x.throughput() }),
			ratioCell(r, nginx, func(x *row) float64 { return x.throughput() }),
			r.rate, ms(r.latency(p50)), ms(r.latency(p99)), ms(r.latency(p999)),
			ratioCell(r, nginx, func(x *row) float64 { return float64(x.latency(p99)) }),
			errs, dropped, goalCell(p, r, goalOf[r]))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Goals:")
	fmt.Fprintln(w)
	for _, g := range goals {
		verdict := "met"
		if !g.met {
			verdict = "**MISSED**"
		}
		fmt.Fprintf(w, "- %s, %d conns: %s — %s\n", g.row.name(), g.row.conns, g.text, verdict)
	}
	for _, r := range p.rows {
		if errs, dropped, first := r.failures(); errs+dropped > 0 {
			fmt.Fprintf(w, "- %s, %d conns: %d errors, %d dropped; first error: %s\n", r.name(), r.conns, errs, dropped, first)
		}
	}
	for _, pr := range profiles {
		fmt.Fprintf(w, "\nProfile of the gateway during %s, %d conns (%s, %s):\n\n", pr.row.name(), pr.row.conns, pr.cpuFile, pr.allocsFile)
		fmt.Fprintf(w, "```\nCPU, top functions by flat time:\n%s\nallocations, top functions by bytes:\n%s```\n", pr.cpuTop, pr.allocsTop)
	}
}

func rangeOf(rs []*loadResult) (lo, hi float64) {
	for i, l := range rs {
		if i == 0 || l.Throughput < lo {
			lo = l.Throughput
		}
		if l.Throughput > hi {
			hi = l.Throughput
		}
	}
	return lo, hi
}

// ratioCell is r's value over base's, "1" for the base row itself and "—"
// without a base.
func ratioCell(r, base *row, v func(*row) float64) string {
	switch {
	case base == nil:
		return "—"
	case base == r:
		return "1"
	}
	return fmt.Sprintf("%.2f×", ratio(v(r), v(base)))
}

// goalCell is the verdict of the row's goals, or for cost-growth rows the
// ratio to the base row.
func goalCell(p *plan, r *row, gs []*goal) string {
	if len(gs) > 0 {
		cells := make([]string, len(gs))
		for i, g := range gs {
			cells[i] = g.text + ": met"
			if !g.met {
				cells[i] = g.text + ": **MISSED**"
			}
		}
		return strings.Join(cells, "; ")
	}
	if r.isBase() {
		return ""
	}
	base := p.find(r.kind, r.conns)
	if base == nil {
		return ""
	}
	what := fmt.Sprintf("%d routes", baseRoutes)
	if r.providers != baseProviders {
		what = fmt.Sprintf("%d provider", baseProviders)
	}
	return fmt.Sprintf("cost growth: %.2f× req/s of %s", ratio(r.throughput(), base.throughput()), what)
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
