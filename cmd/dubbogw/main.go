// Command dubbogw is an API gateway for HTTP clients calling Apache Dubbo and
// HTTP services.
//
//	dubbogw run --config FILE|zookeeper://[user:password@]HOST:PORT[,HOST:PORT]/PATH
//	            [--config-cache FILE] [--config-timeout D]
//	            [--listen ADDR] [--admin-listen ADDR] [--log-level LEVEL] [--log-format FORMAT]
//	dubbogw validate --config FILE|zookeeper://... [--config-timeout D]
//	dubbogw config (get|push FILE|diff FILE|history|rollback VERSION) --zookeeper URL [--path PATH] [flags]
//	dubbogw invoke (--addr HOST:PORT | --registry URL) [--types T1,T2] [--version V] [--group G]
//	               [--timeout D] [--typed] [--keep-class] INTERFACE.METHOD [JSON_ARG ...]
//	dubbogw version
//	dubbogw COMMAND --help
//
// Flags override the DUBBOGW_* environment variables, which override the file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/configsource"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/observe"
	"github.com/dubbogw/dubbogw/proxy"
)

const usage = `dubbogw: an API gateway for HTTP clients calling Dubbo and HTTP services

usage:
  dubbogw run --config FILE [flags]   run the gateway (FILE, or zookeeper://HOST:PORT/PATH: a node watched)
  dubbogw validate --config FILE      check a configuration; exit 0 when valid
  dubbogw config get|push|diff|history|rollback --zookeeper zookeeper://HOST:PORT/PATH [flags]
                                      keep the configuration in ZooKeeper (dubbogw config --help)
  dubbogw invoke (--addr HOST:PORT | --registry zookeeper://HOST:PORT[/ROOT]) [flags] IFACE.METHOD [JSON_ARG ...]
                                      call a Dubbo method, print the result as JSON
  dubbogw version                     print the version and what the build says of it
  dubbogw COMMAND --help              the command's usage and every flag

run flags (override DUBBOGW_LISTEN, DUBBOGW_ADMIN_LISTEN, DUBBOGW_LOG_LEVEL, DUBBOGW_LOG_FORMAT and the file):
  --listen ADDR        data-plane listener, e.g. :8080
  --admin-listen ADDR  admin listener, e.g. 127.0.0.1:9090
  --log-level LEVEL    debug, info, warn or error
  --log-format FORMAT  json or text
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "invoke":
		return cmdInvoke(args[1:], stdout, stderr)
	case "config":
		return cmdConfig(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprint(stdout, observe.Build())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "dubbogw: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// secondSignalAfter is how long after the signal that started a drain
// another stops the process at once; one sooner is the same request.
const secondSignalAfter = time.Second

// overrides are the flag values that beat the environment and the file.
type overrides struct {
	configPath, listen, adminListen, logLevel, logFormat string

	// With --config zookeeper://...: the node's source, its cache and
	// the bound of one read.
	src           *configsource.Source
	configCache   string
	configTimeout time.Duration
}

// parseCommand parses a subcommand's flags. Usage is fs's text before
// the flag list. -h, -help and --help print the usage and the flags to
// stdout: done with code 0; a bad flag prints the problem and the usage to
// stderr: done with code 2.
func parseCommand(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	printUsage := func(w io.Writer) {
		fmt.Fprint(w, usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fs.Usage = func() {} // printed below, to the stream the case calls for
	fs.SetOutput(stderr) // the flag package's own message for a bad flag
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout)
		return 0, true
	case err != nil:
		printUsage(stderr)
		return 2, true
	}
	fs.Usage = func() { printUsage(stderr) }
	return 0, false
}

const runUsage = `usage: dubbogw run --config FILE|zookeeper://[user:password@]HOST:PORT[,HOST:PORT]/PATH
                   [--config-cache FILE] [--config-timeout D]
                   [--listen ADDR] [--admin-listen ADDR] [--log-level LEVEL] [--log-format FORMAT]

