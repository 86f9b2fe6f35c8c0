// Command harness benchmarks dubbogw against nginx on 127.0.0.1, in one
// command:
//
//	go run ./bench/harness [-duration 1.5s] [-rounds 3] [-out table.md]
//
// It builds the gateway binary (cmd/dubbogw) and starts, each as its own
// process: an HTTP echo upstream and the demo provider (dubbo/provider) (this
// command's own "upstream" and "provider" subcommands), a private
// redis-server, the gateway (one per route count) and nginx as a reverse
// proxy to the same upstream. It drives each path with bench/loadgen, in a
// process of its own per run (the "load" subcommand), and prints one
// markdown table with the goals; the gateway is profiled during the
// rows whose goal is missed. See docs/BENCHMARKS.md.
//
// With -pixiu it also measures Apache dubbo-go-pixiu (built from
// test/pixiu, with a private ZooKeeper as its registry) on row 4's
// HTTP→Dubbo request to the same provider process, and judges row 4
// against it (pixiu.go).
//
// Two subcommands measure the gateway's discovery at scale instead (issue
// 19): "registry" writes a large Dubbo registry into ZooKeeper, and
// "scale" writes one per size, starts the gateway on it and prints the
// issue's scale table:
//
//	go run ./bench/harness scale -zk HOST:PORT [-sizes 100,1000,5000] [-providers 10] [-mode interface]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches the subcommands the benchmark starts itself, and runs the
// benchmark otherwise.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "upstream":
			return runUpstream(args[1:], stdout, stderr)
		case "provider":
			return runProvider(args[1:], stdout, stderr)
		case "load":
			return runLoad(args[1:], stdout, stderr)
		case "registry":
			return runRegistry(args[1:], stdout, stderr)
		case "scale":
			return runScale(args[1:], stdout, stderr)
		}
	}
	return runBench(args, stdout, stderr)
}

// options are the benchmark's flags.
type options struct {
	duration, warmup time.Duration
	rounds           int
	out              string
	profile          string // missed, always or never
	profileDir       string
	maxProfiles      int
	gatewayBin       string
	engines          []string
	pixiu            bool
	install          bool
	latencyLoad      float64
	timeout          time.Duration
	keep             bool
	// redisTimeout, when set, is the gateways' Redis timeout (redis.timeout
	// and each auth filter's): the smoke test's functional checks must not
	// race the default 50 ms on a loaded machine; a measurement keeps the
	// default.
	redisTimeout time.Duration
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 1500*time.Millisecond, "measured time of each run (each row has a peak run and a latency run per round)")
	fs.DurationVar(&o.warmup, "warmup", 250*time.Millisecond, "unmeasured warm-up before each run")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; rows are interleaved within each round")
	fs.StringVar(&o.out, "out", "", "also write the report to this file")
	fs.StringVar(&o.profile, "profile", "missed", "profile the gateway during rows whose goal is: missed, always (every row with a goal) or never")
	fs.IntVar(&o.maxProfiles, "max-profiles", 4, "profile at most this many rows")
	fs.StringVar(&o.profileDir, "profile-dir", "", "where profiles go (default: a new temporary directory, kept)")
	fs.StringVar(&o.gatewayBin, "gateway-bin", "", "use this dubbogw binary instead of building ./cmd/dubbogw")
	fs.Func("engines", "also measure bare proxies on these server engines (comma-separated: nethttp, fasthttp, loop; built from test/interop/cmd/engineproxy): issue 18's candidates", func(v string) error {
		for _, e := range strings.Split(v, ",") {
			switch e = strings.TrimSpace(e); e {
			case "nethttp", "fasthttp", "loop":
				if !slices.Contains(o.engines, e) {
					o.engines = append(o.engines, e)
				}
			default:
				return fmt.Errorf("%q: want nethttp, fasthttp or loop", e)
			}
		}
		return nil
	})
	fs.BoolVar(&o.pixiu, "pixiu", false, "also measure Apache dubbo-go-pixiu "+pixiuVersion+" (built from test/pixiu, with a private ZooKeeper as its registry) on row 4's HTTP→Dubbo request to the same provider, "+
		"and judge row 4 against it; the latency runs' rate then follows the slowest row, likely pixiu's")
	fs.BoolVar(&o.install, "install", true, "apt-get install nginx and redis-server (and zookeeper with -pixiu) when missing")
	fs.Float64Var(&o.latencyLoad, "latency-load", 0.5, "offered load of the latency runs, as a fraction of the lowest peak at the same connections")
	fs.DurationVar(&o.timeout, "timeout", defaultTimeout, "bound on the whole run (with -pixiu, "+pixiuExtraTimeout.String()+" more by default)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configs, logs)")
	fs.DurationVar(&o.redisTimeout, "redis-timeout", 0, "the gateways' Redis timeout, redis.timeout and the auth filters' (default: the gateway's default)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.pixiu && !flagSet(fs, "timeout") {
		o.timeout += pixiuExtraTimeout
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q (subcommands: upstream, provider, load, registry, scale)", fs.Args())
	case o.duration <= 0 || o.warmup < 0 || o.timeout <= 0:
		return nil, errors.New("-duration and -timeout must be positive, -warmup not negative")
	case o.rounds < 1 || o.rounds > 100:
		return nil, fmt.Errorf("-rounds %d, want 1 to 100", o.rounds)
	case o.latencyLoad <= 0 || o.latencyLoad > 1:
		return nil, fmt.Errorf("-latency-load %v, want more than 0 and at most 1", o.latencyLoad)
	case o.profile != "missed" && o.profile != "always" && o.profile != "never":
		return nil, fmt.Errorf("-profile %q, want missed, always or never", o.profile)
	}
	return o, nil
}

