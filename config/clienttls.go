package config

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// ClientTLS is how the gateway speaks TLS to a dependency: Redis
// (redis.tls) or an HTTPS upstream (upstreams.NAME.tls).
//
//	tls:
//	  enabled: true        # Redis only: an upstream speaks TLS when its target is https://
//	  ca_file: ""          # PEM CA certificates the server's is verified against; "": the system's
//	  cert_file: ""        # a client certificate and its key, for a server that asks (mTLS); re-read when they change
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
		cc, err := newClientCert(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, err
		}
		tc.GetClientCertificate = cc.get
	case c.CertFile != "" || c.KeyFile != "":
		return nil, errors.New("cert_file and key_file go together")
	}
	return tc, nil
}

// clientCert is a client certificate read again when its files change:
// a rotated certificate (cert-manager, a Kubernetes Secret volume) is
// presented from the next handshake on, with no restart. The files are
// looked at, at most once every clientCertCheck, when a server asks for
// the certificate; a pair that does not load keeps the previous one in
// use (and is tried again at the next check).
type clientCert struct {
	certFile, keyFile string

	mu      sync.Mutex
	pair    *tls.Certificate
	sum     [sha256.Size]byte // of both files' contents
	checked time.Time
}

// clientCertCheck is how often the files are looked at, at most.
const clientCertCheck = time.Second

func newClientCert(certFile, keyFile string) (*clientCert, error) {
	cc := &clientCert{certFile: certFile, keyFile: keyFile}
	certPEM, keyPEM, sum, err := cc.read()
	if err == nil {
		err = cc.load(certPEM, keyPEM, sum)
	}
	if err != nil {
		return nil, fmt.Errorf("loading cert_file and key_file: %w", err)
	}
	cc.checked = time.Now()
	return cc, nil
}

func (cc *clientCert) read() (certPEM, keyPEM []byte, sum [sha256.Size]byte, err error) {
	if certPEM, err = os.ReadFile(cc.certFile); err != nil {
		return nil, nil, sum, err
	}
	if keyPEM, err = os.ReadFile(cc.keyFile); err != nil {
		return nil, nil, sum, err
	}
	h := sha256.New()
	h.Write(certPEM)
	h.Write(keyPEM)
	h.Sum(sum[:0])
	return certPEM, keyPEM, sum, nil
}

func (cc *clientCert) load(certPEM, keyPEM []byte, sum [sha256.Size]byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	cc.pair, cc.sum = &pair, sum
	return nil
}

// get is tls.Config.GetClientCertificate.
func (cc *clientCert) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if now := time.Now(); now.Sub(cc.checked) >= clientCertCheck {
		cc.checked = now
		if certPEM, keyPEM, sum, err := cc.read(); err == nil && sum != cc.sum {
			_ = cc.load(certPEM, keyPEM, sum) // a bad pair: the previous one stays
		}
	}
	return cc.pair, nil
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
