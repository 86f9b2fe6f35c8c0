package main

// The scale subcommand measures the gateway's discovery at scale (issue
// 19): for each registry layout and size it writes the registry into
// ZooKeeper (registry.go), starts the gateway binary with one Dubbo route
// per interface against it, and measures
//
//   - when /readyz first answers 200, and when every route's service lists
//     all its providers (and whether the first came before the second);
//   - RSS and goroutines once settled, the size of /metrics, the cost of
//     /admin/services (one default page, and paging through all);
//   - the gateway's CPU while a churn changes provider nodes at a fixed
//     rate, then the propagation latency of sampled changes under the
//     same churn (scale_churn.go);
//
// then stops the gateway and deletes the registry. It prints the table,
// each figure's ratio to the first size's (the baseline, measured in the
// same run) and which of the goals hold (scale_report.go).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scaleOptions are the scale subcommand's flags.
type scaleOptions struct {
	zk             string
	gatewayBin     string
	sizes          []int
	providers      int
	modes          []string
	discovery      string
	servicesPerApp int
	root           string
	churnRate      float64
	churnFor       time.Duration
	samples        int
	poll           time.Duration
	settle         time.Duration
	idleFor        time.Duration
	startupTimeout time.Duration
	out            string
	timeout        time.Duration
	keep           bool
}

func parseScaleOptions(args []string, stderr io.Writer) (*scaleOptions, error) {
	o := &scaleOptions{}
	fs := flag.NewFlagSet("harness scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sizes, modes string
	fs.StringVar(&o.zk, "zk", "127.0.0.1:2181", "ZooKeeper host:port (the registry is written there, and deleted after each size)")
	fs.StringVar(&o.gatewayBin, "gateway-bin", "", "the dubbogw binary (default: build ./cmd/dubbogw)")
	fs.StringVar(&sizes, "sizes", "100,1000,5000", "services (interfaces, one route each) per run; the first is the baseline of the ratios")
	fs.IntVar(&o.providers, "providers", 10, "providers per service (application level: instances per application)")
	fs.StringVar(&modes, "mode", modeInterface, "registry layouts measured, comma separated: interface, application, both (the two layouts for the same providers)")
	fs.StringVar(&o.discovery, "discovery", "auto", "the gateway registry's discovery: interface, application or auto")
	fs.IntVar(&o.servicesPerApp, "services-per-app", 10, "application level: interfaces per application (5,000 services: 500 applications)")
	fs.StringVar(&o.root, "root", "dubbo", "the registry's root node")
	fs.Float64Var(&o.churnRate, "churn-rate", 100, "provider changes per second during the CPU and propagation measurements")
	fs.DurationVar(&o.churnFor, "churn-for", 20*time.Second, "length of the CPU measurement under churn, and of the propagation sampling after it")
	fs.IntVar(&o.samples, "samples", 100, "propagation samples, spread over -churn-for")
	fs.DurationVar(&o.poll, "poll", 2*time.Millisecond, "how often a sampled change's service is asked for until the change shows")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "pause after all providers are known, before RSS and goroutines are read")
	fs.DurationVar(&o.idleFor, "idle-for", 3*time.Second, "length of the idle CPU measurement before the churn")
	fs.DurationVar(&o.startupTimeout, "startup-timeout", 0, "bound on a gateway's start, until every provider is known (default: 2 min, plus 1 min per 5,000 services past 10,000)")
	fs.StringVar(&o.out, "out", "", "also write the report to this file")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "bound on the whole run (the registry's last clean-up included)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configs, gateway logs)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > maxServices {
			return nil, fmt.Errorf("-sizes: %q is not a number of services from 1 to %d", s, maxServices)
		}
		o.sizes = append(o.sizes, n)
	}
	for m := range strings.SplitSeq(modes, ",") {
		m = strings.TrimSpace(m)
		if m != modeInterface && m != modeApplication && m != modeBoth {
			return nil, fmt.Errorf("-mode: %q, want interface, application or both", m)
		}
		if o.discovery == modeInterface && m != modeInterface {
			return nil, fmt.Errorf("-mode %s with -discovery interface: the gateway would not read the application level", m)
		}
		if o.discovery == modeApplication && m == modeInterface {
			return nil, errors.New("-mode interface with -discovery application: the gateway would not read the interface level")
		}
		o.modes = append(o.modes, m)
	}
	switch {
	case o.discovery != modeInterface && o.discovery != modeApplication && o.discovery != "auto":
		return nil, fmt.Errorf("-discovery %q: want interface, application or auto", o.discovery)
	case o.providers < 1 || o.providers > 1000:
		return nil, fmt.Errorf("-providers %d: want 1 to 1000", o.providers)
	case o.servicesPerApp < 1:
		return nil, errors.New("-services-per-app must be at least 1")
	case o.churnRate <= 0 || o.churnRate > 10000:
		return nil, fmt.Errorf("-churn-rate %v: want more than 0, at most 10000", o.churnRate)
	case o.churnFor <= 0 || o.samples < 1 || o.poll <= 0 || o.settle < 0 || o.idleFor <= 0 || o.startupTimeout < 0 || o.timeout <= 0:
		return nil, errors.New("-churn-for, -samples, -poll, -idle-for, -startup-timeout and -timeout must be positive, -settle not negative")
	}
	return o, nil
}