Runs the gateway. Flags override the DUBBOGW_LISTEN, DUBBOGW_ADMIN_LISTEN,
DUBBOGW_LOG_LEVEL and DUBBOGW_LOG_FORMAT environment variables, which
override the file. SIGHUP reloads the file; SIGTERM or SIGINT drains and
stops (a second one, a second or more later, stops at once).

With --config zookeeper://..., the configuration is the node's data
(${NAME} in the URL is taken from the environment: write the password
so); the node is watched and every change loaded as a reload is, and
SIGHUP reads it again. --config-cache keeps the last accepted one, to
start from when ZooKeeper cannot be read within --config-timeout.

flags:
`

const validateUsage = `usage: dubbogw validate --config FILE|zookeeper://[user:password@]HOST:PORT[,HOST:PORT]/PATH [--config-timeout D]

Checks a configuration as run would load it (file or ZooKeeper node, then
environment) and exits 0 when it is valid, 1 with the problems when it is
not.

flags:
`

func parseFlags(name string, args []string, stdout, stderr io.Writer, withRunFlags bool) (o *overrides, code int, done bool) {
	o = &overrides{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.configPath, "config", "", "configuration file (YAML), or zookeeper://[user:password@]HOST:PORT[,HOST:PORT]/PATH: a ZooKeeper node holding it")
	fs.DurationVar(&o.configTimeout, "config-timeout", configsource.DefaultTimeout, "with --config zookeeper://: bound of one read of the node (at start, how long ZooKeeper is waited for)")
	usage := validateUsage
	if withRunFlags {
		usage = runUsage
		fs.StringVar(&o.configCache, "config-cache", "", "with --config zookeeper://: file kept with the last accepted configuration (mode 0600), started from when ZooKeeper cannot be read")
		fs.StringVar(&o.listen, "listen", "", "data-plane listener address, e.g. :8080")
		fs.StringVar(&o.adminListen, "admin-listen", "", "admin listener address, e.g. 127.0.0.1:9090")
		fs.StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error")
		fs.StringVar(&o.logFormat, "log-format", "", "json or text")
	}
	if code, done := parseCommand(fs, usage, args, stdout, stderr); done {
		return nil, code, true
	}
	if o.configPath == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dubbogw %s: --config FILE is required and takes no other arguments\n\n", name)
		fs.Usage()
		return nil, 2, true
	}
	if o.configCache != "" && !configsource.IsZooKeeper(o.configPath) {
		fmt.Fprintf(stderr, "dubbogw %s: --config-cache goes with --config zookeeper://...\n\n", name)
		fs.Usage()
		return nil, 2, true
	}
	if o.configTimeout <= 0 {
		fmt.Fprintf(stderr, "dubbogw %s: --config-timeout must be positive\n\n", name)
		fs.Usage()
		return nil, 2, true
	}
	return o, 0, false
}

// openSource opens the ZooKeeper node --config names; nil for a file.
func (o *overrides) openSource(log *slog.Logger) error {
	if !configsource.IsZooKeeper(o.configPath) {
		return nil
	}
	loc, err := configsource.ParseLocation(o.configPath, os.LookupEnv)
	if err != nil {
		return err
	}
	o.src, err = configsource.Open(loc, configsource.Options{Timeout: o.configTimeout, Cache: o.configCache, Logger: log})
	return err
}

// name is the configuration's source as messages name it: the file, or
// the node's URL without its credentials.
func (o *overrides) name() string {
	if o.src != nil {
		return o.src.Name()
	}
	return o.configPath
}

// load reads the file (or the ZooKeeper node) and applies the
// environment, then the flags.
func (o *overrides) load() (*config.Config, error) {
	if o.src == nil {
		return o.apply(config.Load(o.configPath))
	}
	data, err := o.src.Read()
	if err != nil {
		return nil, err
	}
	return o.apply(config.Parse(data, o.src.Name(), os.LookupEnv))
}

// loadAtStart is load for the first configuration: from ZooKeeper, or
// from the cache when ZooKeeper cannot be read in time.
func (o *overrides) loadAtStart() (*config.Config, error) {
	if o.src == nil {
		return o.load()
	}
	data, name, err := o.src.ReadAtStart()
	if err != nil {
		return nil, err
	}
	return o.apply(config.Parse(data, name, os.LookupEnv))
}

// apply applies the environment, then the flags, to a configuration
// read, and validates the result.
func (o *overrides) apply(cfg *config.Config, err error) (*config.Config, error) {
	if err != nil {
		return nil, err
	}
	if err := config.ApplyEnvOverrides(cfg, os.LookupEnv); err != nil {
		return nil, err
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Listen, o.listen)
	set(&cfg.Admin.Listen, o.adminListen)
	set(&cfg.Log.Level, o.logLevel)
	set(&cfg.Log.Format, o.logFormat)
	if err := config.Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	o, code, done := parseFlags("validate", args, stdout, stderr, false)
	if done {
		return code
	}
	if err := o.openSource(slog.New(slog.DiscardHandler)); err != nil {
		fmt.Fprintf(stderr, "invalid configuration:\n%v\n", err)
		return 1
	}
	if o.src != nil {
		defer o.src.Close()
	}
	cfg, err := o.load()
	if err == nil {
		err = gateway.Check(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "invalid configuration:\n%v\n", err)
		return 1
	}
	for _, w := range config.Warnings(cfg) {
		fmt.Fprintf(stderr, "warning: %v\n", w)
	}
	fmt.Fprintf(stdout, "%s: ok (%d routes, %d upstreams)\n", o.name(), len(cfg.Routes), len(proxy.UpstreamsOf(cfg)))
	return 0
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	o, code, done := parseFlags("run", args, stdout, stderr, true)
	if done {
		return code
	}
	// The source logs before the configuration says how: through a
	// handler switched to the configured one once it is read.
	var sourceLog swapHandler
	sourceLog.set(slog.NewJSONHandler(stderr, nil))
	if err := o.openSource(slog.New(&sourceLog)); err != nil {
		fmt.Fprintf(stderr, "invalid configuration:\n%v\n", err)
		return 1
	}
	opts := gateway.Options{WatchPath: o.configPath}
	if o.src != nil {
		defer o.src.Close() // once the gateway has stopped watching it
		opts.WatchPath, opts.Source = "", o.src
	}
	cfg, err := o.loadAtStart()
	if err != nil {
		fmt.Fprintf(stderr, "invalid configuration:\n%v\n", err)
		return 1
	}
	level, err := observe.ParseLevel(cfg.Log.Level)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	logger, levelVar := observe.NewLogger(stderr, cfg.Log.Format, level)
	sourceLog.set(logger.Handler())
	first := true
	opts.Load = func() (*config.Config, error) {
		if first { // the configuration was just read and checked above
			first = false
			return cfg, nil
		}
		return o.load()
	}
	opts.Logger, opts.LogLevel, opts.Registry = logger, levelVar, observe.NewRegistry()
	if o.src != nil {
		if err := o.src.Register(opts.Registry); err != nil {
			logger.Error("cannot build the gateway", "error", err)
			return 1
		}
	}
	g, err := gateway.New(opts)
	if err != nil {
		logger.Error("cannot build the gateway", "error", err)
		return 1
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)

	ctx := context.Background()
	if err := g.Start(ctx); err != nil {
		logger.Error("cannot start", "error", err)
		_ = g.Shutdown(ctx)
		return 1
	}
	for sig := range signals {
		if sig == syscall.SIGHUP {
			_ = g.Reload(ctx)
			continue
		}
		logger.Info("signal received; shutting down gracefully (send it again, a second or more later, to stop at once)", "signal", sig.String())
		first := time.Now()
		done := make(chan error, 1)
		go func() { done <- g.Shutdown(ctx) }()
		for {
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					logger.Warn("shutdown finished with errors", "error", err)
				}
				return 0
			case sig := <-signals:
				switch {
				case sig == syscall.SIGHUP:
				case time.Since(first) < secondSignalAfter:
					// A process manager that signals the process and its
					// group delivers the same signal twice at once: that
					// is one request to drain, not two.
					logger.Info("repeated signal ignored: already draining", "signal", sig.String())
				default:
					logger.Warn("second signal: exiting without draining", "signal", sig.String())
					return 1
				}
			}
		}
	}
	return 0
}
