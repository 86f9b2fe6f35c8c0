package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/internal/testcert"
)

// TestAdminTLS: admin.tls is checked as the data plane's tls: is (its
// files loaded), and defaulted only when set.
func TestAdminTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "admin")
	leaf := ca.Server(t, time.Time{}, "127.0.0.1")
	cert, key := testcert.Write(t, dir, "c.pem", leaf.CertPEM), testcert.Write(t, dir, "k.pem", leaf.KeyPEM)
	caFile := testcert.Write(t, dir, "ca.pem", ca.PEM)

	c, err := config.Parse([]byte(`admin: {tls: {certificates: [{cert_file: "`+cert+`", key_file: "`+key+`"}]}}`+"\n"), "gw.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc := c.Admin.TLS; tc.MinVersion != "1.2" || tc.ClientAuth != config.ClientAuthNone || tc.ReloadInterval.D() != time.Second {
		t.Errorf("defaults: %+v", tc)
	}
	c, err = config.Parse([]byte("admin: {listen: \"127.0.0.1:9090\"}\n"), "gw.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Admin.TLS.Set() || c.Admin.TLS.MinVersion != "" {
		t.Errorf("admin.tls without certificates: %+v, want it unset", c.Admin.TLS)
	}

	for yaml, want := range map[string]string{
		`admin: {tls: {certificates: [{cert_file: "` + cert + `", key_file: "/nonexistent/k.pem"}]}}`:                        "admin.tls.certificates[0]: loading",
		`admin: {tls: {client_ca_file: "` + caFile + `"}}`:                                                                   "admin.tls.certificates: required",
		`admin: {tls: {certificates: [{cert_file: "` + cert + `", key_file: "` + key + `"}], min_version: "1.0"}}`:           `admin.tls.min_version: "1.0"`,
		`admin: {tls: {certificates: [{cert_file: "` + cert + `", key_file: "` + key + `"}], client_auth: require}}`:         "admin.tls.client_ca_file: required with client_auth require",
		`admin: {tls: {certificates: [{cert_file: "` + cert + `", key_file: "` + key + `"}], client_auth: maybe, x: 1}}`:     "admin.tls.x: unknown key",
		`admin: {tls: {certificates: [{cert_file: "` + cert + `", key_file: "` + key + `"}], client_ca_file: /nonexistent}}`: "admin.tls.client_ca_file: reading the CA file",
	} {
		_, err := config.Parse([]byte(yaml+"\n"), "gw.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n error %v\n want %q", yaml, err, want)
		}
	}
}
