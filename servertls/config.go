// Package servertls is the data plane's TLS listener: its configuration
// (the top-level tls: section, registered here), the certificates each
// handshake is served from (picked by SNI, reloaded when their files
// change, a bad pair refused while the last good one keeps serving), and
// the handshake and certificate metrics. The gateway serves the same
// handler on it as on the plain listener.
package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/dubbogw/dubbogw/config"
)

func init() {
	config.RegisterSection(SectionKey, func() config.Section { return new(Config) })
}

// SectionKey is the top-level key of the TLS listener.
const SectionKey = "tls"

// Config is the tls: section:
//
//	tls:
//	  listen: ":8443"
//	  certificates:                     # SNI picks by name (SANs); the first is the default
//	    - {cert_file: certs/api.pem, key_file: certs/api-key.pem}
//	  min_version: "1.2"                # 1.2 | 1.3
//	  client_auth: none                 # none | request | require (mTLS)
//	  client_ca_file: ""
//	  client_subject_header: ""         # e.g. X-Client-Subject: the verified client certificate's subject
//	  reload_interval: 1s               # how often the files are checked for a change
//
// Without listen there is no TLS listener.
type Config struct {
	Listen       string        `yaml:"listen"`
	Certificates []Certificate `yaml:"certificates"`
	MinVersion   string        `yaml:"min_version"`
	ClientAuth   string        `yaml:"client_auth"`
	ClientCAFile string        `yaml:"client_ca_file"`
	// ClientSubjectHeader, when set, carries the subject of the client's
	// verified certificate (RFC 2253 form) to filters and upstreams. It is
	// an identity header: removed from every request as it enters, on
	// both listeners, so a client cannot send it.
	ClientSubjectHeader string          `yaml:"client_subject_header"`
	ReloadInterval      config.Duration `yaml:"reload_interval"`
}

// Certificate is one certificate chain and its private key, PEM files.
type Certificate struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Values of Config.ClientAuth.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request" // asked for, verified when given
	ClientAuthRequire = "require" // mTLS: no verified certificate, no connection
)

// Of returns c's tls: section (defaulted), or nil when it has no TLS
// listener.
func Of(c *config.Config) *Config {
	s, _ := c.Section(SectionKey).(*Config)
	if s == nil || s.Listen == "" {
		return nil
	}
	return s
}

// Defaults fills what is unset.
func (t *Config) Defaults(*config.Config) {
	if t.MinVersion == "" {
		t.MinVersion = "1.2"
	}
	if t.ClientAuth == "" {
		t.ClientAuth = ClientAuthNone
	}
	if t.ReloadInterval == 0 {
		t.ReloadInterval = config.Duration(time.Second)
	}
}

// Validate reports every problem, loading the files as the listener
// would: a pair that does not load fails `dubbogw validate`, not the
// first handshake.
func (t *Config) Validate(at config.At, c *config.Config) {
	if t.Listen == "" {
		if len(t.Certificates) > 0 || t.ClientCAFile != "" {
			at.Field("listen").Errorf("required: the TLS listener's address, e.g. :8443")
		}
		return
	}
	if _, port, _ := net.SplitHostPort(t.Listen); port != "0" && (t.Listen == c.Listen || t.Listen == c.Admin.Listen) {
		at.Field("listen").Errorf("%q is already the data or admin listener's address", t.Listen)
	}
	if len(t.Certificates) == 0 {
		at.Field("certificates").Errorf("required: at least one {cert_file, key_file}")
	}
	for i, cert := range t.Certificates {
		cat := at.Field("certificates").Index(i)
		switch {
		case cert.CertFile == "":
			cat.Field("cert_file").Errorf("required")
		case cert.KeyFile == "":
			cat.Field("key_file").Errorf("required")
		default:
			if _, err := loadPair(cert); err != nil {
				cat.Errorf("%v", err)
			}
		}
	}
	if _, err := minVersion(t.MinVersion); err != nil {
		at.Field("min_version").Errorf("%v", err)
	}
	switch t.ClientAuth {
	case ClientAuthNone:
	case ClientAuthRequest, ClientAuthRequire:
		if t.ClientCAFile == "" {
			at.Field("client_ca_file").Errorf("required with client_auth %s: the CA certificates client certificates are verified against", t.ClientAuth)
		}
	default:
		at.Field("client_auth").Errorf("%q: want none, request or require", t.ClientAuth)
	}
	if t.ClientCAFile != "" {
		if _, err := loadCAs(t.ClientCAFile); err != nil {
			at.Field("client_ca_file").Errorf("%v", err)
		}
	}
	if h := t.ClientSubjectHeader; h != "" {
		if err := config.CheckIdentityHeader(h, c.RequestID.Header); err != nil {
			at.Field("client_subject_header").Errorf("%v", err)
		} else if t.ClientAuth == ClientAuthNone {
			at.Field("client_subject_header").Errorf("needs client_auth request or require: without client certificates there is no subject")
		}
	}
	at.Field("reload_interval").Err(config.Positive(t.ReloadInterval))
}

// IdentityHeaders makes the subject header one the gateway removes from
// every request (config.IdentitySource).
func (t *Config) IdentityHeaders() []string {
	if t.Listen == "" || t.ClientSubjectHeader == "" {
		return nil
	}
	return []string{t.ClientSubjectHeader}
}

// IdentityAttachments: the listener sets no Dubbo attachment.
func (t *Config) IdentityAttachments() []string { return nil }

func minVersion(v string) (uint16, error) {
	switch v {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("%q: want 1.2 or 1.3", v)
}

// loadPair reads and parses one certificate and key.
func loadPair(c Certificate) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading %s and %s: %w", c.CertFile, c.KeyFile, err)
	}
	return pair, nil // pair.Leaf is parsed (Go 1.23+)
}

// loadCAs reads a PEM bundle of CA certificates.
func loadCAs(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	return config.ParseCertPool(pem, file)
}