// defaultTimeout bounds a run without -timeout.
const defaultTimeout = 8 * time.Minute

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// The rows: rows 1–4 at each scaling connection count; rows 5 and the
// cost-growth rows at mainConns.
var defaultPlan = planSpec{
	scalingConns:   []int{1, 64, 512},
	mainConns:      64,
	routeCounts:    []int{baseRoutes, 100, 1000},
	providerCounts: []int{baseProviders, 10, 100},
}

func runBench(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "harness:", err)
		}
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := bench(ctx, o, defaultPlan, stdout, logger); err != nil {
		logger.Error("benchmark failed", "error", err)
		return 1
	}
	return 0
}

// bench runs the whole benchmark and writes the report to stdout (and o.out).
func bench(ctx context.Context, o *options, spec planSpec, stdout io.Writer, logger *slog.Logger) error {
	started := time.Now()
	loadBefore := loadAverage()
	tools, err := findTools(ctx, o.install, logger)
	if err != nil {
		return err
	}
	self, err := selfCommand()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "dubbogw-harness-")
	if err != nil {
		return fmt.Errorf("making the work directory: %w", err)
	}
	if o.keep {
		logger.Info("work directory kept", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	gatewayBin := o.gatewayBin
	if gatewayBin == "" {
		root, err := moduleRoot(ctx)
		if err != nil {
			return err
		}
		logger.Info("building the gateway", "module", root)
		if gatewayBin, err = buildGateway(ctx, root, dir); err != nil {
			return err
		}
	}
	var engineBin string
	if len(o.engines) > 0 {
		root, err := moduleRoot(ctx)
		if err != nil {
			return err
		}
		logger.Info("building the engine proxies", "engines", o.engines)
		if engineBin, err = buildEngineProxy(ctx, root, dir); err != nil {
			return err
		}
	}
	var pixiuBin string
	if o.pixiu {
		if pixiuBin, err = preparePixiu(ctx, o.install, dir, logger); err != nil {
			return err
		}
	}
	maxConns := 1
	for _, c := range append(slices.Clone(spec.scalingConns), spec.mainConns) {
		maxConns = max(maxConns, c)
	}
	s, err := startStack(ctx, dir, self, stackSpec{
		gatewayBin:     gatewayBin,
		nginxBin:       tools.nginx,
		redisBin:       tools.redis,
		routeCounts:    spec.routeCounts,
		providerCounts: spec.providerCounts,
		maxConns:       maxConns,
		redisTimeout:   o.redisTimeout,
		engineBin:      engineBin,
		engines:        o.engines,
		pixiuBin:       pixiuBin,
	}, logger)
	if err != nil {
		return err
	}
	defer s.Close()

	p := newPlan(s, spec)
	if err := s.checkAnswers(ctx, p.rows); err != nil {
		return err
	}
	logger.Info("measuring", "rows", len(p.rows), "rounds", o.rounds, "duration", o.duration)
	for round := range o.rounds {
		for _, r := range p.rows {
			res, err := s.measure(ctx, r, o.duration, o.warmup, 0)
			if err != nil {
				return fmt.Errorf("round %d, peak of %s at %d conns: %w", round+1, r.name(), r.conns, err)
			}
			r.peaks = append(r.peaks, res)
		}
		logger.Info("peak round done", "round", round+1)
	}
	p.setLatencyRates(o.latencyLoad)
	for round := range o.rounds {
		for _, r := range p.rows {
			res, err := s.measure(ctx, r, o.duration, o.warmup, r.rate)
			if err != nil {
				return fmt.Errorf("round %d, latency of %s at %d conns: %w", round+1, r.name(), r.conns, err)
			}
			r.lats = append(r.lats, res)
		}
		logger.Info("latency round done", "round", round+1)
	}

	goals := p.goals()
	var profiles []*rowProfile
	if o.profile != "never" {
		profileDir := o.profileDir
		// The main connection count first: -max-profiles may cut the rest.
		byPriority := slices.Clone(goals)
		slices.SortStableFunc(byPriority, func(a, b *goal) int {
			return cmpBool(a.row.conns != spec.mainConns, b.row.conns != spec.mainConns)
		})
		profiled := map[*row]bool{} // a row with two goals (row 4: vs HTTP and vs pixiu) once
		for _, g := range byPriority {
			if g.met && o.profile == "missed" || profiled[g.row] {
				continue
			}
			if len(profiles) >= o.maxProfiles {
				logger.Warn("not profiled: -max-profiles reached", "row", g.row.name(), "conns", g.row.conns)
				continue
			}
			if profileDir == "" {
				if profileDir, err = os.MkdirTemp("", "dubbogw-harness-profiles-"); err != nil {
					return fmt.Errorf("making the profile directory: %w", err)
				}
			}
			logger.Info("profiling the gateway", "row", g.row.name(), "conns", g.row.conns, "dir", profileDir)
			pr, err := s.profile(ctx, g.row, o.duration, o.warmup, profileDir)
			if err != nil {
				return fmt.Errorf("profiling %s: %w", g.row.name(), err)
			}
			profiles = append(profiles, pr)
			profiled[g.row] = true
		}
	}

	info := runInfo{
		date:         started,
		goVersion:    runtime.Version(),
		nginxVersion: tools.nginxVersion,
		cores:        runtime.NumCPU(),
		duration:     o.duration,
		rounds:       o.rounds,
		latencyLoad:  o.latencyLoad,
		loadBefore:   loadBefore,
		loadAfter:    loadAverage(),
	}
	var report strings.Builder
	writeReport(&report, info, p, goals, profiles)
	fmt.Fprintf(&report, "\nWhole run: %v.\n", time.Since(started).Round(time.Second))
	if _, err := io.WriteString(stdout, report.String()); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report.String()), 0o644); err != nil {
			return fmt.Errorf("writing the report to %s: %w", o.out, err)
		}
	}
	return nil
}

