package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/configsource"
	"github.com/dubbogw/dubbogw/gateway"
)

const configUsage = `usage: dubbogw config COMMAND --zookeeper zookeeper://[user:password@]HOST:PORT[,HOST:PORT][/PATH] [--path PATH] [flags] [ARG]

Keeps the gateway's configuration in a ZooKeeper node, which instances run
with --config zookeeper://HOST:PORT/PATH watch and load as they change.
${NAME} in --zookeeper is taken from the environment (write the password
so: the command line is visible to every user of the machine).

commands:
  get               print the live configuration (its version on stderr)
  push FILE         validate FILE as "dubbogw validate" does, then write it if the
                    node is still at the version read (or --if-version); the
                    history keeps the last --keep pushes
  diff FILE         what pushing FILE would change; exit 0 same, 1 different
  history           the versions kept, oldest first, with time and size
  rollback VERSION  push a version from the history back (validated, compare-and-set)

Exit status: 0 done, 1 failed (an invalid configuration, ZooKeeper), 2 usage,
3 a conflict: the node changed since the version expected (diff: 0 same,
1 different, 2 trouble).

"dubbogw config COMMAND --help" lists the command's flags.
`

// configHelp says what each config command does, for its --help.
var configHelp = map[string]string{
	"get": "Prints the live configuration to stdout, and its version, size and time to stderr.",
	"push": `Validates FILE as "dubbogw validate" does (nothing is written when it is
invalid), then writes it with a compare-and-set on the node's version: the
version read as the command starts, or --if-version (what get showed), so
that two operators cannot overwrite each other unknowingly; --force writes
anyway. The node and its history entry are written in one transaction;
the history keeps the last --keep pushes.`,
	"diff":     "Shows what pushing FILE would change in the live configuration, as a unified\ndiff: exit 0 when they are the same, 1 when they differ, 2 on trouble.",
	"history":  "Lists the versions the history keeps, oldest first: version, time pushed,\nsize, and which one is live.",
	"rollback": "Pushes VERSION from the history back, validated and with the same\ncompare-and-set as push: it becomes a new version.",
}

const configExit = `Exit status: 0 done, 1 failed (an invalid configuration, ZooKeeper), 2 usage,
3 a conflict: the node changed since the version expected.`

// exitConflict is a push refused by the compare-and-set.
const exitConflict = 3

// configFlags are what every config command takes.
type configFlags struct {
	zookeeper, path string
	timeout         time.Duration
	ifVersion       int
	force           bool
	keep            int
}

func cmdConfig(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, configUsage)
		return 2
	}
	switch args[0] {
	case "help", "--help", "-h", "-help":
		fmt.Fprint(stdout, configUsage)
		return 0
	case "get", "push", "diff", "history", "rollback":
	default:
		fmt.Fprintf(stderr, "dubbogw config: unknown command %q\n\n%s", args[0], configUsage)
		return 2
	}
	name := args[0]
	argName := map[string]string{"push": "FILE", "diff": "FILE", "rollback": "VERSION"}[name]
	writes := name == "push" || name == "rollback"
	synopsis := "usage: dubbogw config " + name + " --zookeeper zookeeper://[user:password@]HOST:PORT[,HOST:PORT][/PATH] [--path PATH] [--timeout D]"
	if writes {
		synopsis += " [--if-version N] [--force] [--keep N]"
	}
	if argName != "" {
		synopsis += " " + argName
	}
	usage := synopsis + "\n\n" + configHelp[name] + "\n\n" + configExit + "\n\nflags (before " + orNone(argName) + "):\n"

	var f configFlags
	fs := flag.NewFlagSet("config "+name, flag.ContinueOnError)
	fs.StringVar(&f.zookeeper, "zookeeper", "", "ZooKeeper: zookeeper://[user:password@]HOST:PORT[,HOST:PORT][/PATH] (or HOST:PORT,...); digest credentials in the user info")
	fs.StringVar(&f.path, "path", "", "the configuration node's path, when --zookeeper has none")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound of each ZooKeeper operation")
	if writes {
		fs.IntVar(&f.ifVersion, "if-version", -1, "write only if the node is at this version (what get showed); default: the version read as the command starts")
		fs.BoolVar(&f.force, "force", false, "write whatever the node's version")
		fs.IntVar(&f.keep, "keep", configsource.DefaultKeep, "history entries to keep")
	}
	if code, done := parseCommand(fs, usage, args[1:], stdout, stderr); done {
		return code
	}
	wantArgs := 0
	if argName != "" {
		wantArgs = 1
	}
	if fs.NArg() != wantArgs {
		fmt.Fprintf(stderr, "dubbogw config %s: want %s, got %d arguments (flags go before it)\n\n", name, orNone(argName), fs.NArg())
		fs.Usage()
		return 2
	}
	if writes && f.keep < 1 {
		fmt.Fprintf(stderr, "dubbogw config %s: --keep must be at least 1\n", name)
		return 2
	}
	loc, err := f.location()
	if err != nil {
		fmt.Fprintf(stderr, "dubbogw config %s: %v\n", name, err)
		return 2
	}
	arg := fs.Arg(0)
	// Validation needs no ZooKeeper: a bad file is refused before any
	// connection.
	var data []byte
	switch name {
	case "push", "diff":
		if data, err = readConfigFile(arg); err != nil {
			fmt.Fprintf(stderr, "dubbogw config %s: %v\n", name, err)
			return 1
		}
		if name == "push" && !validConfig(data, arg, stderr) {
			fmt.Fprintln(stderr, "nothing written")
			return 1
		}
	}
	store, err := configsource.OpenStore(loc, f.timeout, nil)
	if err != nil {
		fmt.Fprintf(stderr, "dubbogw config %s: %v\n", name, err)
		return 1
	}
	defer store.Close()
	ctx := context.Background()
	switch name {
	case "get":
		return configGet(ctx, store, loc, stdout, stderr)
	case "push":
		return configPush(ctx, store, loc, data, f, stdout, stderr)
	case "diff":
		return configDiff(ctx, store, loc, data, arg, stdout, stderr)
	case "history":
		return configHistory(ctx, store, stdout, stderr)
	default:
		v, err := strconv.ParseInt(arg, 10, 32)
		if err != nil || v < 0 {
			fmt.Fprintf(stderr, "dubbogw config rollback: %q is not a version (see dubbogw config history)\n", arg)
			return 2
		}
		data, err := store.EntryData(ctx, int32(v))
		if err != nil {
			fmt.Fprintf(stderr, "dubbogw config rollback: %v\n", err)
			return 1
		}
		// Valid when pushed, but checked again: this build may judge it otherwise.
		if !validConfig(data, fmt.Sprintf("%s history version %d", loc, v), stderr) {
			fmt.Fprintln(stderr, "nothing written")
			return 1
		}
		return configPush(ctx, store, loc, data, f, stdout, stderr)
	}
}

