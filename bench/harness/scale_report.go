package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// scaleInfo describes a scale run, for the report's header.
type scaleInfo struct {
	date                  time.Time
	goVersion             string
	cores                 int
	loadBefore, loadAfter string
	opts                  *scaleOptions
	elapsed               time.Duration
}

// The goals of issue 19, at 5,000 services x 10 providers (MB: 10^6 bytes).
const (
	goalAllKnown    = 5 * time.Second
	goalRSS         = 120e6
	goalGoroutines  = 200
	goalMetrics     = 0.5e6
	goalCPU         = 0.10 // of a core, at 100 changes/s
	goalPropagation = 10 * time.Millisecond
)

// goalCheck is one goal judged on one result.
type goalCheck struct {
	name, short string
	held        bool
	value       string
}

// goals judges r against issue 19's goals.
func (r *scaleResult) goals(rate float64) []goalCheck {
	p99 := r.propQuantile(0.99)
	early := r.startup != nil && r.startup.readyEarly()
	startup := fmtDur(r.allKnown)
	if early {
		startup += ", /readyz 200 before"
	}
	return []goalCheck{
		{"all providers known <= 5 s after start, /readyz never 200 before", "start", r.allKnown <= goalAllKnown && !early, startup},
		{"RSS <= 120 MB", "RSS", r.rss <= goalRSS, fmtMB(r.rss)},
		{"goroutines <= 200", "goroutines", r.goroutines <= goalGoroutines, strconv.Itoa(r.goroutines)},
		{"/metrics <= 0.5 MB", "/metrics", r.metricsBytes <= goalMetrics, fmtMB(r.metricsBytes)},
		{fmt.Sprintf("CPU at 100 changes/s <= 10%% of a core (measured at %s changes/s)", fmtRate(rate)), "CPU", r.churnCPU <= goalCPU, fmtCores(r.churnCPU)},
		{"propagation p99 <= 10 ms", "propagation", p99 >= 0 && p99 <= goalPropagation, fmtDur(p99)},
	}
}

