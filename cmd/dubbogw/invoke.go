package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/metadataservice"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
	"github.com/dubbogw/dubbogw/idl"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/dubbogw/dubbogw/registry/zookeeper"
	"github.com/dubbogw/dubbogw/triple"
)

const invokeUsage = `usage: dubbogw invoke (--addr HOST:PORT | --registry zookeeper://HOST:PORT[,HOST:PORT][/ROOT]) [--protocol dubbo|tri|auto] [flags] INTERFACE.METHOD [JSON_ARG ...]

Calls a Dubbo method and prints its result as JSON: a grpcurl for Dubbo.
Each JSON_ARG is one argument, e.g.
  dubbogw invoke --addr 127.0.0.1:20880 com.example.demo.UserService.getUser '"42"'
  dubbogw invoke --addr 127.0.0.1:20880 --types int com.example.demo.UserService.listUsers 3
  dubbogw invoke --registry zookeeper://127.0.0.1:2181 org.example.UserService.getUser '"u1"'
With --registry, a provider of the service (version and group as given) is
looked up in ZooKeeper and one is picked at random; nothing is registered.
A provider is dialed over TLS with --tls, or when its registry URL says
ssl-enabled=true; --tls-ca, --tls-cert and --tls-key give the CA and a
client certificate (dubbo-go's TLS providers require one).
--protocol tri calls over Triple (typed: Triple providers serve no $invoke);
with --registry, auto calls a dubbo provider when the service has one, else
a tri one. --idl FILE calls an IDL (protobuf) method over Triple: INTERFACE is
the protobuf service's full name, FILE its descriptor set (protoc
--include_imports --descriptor_set_out) and the one JSON_ARG the request
message, e.g.
  dubbogw invoke --addr 127.0.0.1:50051 --idl greeter.pb org.example.Greeter.SayHello '{"name":"Ann"}'

flags:
`