// selfCommand is the argv prefix that runs this program's subcommands.
func selfCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program's path: %w", err)
	}
	return []string{exe}, nil
}

// tools are the external programs the stack runs.
type tools struct {
	nginx, redis string
	nginxVersion string
}

// findTools finds nginx and redis-server, installing the Debian packages
// when they are missing and install is set.
func findTools(ctx context.Context, install bool, logger *slog.Logger) (*tools, error) {
	t := &tools{}
	var missing []string
	for _, tool := range []struct {
		name, pkg string
		path      *string
	}{{"nginx", "nginx", &t.nginx}, {"redis-server", "redis-server", &t.redis}} {
		if *tool.path = lookTool(tool.name); *tool.path == "" {
			missing = append(missing, tool.pkg)
		}
	}
	if len(missing) > 0 {
		if !install {
			return nil, fmt.Errorf("%w: %s (Debian packages; or run with -install)", errMissingTools, strings.Join(missing, ", "))
		}
		logger.Info("installing", "packages", missing)
		if err := aptInstall(ctx, missing); err != nil {
			return nil, err
		}
		t.nginx, t.redis = lookTool("nginx"), lookTool("redis-server")
		if t.nginx == "" || t.redis == "" {
			return nil, fmt.Errorf("%w after installing %s", errMissingTools, strings.Join(missing, ", "))
		}
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, t.nginx, "-v").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("running %s -v: %w", t.nginx, err)
	}
	t.nginxVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version: ")
	return t, nil
}

// errMissingTools says nginx or redis-server is not installed.
var errMissingTools = errors.New("missing programs")

// lookTool finds name on PATH or in the system directories Debian installs
// daemons to (not on every user's PATH); "" when it is nowhere.
func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// aptInstall installs Debian packages, as scripts/test.sh does.
func aptInstall(ctx context.Context, pkgs []string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var prefix []string
	if os.Geteuid() != 0 {
		prefix = []string{"sudo"}
	}
	for _, argv := range [][]string{
		append(slices.Clone(prefix), "apt-get", "update", "-qq"),
		append(append(slices.Clone(prefix), "apt-get", "install", "-y", "-qq", "--no-install-recommends"), pkgs...),
	} {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("running %s: %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	return nil
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// loadAverage returns the 1, 5 and 15 minute load averages, "" where
// /proc/loadavg is not.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}
