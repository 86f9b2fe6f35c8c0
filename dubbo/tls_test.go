package dubbo

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/testcert"
)

// startTLSDemo starts the demo provider behind a TLS listener that, like
// dubbo-go's (getty's ServerTlsConfigBuilder), requires a client
// certificate; it verifies it against ca.
func startTLSDemo(t *testing.T, ca *testcert.CA) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serveDemo(t, tls.NewListener(ln, ca.MTLSServerConfig(t, "127.0.0.1")))
	return addr
}

// clientTLS is a client configuration trusting ca, with a client
// certificate ca issued when withCert.
func clientTLS(t *testing.T, ca *testcert.CA, withCert bool) *tls.Config {
	t.Helper()
	tc := ca.ClientConfig()
	if withCert {
		tc.Certificates = []tls.Certificate{ca.Client(t, "dubbogw").Pair(t)}
	}
	return tc
}

// TestTLSProvider calls a provider that serves Dubbo over TLS with a
// client certificate required: a Target saying TLS, or TLSAll, is
// called; a plain dial, an unknown CA or no client certificate fail with
// a clear error; an address called both ways has a pool for each.
func TestTLSProvider(t *testing.T) {
	ca := testcert.NewCA(t, "dubbo providers")
	addr := startTLSDemo(t, ca)
	getUser := func() *Invocation { return demoCall("getUser", false, stringType, "7") }

	t.Run("target", func(t *testing.T) {
		c := newClient(t, Options{TLS: clientTLS(t, ca, true)})
		res, err := c.InvokeTarget(callCtx(t, 3*time.Second), Target{Addr: addr, TLS: true}, getUser())
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := res.Value.(*hessian.Object); !ok || fieldOf(u, "name") != "user 7" {
			t.Fatalf("getUser over TLS: %#v", res.Value)
		}
	})

	t.Run("all", func(t *testing.T) {
		c := newClient(t, Options{TLS: clientTLS(t, ca, true), TLSAll: true, DialTimeout: 2 * time.Second})
		if _, err := c.Invoke(callCtx(t, 3*time.Second), addr, getUser()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("plain dial", func(t *testing.T) {
		c := newClient(t, Options{DialTimeout: 2 * time.Second})
		_, err := c.Invoke(callCtx(t, 2*time.Second), addr, getUser())
		if err == nil {
			t.Fatal("a plaintext call to a TLS provider succeeded")
		}
	})

	t.Run("unknown CA", func(t *testing.T) {
		other := testcert.NewCA(t, "someone else")
		c := newClient(t, Options{TLS: clientTLS(t, other, true), DialTimeout: 2 * time.Second})
		_, err := c.InvokeTarget(callCtx(t, 2*time.Second), Target{Addr: addr, TLS: true}, getUser())
		if !errors.Is(err, ErrConnect) || !strings.Contains(err.Error(), "TLS") || !strings.Contains(err.Error(), "unknown authority") {
			t.Fatalf("a provider whose certificate no configured CA signed: %v, want ErrConnect naming TLS and the unknown authority", err)
		}
	})

	t.Run("no client certificate", func(t *testing.T) {
		c := newClient(t, Options{TLS: clientTLS(t, ca, false), DialTimeout: 2 * time.Second})
		_, err := c.InvokeTarget(callCtx(t, 2*time.Second), Target{Addr: addr, TLS: true}, getUser())
		if err == nil {
			t.Fatal("a provider requiring a client certificate answered a client without one")
		}
	})

	t.Run("both ways", func(t *testing.T) {
		// One address called in plaintext and over TLS (a provider's
		// MetadataService in plaintext, say): a pool each, neither
		// disturbing the other.
		_, plainAddr := startDemo(t, "127.0.0.1:0")
		c := newClient(t, Options{TLS: clientTLS(t, ca, true), DialTimeout: 2 * time.Second})
		if _, err := c.Invoke(callCtx(t, 3*time.Second), plainAddr, getUser()); err != nil {
			t.Fatal(err)
		}
		plain := (*c.pools.Load())[plainAddr].plain
		if _, err := c.InvokeTarget(callCtx(t, 3*time.Second), Target{Addr: plainAddr, TLS: true}, getUser()); err == nil {
			t.Fatal("a TLS call to a plaintext provider succeeded: the plain connection was used")
		}
		if _, err := c.Invoke(callCtx(t, 3*time.Second), plainAddr, getUser()); err != nil {
			t.Fatalf("plain again: %v", err)
		}
		ps := (*c.pools.Load())[plainAddr]
		if ps.plain != plain || plain.life.Err() != nil || ps.secure == nil {
			t.Fatalf("pools of the address: plain %p (was %p, ended: %v), secure %p", ps.plain, plain, plain.life.Err(), ps.secure)
		}
		if got := c.Addrs(); len(got) != 1 {
			t.Fatalf("addresses held: %v, want the one", got)
		}
		c.Forget(plainAddr)
		if plain.life.Err() == nil || ps.secure.life.Err() == nil || len(c.Addrs()) != 0 {
			t.Fatal("Forget left a pool of the address running")
		}
	})
}