// cmdInvoke calls one method. Argument types come from --types or are
// inferred from the JSON: string → java.lang.String, integer → int (long
// beyond 32 bits), other number → double, boolean → boolean, array →
// java.util.List, object → java.util.Map (or its "class").
func cmdInvoke(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	addr := fs.String("addr", "", "provider address host:port")
	regURL := fs.String("registry", "", "find the provider in ZooKeeper: zookeeper://host:port[,host:port][/root]")
	version := fs.String("version", "", "service version")
	group := fs.String("group", "", "service group")
	types := fs.String("types", "", "comma-separated Java parameter types (default: inferred from the JSON arguments)")
	timeout := fs.Duration("timeout", 3*time.Second, "call timeout")
	typed := fs.Bool("typed", false, "send a typed call (real method name and descriptor) instead of generic $invoke")
	keepClass := fs.Bool("keep-class", false, "keep the \"class\" keys of generic results")
	proto := fs.String("protocol", "dubbo", "dubbo, tri (Triple, typed calls) or, with --registry, auto: dubbo where the service offers it, else tri")
	idlFile := fs.String("idl", "", "descriptor set (protoc --include_imports --descriptor_set_out) of an IDL method, called over Triple with the JSON_ARG as its request message")
	var tlsc config.ClientTLS
	fs.BoolVar(&tlsc.Enabled, "tls", false, "dial the provider over TLS (with --registry, also when its URL says ssl-enabled=true)")
	fs.StringVar(&tlsc.CAFile, "tls-ca", "", "PEM CA certificates the provider's certificate is verified against (default: the system's)")
	fs.StringVar(&tlsc.CertFile, "tls-cert", "", "PEM client certificate, for a provider that asks for one (with --tls-key)")
	fs.StringVar(&tlsc.KeyFile, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&tlsc.ServerName, "tls-server-name", "", "name verified in the provider's certificate (default: its host)")
	if code, done := parseCommand(fs, invokeUsage, args, stdout, stderr); done {
		return code
	}
	if (*addr == "") == (*regURL == "") || fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	target := fs.Arg(0)
	dot := strings.LastIndexByte(target, '.')
	if dot <= 0 || dot == len(target)-1 {
		fmt.Fprintf(stderr, "dubbogw invoke: %q is not INTERFACE.METHOD\n", target)
		return 2
	}
	iface, method := target[:dot], target[dot+1:]
	switch *proto {
	case "dubbo", "tri":
	case "auto":
		if *regURL == "" {
			fmt.Fprintln(stderr, "dubbogw invoke: --protocol auto needs --registry (with --addr, say dubbo or tri)")
			return 2
		}
	default:
		fmt.Fprintf(stderr, "dubbogw invoke: --protocol %q: want dubbo, tri or auto\n", *proto)
		return 2
	}
	if *idlFile != "" {
		return invokeIDL(*idlFile, *addr, *regURL, iface, method, fs.Args()[1:], *version, *group, *timeout, tlsc, stdout, stderr)
	}
	if *proto == "tri" {
		*typed = true // Triple providers serve no $invoke
	}
	raw := fs.Args()[1:]
	var paramTypes []string
	if *types != "" {
		paramTypes = splitTypes(*types)
	}
	if paramTypes != nil && len(paramTypes) != len(raw) {
		fmt.Fprintf(stderr, "dubbogw invoke: %d types for %d arguments\n", len(paramTypes), len(raw))
		return 2
	}
	enc, err := jsonbridge.NewEncoder(jsonbridge.EncodeOptions{Generic: !*typed})
	if err != nil {
		fmt.Fprintln(stderr, "dubbogw invoke:", err)
		return 1
	}
	compiled := make([]*jsonbridge.Type, len(raw))
	for i, a := range raw {
		if !json.Valid([]byte(a)) {
			fmt.Fprintf(stderr, "dubbogw invoke: argument %d is not JSON: %s (quote strings: '\"text\"')\n", i, a)
			return 2
		}
		if paramTypes == nil || len(paramTypes) <= i {
			paramTypes = append(paramTypes, inferType([]byte(a)))
		}
		if compiled[i], err = enc.Type(paramTypes[i]); err != nil {
			fmt.Fprintf(stderr, "dubbogw invoke: type %d: %v\n", i, err)
			return 2
		}
	}
	names := make([]string, len(paramTypes))
	for i, t := range paramTypes {
		names[i] = strings.TrimSpace(strings.SplitN(t, "<", 2)[0])
	}
	opts := dubbo.Options{Logger: slog.New(slog.DiscardHandler), Timeout: *timeout, TLSAll: tlsc.Enabled}
	if tlsc.Set() {
		if opts.TLS, err = tlsc.Build(); err != nil {
			fmt.Fprintln(stderr, "dubbogw invoke: --tls:", err)
			return 2
		}
	}
	client := dubbo.New(opts)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = client.Close(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	to := dubbo.Target{Addr: *addr}
	overTriple := *proto == "tri"
	if *regURL != "" {
		found, err := lookupProvider(ctx, *regURL, registry.ServiceKey{Interface: iface, Version: *version, Group: *group}, *proto, client)
		if err != nil {
			fmt.Fprintln(stderr, "dubbogw invoke:", err)
			return 1
		}
		to = dubbo.Target{Addr: found.Addr, TLS: found.TLS}
		overTriple = found.Protocol == cluster.ProtocolTriple
	}
	if overTriple && !*typed {
		*typed = true // auto chose a tri provider: typed, and so the arguments
		if enc, err = jsonbridge.NewEncoder(jsonbridge.EncodeOptions{}); err != nil {
			fmt.Fprintln(stderr, "dubbogw invoke:", err)
			return 1
		}
		for i := range compiled {
			if compiled[i], err = enc.Type(paramTypes[i]); err != nil {
				fmt.Fprintf(stderr, "dubbogw invoke: type %d: %v\n", i, err)
				return 2
			}
		}
	}
	call := client.InvokeTarget
	if overTriple {
		tc := triple.New(triple.Options{Timeout: *timeout, TLS: opts.TLS, TLSAll: opts.TLSAll})
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = tc.Close(ctx)
		}()
		call = tc.Invoke
	}
	res, err := call(ctx, to, &dubbo.Invocation{
		Interface: iface, Version: *version, Group: *group, Method: method,
		ParamTypes: names, Generic: !*typed,
		WriteArgs: func(e *hessian.Encoder) error {
			for i, a := range raw {
				if err := enc.Encode(e, []byte(a), compiled[i]); err != nil {
					return fmt.Errorf("argument %d: %w", i, err)
				}
			}
			return nil
		},
	})
	if err != nil {
		var be *dubbo.BusinessError
		var ts *triple.StatusError
		if errors.As(err, &be) && be.Exception != nil {
			fmt.Fprintf(stderr, "exception: %s\n", be.Exception.Error())
		} else if errors.As(err, &ts) && ts.Business() {
			fmt.Fprintf(stderr, "error: %s: %s\n", ts.Code, ts.Message)
		} else {
			fmt.Fprintln(stderr, "dubbogw invoke:", err)
		}
		return 1
	}
	out, err := jsonbridge.AppendJSON(nil, res.Value, &jsonbridge.DecodeOptions{KeepClass: *keepClass})
	if err != nil {
		fmt.Fprintln(stderr, "dubbogw invoke: rendering the result:", err)
		return 1
	}
	printJSON(stdout, out)
	return 0
}

