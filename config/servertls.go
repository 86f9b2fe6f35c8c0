package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"
)

// ServerTLS is how one of the gateway's listeners serves TLS: the data
// plane's TLS listener (tls:, package servertls, which adds its address
// and the client subject header) and the admin listener (admin.tls).
//
//	certificates:                     # SNI picks by name (SANs); the first is the default
//	  - {cert_file: certs/api.pem, key_file: certs/api-key.pem}
//	min_version: "1.2"                # 1.2 | 1.3
//	client_auth: none                 # none | request | require (mTLS)
//	client_ca_file: ""
//	reload_interval: 1s               # how often the files are checked for a change
type ServerTLS struct {
	Certificates   []TLSCertificate `yaml:"certificates"`
	MinVersion     string           `yaml:"min_version"`
	ClientAuth     string           `yaml:"client_auth"`
	ClientCAFile   string           `yaml:"client_ca_file"`
	ReloadInterval Duration         `yaml:"reload_interval"`
}

// TLSCertificate is one certificate chain and its private key, PEM files.
type TLSCertificate struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Values of ServerTLS.ClientAuth.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request" // asked for, verified when given
	ClientAuthRequire = "require" // mTLS: no verified certificate, no connection
)

// Set reports whether anything is configured (a listener without it
// serves plaintext).
func (t *ServerTLS) Set() bool { return len(t.Certificates) > 0 || t.ClientCAFile != "" }

// Defaults fills what is unset.
func (t *ServerTLS) Defaults() {
	SetDefault(&t.MinVersion, "1.2")
	SetDefault(&t.ClientAuth, ClientAuthNone)
	SetDefault(&t.ReloadInterval, Duration(time.Second))
}

// ValidateServerTLS reports every problem of t at a, loading the files as
// the listener would: a pair that does not load fails `dubbogw validate`,
// not the first handshake.
func (a At) ValidateServerTLS(t ServerTLS) {
	if len(t.Certificates) == 0 {
		a.Field("certificates").Errorf("required: at least one {cert_file, key_file}")
	}
	for i, cert := range t.Certificates {
		cat := a.Field("certificates").Index(i)
		switch {
		case cert.CertFile == "":
			cat.Field("cert_file").Errorf("required")
		case cert.KeyFile == "":
			cat.Field("key_file").Errorf("required")
		default:
			if _, err := LoadTLSPair(cert); err != nil {
				cat.Errorf("%v", err)
			}
		}
	}
	if _, err := TLSMinVersion(t.MinVersion); err != nil {
		a.Field("min_version").Errorf("%v", err)
	}
	switch t.ClientAuth {
	case ClientAuthNone:
	case ClientAuthRequest, ClientAuthRequire:
		if t.ClientCAFile == "" {
			a.Field("client_ca_file").Errorf("required with client_auth %s: the CA certificates client certificates are verified against", t.ClientAuth)
		}
	default:
		a.Field("client_auth").Errorf("%q: want none, request or require", t.ClientAuth)
	}
	if t.ClientCAFile != "" {
		if _, err := LoadCAFile(t.ClientCAFile); err != nil {
			a.Field("client_ca_file").Errorf("%v", err)
		}
	}
	a.Field("reload_interval").Err(Positive(t.ReloadInterval))
}

// TLSMinVersion is the crypto/tls version of a min_version setting.
func TLSMinVersion(v string) (uint16, error) {
	switch v {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("%q: want 1.2 or 1.3", v)
}

// LoadTLSPair reads and parses one certificate and key.
func LoadTLSPair(c TLSCertificate) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading %s and %s: %w", c.CertFile, c.KeyFile, err)
	}
	return pair, nil // pair.Leaf is parsed (Go 1.23+)
}

// LoadCAFile reads a PEM bundle of CA certificates.
func LoadCAFile(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	return ParseCertPool(pem, file)
}
