package metadataservice

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/provider"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/registry"
)

// metadataServer serves MetadataService for application app on addr
// ("127.0.0.1:0" for a free port), answering revision rev with one
// service, and the null dubbo-go answers for any other.
func metadataServer(t *testing.T, addr, app, rev string) string {
	t.Helper()
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	s.Register(provider.Service{Interface: Interface, Version: Version, Group: app, Methods: map[string][]provider.Method{
		"getMetadataInfo": {{ParamTypes: []string{"java.lang.String"}, Func: func(_ context.Context, args []any) (any, error) {
			if args[0] != rev {
				return nil, nil
			}
			svc := &hessian.Object{Class: "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo", Fields: []hessian.Field{
				{Name: "name", Value: "com.example.Users"}, {Name: "group", Value: ""}, {Name: "version", Value: "1.0.0"},
				{Name: "protocol", Value: "dubbo"}, {Name: "port", Value: int64(20880)}, {Name: "path", Value: "com.example.Users"},
				{Name: "params", Value: &hessian.Map{Entries: []hessian.Entry{{Key: "methods", Value: "get"}}}},
			}}
			return &hessian.Object{Class: "org.apache.dubbo.metadata.MetadataInfo", Fields: []hessian.Field{
				{Name: "app", Value: app}, {Name: "revision", Value: rev}, {Name: "tag", Value: ""},
				{Name: "services", Value: &hessian.Map{Entries: []hessian.Entry{{Key: "com.example.Users:1.0.0:dubbo", Value: svc}}}},
			}}, nil
		}}},
	}})
	a, err := s.Listen(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return a.String()
}

func instanceAt(t *testing.T, addr, app, rev string) *registry.Instance {
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	return &registry.Instance{App: app, Host: host, Revision: rev, StorageType: registry.StorageLocal,
		Endpoints: []registry.Endpoint{{Port: port, Protocol: "dubbo"}}}
}

func newClient(t *testing.T) *dubbo.Client {
	c := dubbo.New(dubbo.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func fetch(t *testing.T, c *dubbo.Client, inst *registry.Instance) (*registry.MetadataInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return Fetcher(c)(ctx, inst)
}

func TestFetch(t *testing.T) {
	addr := metadataServer(t, "127.0.0.1:0", "users-app", "r1")
	c := newClient(t)
	info, err := fetch(t, c, instanceAt(t, addr, "users-app", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	si := info.Services["com.example.Users:1.0.0:dubbo"]
	if info.App != "users-app" || info.Revision != "r1" || si == nil || si.Port != 20880 || si.Params.Get("methods") != "get" {
		t.Fatalf("metadata %+v, service %+v", info, si)
	}
	// An unknown revision (dubbo-go answers null) and a wrong group (an
	// exception) are errors.
	if _, err := fetch(t, c, instanceAt(t, addr, "users-app", "r2")); err == nil {
		t.Error("an unknown revision gave no error")
	}
	if _, err := fetch(t, c, instanceAt(t, addr, "other-app", "r1")); err == nil {
		t.Error("a wrong group gave no error")
	}
}

// TestFetchUnreachable: nothing listens: the fetch fails after about
// connectPatience, well before the fetch's own deadline, so the registry
// soon knows and backs off.
func TestFetchUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	if _, err := fetch(t, newClient(t), instanceAt(t, addr, "a", "r1")); err == nil {
		t.Fatal("no error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("failed after %v; want about %v, not the 3s deadline", d, connectPatience)
	}
}

// TestFetchAfterRestart: the provider restarts on the same address while
// the client waits out a grown reconnect backoff (a deploy): the fetch
// redials and succeeds instead of failing.
func TestFetchAfterRestart(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Per-address series: the test counts this address's failed dials.
	c := dubbo.New(dubbo.Options{Logger: slog.New(slog.DiscardHandler), Registerer: reg, PerAddrMetrics: true})
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	addr, stop := metadataServerStoppable(t, "127.0.0.1:0")
	if _, err := fetch(t, c, instanceAt(t, addr, "a", "r1")); err != nil {
		t.Fatal(err)
	}
	stop()
	// Six failed dials in a row: the client's next wait is 1.6 s to 3.2 s.
	deadline := time.Now().Add(10 * time.Second)
	for testenv.MetricValue(t, reg, "dubbogw_dubbo_dial_errors_total", map[string]string{"addr": addr}) < 6 {
		if time.Now().After(deadline) {
			t.Fatal("the client did not fail six dials in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	metadataServerStoppable(t, addr)
	if _, err := fetch(t, c, instanceAt(t, addr, "a", "r1")); err != nil {
		t.Fatalf("fetch after the restart: %v", err)
	}
}

// metadataServerStoppable serves MetadataService for application "a" on
// addr, answering every revision with an empty MetadataInfo; stop closes it.
func metadataServerStoppable(t *testing.T, addr string) (string, func()) {
	t.Helper()
	s := provider.NewServer(slog.New(slog.DiscardHandler))
	s.Register(provider.Service{Interface: Interface, Version: Version, Group: "a", Methods: map[string][]provider.Method{
		"getMetadataInfo": {{ParamTypes: []string{"java.lang.String"}, Func: func(_ context.Context, args []any) (any, error) {
			return &hessian.Object{Class: "org.apache.dubbo.metadata.MetadataInfo", Fields: []hessian.Field{
				{Name: "app", Value: "a"}, {Name: "revision", Value: args[0]}, {Name: "services", Value: &hessian.Map{}},
			}}, nil
		}}},
	}})
	a, err := s.Listen(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = s.Close(context.Background()) }
	t.Cleanup(stop)
	return a.String(), stop
}
