package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ClientTLS is how the gateway speaks TLS to a dependency: Redis
// (redis.tls) or an HTTPS upstream (upstreams.NAME.tls).
//
//	tls:
//	  enabled: true        # Redis only: an upstream speaks TLS when its target is https://
//	  ca_file: ""          # PEM CA certificates the server's is verified against; "": the system's
//	  cert_file: ""        # a client certificate and its key, for a server that asks (mTLS)
//	  key_file: ""
//	  server_name: ""      # the name verified in the server's certificate; "": the host dialed
//	  min_version: "1.2"   # 1.2 | 1.3
//
// The server's certificate is always verified: there is no switch to
// skip it.
type ClientTLS struct {
	Enabled    bool   `yaml:"enabled"`
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
	MinVersion string `yaml:"min_version"`
}

// Set reports whether any field is set.
func (c ClientTLS) Set() bool { return c != ClientTLS{} }

// Build reads the files and returns the client configuration.
func (c ClientTLS) Build() (*tls.Config, error) {
	tc := &tls.Config{ServerName: c.ServerName, MinVersion: tls.VersionTLS12}
	switch c.MinVersion {
	case "", "1.2":
	case "1.3":
		tc.MinVersion = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("min_version %q: want 1.2 or 1.3", c.MinVersion)
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading ca_file: %w", err)
		}
		if tc.RootCAs, err = ParseCertPool(pem, "ca_file "+c.CAFile); err != nil {
			return nil, err
		}
	}
	switch {
	case c.CertFile != "" && c.KeyFile != "":
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading cert_file and key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	case c.CertFile != "" || c.KeyFile != "":
		return nil, errors.New("cert_file and key_file go together")
	}
	return tc, nil
}

// ParseCertPool parses a PEM bundle of CA certificates; name says where
// it was read from, for the error.
func ParseCertPool(pem []byte, name string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", name)
	}
	return pool, nil
}

// ValidateClientTLS reports at a what Build would fail on.
func (a At) ValidateClientTLS(c ClientTLS) {
	if _, err := c.Build(); err != nil {
		a.Errorf("%v", err)
	}
}

// ReadSecretFile reads a secret (a password, a token) from a file,
// surrounding white space trimmed. Its errors never hold the content.
func ReadSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the secret file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}
