package interop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/test/peers"
	"github.com/dubbogw/dubbogw/triple"
)

// TestTripleDubboGoProvider drives a real Apache dubbo-go v3.3.0 provider
// over Triple (h2c, non-IDL: hessian2 arguments in Triple's wrapper
// messages) with dubbogw's Triple client: every typed call of
// TestDubboGoProvider, the provider's errors, deadlines, bounds and
// multiplexing.
func TestTripleDubboGoProvider(t *testing.T) {
	p := startDubboGoProvider(t, providerConfig{Tri: true})
	if p.TriAddr == "" {
		t.Fatal("the provider did not say where it serves Triple")
	}
	client := triple.New(triple.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := client.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	target := dubbo.Target{Addr: p.TriAddr}
	call := func(ctx context.Context, inv *dubbo.Invocation) (*dubbo.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return client.Invoke(ctx, target, inv)
	}

	for _, tc := range dubboGoCases() {
		if !strings.HasPrefix(tc.name, "typed/") && !strings.HasPrefix(tc.name, "error/") {
			continue // $invoke: dubbo-go serves no generic calls over Triple
		}
		check := tc.check
		switch tc.name {
		case "typed/exception":
			// dubbo-go sends a method's error as grpc-status UNKNOWN with
			// its message; the exception's class does not travel.
			check = wantStatus(triple.Unknown, "no stock")
		case "typed/go error":
			check = wantStatus(triple.Unknown, "crash: disk")
		case "typed/attachments":
			// dubbo-go does not send attachments back over Triple; that
			// they travel as headers is TestAttachmentHeaders' (triple).
			check = wantValue(peers.String("hello from dubbo-go"))
		case "error/unknown method":
			check = wantStatus(triple.Unimplemented, "HTTP status 404")
		case "error/wrong version":
			check = wantStatus(triple.Unimplemented, "service version 9.9.9")
		case "error/missing group":
			check = wantStatus(triple.Unimplemented, "no implementation found for service group")
		}
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t.Context(), tc.inv)
			check(t, res, err)
		})
	}

	t.Run("deadline", func(t *testing.T) {
		// The provider sleeps 1s; the call gives up after 200ms, and the
		// next call on the same connection is answered.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := client.Invoke(ctx, target, slow(1000, false))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want a deadline error", err)
		}
		if took := time.Since(start); took > 900*time.Millisecond {
			t.Errorf("the call returned after %v, not at its 200ms deadline", took)
		}
		res, err := call(t.Context(), slow(1, false))
		wantValue(peers.String("slept 1ms"))(t, res, err)
	})

	t.Run("large answer", func(t *testing.T) {
		// About 1 MB, ten times what dubbo-go's getty writes over dubbo.
		res, err := call(t.Context(), &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "listUsers",
			ParamTypes: []string{"int"}, Args: []any{int32(20000)}})
		wantUsers(20000)(t, res, err)
	})

	t.Run("max payload", func(t *testing.T) {
		small := triple.New(triple.Options{MaxPayload: 64 << 10})
		defer small.Close(context.Background())
		big := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "listUsers",
			ParamTypes: []string{"int"}, Args: []any{int32(2000)}}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, err := small.Invoke(ctx, target, big); err == nil || !strings.Contains(err.Error(), "exceeds max payload") {
			t.Fatalf("a 94 KiB answer with a 64 KiB limit gave %v", err)
		}
		res, err := small.Invoke(ctx, target, slow(1, false))
		wantValue(peers.String("slept 1ms"))(t, res, err)
		args := &dubbo.Invocation{Interface: userService, Version: userVersion, Method: "join",
			ParamTypes: []string{"java.util.List", "java.lang.String"}, Args: []any{nil, strings.Repeat("x", 70<<10)}}
		if _, err := small.Invoke(ctx, target, args); !errors.Is(err, dubbo.ErrPayloadTooLarge) {
			t.Fatalf("70 KiB of arguments with a 64 KiB limit gave %v, want ErrPayloadTooLarge", err)
		}
	})

	t.Run("multiplexed", func(t *testing.T) {
		// 200 calls of 100ms at once over one HTTP/2 connection: all
		// answered, in about the time of one.
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		start := time.Now()
		for range 200 {
			wg.Go(func() {
				res, err := call(t.Context(), slow(100, false))
				if err == nil && res.Value != "slept 100ms" {
					err = errors.New("wrong answer")
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("200 concurrent 100ms calls took %v: not multiplexed", took)
		}
	})

	t.Run("provider gone", func(t *testing.T) {
		p.Stop()
		_, err := call(t.Context(), slow(1, false))
		if !errors.Is(err, dubbo.ErrConnect) && !errors.Is(err, dubbo.ErrConnectionLost) {
			t.Fatalf("after the provider stopped: %v, want ErrConnect or ErrConnectionLost", err)
		}
	})
}

// wantStatus checks the call failed with a *triple.StatusError of code
// whose message contains message.
func wantStatus(code triple.Code, message string) func(*testing.T, *dubbo.Result, error) {
	return func(t *testing.T, res *dubbo.Result, err error) {
		t.Helper()
		var se *triple.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("got (%v, %v), want a *triple.StatusError %s", res, err, code)
		}
		if se.Code != code || !strings.Contains(se.Message, message) {
			t.Errorf("got %s %q, want %s with %q", se.Code, se.Message, code, message)
		}
	}
}
