package loadgen_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/bench/loadgen"
)

// run calls start and fails the test if it has not returned within limit:
// a run that ignores its bounds must not hang the suite.
func run(t *testing.T, limit time.Duration, start func() (*loadgen.Result, error)) *loadgen.Result {
	t.Helper()
	type answer struct {
		r   *loadgen.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := start()
		done <- answer{r, err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.r
	case <-time.After(limit):
		t.Fatalf("the run did not end within %v", limit)
		return nil
	}
}

func TestClosedLoopStopsAtMaxRequests(t *testing.T) {
	var calls atomic.Int64
	errBoom := errors.New("boom")
	target := func(context.Context) error {
		if calls.Add(1)%10 == 0 {
			return errBoom
		}
		return nil
	}
	r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.ClosedLoop{Workers: 8, Duration: time.Minute, MaxRequests: 1000}.Run(context.Background(), target)
	})
	if calls.Load() != 1000 || r.OK != 900 || r.Errors != 100 || r.Dropped != 0 {
		t.Errorf("%d calls, %d ok, %d errors, %d dropped; want 1000, 900, 100, 0", calls.Load(), r.OK, r.Errors, r.Dropped)
	}
	if r.Latency.Count() != 900 || r.ServiceTime != r.Latency || r.ScheduleLag != nil {
		t.Errorf("%d latencies recorded, want 900 (successes only), service time the same histogram", r.Latency.Count())
	}
	if !errors.Is(r.FirstError, errBoom) {
		t.Errorf("first error %v, want %v", r.FirstError, errBoom)
	}
	if r.Throughput() <= 0 || !strings.Contains(r.String(), "900 ok, 100 errors") {
		t.Errorf("throughput %v, summary %q", r.Throughput(), r.String())
	}
}

func TestClosedLoopStopsAtDuration(t *testing.T) {
	const duration = 100 * time.Millisecond
	var calls atomic.Int64
	var lastStart atomic.Int64 // unix ns of the latest call start
	target := func(context.Context) error {
		calls.Add(1)
		lastStart.Store(time.Now().UnixNano())
		time.Sleep(time.Millisecond) // a service taking 1 ms
		return nil
	}
	r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.ClosedLoop{Workers: 4, Duration: duration, MaxRequests: 1 << 40}.Run(context.Background(), target)
	})
	if r.OK != uint64(calls.Load()) || r.OK == 0 || r.Errors != 0 {
		t.Errorf("%d ok, %d errors for %d calls", r.OK, r.Errors, calls.Load())
	}
	// The generator checks the time just before calling; the target looks a
	// moment later.
	if last := time.Unix(0, lastStart.Load()); last.After(r.Start.Add(duration + 50*time.Millisecond)) {
		t.Errorf("a call started %v after the start, past the %v duration", last.Sub(r.Start), duration)
	}
	if r.Elapsed < duration {
		t.Errorf("the run ended after %v, before its %v duration", r.Elapsed, duration)
	}
}

func TestClosedLoopCancelsCallsStillRunningAfterDrain(t *testing.T) {
	stuck := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.ClosedLoop{Workers: 3, Duration: 20 * time.Millisecond, Drain: 50 * time.Millisecond, MaxRequests: 100}.
			Run(context.Background(), stuck)
	})
	if r.Errors != 3 || r.OK != 0 || !errors.Is(r.FirstError, context.DeadlineExceeded) {
		t.Errorf("%d errors, %d ok, first %v: want each worker's one call cut at the drain deadline", r.Errors, r.OK, r.FirstError)
	}
	if r.Elapsed < 70*time.Millisecond {
		t.Errorf("calls were cut after %v, before duration+drain (70ms)", r.Elapsed)
	}
}

func TestCancellingTheRunStopsIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	// From call 30 on, a call cancels the run and waits until its own ctx
	// says so: a worker scheduled in the middle of cancel() cannot go on
	// calling, so each worker makes at most one call after the 30th, on a
	// machine however loaded.
	target := func(callCtx context.Context) error {
		if calls.Add(1) >= 30 {
			cancel()
			<-callCtx.Done()
		}
		return nil
	}
	run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.ClosedLoop{Workers: 2, Duration: time.Hour, MaxRequests: 1 << 40}.Run(ctx, target)
	})
	if n := calls.Load(); n < 30 || n > 32 {
		t.Errorf("%d calls: the run must stop once its ctx is cancelled at call 30 (at most one more call per worker)", n)
	}
	r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.OpenLoop{Rate: 1000, Duration: time.Hour, Workers: 1}.Run(ctx, target)
	})
	if r.OK+r.Dropped > 1 {
		t.Errorf("an open loop on a cancelled ctx scheduled %d calls", r.OK+r.Dropped)
	}
}

func TestInvalidConfigurations(t *testing.T) {
	nop := func(context.Context) error { return nil }
	ctx := context.Background()
	for name, c := range map[string]loadgen.ClosedLoop{
		"no workers":  {Duration: time.Second, MaxRequests: 1},
		"no duration": {Workers: 1, MaxRequests: 1},
		"no count":    {Workers: 1, Duration: time.Second},
	} {
		if _, err := c.Run(ctx, nop); err == nil {
			t.Errorf("closed loop, %s: no error", name)
		}
	}
	for name, o := range map[string]loadgen.OpenLoop{
		"no rate":           {Duration: time.Second, Workers: 1},
		"no duration":       {Rate: 1, Workers: 1},
		"no workers":        {Rate: 1, Duration: time.Second},
		"bound under team":  {Rate: 1, Duration: time.Second, Workers: 4, MaxInFlight: 2},
		"unbounded request": {Rate: 1e12, Duration: time.Hour, Workers: 1},
	} {
		if _, err := o.Run(ctx, nop); err == nil {
			t.Errorf("open loop, %s: no error", name)
		}
	}
}

func TestOpenLoopCallCount(t *testing.T) {
	for _, c := range []struct {
		rate     float64
		duration time.Duration
		want     int64
	}{
		{1000, time.Second, 1000},
		{2000, 250 * time.Millisecond, 500},
		{3, time.Second, 3},                    // due at 0, 333 ms, 666 ms
		{0.5, time.Second, 1},                  // due at 0
		{1000, 1500 * time.Microsecond, 2},     // due at 0 and 1 ms
		{333.3, 3 * time.Second, 1000},         // the last due at 2.9973 s
		{1e6, 10 * time.Millisecond, 10000},    // intervals of exactly 1 µs
		{1e6 / 3, 10 * time.Millisecond, 3334}, // 3.33 µs apart: the last at 9.999 ms
		{7, 0, 0},                              // nothing
		{0, time.Second, 0},                    // nothing
		{1e9, time.Nanosecond, 1},              // due at 0
	} {
		if got := (loadgen.OpenLoop{Rate: c.rate, Duration: c.duration}).Calls(); got != c.want {
			t.Errorf("%v/s over %v: %d calls, want %d", c.rate, c.duration, got, c.want)
		}
	}
}

func TestOpenLoopSendsOnSchedule(t *testing.T) {
	const rate, duration, calls = 2000, 250 * time.Millisecond, 500
	sentAt := make([]time.Time, 0, calls)
	target := func(context.Context) error { // one worker: no concurrent appends
		sentAt = append(sentAt, time.Now())
		return nil
	}
	r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.OpenLoop{Rate: rate, Duration: duration, Workers: 1, MaxInFlight: calls}.Run(context.Background(), target)
	})
	if len(sentAt) != calls || r.OK != calls || r.Dropped != 0 || r.Errors != 0 {
		t.Fatalf("%d calls sent, %d ok, %d dropped, %d errors: want exactly %d ok", len(sentAt), r.OK, r.Dropped, r.Errors, calls)
	}
	interval := time.Second / rate
	lateness := make([]time.Duration, calls)
	for i, at := range sentAt {
		due := r.Start.Add(time.Duration(i) * interval)
		if at.Before(due) {
			t.Fatalf("call %d was sent %v before it was due", i, due.Sub(at))
		}
		lateness[i] = at.Sub(due)
	}
	// Timer wake-ups are coarse, so calls go out a little late in small
	// batches; the median call must still leave within a few milliseconds.
	slices.Sort(lateness)
	if median := lateness[calls/2]; median > 20*time.Millisecond {
		t.Errorf("median call sent %v after it was due", median)
	}
	// The generator's own lag is recorded for every call, and is at most
	// what the target saw.
	if r.ScheduleLag.Count() != calls || r.ScheduleLag.Quantile(0.5) > lateness[calls/2]+lateness[calls/2]/64+1 {
		t.Errorf("schedule lag: %d recorded, median %v; the calls' median lateness %v",
			r.ScheduleLag.Count(), r.ScheduleLag.Quantile(0.5), lateness[calls/2])
	}
	if r.Elapsed < duration-interval {
		t.Errorf("the run took %v: %d calls at %d/s cannot end before %v", r.Elapsed, calls, rate, duration-interval)
	}
	// Each call's latency includes its service time, so every quantile of
	// one is at least that of the other.
	for _, q := range []float64{0.5, 0.99, 1} {
		if r.Latency.Quantile(q) < r.ServiceTime.Quantile(q) {
			t.Errorf("q%v: latency %v under service time %v", q, r.Latency.Quantile(q), r.ServiceTime.Quantile(q))
		}
	}
}

