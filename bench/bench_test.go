package bench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/bench/loadgen"
)

// The goals of issue 4.
const (
	goalDubboOverHTTP = 0.8                  // HTTP→Dubbo peak throughput / HTTP→HTTP peak throughput, at least
	goalP99HalfPeak   = 5 * time.Millisecond // p99 latency at half of each route's peak, under
	goalAuthOverPlain = 0.9                  // a route with Redis token auth / the same route without, at least (issue 6)
	goalPerInstance   = 20000                // requests/s one instance sustains, with everything on this machine (issue 6)
)

// How the measurements load the stack.
const (
	peakWorkers     = 64   // closed-loop HTTP workers finding each route's peak
	openWorkers     = 64   // open-loop callers (HTTP connections in use at most)
	openMaxInFlight = 1024 // open-loop calls due but unfinished before one is dropped
)

// plan sizes one run of the suite.
type plan struct {
	rounds       int           // each measurement is made this many times, interleaved; the median is reported
	phase        time.Duration // each closed-loop measurement
	warmup       time.Duration // a discarded closed-loop run before each measured one; 0: none
	maxRequests  int64         // per closed-loop run
	openDuration time.Duration // each open-loop measurement
	profileDir   string        // when set, a CPU profile of each gateway peak run (first round) goes there
}

// sample is one measurement and the CPU other processes used meanwhile.
type sample struct {
	result *loadgen.Result
	others float64 // cores busy outside this process; negative when unknown
}

// row is one line of the table: the median of a measurement's rounds.
type row struct {
	name, load string
	median     sample
	spread     string // the range over the rounds: throughput in closed loop, p99 in open loop
	vs         string // throughput against a baseline of the same run
}

// openRow is an open-loop line: a route at a fraction of its median peak.
type openRow struct {
	row
	p99s []float64 // each round's p99, in ms
}

// report is what one run of the suite found.
type report struct {
	plan               plan
	rows               []row      // closed loop
	open               []openRow  // HTTP→HTTP and HTTP→Dubbo at ½ peak, then at ¼ peak
	dubboOverHTTP      float64    // median HTTP→Dubbo peak / median HTTP→HTTP peak
	pairedLo, pairedHi float64    // the same ratio, round by round: lowest and highest
	authOverPlain      [2]float64 // auth on / auth off peaks: HTTP→HTTP, HTTP→Dubbo
	peaks              [2]float64 // HTTP→HTTP and HTTP→Dubbo peaks
}

// TestSmoke runs the whole suite with a few hundred requests, so the
// measurement code keeps compiling and working; its figures mean nothing.
func TestSmoke(t *testing.T) {
	s := startStack(t)
	r := runSuite(t, s, plan{rounds: 1, phase: 20 * time.Second, maxRequests: 40, openDuration: 30 * time.Millisecond})
	table := r.markdown()
	for _, row := range r.allRows() {
		if row.median.result.OK == 0 || row.median.result.Errors != 0 {
			t.Errorf("%s, %s: %v", row.name, row.load, row.median.result)
		}
		if !strings.Contains(table, "| "+row.name+" | "+row.load+" |") {
			t.Errorf("the table lacks %s, %s:\n%s", row.name, row.load, table)
		}
	}
	if len(r.rows) != 8 || len(r.open) != 4 || len(r.open[0].p99s) != 1 || r.dubboOverHTTP <= 0 || r.authOverPlain[0] <= 0 || r.authOverPlain[1] <= 0 {
		t.Errorf("incomplete report: %d closed-loop rows, %d open-loop rows, ratio %v", len(r.rows), len(r.open), r.dubboOverHTTP)
	}
}

// TestThroughputAndLatency measures issue 4's figures: the Dubbo client
// alone, then HTTP→HTTP and HTTP→Dubbo through the gateway at peak and at
// half peak. It prints a markdown table, also written to
// $DUBBOGW_BENCH_OUT when set. DUBBOGW_BENCH_PHASE sets each measurement's
// length (default 2s) and DUBBOGW_BENCH_ROUNDS their repetitions (default
// 3); DUBBOGW_BENCH_PROFILE_DIR, when set, receives a CPU profile of each
// gateway peak run.
func TestThroughputAndLatency(t *testing.T) {
	if os.Getenv("DUBBOGW_BENCH") != "1" {
		t.Skip("set DUBBOGW_BENCH=1 to measure throughput and latency (about a minute; see docs/BENCHMARKS.md)")
	}
	phase := 2 * time.Second
	if v := os.Getenv("DUBBOGW_BENCH_PHASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Minute {
			t.Fatalf("DUBBOGW_BENCH_PHASE=%q: want a duration up to 1m", v)
		}
		phase = d
	}
	rounds := 3
	if v := os.Getenv("DUBBOGW_BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 9 {
			t.Fatalf("DUBBOGW_BENCH_ROUNDS=%q: want 1 to 9", v)
		}
		rounds = n
	}
	s := startStack(t)
	r := runSuite(t, s, plan{
		rounds:       rounds,
		phase:        phase,
		warmup:       phase / 4,
		maxRequests:  50_000_000,
		openDuration: phase,
		profileDir:   os.Getenv("DUBBOGW_BENCH_PROFILE_DIR"),
	})
	for _, row := range r.allRows() {
		if res := row.median.result; res.Errors != 0 {
			t.Errorf("%s, %s: %d errors, the first: %v", row.name, row.load, res.Errors, res.FirstError)
		}
	}
	table := r.markdown()
	t.Log("\n" + table)
	if out := os.Getenv("DUBBOGW_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Errorf("writing the table to %s: %v", out, err)
		}
	}
}

