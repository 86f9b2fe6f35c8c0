package main

// The registry subcommand writes a large Dubbo registry into a real
// ZooKeeper: interface-level provider nodes as Java Dubbo writes them, so
// that the gateway's discovery can be measured at scale (issue 19). The
// nodes are persistent (they outlive the writer, unlike a provider's
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

	"github.com/go-zookeeper/zk"
)

// registryOptions are the registry subcommand's flags.
type registryOptions struct {
	zk        string
	root      string
	prefix    string
	services  int
	providers int
	batch     int
	clean     bool
	timeout   time.Duration
}

func runRegistry(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := registryOptions{}
	fs.StringVar(&o.zk, "zk", "127.0.0.1:2181", "ZooKeeper host:port")
	fs.StringVar(&o.root, "root", "dubbo", "the registry's root node (Dubbo's registry group)")
	fs.StringVar(&o.prefix, "prefix", "com.example.scale.Service", "interface names: <prefix><i>")
	fs.IntVar(&o.services, "services", 100, "interfaces")
	fs.IntVar(&o.providers, "providers", 10, "providers per interface")
	fs.IntVar(&o.batch, "batch", 200, "nodes created per ZooKeeper multi request")
	fs.BoolVar(&o.clean, "clean", false, "delete the interfaces' nodes instead of writing them")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	start := time.Now()
	n, err := writeRegistry(o)
	if err != nil {
		fmt.Fprintf(stderr, "registry: %v\n", err)
		return 1
	}
	verb := "wrote"
	if o.clean {
		verb = "deleted"
	}
	fmt.Fprintf(stdout, "%s %d nodes (%d services x %d providers) in %s\n", verb, n, o.services, o.providers, time.Since(start).Round(time.Millisecond))
	return 0
}

// writeRegistry creates (or with o.clean deletes) the nodes and returns
// how many it created or deleted.
func writeRegistry(o registryOptions) (int, error) {
	if o.services < 1 || o.services > 1<<17 || o.providers < 0 || o.providers > 65535-20880 || o.batch < 1 {
		return 0, fmt.Errorf("want 1 <= services <= %d, 0 <= providers <= %d, batch >= 1", 1<<17, 65535-20880)
	}
	conn, events, err := zk.Connect([]string{o.zk}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", o.zk, err)
	}
	// The whole run is bounded: past o.timeout the connection closes and
	// the request under way fails.
	expired := time.AfterFunc(o.timeout, conn.Close)
	defer expired.Stop()
	defer conn.Close()
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
	select {
	case <-connected:
	case <-time.After(o.timeout):
		return 0, fmt.Errorf("no session with %s within %s", o.zk, o.timeout)
	}
	root := "/" + strings.Trim(o.root, "/")
	var ops []any
	done := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		if _, err := conn.Multi(ops...); err != nil {
			return fmt.Errorf("multi of %d after %d nodes: %w", len(ops), done, err)
		}
		done += len(ops)
		ops = ops[:0]
		return nil
	}
	add := func(op any) error {
		ops = append(ops, op)
		if len(ops) >= o.batch {
			return flush()
		}
		return nil
	}
	if !o.clean {
		if _, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, fmt.Errorf("create %s: %w", root, err)
		}
	}
	for i := range o.services {
		iface := o.prefix + strconv.Itoa(i)
		base := root + "/" + iface
		if o.clean {
			children, _, err := conn.Children(base + "/providers")
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return done, fmt.Errorf("list %s/providers: %w", base, err)
			}
			for _, c := range children {
				if err := add(&zk.DeleteRequest{Path: base + "/providers/" + c, Version: -1}); err != nil {
					return done, err
				}
			}
			for _, p := range []string{base + "/providers", base} {
				if err := add(&zk.DeleteRequest{Path: p, Version: -1}); err != nil {
					return done, err
				}
			}
			continue
		}
		for _, p := range []string{base, base + "/providers"} {
			if err := add(&zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
				return done, err
			}
		}
		for j := range o.providers {
			node := base + "/providers/" + url.QueryEscape(providerURL(iface, i, j))
			if err := add(&zk.CreateRequest{Path: node, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
				return done, err
			}
		}
	}
	return done, flush()
}

// providerURL is the j-th provider of interface i as Java Dubbo 3 writes it
// (the parameters a real provider node carries, so that parsing costs what
// it costs in production). Its address is 198.18.<i/256>.<i%256> (the
// benchmarking range 198.18.0.0/15, one host per interface up to 65,536)
// with port 20880+j: unique per (i, j).
func providerURL(iface string, i, j int) string {
	host := fmt.Sprintf("198.%d.%d.%d", 18+(i>>16)%2, (i>>8)&255, i&255)
	return fmt.Sprintf("dubbo://%s:%d/%s?anyhost=true&application=scale-app-%d&deprecated=false&dubbo=2.0.2"+
		"&dynamic=true&generic=false&interface=%s&methods=get,list,create,update,delete&pid=%d&release=3.2.10"+
		"&service-name-mapping=true&side=provider&timestamp=%d",
		host, 20880+j, iface, i%50, iface, 1000+j, 1700000000000+int64(i)*1000+int64(j))
}