func runScale(args []string, stdout, stderr io.Writer) int {
	o, err := parseScaleOptions(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "harness scale:", err)
		}
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := scale(ctx, o, stdout, logger); err != nil {
		logger.Error("scale benchmark failed", "error", err)
		return 1
	}
	return 0
}

// cleanupReserve is the part of the run's time kept for deleting the
// registry of a size whose measurement ran out of time.
func cleanupReserve(total time.Duration) time.Duration { return min(time.Minute, total/4) }

// scale measures every layout at every size and writes the report. The
// work directory (configurations, gateway logs) is kept with -keep or
// when a run failed.
func scale(ctx context.Context, o *scaleOptions, stdout io.Writer, logger *slog.Logger) (err error) {
	started := time.Now()
	loadBefore := loadAverage()
	dir, err := os.MkdirTemp("", "dubbogw-scale-")
	if err != nil {
		return fmt.Errorf("making the work directory: %w", err)
	}
	defer func() {
		if o.keep || err != nil {
			logger.Info("work directory kept", "dir", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	bin := o.gatewayBin
	if bin == "" {
		root, err := moduleRoot(ctx)
		if err != nil {
			return err
		}
		logger.Info("building the gateway", "module", root)
		if bin, err = buildGateway(ctx, root, dir); err != nil {
			return err
		}
	}
	// The measurements stop early enough to leave the last size's
	// registry time to be deleted within the run's bound.
	measureCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		measureCtx, cancel = context.WithDeadline(ctx, deadline.Add(-cleanupReserve(time.Until(deadline))))
		defer cancel()
	}
	var results []*scaleResult
	var runErr error
runs:
	for _, mode := range o.modes {
		for _, size := range o.sizes {
			if err := measureCtx.Err(); err != nil {
				runErr = fmt.Errorf("out of time before %d x %d (%s): %w", size, o.providers, mode, err)
				break runs
			}
			logger.Info("measuring", "mode", mode, "services", size, "providers", o.providers)
			r := measureScale(measureCtx, ctx, o, mode, size, bin, dir, logger)
			if r.err != nil {
				logger.Error("measurement failed", "mode", mode, "services", size, "error", r.err)
			} else {
				logger.Info("measured", "mode", mode, "services", size, "ready", r.ready, "all_known", r.allKnown,
					"rss_mb", float64(r.rss)/1e6, "goroutines", r.goroutines, "cpu", r.churnCPU, "prop_p99", r.propQuantile(0.99))
			}
			results = append(results, r)
		}
	}
	info := scaleInfo{
		date: started, goVersion: runtime.Version(), cores: runtime.NumCPU(),
		loadBefore: loadBefore, loadAfter: loadAverage(), opts: o, elapsed: time.Since(started),
	}
	var report strings.Builder
	writeScaleReport(&report, info, results)
	if _, err := io.WriteString(stdout, report.String()); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report.String()), 0o644); err != nil {
			return fmt.Errorf("writing the report to %s: %w", o.out, err)
		}
	}
	for _, r := range results {
		if r.err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("%d x %d (%s) failed: %w", r.services, r.providers, r.mode, r.err))
		}
	}
	return runErr
}