// closedSpec is one closed-loop measurement of the suite.
type closedSpec struct {
	name, load string
	workers    int
	target     loadgen.Target
	profile    string // CPU profile file name, when profiling
}

// runSuite measures, round after round: the Dubbo client alone with 1, 64
// and 512 callers; GET straight to the HTTP upstream (the baseline of
// HTTP→HTTP); the peak of each gateway route. Then, round after round, each
// route in open loop at half, then a quarter, of its median peak.
func runSuite(t *testing.T, s *stack, p plan) *report {
	t.Helper()
	httpRoute := s.httpTarget(t, s.gatewayURL, "/http/users/42")
	dubboRoute := s.httpTarget(t, s.gatewayURL, "/api/users/42")
	specs := []closedSpec{
		{name: "Dubbo client → provider", load: "1 caller", workers: 1, target: s.getUser},
		{name: "Dubbo client → provider", load: "64 callers", workers: 64, target: s.getUser},
		{name: "Dubbo client → provider", load: "512 callers", workers: 512, target: s.getUser},
		{name: "HTTP client → upstream", load: fmt.Sprintf("%d workers", peakWorkers), workers: peakWorkers,
			target: s.httpTarget(t, s.upstreamURL, "/http/users/42")},
		{name: "gateway HTTP→HTTP", load: fmt.Sprintf("%d workers (peak)", peakWorkers), workers: peakWorkers,
			target: httpRoute, profile: "gateway-http-http.pprof"},
		{name: "gateway HTTP→Dubbo", load: fmt.Sprintf("%d workers (peak)", peakWorkers), workers: peakWorkers,
			target: dubboRoute, profile: "gateway-http-dubbo.pprof"},
		{name: "gateway HTTP→HTTP, Redis token auth", load: fmt.Sprintf("%d workers (peak)", peakWorkers), workers: peakWorkers,
			target: s.httpTarget(t, s.gatewayURL, "/auth/http/users/42", "Authorization", "Bearer "+benchToken), profile: "gateway-http-http-auth.pprof"},
		{name: "gateway HTTP→Dubbo, Redis token auth", load: fmt.Sprintf("%d workers (peak)", peakWorkers), workers: peakWorkers,
			target: s.httpTarget(t, s.gatewayURL, "/auth/api/users/42", "Authorization", "Bearer "+benchToken), profile: "gateway-http-dubbo-auth.pprof"},
	}
	const dubbo1, dubbo64, dubbo512, direct, gwHTTP, gwDubbo, gwHTTPAuth, gwDubboAuth = 0, 1, 2, 3, 4, 5, 6, 7
	samples := make([][]sample, len(specs))
	for round := range p.rounds {
		for i, sp := range specs {
			profile := ""
			if round == 0 {
				profile = sp.profile
			}
			samples[i] = append(samples[i], p.closed(t, sp.workers, sp.target, profile))
		}
	}

	r := &report{plan: p}
	for i, sp := range specs {
		r.rows = append(r.rows, medianRow(sp.name, sp.load, samples[i], throughput))
	}
	peak := func(i int) float64 { return r.rows[i].median.result.Throughput() }
	r.rows[dubbo1].vs = "1"
	r.rows[dubbo64].vs = ratio(peak(dubbo64), peak(dubbo1)) + " 1 caller"
	r.rows[dubbo512].vs = ratio(peak(dubbo512), peak(dubbo1)) + " 1 caller"
	r.rows[direct].vs = "1"
	r.rows[gwHTTP].vs = ratio(peak(gwHTTP), peak(direct)) + " upstream direct"
	r.rows[gwDubbo].vs = ratio(peak(gwDubbo), peak(dubbo64)) + " Dubbo client (64); " + ratio(peak(gwDubbo), peak(gwHTTP)) + " HTTP→HTTP"
	r.rows[gwHTTPAuth].vs = ratio(peak(gwHTTPAuth), peak(gwHTTP)) + " auth off"
	r.rows[gwDubboAuth].vs = ratio(peak(gwDubboAuth), peak(gwDubbo)) + " auth off"
	r.authOverPlain = [2]float64{peak(gwHTTPAuth) / peak(gwHTTP), peak(gwDubboAuth) / peak(gwDubbo)}
	r.peaks = [2]float64{peak(gwHTTP), peak(gwDubbo)}
	r.dubboOverHTTP = peak(gwDubbo) / peak(gwHTTP)
	for round := range p.rounds {
		paired := throughput(samples[gwDubbo][round]) / throughput(samples[gwHTTP][round])
		if round == 0 || paired < r.pairedLo {
			r.pairedLo = paired
		}
		r.pairedHi = max(r.pairedHi, paired)
	}

	routes := []struct {
		name   string
		peak   float64
		target loadgen.Target
	}{{"gateway HTTP→HTTP", peak(gwHTTP), httpRoute}, {"gateway HTTP→Dubbo", peak(gwDubbo), dubboRoute}}
	for _, frac := range []struct {
		name string
		of   float64
	}{{"½", 0.5}, {"¼", 0.25}} {
		samples := make([][]sample, len(routes))
		for range p.rounds { // interleaved, so drifting background load hits both routes alike
			for i, rt := range routes {
				samples[i] = append(samples[i], p.open(t, rt.peak*frac.of, rt.target))
			}
		}
		for i, rt := range routes {
			o := openRow{row: medianRow(rt.name, fmt.Sprintf("open loop, %.0f/s (%s peak)", rt.peak*frac.of, frac.name), samples[i], p99)}
			for _, s := range samples[i] {
				o.p99s = append(o.p99s, p99(s))
			}
			o.vs = "—"
			o.spread = fmt.Sprintf("p99 %.2f–%.2f ms", slices.Min(o.p99s), slices.Max(o.p99s))
			r.open = append(r.open, o)
		}
	}
	return r
}

