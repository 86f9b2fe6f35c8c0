package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/gateway"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
)

// TestScaleSmoke runs the scale command at tiny sizes in every layout
// against a real ZooKeeper and the gateway built from this module: every
// run measures every figure, the table has every column with a number in
// each, the ratios, goals and details follow, and the registry is deleted
// afterwards. It checks no timing: the machine's load must not fail it.
func TestScaleSmoke(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	if testing.Short() {
		t.Skip("builds the gateway and starts it six times")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "scale.md")
	o := &scaleOptions{
		zk: addr, sizes: []int{5, 10}, providers: 2, modes: []string{modeInterface, modeApplication, modeBoth},
		discovery: "auto", servicesPerApp: 2, root: fmt.Sprintf("scale-smoke-%d", rand.Uint32()),
		churnRate: 100, churnFor: time.Second, samples: 10, poll: 2 * time.Millisecond,
		settle: 100 * time.Millisecond, idleFor: 200 * time.Millisecond, startupTimeout: time.Minute,
		out: out, timeout: 3 * time.Minute,
	}
	t.Cleanup(func() { removeRoot(t, addr, o.root) })
	var stdout bytes.Buffer
	if err := scale(ctx, o, &stdout, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	report := stdout.String()
	if written, err := os.ReadFile(out); err != nil || string(written) != report {
		t.Fatalf("-out file: %v; differs from stdout: %v", err, string(written) != report)
	}

	header, rows := table(report, "| services x providers | layout | /readyz 200 |")
	wantHeader := []string{"services x providers", "layout", "/readyz 200", "all providers known", "RSS", "goroutines",
		"/metrics", "/admin/services", "gateway CPU at 100 changes/s", "propagation p50/p99", "goals missed"}
	if strings.Join(header, "|") != strings.Join(wantHeader, "|") {
		t.Errorf("columns %q, want %q", header, wantHeader)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6 (2 sizes x 3 layouts):\n%s", len(rows), report)
	}
	number := regexp.MustCompile(`[0-9]`)
	i := 0
	for _, mode := range o.modes {
		for _, size := range o.sizes {
			r := rows[i]
			i++
			if len(r) != len(wantHeader) {
				t.Errorf("row %q: %d cells, want %d", r, len(r), len(wantHeader))
				continue
			}
			if r[0] != fmt.Sprintf("%d x 2", size) || r[1] != mode {
				t.Errorf("row %d: %q %q, want %d x 2, %s", i, r[0], r[1], size, mode)
			}
			for c := 2; c < 10; c++ {
				if !number.MatchString(r[c]) || strings.Contains(r[c], "—") {
					t.Errorf("%s, %s: %s is %q, want a figure", r[0], mode, wantHeader[c], r[c])
				}
			}
			if r[10] == "" {
				t.Errorf("%s, %s: no verdict on the goals", r[0], mode)
			}
		}
	}
	_, ratios := table(report, "| services x providers | layout | /readyz 200 | all providers known | RSS | goroutines | /metrics bytes |")
	if len(ratios) != 6 {
		t.Errorf("%d rows of ratios, want 6:\n%s", len(ratios), report)
	}
	for j, r := range ratios {
		for c := 2; c < len(r); c++ {
			if want := "1"; j%2 == 0 && r[c] != want {
				t.Errorf("baseline row %q: %q, want %s", r, r[c], want)
			}
			if j%2 == 1 && !strings.HasSuffix(r[c], "×") && r[c] != "1" {
				t.Errorf("ratio row %q: %q is not a ratio", r, r[c])
			}
		}
	}
	_, details := table(report, "| services x providers | layout | nodes written |")
	if len(details) != 6 {
		t.Errorf("%d rows of details, want 6:\n%s", len(details), report)
	}
	for _, r := range details {
		if cpu, err := time.ParseDuration(strings.ReplaceAll(r[5], " ", "")); err != nil || cpu <= 0 {
			t.Errorf("details row %q: start CPU %q is not a duration", r, r[5])
		}
	}
	for _, mode := range o.modes {
		if !strings.Contains(report, "- "+mode+", 10 x 2 (not the goals' size):") {
			t.Errorf("no goals for %s:\n%s", mode, report)
		}
	}
	if n := strings.Count(report, "  - propagation p99 <= 10 ms: "); n != 3 {
		t.Errorf("%d propagation goals judged, want 3", n)
	}

	// Every generated node is gone; only the parents are left.
	conn, err := zkConnect(addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, p := range []string{"/" + o.root, "/" + o.root + "/mapping", "/" + o.root + "/metadata"} {
		children, _, err := conn.Children(p)
		if err != nil {
			t.Fatalf("list %s: %v", p, err)
		}
		for _, c := range children {
			if c != "mapping" && c != "metadata" {
				t.Errorf("%s/%s left after the run", p, c)
			}
		}
	}
}

// table returns the header cells and the rows of the markdown table whose
// header line starts with start.
func table(report, start string) (header []string, rows [][]string) {
	lines := strings.Split(report, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, start) {
			continue
		}
		header = cells(line)
		for _, l := range lines[i+2:] {
			if !strings.HasPrefix(l, "| ") {
				break
			}
			rows = append(rows, cells(l))
		}
		return header, rows
	}
	return nil, nil
}

func cells(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), " | ")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// removeRoot deletes a test's root and the parents the generator left.
func removeRoot(t *testing.T, addr, root string) {
	conn, err := zkConnect(addr, 30*time.Second)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	for _, p := range []string{"/" + root + "/mapping", "/" + root + "/metadata", "/" + root} {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("delete %s: %v", p, err)
		}
	}
}

