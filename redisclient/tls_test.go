package redisclient_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testcert"
	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/redisclient"
)

// TestTLSAndACL: a real redis-server on a TLS port (its certificate from
// a private CA, client certificates required) with an ACL user: the
// client speaks TLS with the CA and its own certificate, authenticates as
// the user with the password from a file, and runs commands; without the
// CA, without a client certificate, or with a wrong password it never
// connects.
func TestTLSAndACL(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "redis test CA")
	server := ca.Server(t, time.Time{}, "127.0.0.1", "redis.test")
	client := ca.Client(t, "dubbogw")
	f := func(name string, data []byte) string { return testcert.Write(t, dir, name, data) }
	caFile, serverCert, serverKey := f("ca.pem", ca.PEM), f("server.pem", server.CertPEM), f("server-key.pem", server.KeyPEM)
	clientCert, clientKey := f("client.pem", client.CertPEM), f("client-key.pem", client.KeyPEM)
	passwordFile := f("password", []byte("s3cret-for-gw\n"))
	tlsAddr := testenv.FreeAddr(t)
	_, tlsPort, _ := net.SplitHostPort(tlsAddr)
	testenv.StartRedisWith(t, "", "--tls-port", tlsPort, "--tls-cert-file", serverCert, "--tls-key-file", serverKey,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes",
		"--user", "gateway", "on", ">s3cret-for-gw", "~*", "&*", "+@all")
	good := config.Redis{
		Address: tlsAddr, Username: "gateway", PasswordFile: passwordFile,
		TLS: config.ClientTLS{Enabled: true, CAFile: caFile, CertFile: clientCert, KeyFile: clientKey},
	}
	c, _ := newClient(t, good, true)
	ctx := ctxTimeout(t, 10*time.Second)
	if err := c.Do(ctx, "set", func(b rueidis.Builder) rueidis.Completed { return b.Set().Key("tls-k").Value("v").Build() }).Error(); err != nil {
		t.Fatalf("SET over TLS as gateway: %v", err)
	}
	if v, _, found, err := c.Get(ctx, "tls-k"); err != nil || !found || v != "v" {
		t.Fatalf("GET over TLS = %q, %v, %v", v, found, err)
	}

	wrong := map[string]func(*config.Redis){
		"no CA (the system's roots)": func(r *config.Redis) { r.TLS.CAFile = "" },
		"no client certificate":      func(r *config.Redis) { r.TLS.CertFile, r.TLS.KeyFile = "", "" },
		"a wrong password":           func(r *config.Redis) { r.PasswordFile = f("bad", []byte("nope")) },
		"another name than the certificate's": func(r *config.Redis) {
			r.TLS.ServerName = "other.test"
		},
	}
	for name, change := range wrong {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := good
			change(&cfg)
			cfg.DialTimeout = config.Duration(2 * time.Second)
			c, err := redisclient.New(cfg, nil, nil)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer c.Close()
			wctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := c.WaitConnected(wctx); err == nil {
				t.Error("connected")
			}
		})
	}
}