// stallOnce returns a target that takes stall on call number n (1-based) and
// no time otherwise.
func stallOnce(n int64, stall time.Duration) loadgen.Target {
	var calls atomic.Int64
	return func(context.Context) error {
		if calls.Add(1) == n {
			time.Sleep(stall) // the target's behaviour, not synchronisation
		}
		return nil
	}
}

func TestOpenLoopDropsWhenTheBoundIsReached(t *testing.T) {
	// The first call holds its caller until the run's drain deadline, so
	// every later call finds the bound reached: with one slot in flight all
	// are dropped; with ten, nine wait in the queue (and fail at once on the
	// cancelled ctx) and the rest are dropped.
	stuck := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for _, c := range []struct{ maxInFlight, errors, dropped uint64 }{{1, 1, 299}, {10, 10, 290}} {
		r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
			return loadgen.OpenLoop{Rate: 1000, Duration: 300 * time.Millisecond, Drain: 300 * time.Millisecond,
				Workers: 1, MaxInFlight: int(c.maxInFlight)}.Run(context.Background(), stuck)
		})
		if r.OK != 0 || r.Errors != c.errors || r.Dropped != c.dropped {
			t.Errorf("max in flight %d: %d ok, %d errors, %d dropped; want 0, %d, %d",
				c.maxInFlight, r.OK, r.Errors, r.Dropped, c.errors, c.dropped)
		}
	}
}

// TestOpenLoopChargesAStallToTheCallsDueDuringIt is the coordinated-omission
// check: one call of a one-at-a-time target stalls 100 ms at 1,000 calls/s.
// The ~100 calls due meanwhile wait, and their latency, measured from when
// they were due, must show it (about 5% of calls over 50 ms); their service
// time, and a closed loop over the same target, show one slow call only.
func TestOpenLoopChargesAStallToTheCallsDueDuringIt(t *testing.T) {
	const stall, threshold = 100 * time.Millisecond, 50 * time.Millisecond
	open := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.OpenLoop{Rate: 1000, Duration: time.Second, Workers: 1, MaxInFlight: 1000}.
			Run(context.Background(), stallOnce(100, stall))
	})
	if open.OK != 1000 || open.Dropped != 0 {
		t.Fatalf("%d ok, %d dropped: want all 1000 calls made", open.OK, open.Dropped)
	}
	if n := open.Latency.CountAtOrAbove(threshold); n < 30 {
		t.Errorf("%d calls over %v from their due time, want about 50 (those due in the first half of the stall)", n, threshold)
	}
	if p99 := open.Latency.Quantile(0.99); p99 < threshold {
		t.Errorf("p99 latency %v: the stall does not show", p99)
	}
	if p50 := open.Latency.Quantile(0.5); p50 >= threshold {
		t.Errorf("p50 latency %v: one stall cannot slow half the calls", p50)
	}
	if open.Latency.Max() < stall || open.ServiceTime.Max() < stall {
		t.Errorf("max latency %v, max service time %v: the stalled call must show in both", open.Latency.Max(), open.ServiceTime.Max())
	}
	if n := open.ServiceTime.CountAtOrAbove(threshold); n > 3 {
		t.Errorf("%d service times over %v: only the stalled call is slow once sent", n, threshold)
	}
	if open.ScheduleLag.Count() != 1000 {
		t.Errorf("the generator's lag was recorded for %d calls, want all 1000", open.ScheduleLag.Count())
	}

	closed := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.ClosedLoop{Workers: 1, Duration: time.Minute, MaxRequests: 1000}.Run(context.Background(), stallOnce(100, stall))
	})
	if n := closed.Latency.CountAtOrAbove(threshold); n > 3 || closed.Latency.Max() < stall {
		t.Errorf("closed loop: %d calls over %v, max %v: want the stalled call alone", n, threshold, closed.Latency.Max())
	}
}