// TestScaleGatewayYAML: the scale command's configuration is one the
// gateway accepts, with a route per interface on the registry.
func TestScaleGatewayYAML(t *testing.T) {
	for _, lay := range []registryOptions{
		{root: "dubbo", prefix: "com.example.scale.Service", mode: modeInterface, services: 50},
		{root: "scale", prefix: "com.example.scale.Service", mode: modeApplication, services: 3, servicesRoot: "/elsewhere"},
	} {
		yml := scaleGatewayYAML(lay, "127.0.0.1:2181", "auto", "127.0.0.1:18080", "127.0.0.1:19090")
		path := filepath.Join(t.TempDir(), "gw.yaml")
		if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err == nil {
			err = config.Validate(cfg)
		}
		if err == nil {
			err = gateway.Check(cfg)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, yml)
		}
		if len(cfg.Routes) != lay.services || cfg.Admin.Readiness != config.ReadinessStrict || len(cfg.Registries) != 1 {
			t.Errorf("%d routes, readiness %q, %d registries", len(cfg.Routes), cfg.Admin.Readiness, len(cfg.Registries))
		}
		if lay.servicesRoot != "" && !strings.Contains(yml, `services_root: "/elsewhere"`) {
			t.Errorf("services root not configured:\n%s", yml)
		}
	}
}

func TestParseScaleOptions(t *testing.T) {
	o, err := parseScaleOptions([]string{"-sizes", "100, 1000,5000", "-mode", "interface,both", "-churn-rate", "50"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.sizes) != "[100 1000 5000]" || fmt.Sprint(o.modes) != "[interface both]" || o.churnRate != 50 || o.discovery != "auto" {
		t.Errorf("%+v", o)
	}
	for services, want := range map[int]time.Duration{100: 2 * time.Minute, 10000: 2 * time.Minute, 15000: 3 * time.Minute, 50000: 10 * time.Minute} {
		if got := o.startupBound(services); got != want {
			t.Errorf("default start bound at %d services: %v, want %v", services, got, want)
		}
	}
	if o, err := parseScaleOptions([]string{"-startup-timeout", "30s"}, io.Discard); err != nil || o.startupBound(50000) != 30*time.Second {
		t.Errorf("-startup-timeout 30s: %v", err)
	}
	for _, bad := range [][]string{
		{"-sizes", "100,x"}, {"-sizes", "0"}, {"-mode", "all"}, {"-mode", "application", "-discovery", "interface"},
		{"-discovery", "application"}, {"-providers", "0"}, {"-churn-rate", "0"}, {"extra"}, {"-startup-timeout", "-1s"},
	} {
		if _, err := parseScaleOptions(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestScaleFormatting(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 60000: "60,000", 1234567: "1,234,567"} {
		if got := fmtInt(n); got != want {
			t.Errorf("fmtInt(%d) = %q, want %q", n, got, want)
		}
	}
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if q := quantile(ds, 0.5); q != 5 {
		t.Errorf("p50 %v, want 5", q)
	}
	if q := quantile(ds, 0.99); q != 10 {
		t.Errorf("p99 %v, want 10", q)
	}
	if q := quantile(nil, 0.5); q != -1 {
		t.Errorf("p50 of nothing %v, want -1", q)
	}
	if fmtRatio(2, 1) != "2.00×" || fmtRatio(1, 1) != "1" || fmtRatio(-1, 1) != "—" || fmtRatio(1, 0) != "—" {
		t.Error("fmtRatio")
	}
	if fmtDur(1500*time.Microsecond) != "1.5 ms" || fmtDur(2500*time.Millisecond) != "2.50 s" || fmtDur(-1) != "—" {
		t.Error("fmtDur")
	}
}

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	rss, hwm, err := procMemory(pid)
	if err != nil || rss <= 0 || hwm < rss {
		t.Errorf("memory: rss %d, peak %d, %v", rss, hwm, err)
	}
	c0, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the CPU time moves (a tick is 10 ms of this process's
	// CPU, however busy the machine), within 10 s.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		c1, err := procCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if c1 > c0 {
			if d := c1 - c0; d%(time.Second/clockTicks) != 0 {
				t.Errorf("CPU time moved by %v, not whole ticks", d)
			}
			return
		}
	}
	t.Error("10 s of spinning used no CPU time")
}
