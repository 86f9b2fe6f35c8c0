package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestConsistentHashDubboTable checks keys against providers derived from
// Java Dubbo's algorithm on the JVM (testdata/DubboRing.java, ring 160).
func TestConsistentHashDubboTable(t *testing.T) {
	ps := newProviders(100, 100, 100)
	p := mustPolicy(t, "consistenthash", PolicyOptions{})
	for key, want := range map[string]string{
		"user-1": "10.0.0.3:20880",
		"user-2": "10.0.0.2:20880",
		"user-3": "10.0.0.1:20880",
		"42":     "10.0.0.2:20880",
		"":       "10.0.0.1:20880",
		"alice":  "10.0.0.1:20880",
		"漢字":     "10.0.0.2:20880",
	} {
		if got := p.Select(ps, &Call{HashKey: key}); got.Addr != want {
			t.Errorf("key %q → %s, want %s", key, got.Addr, want)
		}
	}
}

// TestConsistentHashMatchesJava runs the JVM reproduction of Dubbo's ring
// on several provider lists and many keys and compares every choice.
func TestConsistentHashMatchesJava(t *testing.T) {
	var keys []string
	for i := range 2000 {
		switch i % 4 {
		case 0:
			keys = append(keys, fmt.Sprint(i))
		case 1:
			keys = append(keys, fmt.Sprintf("user-%d", i))
		case 2:
			keys = append(keys, fmt.Sprintf("订单-%d-%s", i, strings.Repeat("x", i%300)))
		default:
			keys = append(keys, fmt.Sprintf("com.example.Key{id=%d}", i*7919))
		}
	}
	lists := []struct {
		nodes int
		addrs []string
	}{
		{160, []string{"10.0.0.1:20880", "10.0.0.2:20880", "10.0.0.3:20880"}},
		{160, manyAddrs(30)},
		{10, []string{"192.168.1.10:20880", "192.168.1.11:20881", "[::1]:20880", "provider.example.com:20880"}},
	}
	for _, l := range lists {
		t.Run(fmt.Sprintf("%d providers, %d nodes", len(l.addrs), l.nodes), func(t *testing.T) {
			t.Parallel()
			want := runJava(t, strings.Join(keys, "\n")+"\n", "ring", fmt.Sprint(l.nodes), strings.Join(l.addrs, ","))
			if len(want) != len(keys) {
				t.Fatalf("java answered %d lines for %d keys", len(want), len(keys))
			}
			ps := make([]*Provider, len(l.addrs))
			for i, a := range l.addrs {
				ps[i] = &Provider{Addr: a, Weight: 100}
			}
			p := mustPolicy(t, "consistenthash", PolicyOptions{HashNodes: l.nodes})
			bad := 0
			for i, key := range keys {
				if got := p.Select(ps, &Call{HashKey: key}).Addr; got != want[i] {
					if bad++; bad <= 5 {
						t.Errorf("key %q → %s, Java Dubbo chooses %s", key, got, want[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d keys differ from Java", bad, len(keys))
			}
		})
	}
}

// TestWarmupWeightMatchesJava compares the warm-up weight with Java's float arithmetic.
func TestWarmupWeightMatchesJava(t *testing.T) {
	type c struct{ uptime, warmup, weight int64 }
	var cases []c
	intN := seeded(9)
	for range 3000 {
		warmup := int64(1 + intN(1_200_000))
		cases = append(cases, c{int64(1 + intN(int(warmup))), warmup, int64(1 + intN(1000))})
	}
	cases = append(cases, c{1, 600000, 1<<31 - 1}, c{599999, 600000, 1<<31 - 1}, c{85714, 600000, 7})
	var in strings.Builder
	for _, x := range cases {
		fmt.Fprintf(&in, "%d %d %d\n", x.uptime, x.warmup, x.weight)
	}
	want := runJava(t, in.String(), "warmup")
	if len(want) != len(cases) {
		t.Fatalf("java answered %d lines for %d cases", len(want), len(cases))
	}
	for i, x := range cases {
		if got := fmt.Sprint(warmupWeight(x.uptime, x.warmup, int(x.weight))); got != want[i] {
			t.Errorf("warmupWeight(%d, %d, %d) = %s, Java %s", x.uptime, x.warmup, x.weight, got, want[i])
		}
	}
}

func manyAddrs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("172.16.%d.%d:%d", i/10, i%250+1, 20880+i%3)
	}
	return out
}

// runJava runs testdata/DubboRing.java with args and stdin and returns its
// output lines. Without a JDK the test is skipped, except under CI.
func runJava(t *testing.T, stdin string, args ...string) []string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("java is required under CI to check Dubbo compatibility: %v", err)
		}
		t.Skip("java not found: skipping the JVM cross-check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, append([]string{"testdata/DubboRing.java"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java %v: %v\n%s", args, err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func TestConsistentHashStability(t *testing.T) {
	ps := newProviders(100, 100, 100, 100, 100)
	p := mustPolicy(t, "consistenthash", PolicyOptions{})
	without := append(append([]*Provider{}, ps[:2]...), ps[3:]...)
	excludeC := &Call{Exclude: func(p *Provider) bool { return p == ps[2] }}
	moved := 0
	for i := range 5000 {
		key := fmt.Sprintf("k%d", i)
		before := p.Select(ps, &Call{HashKey: key})
		after := p.Select(without, &Call{HashKey: key})
		if before != ps[2] && after != before {
			t.Fatalf("key %s moved from %s to %s although its provider stayed", key, before.Addr, after.Addr)
		}
		if before == ps[2] {
			moved++
		}
		// Excluding a provider walks the ring past its points: the same as removing it.
		excluded := p.Select(ps, &Call{HashKey: key, Exclude: excludeC.Exclude})
		if excluded != after {
			t.Fatalf("key %s: excluding c chose %s, removing c chose %s", key, excluded.Addr, after.Addr)
		}
	}
	if moved < 500 || moved > 1500 {
		t.Errorf("%d of 5000 keys were on the removed provider, want about 1000", moved)
	}
}

func TestConsistentHashRingCachedPerSnapshot(t *testing.T) {
	ps := newProviders(100, 100, 100)
	p := mustPolicy(t, "consistenthash", PolicyOptions{}).(*consistentHash)
	p.Select(ps, &Call{HashKey: "x"})
	r1 := p.ring(ps)
	p.Select(ps, &Call{HashKey: "y"})
	if p.ring(ps) != r1 {
		t.Fatal("ring rebuilt for the same snapshot")
	}
	next := copyProviders(ps)
	if p.ring(next) == r1 {
		t.Fatal("a new snapshot reused the old ring")
	}
	if p.ring(ps) != r1 {
		t.Fatal("previous snapshot's ring evicted by one new snapshot")
	}
	if n := len(r1.hashes); n != 3*160 {
		t.Errorf("ring has %d points, want 480", n)
	}
}
