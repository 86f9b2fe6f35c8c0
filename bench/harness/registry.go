package main

// The registry subcommand writes a large Dubbo registry into a real
// ZooKeeper, as Java Dubbo 3 providers write it, so that the gateway's
// discovery can be measured at scale (issue 19):
//
//   - interface level (-mode interface): /<root>/<interface>/providers/<URL>;
//   - application level (-mode application, Dubbo 3 service discovery):
//     /<root>/mapping/<interface> naming the application,
//     <services root>/<app>/<ip:port> holding the instance (Curator's JSON,
//     remote metadata storage) and /<root>/metadata/<app>/<revision> the
//     metadata that maps the instance to its interfaces (appdisc.go);
//   - both (-mode both): the two layouts for the same providers, as a
//     Dubbo 3 provider with register-mode "all" (its default) writes them:
//     provider j of an interface is instance j of its application.
//
// The nodes are persistent (they outlive the writer, unlike a provider's
// ephemeral ones); -clean removes what a run wrote.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/internal/zk"
)

// Registry layouts (-mode).
const (
	modeInterface   = "interface"
	modeApplication = "application"
	modeBoth        = "both"
)

// Limits of the generator: addresses come from 198.18.0.0/15, one host
// per interface (interface level) or per instance (application level).
const (
	maxServices  = 1 << 17
	maxInstances = 1 << 17
	basePort     = 20880
)

// registryOptions are the registry subcommand's flags, and the layout they
// describe.
type registryOptions struct {
	zk        string
	root      string
	prefix    string
	mode      string
	services  int
	providers int // per interface (interface level)
	// apps and instances (per application) size the application level;
	// interface i is served by application i % apps.
	apps, instances int
	appPrefix       string
	// servicesRoot is where instances go; "" is the gateway's default
	// (/services with the root "dubbo", else /<root>).
	servicesRoot string
	batch        int
	clean        bool
	timeout      time.Duration
}

func runRegistry(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := registryOptions{}
	fs.StringVar(&o.zk, "zk", "127.0.0.1:2181", "ZooKeeper host:port")
	fs.StringVar(&o.root, "root", "dubbo", "the registry's root node (Dubbo's registry group)")
	fs.StringVar(&o.prefix, "prefix", "com.example.scale.Service", "interface names: <prefix><i>")
	fs.StringVar(&o.mode, "mode", modeInterface, "layout: interface, application (Dubbo 3 application-level discovery) or both")
	fs.IntVar(&o.services, "services", 100, "interfaces")
	fs.IntVar(&o.providers, "providers", 10, "providers per interface (interface level; -mode both: must equal -instances-per-app)")
	fs.IntVar(&o.apps, "apps", 10, "applications (application level); interface i belongs to application i % apps")
	fs.IntVar(&o.instances, "instances-per-app", 10, "instances per application (application level)")
	fs.StringVar(&o.appPrefix, "app-prefix", "scale-app-", "application names: <app-prefix><a>")
	fs.StringVar(&o.servicesRoot, "services-root", "", "where instances go (default: the gateway's, /services with the root dubbo, else /<root>)")
	fs.IntVar(&o.batch, "batch", 200, "nodes created per ZooKeeper multi request")
	fs.BoolVar(&o.clean, "clean", false, "delete every node named like the generator's (whatever the sizes) instead of writing")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "registry: unexpected arguments %q\n", fs.Args())
		return 2
	}
	start := time.Now()
	n, err := writeRegistry(o)
	if err != nil {
		fmt.Fprintf(stderr, "registry: %v\n", err)
		return 1
	}
	if o.clean {
		fmt.Fprintf(stdout, "deleted %d nodes in %s\n", n, time.Since(start).Round(time.Millisecond))
		return 0
	}
	what := fmt.Sprintf("%d services x %d providers", o.services, o.providers)
	switch o.mode {
	case modeApplication:
		what = fmt.Sprintf("%d services, %d applications x %d instances", o.services, o.apps, o.instances)
	case modeBoth:
		what = fmt.Sprintf("%d services x %d providers, %d applications x %d instances", o.services, o.providers, o.apps, o.instances)
	}
	fmt.Fprintf(stdout, "wrote %d nodes (%s, %s) in %s\n", n, o.mode, what, time.Since(start).Round(time.Millisecond))
	return 0
}

