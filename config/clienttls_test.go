package config_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testcert"
)

// TestClientCertificateRotation: a client certificate replaced on disk
// is presented from the next handshake after the check interval, with
// no restart; a pair that does not load keeps the previous one.
func TestClientCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "mtls")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", ca.MTLSServerConfig(t, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The server answers each connection with its client's common name.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() != nil {
					return
				}
				_, _ = io.WriteString(tc, tc.ConnectionState().PeerCertificates[0].Subject.CommonName)
			}()
		}
	}()

	first := ca.Client(t, "first")
	certFile, keyFile := testcert.Write(t, dir, "c.pem", first.CertPEM), testcert.Write(t, dir, "k.pem", first.KeyPEM)
	tc, err := config.ClientTLS{CAFile: testcert.Write(t, dir, "ca.pem", ca.PEM), CertFile: certFile, KeyFile: keyFile}.Build()
	if err != nil {
		t.Fatal(err)
	}
	who := func() string {
		t.Helper()
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: tc}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := who(); got != "first" {
		t.Fatalf("client certificate %q, want first", got)
	}

	second := ca.Client(t, "second")
	testcert.Write(t, dir, "c.pem", second.CertPEM)
	testcert.Write(t, dir, "k.pem", second.KeyPEM)
	time.Sleep(1100 * time.Millisecond) // past the check interval (1 s)
	if got := who(); got != "second" {
		t.Fatalf("after the files changed: client certificate %q, want second", got)
	}

	// A key that does not match: the previous pair stays.
	testcert.Write(t, dir, "k.pem", first.KeyPEM)
	time.Sleep(1100 * time.Millisecond)
	if got := who(); got != "second" {
		t.Fatalf("after a bad pair: client certificate %q, want second still", got)
	}
}