// scaleLayout is the registry of one run: size interfaces with
// o.providers providers each, in layout mode.
func scaleLayout(o *scaleOptions, mode string, size int) registryOptions {
	return registryOptions{
		zk: o.zk, root: o.root, prefix: "com.example.scale.Service", appPrefix: "scale-app-", mode: mode,
		services: size, providers: o.providers,
		apps: (size + o.servicesPerApp - 1) / o.servicesPerApp, instances: o.providers,
		batch: 200,
	}
}

// scaleResult is what one run measured.
type scaleResult struct {
	mode                 string
	services, providers  int
	nodes                int
	writeTime, cleanTime time.Duration
	startup              *startupResult
	ready, allKnown      time.Duration // since the gateway was started
	// startCPU is the CPU time the gateway had used when every service
	// was seen complete (with answering the harness's polls meanwhile):
	// on a machine shared with ZooKeeper, a steadier figure of the start's
	// cost than its wall time.
	startCPU           time.Duration
	rss, hwm, rssAfter int64 // bytes: settled, peak, after the churn
	goroutines         int
	metricsBytes       int64
	metricsLines       int
	pageTime           time.Duration // one default page of /admin/services
	pageBytes          int64
	allPages           int // paging through all, default page size
	allTime            time.Duration
	allBytes           int64
	idleCPU, churnCPU  float64 // cores
	churn              *churnStats
	prop               *propagation
	// measured is set once every figure was taken; err says what went
	// wrong (the deletion of the registry may fail after a measurement).
	measured bool
	err      error
}

// measureScale runs one layout at one size. ctx bounds the measurement,
// cleanCtx the registry's deletion (which runs even when ctx has ended).
func measureScale(ctx, cleanCtx context.Context, o *scaleOptions, mode string, size int, bin, dir string, logger *slog.Logger) *scaleResult {
	r := &scaleResult{mode: mode, services: size, providers: o.providers}
	lay := scaleLayout(o, mode, size)
	// Leftovers of an interrupted run would make the creations fail.
	clean := func(c context.Context) (int, error) {
		deadline, ok := c.Deadline()
		if !ok {
			deadline = time.Now().Add(10 * time.Minute)
		}
		if time.Until(deadline) <= 0 {
			return 0, errors.New("no time left to delete the registry")
		}
		l := lay
		l.clean, l.timeout = true, time.Until(deadline)
		return writeRegistry(l)
	}
	if _, err := clean(ctx); err != nil {
		r.err = fmt.Errorf("deleting leftovers: %w", err)
		return r
	}
	defer func() {
		start := time.Now()
		if _, err := clean(cleanCtx); err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("deleting the registry: %w", err))
		}
		r.cleanTime = time.Since(start)
	}()
	deadline, _ := ctx.Deadline()
	lay.timeout = time.Until(deadline)
	if lay.timeout <= 0 {
		lay.timeout = 10 * time.Minute
	}
	start := time.Now()
	n, err := writeRegistry(lay)
	if err != nil {
		r.err = fmt.Errorf("writing the registry: %w", err)
		return r
	}
	r.nodes, r.writeTime = n, time.Since(start)
	logger.Info("registry written", "nodes", n, "took", r.writeTime.Round(time.Millisecond))

	gw, err := startScaleGateway(o, lay, bin, dir)
	if err != nil {
		r.err = err
		return r
	}
	defer gw.close()
	if r.err = gw.measure(ctx, o, lay, r, logger); r.err == nil {
		r.measured = true
	}
	return r
}

// scaleGateway is a gateway started on a generated registry.
type scaleGateway struct {
	child   *child
	admin   string // http://127.0.0.1:port
	started time.Time
	client  *http.Client
	log     string
}

// close stops the gateway (SIGTERM: its session closes, and ZooKeeper
// removes its consumer nodes) and the client's idle connections to it.
func (gw *scaleGateway) close() {
	gw.child.stop()
	gw.client.CloseIdleConnections()
}

// startScaleGateway writes the gateway's configuration and starts it.
func startScaleGateway(o *scaleOptions, lay registryOptions, bin, dir string) (*scaleGateway, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	adminPort, err := freePort()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("gateway-%s-%d", lay.mode, lay.services)
	yml := scaleGatewayYAML(lay, o.zk, o.discovery, "127.0.0.1:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(adminPort))
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		return nil, fmt.Errorf("writing the gateway config: %w", err)
	}
	gw := &scaleGateway{
		admin:  "http://127.0.0.1:" + strconv.Itoa(adminPort),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		log:    filepath.Join(dir, name+".log"),
	}
	gw.started = time.Now()
	if gw.child, err = startChild(dir, name, nil, bin, "run", "--config", path); err != nil {
		return nil, err
	}
	return gw, nil
}