// check reports what is wrong with the layout's sizes.
func (o *registryOptions) check() error {
	switch {
	case o.mode != modeInterface && o.mode != modeApplication && o.mode != modeBoth:
		return fmt.Errorf("mode %q: want interface, application or both", o.mode)
	case o.services < 1 || o.services > maxServices:
		return fmt.Errorf("want 1 <= services <= %d", maxServices)
	case o.batch < 1:
		return errors.New("want batch >= 1")
	case strings.Trim(o.root, "/") == "" || strings.Contains(strings.Trim(o.root, "/"), "/"):
		return fmt.Errorf("root %q: want one node name", o.root)
	case o.prefix == "" || o.appPrefix == "" || strings.Contains(o.prefix+o.appPrefix, "/"):
		return errors.New("the interface and application prefixes must be non-empty node names")
	}
	if o.writesInterfaces() && (o.providers < 0 || o.providers > 65535-basePort) {
		return fmt.Errorf("want 0 <= providers <= %d", 65535-basePort)
	}
	if o.writesApps() {
		switch {
		case o.apps < 1 || o.apps > o.services:
			return fmt.Errorf("want 1 <= apps <= services (%d): every application serves an interface", o.services)
		case o.instances < 1 || o.apps*o.instances > maxInstances:
			return fmt.Errorf("want instances-per-app >= 1 and at most %d instances in all", maxInstances)
		case o.mode == modeBoth && o.providers != o.instances:
			return fmt.Errorf("-mode both: providers (%d) must equal instances-per-app (%d): the same providers register both ways", o.providers, o.instances)
		}
	}
	return nil
}

// writesInterfaces and writesApps tell which layouts the mode writes.
func (o *registryOptions) writesInterfaces() bool { return o.mode != modeApplication }
func (o *registryOptions) writesApps() bool       { return o.mode != modeInterface }

// rootPath is /<root>.
func (o *registryOptions) rootPath() string { return "/" + strings.Trim(o.root, "/") }

// servicesRootPath is where instances go, by the gateway's rule when not
// set: /services under the root "dubbo", else the root itself (Dubbo's
// registry group replaces both roots).
func (o *registryOptions) servicesRootPath() string {
	if r := strings.Trim(o.servicesRoot, "/"); r != "" {
		return "/" + r
	}
	if strings.Trim(o.root, "/") == "dubbo" {
		return "/services"
	}
	return o.rootPath()
}

// iface is the i-th interface's name.
func (o *registryOptions) iface(i int) string { return o.prefix + strconv.Itoa(i) }

// providersPerService is how many providers each interface has.
func (o *registryOptions) providersPerService() int {
	if o.mode == modeApplication {
		return o.instances
	}
	return o.providers
}

// providerAddr is the address of provider j of interface i: with the
// application level written, instance j of the interface's application;
// otherwise 198.18.<i/256>.<i%256>:<20880+j> (one host per interface).
func (o *registryOptions) providerAddr(i, j int) string {
	if o.writesApps() {
		return instanceAddr(o.appOf(i)*o.instances + j)
	}
	return fmt.Sprintf("%s:%d", benchHost(i), basePort+j)
}

// benchHost is the n-th host of the benchmarking range 198.18.0.0/15.
func benchHost(n int) string {
	return fmt.Sprintf("198.%d.%d.%d", 18+(n>>16)%2, (n>>8)&255, n&255)
}

// zkConnect opens a ZooKeeper session within timeout. The events channel
// is drained by a goroutine that ends when the connection is closed.
func zkConnect(addr string, timeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	connected := make(chan struct{})
	go func() { // reads every event, so none waits in a full channel, until Close closes it
		once := false
		for ev := range events {
			if ev.State == zk.StateHasSession && !once {
				close(connected)
				once = true
			}
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-connected:
		return conn, nil
	case <-timer.C:
		conn.Close()
		return nil, fmt.Errorf("no session with %s within %s", addr, timeout)
	}
}

// writeRegistry creates the layout's nodes (or with o.clean deletes every
// node named like the generator's) and returns how many it created or
// deleted.
func writeRegistry(o registryOptions) (int, error) {
	if err := o.check(); err != nil {
		return 0, err
	}
	start := time.Now()
	conn, err := zkConnect(o.zk, o.timeout)
	if err != nil {
		return 0, err
	}
	// The whole run is bounded: past o.timeout the connection closes and
	// the request under way fails.
	expired := time.AfterFunc(o.timeout-time.Since(start), conn.Close)
	defer expired.Stop()
	defer conn.Close()
	b := &zkBatch{conn: conn, max: o.batch}
	if o.clean {
		return cleanLayout(b, o)
	}
	return writeLayout(b, o)
}

// zkBatchBytes bounds the payload of one multi request, well under
// ZooKeeper's default jute.maxbuffer (1 MiB): metadata nodes are large.
const zkBatchBytes = 512 << 10

// zkBatch groups creations and deletions into multi requests of at most
// max operations and zkBatchBytes.
type zkBatch struct {
	conn  *zk.Conn
	max   int
	ops   []any
	bytes int
	done  int
}

func (b *zkBatch) add(op any, size int) error {
	if len(b.ops) > 0 && b.bytes+size > zkBatchBytes {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.ops = append(b.ops, op)
	b.bytes += size
	if len(b.ops) >= b.max {
		return b.flush()
	}
	return nil
}

func (b *zkBatch) create(path string, data []byte) error {
	return b.add(&zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll)}, len(path)+len(data)+64)
}