func throughput(s sample) float64 { return s.result.Throughput() }

// p99 returns a sample's p99 latency in milliseconds.
func p99(s sample) float64 { return float64(s.result.Latency.Quantile(0.99)) / 1e6 }

// medianRow picks the sample with the median value of by; its spread is
// the throughput range over all samples.
func medianRow(name, load string, samples []sample, by func(sample) float64) row {
	sorted := slices.Clone(samples)
	slices.SortFunc(sorted, func(a, b sample) int {
		switch va, vb := by(a), by(b); {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})
	lo, hi := throughput(samples[0]), throughput(samples[0])
	for _, s := range samples {
		lo, hi = min(lo, throughput(s)), max(hi, throughput(s))
	}
	return row{name: name, load: load, median: sorted[len(sorted)/2], spread: fmt.Sprintf("%.0f–%.0f", lo, hi)}
}

func (r *report) allRows() []row {
	rows := slices.Clone(r.rows)
	for _, o := range r.open {
		rows = append(rows, o.row)
	}
	return rows
}

// closed measures the target's peak with workers callers, after a warm-up,
// under the CPU profiler when the plan has a directory and profile a name.
func (p plan) closed(t *testing.T, workers int, target loadgen.Target, profile string) sample {
	t.Helper()
	if p.warmup > 0 {
		p.runClosed(t, workers, p.warmup, target)
	}
	if p.profileDir == "" || profile == "" {
		return p.runClosed(t, workers, p.phase, target)
	}
	path := filepath.Join(p.profileDir, profile)
	file, err := os.Create(path)
	if err != nil {
		t.Fatalf("creating the CPU profile: %v", err)
	}
	defer file.Close()
	if err := pprof.StartCPUProfile(file); err != nil {
		t.Logf("no CPU profile %s (is go test -cpuprofile on?): %v", profile, err)
		return p.runClosed(t, workers, p.phase, target)
	}
	defer t.Logf("CPU profile (whole process; samples labelled role=generator|gateway|upstream|provider): %s", path)
	defer pprof.StopCPUProfile()
	return p.runClosed(t, workers, p.phase, target)
}

func (p plan) runClosed(t *testing.T, workers int, d time.Duration, target loadgen.Target) sample {
	t.Helper()
	runtime.GC() // start each run with the same heap
	cpu := startCPUWatch()
	var res *loadgen.Result
	var err error
	asRole(context.Background(), "generator", func(ctx context.Context) {
		res, err = loadgen.ClosedLoop{Workers: workers, Duration: d, MaxRequests: p.maxRequests}.Run(ctx, target)
	})
	if err != nil {
		t.Fatal(err)
	}
	return sample{result: res, others: cpu.othersCores(res.Elapsed)}
}

// open measures the target's latency at rate calls per second.
func (p plan) open(t *testing.T, rate float64, target loadgen.Target) sample {
	t.Helper()
	runtime.GC()
	cpu := startCPUWatch()
	var res *loadgen.Result
	var err error
	asRole(context.Background(), "generator", func(ctx context.Context) {
		res, err = loadgen.OpenLoop{Rate: rate, Duration: p.openDuration, Workers: openWorkers, MaxInFlight: openMaxInFlight}.Run(ctx, target)
	})
	if err != nil {
		t.Fatal(err)
	}
	return sample{result: res, others: cpu.othersCores(res.Elapsed)}
}

// markdown renders the report: the table, then the goals.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d CPUs (GOMAXPROCS %d), %s. Each line: the median of %d rounds (closed loop: by throughput, %v each after %v of warm-up; open loop: by p99, %v each).\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), r.plan.rounds, r.plan.phase, r.plan.warmup, r.plan.openDuration)
	b.WriteString("| measurement | load | calls/s | rounds' range | throughput vs | p50 | p90 | p99 | p99.9 | max | errors | dropped | other processes' CPU |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, row := range r.allRows() {
		res, l := row.median.result, row.median.result.Latency
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n",
			row.name, row.load, res.Throughput(), row.spread, row.vs,
			ms(l.Quantile(0.5)), ms(l.Quantile(0.9)), ms(l.Quantile(0.99)), ms(l.Quantile(0.999)), ms(l.Max()),
			res.Errors, res.Dropped, cores(row.median.others))
	}
	fmt.Fprintf(&b, "\nHTTP→Dubbo peak / HTTP→HTTP peak: **%.2f** (round by round %.2f–%.2f; goal ≥ %.1f: %s).\n",
		r.dubboOverHTTP, r.pairedLo, r.pairedHi, goalDubboOverHTTP, verdict(r.dubboOverHTTP >= goalDubboOverHTTP))
	httpHalf, dubboHalf := r.open[0], r.open[1]
	httpP99, dubboP99 := httpHalf.median.result.Latency.Quantile(0.99), dubboHalf.median.result.Latency.Quantile(0.99)
	met := httpP99 < goalP99HalfPeak && dubboP99 < goalP99HalfPeak &&
		httpHalf.median.result.Dropped == 0 && dubboHalf.median.result.Dropped == 0
	fmt.Fprintf(&b, "p99 at half peak: HTTP→HTTP **%s** (rounds: %s), HTTP→Dubbo **%s** (rounds: %s); goal < %s: %s.\n",
		ms(httpP99), msList(httpHalf.p99s), ms(dubboP99), msList(dubboHalf.p99s), ms(goalP99HalfPeak), verdict(met))
	fmt.Fprintf(&b, "Redis token auth on / off, same route, same run: HTTP→HTTP **%.2f**, HTTP→Dubbo **%.2f**; goal ≥ %.1f: %s.\n",
		r.authOverPlain[0], r.authOverPlain[1], goalAuthOverPlain, verdict(min(r.authOverPlain[0], r.authOverPlain[1]) >= goalAuthOverPlain))
	fmt.Fprintf(&b, "Whole-gateway peak with the generator, upstream, provider and Redis on the same %d cores: HTTP→HTTP %.0f/s, HTTP→Dubbo %.0f/s; the seed's %d/s per instance: %s.\n",
		runtime.NumCPU(), r.peaks[0], r.peaks[1], goalPerInstance, verdict(max(r.peaks[0], r.peaks[1]) >= goalPerInstance))
	fmt.Fprintf(&b, "The load generator's own lag in handing calls out at half peak (included in the latencies above): HTTP→HTTP p50 %s, p99 %s; HTTP→Dubbo p50 %s, p99 %s.\n",
		ms(httpHalf.median.result.ScheduleLag.Quantile(0.5)), ms(httpHalf.median.result.ScheduleLag.Quantile(0.99)),
		ms(dubboHalf.median.result.ScheduleLag.Quantile(0.5)), ms(dubboHalf.median.result.ScheduleLag.Quantile(0.99)))
	return b.String()
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// ratio formats a/b as "0.62×".
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	if d >= 100*time.Millisecond {
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f ms", float64(d)/1e6)
}

func msList(values []float64) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, ", ") + " ms"
}

func cores(c float64) string {
	if c < 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f cores", c)
}
