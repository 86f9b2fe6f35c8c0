// Command dubbogw is an API gateway for HTTP clients calling Apache Dubbo and
// HTTP services.
//
//	dubbogw run --config FILE [--listen ADDR] [--admin-listen ADDR] [--log-level LEVEL] [--log-format FORMAT]
//	dubbogw validate --config FILE
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
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/observe"
	"github.com/dubbogw/dubbogw/proxy"
)

const usage = `dubbogw: an API gateway for HTTP clients calling Dubbo and HTTP services

usage:
  dubbogw run --config FILE [flags]   run the gateway
  dubbogw validate --config FILE      check a configuration; exit 0 when valid
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

const runUsage = `usage: dubbogw run --config FILE [--listen ADDR] [--admin-listen ADDR] [--log-level LEVEL] [--log-format FORMAT]

Runs the gateway. Flags override the DUBBOGW_LISTEN, DUBBOGW_ADMIN_LISTEN,
DUBBOGW_LOG_LEVEL and DUBBOGW_LOG_FORMAT environment variables, which
override the file. SIGHUP reloads the file; SIGTERM or SIGINT drains and
stops (a second one, a second or more later, stops at once).

flags:
`

const validateUsage = `usage: dubbogw validate --config FILE

Checks a configuration as run would load it (file, then environment) and
exits 0 when it is valid, 1 with the problems when it is not.

flags:
`

func parseFlags(name string, args []string, stdout, stderr io.Writer, withRunFlags bool) (o *overrides, code int, done bool) {
	o = &overrides{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.configPath, "config", "", "configuration file (YAML)")
	usage := validateUsage
	if withRunFlags {
		usage = runUsage
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
	return o, 0, false
}

// load reads the file and applies the environment, then the flags.
func (o *overrides) load() (*config.Config, error) {
	cfg, err := config.Load(o.configPath)
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
	fmt.Fprintf(stdout, "%s: ok (%d routes, %d upstreams)\n", o.configPath, len(cfg.Routes), len(proxy.UpstreamsOf(cfg)))
	return 0
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	o, code, done := parseFlags("run", args, stdout, stderr, true)
	if done {
		return code
	}
	cfg, err := o.load()
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
	first := true
	g, err := gateway.New(gateway.Options{
		Load: func() (*config.Config, error) {
			if first { // the file was just read and checked above
				first = false
				return cfg, nil
			}
			return o.load()
		},
		WatchPath: o.configPath,
		Logger:    logger,
		LogLevel:  levelVar,
		Registry:  observe.NewRegistry(),
	})
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