func (b *zkBatch) delete(path string) error {
	return b.add(&zk.DeleteRequest{Path: path, Version: -1}, len(path)+16)
}

func (b *zkBatch) flush() error {
	if len(b.ops) == 0 {
		return nil
	}
	if _, err := b.conn.Multi(b.ops...); err != nil {
		return fmt.Errorf("multi of %d after %d nodes: %w", len(b.ops), b.done, err)
	}
	b.done += len(b.ops)
	b.ops, b.bytes = b.ops[:0], 0
	return nil
}

// ensurePath creates path and its missing parents, outside any batch.
func ensurePath(conn *zk.Conn, path string) error {
	p := ""
	for part := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		p += "/" + part
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// writeLayout creates the nodes of o's layout.
func writeLayout(b *zkBatch, o registryOptions) (int, error) {
	root := o.rootPath()
	parents := []string{root}
	if o.writesApps() {
		parents = append(parents, root+"/mapping", root+"/metadata", o.servicesRootPath())
	}
	for _, p := range parents {
		if err := ensurePath(b.conn, p); err != nil {
			return 0, err
		}
	}
	if o.writesInterfaces() {
		for i := range o.services {
			iface := o.iface(i)
			base := root + "/" + iface
			for _, p := range []string{base, base + "/providers"} {
				if err := b.create(p, nil); err != nil {
					return b.done, err
				}
			}
			for j := range o.providers {
				if err := b.create(base+"/providers/"+url.QueryEscape(o.providerURL(i, j)), nil); err != nil {
					return b.done, err
				}
			}
		}
	}
	if o.writesApps() {
		if err := writeApps(b, o); err != nil {
			return b.done, err
		}
	}
	return b.done, b.flush()
}

// providerURL is the j-th provider of interface i as Java Dubbo 3 writes it
// (the parameters a real provider node carries, so that parsing costs what
// it costs in production), at providerAddr(i, j).
func (o *registryOptions) providerURL(i, j int) string {
	iface := o.iface(i)
	app := "scale-app-" + strconv.Itoa(i%50)
	if o.writesApps() {
		app = o.appName(o.appOf(i))
	}
	return fmt.Sprintf("dubbo://%s/%s?anyhost=true&application=%s&deprecated=false&dubbo=2.0.2"+
		"&dynamic=true&generic=false&interface=%s&methods=get,list,create,update,delete&pid=%d&release=3.2.10"+
		"&service-name-mapping=true&side=provider&timestamp=%d",
		o.providerAddr(i, j), iface, app, iface, 1000+j, 1700000000000+int64(i)*1000+int64(j))
}

// cleanLayout deletes, with their subtrees, the interfaces (<prefix><n>)
// under the root and its mapping node, and the applications
// (<app-prefix><n>) under the services root and the metadata node: what
// any run of the generator with these names wrote, and what a gateway
// added under them (its consumers nodes). The parents are left.
func cleanLayout(b *zkBatch, o registryOptions) (int, error) {
	root := o.rootPath()
	for _, dir := range []struct {
		path, prefix string
		depth        int // levels under each child: only those are listed
	}{
		{root, o.prefix, 2},                    // <interface>/<category>/<URL>
		{root + "/mapping", o.prefix, 0},       // <interface>
		{o.servicesRootPath(), o.appPrefix, 1}, // <app>/<ip:port>
		{root + "/metadata", o.appPrefix, 1},   // <app>/<revision>
	} {
		children, _, err := b.conn.Children(dir.path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return b.done, fmt.Errorf("list %s: %w", dir.path, err)
		}
		for _, c := range children {
			if n, ok := strings.CutPrefix(c, dir.prefix); !ok || n == "" || strings.Trim(n, "0123456789") != "" {
				continue
			}
			if err := deleteTree(b, dir.path+"/"+c, dir.depth); err != nil {
				return b.done, err
			}
		}
	}
	return b.done, b.flush()
}

// deleteTree deletes path and everything under it, children first,
// listing depth levels: nodes below are deleted as leaves (a node that is
// not fails the deletion), which spares a request per leaf.
func deleteTree(b *zkBatch, path string, depth int) error {
	if depth > 0 {
		children, _, err := b.conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
		for _, c := range children {
			if err := deleteTree(b, path+"/"+c, depth-1); err != nil {
				return err
			}
		}
	}
	return b.delete(path)
}