// TestRunsDoNotAllocatePerCall compares the allocations of a short and a
// long run: the generator's own cost must not grow with the calls made.
func TestRunsDoNotAllocatePerCall(t *testing.T) {
	nop := func(context.Context) error { return nil }
	mallocs := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	ctx := context.Background()
	closed := func(n int64) func() {
		return func() { _, _ = loadgen.ClosedLoop{Workers: 2, Duration: time.Minute, MaxRequests: n}.Run(ctx, nop) }
	}
	if short, long := mallocs(closed(100)), mallocs(closed(20100)); long > short+200 {
		t.Errorf("closed loop: %d allocations for 100 calls, %d for 20,100", short, long)
	}
	open := func(d time.Duration) func() {
		return func() { _, _ = loadgen.OpenLoop{Rate: 20000, Duration: d, Workers: 2, MaxInFlight: 64}.Run(ctx, nop) }
	}
	if short, long := mallocs(open(5*time.Millisecond)), mallocs(open(200*time.Millisecond)); long > short+200 {
		t.Errorf("open loop: %d allocations for 100 calls, %d for 4,000", short, long)
	}
}

func TestHTTPGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}

	for _, bad := range []string{"http://example.com/", "http://10.0.0.1:80/", "http://localhost:80/", "https://example.com:443/", "http://127.0.0.1/", "ftp://127.0.0.1:21/"} {
		if _, err := loadgen.HTTPGet(client, bad, 200); err == nil {
			t.Errorf("%s: accepted, want refused (http or https, loopback IP and port only)", bad)
		}
	}
	// https on loopback: the client's transport says which certificates
	// it trusts.
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) }))
	defer tlsSrv.Close()
	secure, err := loadgen.HTTPGet(tlsSrv.Client(), tlsSrv.URL+"/", 200)
	if err != nil {
		t.Fatal(err)
	}
	if err := secure(context.Background()); err != nil {
		t.Errorf("https target: %v", err)
	}
	untrusting, err := loadgen.HTTPGet(client, tlsSrv.URL+"/", 200)
	if err != nil {
		t.Fatal(err)
	}
	if err := untrusting(context.Background()); err == nil {
		t.Error("https target with a client that does not trust its certificate: no error")
	}
	ok, err := loadgen.HTTPGet(client, srv.URL+"/", 200)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, 30*time.Second, func() (*loadgen.Result, error) {
		return loadgen.ClosedLoop{Workers: 4, Duration: 20 * time.Second, MaxRequests: 50}.Run(context.Background(), ok)
	})
	if r.OK != 50 || r.Errors != 0 {
		t.Errorf("%d ok, %d errors: %v", r.OK, r.Errors, r.FirstError)
	}
	missing, err := loadgen.HTTPGet(client, srv.URL+"/missing", 200)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := missing(ctx); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("a 404 answer gave %v, want an error naming the status", err)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "127.1.2.3:1": true, "[::1]:8080": true,
		"10.0.0.1:80": false, "localhost:80": false, "0.0.0.0:80": false, "127.0.0.1": false,
	} {
		err := loadgen.CheckLoopback(addr)
		if (err == nil) != want {
			t.Errorf("%s: %v", addr, err)
		}
		if err != nil && !want && addr != "127.0.0.1" && !errors.Is(err, loadgen.ErrNotLoopback) {
			t.Errorf("%s: %v does not wrap ErrNotLoopback", addr, err)
		}
	}
}