// scaleGatewayYAML is the configuration of a scale run: the zookeeper
// registry "zk" on the generated root, one Dubbo route per interface
// (GET /s<i>/{id} calling get(String)), strict readiness, no access log,
// pprof on the admin listener (to profile a run while it goes).
func scaleGatewayYAML(lay registryOptions, zkAddr, discovery, listen, admin string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# written by bench/harness scale
listen: %q
admin: {listen: %q, readiness: strict, pprof: true}
log: {level: warn}
access_log: {enabled: false}
shutdown: {delay: 0s, idle_grace: 0s, drain_timeout: 2s}
registries:
  zk:
    type: zookeeper
    address: %q
    root: %q
    discovery: %s
`, listen, admin, zkAddr, strings.Trim(lay.root, "/"), discovery)
	if lay.servicesRoot != "" {
		fmt.Fprintf(&b, "    services_root: %q\n", lay.servicesRoot)
	}
	b.WriteString("routes:\n")
	for i := range lay.services {
		fmt.Fprintf(&b, "  - {name: s%d, match: {methods: [GET], path: \"/s%d/{id}\"}, dubbo: {registry: zk, interface: %s, method: get, params: [{type: java.lang.String, from: path, name: id}]}}\n",
			i, i, lay.iface(i))
	}
	return b.String()
}

// startupBound is how long a gateway on a registry of services may take
// to start: -startup-timeout, or by default 2 min, plus a minute per
// 5,000 services past 10,000 (at 50,000 the start takes ~45 s and the
// first walk of /admin/services, 250 pages, over a minute: 2 min was too
// short).
func (o *scaleOptions) startupBound(services int) time.Duration {
	if o.startupTimeout > 0 {
		return o.startupTimeout
	}
	return 2*time.Minute + time.Duration(max(0, services-10000)/5000)*time.Minute
}

// measure takes every figure of one run from the started gateway.
func (gw *scaleGateway) measure(ctx context.Context, o *scaleOptions, lay registryOptions, r *scaleResult, logger *slog.Logger) error {
	pid := gw.child.cmd.Process.Pid
	sctx, cancel := context.WithTimeout(ctx, o.startupBound(lay.services))
	st, err := watchStartup(sctx, gw, lay)
	cancel()
	r.startup = st
	if err != nil {
		return fmt.Errorf("starting the gateway: %w (log: %s)", err, gw.log)
	}
	r.ready, r.allKnown = st.ready.Sub(gw.started), st.allKnown.Sub(gw.started)
	if r.startCPU, err = procCPU(pid); err != nil {
		return err
	}
	logger.Info("gateway ready", "ready", r.ready.Round(time.Millisecond), "all_known", r.allKnown.Round(time.Millisecond),
		"ready_before_all_known", st.readyEarly())

	if err := sleepCtx(ctx, o.settle); err != nil {
		return err
	}
	if r.rss, r.hwm, err = procMemory(pid); err != nil {
		return err
	}
	mt, err := gw.scrapeMetrics(ctx)
	if err != nil {
		return err
	}
	r.metricsBytes, r.metricsLines, r.goroutines = mt.bytes, mt.lines, mt.goroutines

	t0 := time.Now()
	_, pageBytes, err := gw.servicesPage(ctx, "/admin/services", nil)
	if err != nil {
		return err
	}
	r.pageTime, r.pageBytes = time.Since(t0), pageBytes
	t0 = time.Now()
	if r.allPages, r.allBytes, err = gw.walkServices(ctx, 0, func(*serviceView) {}); err != nil {
		return err
	}
	r.allTime = time.Since(t0)

	if r.idleCPU, err = cpuOver(ctx, pid, o.idleFor); err != nil {
		return err
	}
	logger.Info("measuring under churn", "rate", o.churnRate, "for", o.churnFor)
	if err := gw.churnAndSample(ctx, o, lay, r); err != nil {
		return err
	}
	if r.rssAfter, _, err = procMemory(pid); err != nil {
		return err
	}
	select {
	case <-gw.child.done:
		return fmt.Errorf("the gateway exited during the measurement (%v); see %s", gw.child.err, gw.log)
	default:
	}
	return nil
}

// sleepCtx waits d, or less when ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