func orNone(s string) string {
	if s == "" {
		return "no argument"
	}
	return s
}

// location is --zookeeper with --path: a URL (its path, or --path) or a
// bare server list.
func (f configFlags) location() (configsource.Location, error) {
	if f.zookeeper == "" {
		return configsource.Location{}, errors.New("--zookeeper is required")
	}
	raw := f.zookeeper
	if !configsource.IsZooKeeper(raw) {
		raw = configsource.Scheme + raw
	}
	if f.path != "" {
		if err := configsource.CheckPath(f.path); err != nil {
			return configsource.Location{}, fmt.Errorf("--path: %w", err)
		}
		// The path given apart: the URL must have none.
		probe, err := configsource.ParseLocation(raw+"/x", os.LookupEnv)
		if err != nil || probe.Path != "/x" {
			return configsource.Location{}, errors.New("--path and a path in --zookeeper: give one")
		}
		probe.Path = f.path
		return probe, nil
	}
	return configsource.ParseLocation(raw, os.LookupEnv)
}

// readConfigFile reads a configuration to push, bounded by what a push
// can write.
func readConfigFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > configsource.MaxConfigBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a push writes (%d: the node and its history entry go in one ZooKeeper request, which jute.maxbuffer bounds at 1 MiB)", path, st.Size(), configsource.MaxConfigBytes)
	}
	return os.ReadFile(path)
}

// validConfig checks data as `dubbogw validate` does (the environment's
// overrides applied, the route table built offline), printing the
// problems when it is not valid.
func validConfig(data []byte, name string, stderr io.Writer) bool {
	cfg, err := config.Parse(data, name, os.LookupEnv)
	if err == nil {
		err = config.ApplyEnvOverrides(cfg, os.LookupEnv)
	}
	if err == nil {
		err = config.Validate(cfg)
	}
	if err == nil {
		err = gateway.Check(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "invalid configuration:\n%v\n", err)
		return false
	}
	return true
}

func configGet(ctx context.Context, store *configsource.Store, loc configsource.Location, stdout, stderr io.Writer) int {
	n, err := store.Get(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "dubbogw config get: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(n.Data)
	fmt.Fprintf(stderr, "%s: version %d, %d bytes, modified %s\n", loc, n.Version, len(n.Data), n.Modified.UTC().Format(time.RFC3339))
	return 0
}

func configPush(ctx context.Context, store *configsource.Store, loc configsource.Location, data []byte, f configFlags, stdout, stderr io.Writer) int {
	opts := configsource.PushOptions{Force: f.force, Keep: f.keep}
	if f.ifVersion >= 0 {
		v := int32(f.ifVersion)
		opts.IfVersion = &v
	}
	v, err := store.Push(ctx, data, opts)
	var conflict *configsource.Conflict
	switch {
	case errors.As(err, &conflict):
		fmt.Fprintf(stderr, "dubbogw config: refused: %v\n", err)
		return exitConflict
	case err != nil:
		fmt.Fprintf(stderr, "dubbogw config: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: version %d written (%d bytes)\n", loc, v, len(data))
	return 0
}

func configDiff(ctx context.Context, store *configsource.Store, loc configsource.Location, data []byte, file string, stdout, stderr io.Writer) int {
	var live []byte
	from := loc.String() + " (no node)"
	n, err := store.Get(ctx)
	switch {
	case err == nil:
		live, from = n.Data, fmt.Sprintf("%s (version %d)", loc, n.Version)
	case !errors.Is(err, configsource.ErrNoConfig):
		fmt.Fprintf(stderr, "dubbogw config diff: %v\n", err)
		return 2
	}
	if writeUnified(stdout, from, file, lineDiff(splitLines(string(live)), splitLines(string(data)))) {
		return 1
	}
	return 0
}

func configHistory(ctx context.Context, store *configsource.Store, stdout, stderr io.Writer) int {
	entries, err := store.History(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "dubbogw config history: %v\n", err)
		return 1
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tPUSHED\tBYTES\t")
	for _, e := range entries {
		live := ""
		if e.Live {
			live = "live"
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%s\n", e.Version, e.Pushed.UTC().Format(time.RFC3339), e.Size, live)
	}
	_ = w.Flush()
	return 0
}
