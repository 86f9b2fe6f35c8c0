package servertls

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/internal/testenv"
)

// serve answers TLS handshakes from s on a loopback listener until the
// test ends, and returns its address.
func serve(t *testing.T, s *Store) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte{1})     // accepted: the client reads this
					_, _ = io.Copy(io.Discard, c) // and the connection stays until the client leaves
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// served is the leaf certificate a handshake for serverName gets.
func served(t *testing.T, addr, serverName string, roots *tls.Config) (string, error) {
	t.Helper()
	cfg := roots.Clone()
	cfg.ServerName = serverName
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func TestSNIAndReload(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "test CA")
	api := ca.Server(t, time.Time{}, "api.example.com")
	admin := ca.Server(t, time.Time{}, "admin.example.com")
	cfg := Config{
		Listen: "127.0.0.1:0",
		Certificates: []Certificate{
			{CertFile: testcert.Write(t, dir, "api.pem", api.CertPEM), KeyFile: testcert.Write(t, dir, "api-key.pem", api.KeyPEM)},
			{CertFile: testcert.Write(t, dir, "admin.pem", admin.CertPEM), KeyFile: testcert.Write(t, dir, "admin-key.pem", admin.KeyPEM)},
		},
	}
	cfg.Defaults(nil)
	cfg.ReloadInterval = config.Duration(50 * time.Millisecond)
	reg := prometheus.NewRegistry()
	s, err := NewStore(cfg.Server(), true, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	addr := serve(t, s)
	roots := &tls.Config{RootCAs: ca.Pool()}

	// SNI picks by name; an unknown name gets the first.
	for name, want := range map[string]string{"api.example.com": "api.example.com", "admin.example.com": "admin.example.com"} {
		if got, err := served(t, addr, name, roots); err != nil || got != want {
			t.Errorf("SNI %s: served %q (%v), want %q", name, got, err, want)
		}
	}
	unknown := roots.Clone()
	unknown.InsecureSkipVerify = true
	if got, err := served(t, addr, "other.example.com", unknown); err != nil || got != "api.example.com" {
		t.Errorf("an unknown name got %q (%v), want the first certificate", got, err)
	}
	if v := testenv.MetricValue(t, reg, "dubbogw_tls_cert_not_after_seconds", map[string]string{"cert_file": cfg.Certificates[1].CertFile}); int64(v) != admin.Cert.NotAfter.Unix() {
		t.Errorf("expiry gauge %v, want %d", v, admin.Cert.NotAfter.Unix())
	}

	// A key that does not match its certificate is refused: the old pair
	// keeps serving, and the refusal is counted once.
	other := ca.Server(t, time.Time{}, "api.example.com")
	testcert.Write(t, dir, "api.pem", other.CertPEM)
	testenv.WaitFor(t, 5*time.Second, "the bad pair refused", func() bool {
		return testenv.MetricValue(t, reg, "dubbogw_tls_reloads_total", map[string]string{"result": "rejected"}) == 1
	})
	time.Sleep(200 * time.Millisecond) // several more checks of the same bad pair
	if n := testenv.MetricValue(t, reg, "dubbogw_tls_reloads_total", map[string]string{"result": "rejected"}); n != 1 {
		t.Errorf("the same bad pair counted %v times", n)
	}
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "api.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if sn := c.ConnectionState().PeerCertificates[0].SerialNumber; sn.Cmp(api.Cert.SerialNumber) != 0 {
		t.Error("a refused pair replaced the serving one")
	}
	c.Close()

	// The matching key arrives: new handshakes get the new certificate.
	testcert.Write(t, dir, "api-key.pem", other.KeyPEM)
	testenv.WaitFor(t, 5*time.Second, "the new pair served", func() bool {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "api.example.com"})
		if err != nil {
			return false
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Cmp(other.Cert.SerialNumber) == 0
	})
	if n := testenv.MetricValue(t, reg, "dubbogw_tls_reloads_total", map[string]string{"result": "loaded"}); n != 1 {
		t.Errorf("%v reloads counted, want 1", n)
	}
	if n := testenv.MetricValue(t, reg, "dubbogw_tls_handshakes_total", map[string]string{"result": "ok"}); n < 5 {
		t.Errorf("%v handshakes counted ok, want at least 5", n)
	}
}