// writeScaleReport writes the scale table, the ratios, the goals and the
// details of every run.
func writeScaleReport(w io.Writer, info scaleInfo, results []*scaleResult) {
	o := info.opts
	rate := fmtRate(o.churnRate)
	fmt.Fprintf(w, "## dubbogw at scale (issue 19)\n\n")
	fmt.Fprintf(w, "Run of %s, %s, %d cores, load average %s before and %s after; ZooKeeper %s, root %q, discovery %s; "+
		"one route per interface; churn %s changes/s (CPU over %s, then propagation sampled over %s, every %s); whole run %s.\n\n",
		info.date.Format("2006-01-02 15:04"), info.goVersion, info.cores, orDash(info.loadBefore), orDash(info.loadAfter),
		o.zk, o.root, o.discovery, rate, o.churnFor, o.churnFor, o.poll, info.elapsed.Round(time.Second))

	fmt.Fprintf(w, "| services x providers | layout | /readyz 200 | all providers known | RSS | goroutines | /metrics | /admin/services | gateway CPU at %s changes/s | propagation p50/p99 | goals missed |\n", rate)
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		if !r.measured {
			fmt.Fprintf(w, "| %s | %s | failed: see below | | | | | | | | |\n", sizeLabel(r), r.mode)
			continue
		}
		ready := fmtDur(r.ready)
		if r.startup != nil && r.startup.readyEarly() {
			ready += " **before all known**"
		}
		var missed []string
		for _, g := range r.goals(o.churnRate) {
			if !g.held {
				missed = append(missed, g.short)
			}
		}
		missedCell := "none"
		if len(missed) > 0 {
			missedCell = "**" + strings.Join(missed, ", ") + "**"
		}
		cpu := fmtCores(r.churnCPU) + " (idle " + fmtCores(r.idleCPU)
		if c := r.churn; c != nil && (c.rate < 0.9*o.churnRate || c.rate > 1.1*o.churnRate) {
			cpu += fmt.Sprintf("; **%.1f changes/s made**", c.rate)
		}
		cpu += ")"
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %s, %s lines | page %s, %s; all %d pages, %s, %s | %s | %s / %s | %s |\n",
			sizeLabel(r), r.mode, ready, fmtDur(r.allKnown), fmtMB(r.rss), r.goroutines,
			fmtMB(r.metricsBytes), fmtInt(r.metricsLines),
			fmtDur(r.pageTime), fmtBytes(r.pageBytes), r.allPages, fmtDur(r.allTime), fmtBytes(r.allBytes),
			cpu, fmtDur(r.propQuantile(0.5)), fmtDur(r.propQuantile(0.99)), missedCell)
	}

	fmt.Fprintf(w, "\nRatios to the baseline (the first size of the same layout, this run):\n\n")
	fmt.Fprintf(w, "| services x providers | layout | /readyz 200 | all providers known | RSS | goroutines | /metrics bytes | /admin/services page | all pages | CPU under churn | propagation p50 | propagation p99 |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	base := map[string]*scaleResult{}
	for _, r := range results {
		if !r.measured {
			continue
		}
		b := base[r.mode]
		if b == nil {
			base[r.mode], b = r, r
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sizeLabel(r), r.mode,
			fmtRatio(r.ready.Seconds(), b.ready.Seconds()), fmtRatio(r.allKnown.Seconds(), b.allKnown.Seconds()),
			fmtRatio(float64(r.rss), float64(b.rss)), fmtRatio(float64(r.goroutines), float64(b.goroutines)),
			fmtRatio(float64(r.metricsBytes), float64(b.metricsBytes)), fmtRatio(r.pageTime.Seconds(), b.pageTime.Seconds()),
			fmtRatio(r.allTime.Seconds(), b.allTime.Seconds()), fmtRatio(r.churnCPU, b.churnCPU),
			fmtRatio(r.propQuantile(0.5).Seconds(), b.propQuantile(0.5).Seconds()), fmtRatio(r.propQuantile(0.99).Seconds(), b.propQuantile(0.99).Seconds()))
	}

	fmt.Fprintf(w, "\nGoals of issue 19 (at 5,000 x 10), judged on the largest size of each layout:\n\n")
	largest := map[string]*scaleResult{}
	var order []string
	for _, r := range results {
		if !r.measured {
			continue
		}
		if largest[r.mode] == nil {
			order = append(order, r.mode)
		}
		if l := largest[r.mode]; l == nil || r.services > l.services {
			largest[r.mode] = r
		}
	}
	for _, mode := range order {
		r := largest[mode]
		note := ""
		if r.services != 5000 || r.providers != 10 {
			note = " (not the goals' size)"
		}
		fmt.Fprintf(w, "- %s, %s%s:\n", mode, sizeLabel(r), note)
		for _, g := range r.goals(o.churnRate) {
			verdict := "held"
			if !g.held {
				verdict = "**MISSED**"
			}
			fmt.Fprintf(w, "  - %s: %s (%s)\n", g.name, verdict, g.value)
		}
	}

	fmt.Fprintf(w, "\nDetails:\n\n")
	fmt.Fprintf(w, "| services x providers | layout | nodes written | write | delete | start CPU | /readyz polls | walks of /admin/services | services incomplete at first 200 | services published after it | peak RSS | RSS after churn | changes/s made | samples (lost) | propagation p90 / max | first answer showing the change p50 / p99 | sampled write p50 | published before the write returned |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		walks, polls, incomplete, after := "—", "—", "—", "—"
		if s := r.startup; s != nil && !s.allKnown.IsZero() {
			walks, polls = strconv.Itoa(s.walks), strconv.Itoa(s.polls)
			incomplete, after = strconv.Itoa(s.incompleteAtReady), strconv.Itoa(s.publishedAfterReady)
		}
		made, samples, p90max, seen, write, before := "—", "—", "—", "—", "—", "—"
		if c := r.churn; c != nil {
			made = fmt.Sprintf("%.1f (%d busy)", c.rate, c.skipped)
		}
		if p := r.prop; p != nil {
			samples = fmt.Sprintf("%d (%d)", len(p.latencies), p.lost)
			p90max = fmtDur(quantile(p.latencies, 0.9)) + " / " + fmtDur(quantile(p.latencies, 1))
			seen = fmtDur(quantile(p.seen, 0.5)) + " / " + fmtDur(quantile(p.seen, 0.99))
			write = fmtDur(quantile(p.writes, 0.5))
			before = strconv.Itoa(p.beforeReturn)
		}
		startCPU := "—"
		if r.startCPU > 0 {
			startCPU = fmtDur(r.startCPU)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			sizeLabel(r), r.mode, fmtInt(r.nodes), fmtDur(r.writeTime), fmtDur(r.cleanTime), startCPU, polls, walks, incomplete, after,
			fmtMB(r.hwm), fmtMB(r.rssAfter), made, samples, p90max, seen, write, before)
	}
	var failed []*scaleResult
	for _, r := range results {
		if r.err != nil {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nFailures:\n\n")
		for _, r := range failed {
			fmt.Fprintf(w, "- %s, %s: %v\n", sizeLabel(r), r.mode, r.err)
		}
	}
}

func sizeLabel(r *scaleResult) string { return fmtInt(r.services) + " x " + strconv.Itoa(r.providers) }

// fmtDur prints a duration in ms below a second, in s above; "—" for a
// negative one (not measured).
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// fmtMB prints bytes in MB (10^6 bytes).
func fmtMB(n int64) string {
	if n == 0 {
		return "—"
	}
	if n < 1e6 {
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// fmtBytes prints bytes in KB below a MB, in MB above.
func fmtBytes(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// fmtCores prints a share of one core in percent.
func fmtCores(c float64) string { return fmt.Sprintf("%.1f%%", 100*c) }

func fmtRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// fmtInt prints n with thousands separators.
func fmtInt(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fmtRatio prints v/base, "1" for the baseline's own, "—" when either is
// not measured or the baseline is 0.
func fmtRatio(v, base float64) string {
	switch {
	case v < 0 || base <= 0:
		return "—"
	case v == base:
		return "1"
	}
	return fmt.Sprintf("%.2f×", v/base)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