// invokeIDL calls an IDL method over Triple with the JSON argument as its
// request message and prints the response message as JSON.
func invokeIDL(file, addr, regURL, service, method string, args []string, version, group string, timeout time.Duration, tlsc config.ClientTLS, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintf(stderr, "dubbogw invoke: --idl takes one JSON_ARG (the request message), got %d\n", len(args))
		return 2
	}
	m, err := idl.Load(file, service, method)
	if err != nil {
		fmt.Fprintln(stderr, "dubbogw invoke: --idl:", err)
		return 2
	}
	var body []byte
	if len(args) == 1 {
		body = []byte(args[0])
	}
	msg, err := m.Encode(body)
	if err != nil {
		fmt.Fprintln(stderr, "dubbogw invoke:", err)
		return 2
	}
	opts := triple.Options{Timeout: timeout, TLSAll: tlsc.Enabled}
	if tlsc.Set() {
		if opts.TLS, err = tlsc.Build(); err != nil {
			fmt.Fprintln(stderr, "dubbogw invoke: --tls:", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	to := dubbo.Target{Addr: addr}
	if regURL != "" {
		dc := dubbo.New(dubbo.Options{Logger: slog.New(slog.DiscardHandler), Timeout: timeout})
		defer func() { _ = dc.Close(context.Background()) }()
		found, err := lookupProvider(ctx, regURL, registry.ServiceKey{Interface: service, Version: version, Group: group}, "tri", dc)
		if err != nil {
			fmt.Fprintln(stderr, "dubbogw invoke:", err)
			return 1
		}
		to = dubbo.Target{Addr: found.Addr, TLS: found.TLS}
	}
	tc := triple.New(opts)
	defer func() { _ = tc.Close(context.Background()) }()
	res, err := tc.InvokeProto(ctx, to, &dubbo.Invocation{Interface: service, Method: method, Version: version, Group: group}, msg)
	if err != nil {
		var ts *triple.StatusError
		if errors.As(err, &ts) {
			fmt.Fprintf(stderr, "error: %s: %s\n", ts.Code, ts.Message)
		} else {
			fmt.Fprintln(stderr, "dubbogw invoke:", err)
		}
		return 1
	}
	out, err := m.Decode(res)
	if err != nil {
		fmt.Fprintln(stderr, "dubbogw invoke:", err)
		return 1
	}
	printJSON(stdout, out)
	return 0
}

// printJSON writes a result indented (as it is when it is not valid JSON)
// and a newline.
func printJSON(stdout io.Writer, out []byte) {
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(out)
	}
	pretty.WriteByte('\n')
	_, _ = stdout.Write(pretty.Bytes())
}

// splitTypes splits on commas outside generic brackets.
func splitTypes(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<':
			depth++
		case '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// inferType names the Java type a JSON argument most likely stands for.
func inferType(a []byte) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(a))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "java.lang.Object"
	}
	switch x := v.(type) {
	case string:
		return "java.lang.String"
	case bool:
		return "boolean"
	case json.Number:
		if n, err := x.Int64(); err == nil {
			if n >= -1<<31 && n < 1<<31 {
				return "int"
			}
			return "long"
		}
		return "double"
	case []any:
		return "java.util.List"
	case map[string]any:
		if c, ok := x["class"].(string); ok && c != "" {
			return c
		}
		return "java.util.Map"
	}
	return "java.lang.Object"
}

// lookupProvider finds one provider of key speaking proto (dubbo, tri, or
// auto: dubbo when the service has a dubbo provider, else tri) in the
// ZooKeeper registry named by raw ("zookeeper://h:p[,h:p][/root]"),
// waiting until ctx ends for the registry's answer.
func lookupProvider(ctx context.Context, raw string, key registry.ServiceKey, proto string, client *dubbo.Client) (*cluster.Provider, error) {
	rest, ok := strings.CutPrefix(raw, "zookeeper://")
	if !ok {
		return nil, fmt.Errorf("--registry %q: only zookeeper://host:port[/root] is supported", raw)
	}
	hosts, root, _ := strings.Cut(rest, "/")
	if root == "" {
		root = zookeeper.DefaultRoot
	}
	deadline, _ := ctx.Deadline()
	reg, err := zookeeper.New(zookeeper.Options{
		Addrs: zookeeper.Addrs(hosts), Root: root, Timeout: time.Until(deadline),
		SessionTimeout: time.Duration(zookeeper.DefaultSessionTimeout), Logger: slog.New(slog.DiscardHandler),
		Metadata: metadataservice.Fetcher(client), MetadataTimeout: time.Until(deadline) / 2,
	})
	if err != nil {
		return nil, fmt.Errorf("--registry: %w", err)
	}
	defer func() { _ = reg.Close() }()
	dir := reg.Subscribe(key)
	defer dir.Release()
	select {
	case <-dir.Ready():
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer from ZooKeeper at %s: %w", hosts, ctx.Err())
	}
	ps := dir.Providers()
	if len(ps) == 0 {
		if st := reg.Status(); st.Degraded {
			return nil, fmt.Errorf("ZooKeeper at %s cannot be reached: %s", hosts, st.Error)
		}
		return nil, fmt.Errorf("no provider of %s in ZooKeeper at %s (root /%s)", key, hosts, root)
	}
	want := cluster.ProtocolDubbo
	switch {
	case proto == "tri":
		want = cluster.ProtocolTriple
	case proto == "auto" && !slices.ContainsFunc(ps, func(p *cluster.Provider) bool { return p.Protocol == cluster.ProtocolDubbo }):
		want = cluster.ProtocolTriple
	}
	ps = slices.DeleteFunc(slices.Clone(ps), func(p *cluster.Provider) bool { return p.Protocol != want })
	if len(ps) == 0 {
		return nil, fmt.Errorf("no provider of %s over %s in ZooKeeper at %s (root /%s): try --protocol auto", key, want, hosts, root)
	}
	return ps[rand.IntN(len(ps))], nil
}