// TestConfigProblems: the tls: section's problems, each at its path; the
// files are loaded by validation, not first at the first handshake.
func TestConfigProblems(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "test CA")
	leaf := ca.Server(t, time.Time{}, "localhost")
	cert := testcert.Write(t, dir, "c.pem", leaf.CertPEM)
	key := testcert.Write(t, dir, "k.pem", leaf.KeyPEM)
	caFile := testcert.Write(t, dir, "ca.pem", ca.PEM)
	pair := fmt.Sprintf("{cert_file: %s, key_file: %s}", cert, key)
	for _, c := range []struct{ yaml, want string }{
		{"tls: {listen: ':8443', certificates: [" + pair + "]}", ""},
		{"tls: {listen: ':8443', certificates: [" + pair + "], client_auth: require, client_ca_file: " + caFile + ", client_subject_header: X-Client-Subject}", ""},
		{"tls: {certificates: [" + pair + "]}", "tls.listen: required"},
		{"tls: {listen: ':8443'}", "tls.certificates: required"},
		{"tls: {listen: ':8443', certificates: [{cert_file: " + key + ", key_file: " + cert + "}]}", "tls.certificates[0]: loading"},
		{"tls: {listen: ':8443', certificates: [{cert_file: " + cert + "}]}", "tls.certificates[0].key_file: required"},
		{"tls: {listen: ':8443', certificates: [" + pair + "], min_version: '1.1'}", `tls.min_version: "1.1": want 1.2 or 1.3`},
		{"tls: {listen: ':8443', certificates: [" + pair + "], client_auth: require}", "tls.client_ca_file: required with client_auth require"},
		{"tls: {listen: ':8443', certificates: [" + pair + "], client_auth: always}", `tls.client_auth: "always"`},
		{"tls: {listen: ':8443', certificates: [" + pair + "], client_auth: request, client_ca_file: " + key + "}", "tls.client_ca_file: " + key + " holds no PEM certificate"},
		{"tls: {listen: ':8443', certificates: [" + pair + "], client_subject_header: X-Client-Subject}", "tls.client_subject_header: needs client_auth"},
		{"tls: {listen: ':8443', certificates: [" + pair + "], client_auth: require, client_ca_file: " + caFile + ", client_subject_header: Authorization}", "tls.client_subject_header: \"Authorization\" is not an identity header"},
		{"listen: ':8443'\ntls: {listen: ':8443', certificates: [" + pair + "]}", "tls.listen: \":8443\" is already"},
	} {
		cfg, err := config.Parse([]byte(c.yaml), "test.yaml", func(string) (string, bool) { return "", false })
		if err == nil {
			err = config.Validate(cfg)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.yaml, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestMinVersionAndClientAuth: min_version 1.3 refuses a client that
// speaks at most 1.2; client_auth require refuses a client without a
// certificate and takes one the CA issued.
func TestMinVersionAndClientAuth(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "test CA")
	leaf := ca.Server(t, time.Time{}, "127.0.0.1")
	cfg := Config{
		Listen:       "127.0.0.1:0",
		Certificates: []Certificate{{CertFile: testcert.Write(t, dir, "c.pem", leaf.CertPEM), KeyFile: testcert.Write(t, dir, "k.pem", leaf.KeyPEM)}},
		MinVersion:   "1.3",
		ClientAuth:   ClientAuthRequire,
		ClientCAFile: testcert.Write(t, dir, "ca.pem", ca.PEM),
	}
	cfg.Defaults(nil)
	s, err := NewStore(cfg.Server(), false, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s)
	alice := ca.Client(t, "alice")
	pair, err := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// handshake reports whether the server accepted the client: it
	// writes a byte once its side of the handshake succeeded; with TLS
	// 1.3 a refused client certificate shows at that first read instead.
	handshake := func(c *tls.Config) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, c)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	base := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	tls12 := base.Clone()
	tls12.MaxVersion, tls12.Certificates = tls.VersionTLS12, []tls.Certificate{pair}
	if err := handshake(tls12); err == nil {
		t.Error("a TLS 1.2 client got through min_version 1.3")
	}
	if err := handshake(base); err == nil {
		t.Error("a client without a certificate got through client_auth require")
	}
	ok := base.Clone()
	ok.Certificates = []tls.Certificate{pair}
	if err := handshake(ok); err != nil {
		t.Errorf("a TLS 1.3 client with a certificate of the CA: %v", err)
	}
}
