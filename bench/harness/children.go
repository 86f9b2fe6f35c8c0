package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dubbogw/dubbogw/bench/loadgen"
	"github.com/dubbogw/dubbogw/demo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
)

// The subcommands below run in processes of their own, started by the
// benchmark: the echo upstream, the demo provider and each load run. Each
// prints one line when it is ready ("ready ADDR[,ADDR...]") or, for a load
// run, one JSON line with its result, and stops on SIGTERM.

// runUpstream serves the HTTP echo upstream until SIGTERM.
func runUpstream(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "listen address (loopback only)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := loadgen.CheckLoopback(*listen); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "upstream: listening on %s: %v\n", *listen, err)
		return 1
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(serveUser),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "ready %s\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintf(stderr, "upstream: serving: %v\n", err)
		return 1
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		fmt.Fprintf(stderr, "upstream: shutting down: %v\n", err)
	}
	return 0
}

// serveUser answers GET /http/users/{id} (digits) with the JSON the
// gateway makes of the demo provider's getUser(id): the id is echoed, and
// the HTTP rows move the same bytes as the Dubbo rows.
func serveUser(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/http/users/")
	if !ok || id == "" || strings.Trim(id, "0123456789") != "" {
		http.NotFound(w, r)
		return
	}
	var buf [128]byte
	b := append(buf[:0], `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","name":"user `...)
	b = append(b, id...)
	b = append(b, `","age":30,"email":"`...)
	b = append(b, id...)
	b = append(b, "@example.com\"}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// providerMaxInFlight is above the most concurrent calls of any row, so the
// provider never refuses one (its default, as Java's, is 200).
const providerMaxInFlight = 2048

// runProvider serves the demo provider (dubbo/provider) on -ports loopback ports,
// and over Triple on one more, until SIGTERM. It says "ready", the dubbo
// addresses (comma-separated), a space and the Triple address.
func runProvider(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ports := fs.Int("ports", 1, "number of loopback ports to listen on (1 to 1000)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *ports < 1 || *ports > 1000 {
		fmt.Fprintf(stderr, "provider: -ports %d, want 1 to 1000\n", *ports)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	provider := provider.NewServer(slog.New(slog.DiscardHandler))
	provider.SetMaxInFlight(providerMaxInFlight)
	for _, svc := range demo.DubboServices() {
		provider.Register(svc)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = provider.Close(closeCtx)
	}()
	addrs := make([]string, 0, *ports)
	for range *ports {
		listenCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addr, err := provider.Listen(listenCtx, "127.0.0.1:0")
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "provider: %v\n", err)
			return 1
		}
		addrs = append(addrs, addr.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "provider: %v\n", err)
		return 1
	}
	tri, err := provider.ServeTriple(ln)
	if err != nil {
		fmt.Fprintf(stderr, "provider: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "ready %s %s\n", strings.Join(addrs, ","), tri)
	<-ctx.Done()
	return 0
}

// loadResult is what one load run measured, as the load subcommand prints it.
type loadResult struct {
	OK         uint64        `json:"ok"`
	Errors     uint64        `json:"errors"`
	Dropped    uint64        `json:"dropped"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	Throughput float64       `json:"throughput"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	P999       time.Duration `json:"p999_ns"`
	Max        time.Duration `json:"max_ns"`
	FirstError string        `json:"first_error,omitempty"`
}

// headerFlags collects repeated -header "Name: value" flags.
type headerFlags []string

func (h *headerFlags) String() string { return strings.Join(*h, ", ") }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	*h = append(*h, strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// loadDrain bounds how long calls still running at the end of a run may take.
const loadDrain = 2 * time.Second

// runLoad drives one URL with bench/loadgen and prints the result as JSON:
// closed loop (peak throughput) without -rate, open loop at -rate calls per
// second otherwise (latency from each call's due time: coordinated omission
// corrected). -warmup runs first, closed loop, and is not measured.
func runLoad(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rawURL := fs.String("url", "", "http:// or https:// URL on a loopback IP address")
	caFile := fs.String("ca", "", "CA certificate (PEM) an https:// target's certificate is checked against")
	conns := fs.Int("conns", 64, "concurrent connections (callers)")
	duration := fs.Duration("duration", 2*time.Second, "measured duration")
	warmup := fs.Duration("warmup", 250*time.Millisecond, "unmeasured closed-loop warm-up before it")
	rate := fs.Float64("rate", 0, "open loop at this many calls per second; 0: closed loop")
	maxRequests := fs.Int64("max-requests", 100_000_000, "bound on the calls of the closed loop")
	var header headerFlags
	fs.Var(&header, "header", `request header "Name: value" (repeatable)`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *conns < 1 || *conns > 4096 {
		fmt.Fprintf(stderr, "load: -conns %d, want 1 to 4096\n", *conns)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var roots *x509.CertPool
	if *caFile != "" {
		pemBytes, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintf(stderr, "load: %v\n", err)
			return 2
		}
		if roots = x509.NewCertPool(); !roots.AppendCertsFromPEM(pemBytes) {
			fmt.Fprintf(stderr, "load: %s holds no certificate\n", *caFile)
			return 2
		}
	}
	res, err := driveLoad(ctx, *rawURL, *conns, *duration, *warmup, *rate, *maxRequests, header, roots)
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		fmt.Fprintf(stderr, "load: writing the result: %v\n", err)
		return 1
	}
	return 0
}

// driveLoad loads rawURL; roots, when set, are the CAs an HTTPS
// target's certificate is checked against. HTTPS is HTTP/1.1 with
// keep-alive, as the plain rows are (the gateway would negotiate h2).
func driveLoad(ctx context.Context, rawURL string, conns int, duration, warmup time.Duration, rate float64, maxRequests int64, header []string, roots *x509.CertPool) (*loadResult, error) {
	transport := &http.Transport{
		TLSClientConfig:       &tls.Config{RootCAs: roots},
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{}, // no h2
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		MaxConnsPerHost:       conns,
		IdleConnTimeout:       time.Minute,
		ResponseHeaderTimeout: 10 * time.Second,
		DisableCompression:    true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	target, err := loadgen.HTTPGet(client, rawURL, http.StatusOK, header...)
	if err != nil {
		return nil, err
	}
	if warmup > 0 {
		if _, err := (loadgen.ClosedLoop{Workers: conns, Duration: warmup, MaxRequests: maxRequests, Drain: loadDrain}).Run(ctx, target); err != nil {
			return nil, fmt.Errorf("warming up: %w", err)
		}
	}
	var r *loadgen.Result
	if rate > 0 {
		r, err = loadgen.OpenLoop{Rate: rate, Duration: duration, Workers: conns, MaxInFlight: max(4*conns, 256), Drain: loadDrain}.Run(ctx, target)
	} else {
		r, err = loadgen.ClosedLoop{Workers: conns, Duration: duration, MaxRequests: maxRequests, Drain: loadDrain}.Run(ctx, target)
	}
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	res := &loadResult{
		OK: r.OK, Errors: r.Errors, Dropped: r.Dropped,
		Elapsed: r.Elapsed, Throughput: r.Throughput(),
		P50: r.Latency.Quantile(0.50), P99: r.Latency.Quantile(0.99), P999: r.Latency.Quantile(0.999), Max: r.Latency.Max(),
	}
	if r.FirstError != nil {
		res.FirstError = r.FirstError.Error()
	}
	return res, nil
}
