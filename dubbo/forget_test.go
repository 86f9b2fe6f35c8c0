package dubbo

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestForget: forgetting an address closes its connections and stops its
// reconnect loop (no goroutine left behind, even for a provider that is
// gone and would be redialled for ever); a later call connects anew.
func TestForget(t *testing.T) {
	srv, addr := startDemo(t, "127.0.0.1:0")
	c := newClient(t, Options{ConnsPerAddr: 2})
	base := runtime.NumGoroutine()
	call := func() error {
		_, err := c.Invoke(callCtx(t, 3*time.Second), addr, demoCall("greet", false, []string{"java.lang.String"}, "x"))
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if got := c.Addrs(); len(got) != 1 || got[0] != addr {
		t.Fatalf("Addrs = %v", got)
	}
	c.Forget(addr)
	c.Forget(addr) // twice is harmless
	if got := c.Addrs(); len(got) != 0 {
		t.Fatalf("Addrs after Forget = %v", got)
	}
	waitGoroutines(t, base)
	if err := call(); err != nil {
		t.Fatalf("calling a forgotten address again: %v", err)
	}

	// A provider that went away: its pool keeps redialling until forgotten.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := call(); err == nil {
		t.Fatal("a call to a closed provider succeeded")
	}
	redialling := runtime.NumGoroutine()
	c.Forget(addr)
	waitGoroutines(t, redialling-2) // the two slots' reconnect loops
	if got := c.Addrs(); len(got) != 0 {
		t.Fatalf("Addrs after Forget = %v", got)
	}
}

// waitGoroutines waits until no more than want goroutines run.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
