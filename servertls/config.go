// Package servertls is the data plane's TLS listener: its configuration
// (the top-level tls: section, registered here), the certificates each
// handshake is served from (picked by SNI, reloaded when their files
// change, a bad pair refused while the last good one keeps serving), and
// the handshake and certificate metrics. The gateway serves the same
// handler on it as on the plain listener.
package servertls

import (
	"net"

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
type Certificate = config.TLSCertificate

// Values of Config.ClientAuth.
const (
	ClientAuthNone    = config.ClientAuthNone
	ClientAuthRequest = config.ClientAuthRequest
	ClientAuthRequire = config.ClientAuthRequire
)

// Server is what the listener serves TLS with: every setting but the
// address and the subject header, the shape the admin listener's
// admin.tls shares.
func (t *Config) Server() config.ServerTLS {
	return config.ServerTLS{Certificates: t.Certificates, MinVersion: t.MinVersion, ClientAuth: t.ClientAuth,
		ClientCAFile: t.ClientCAFile, ReloadInterval: t.ReloadInterval}
}

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
	d := t.Server()
	d.Defaults()
	t.MinVersion, t.ClientAuth, t.ReloadInterval = d.MinVersion, d.ClientAuth, d.ReloadInterval
}

// Validate reports every problem, loading the files as the listener
// would: a pair that does not load fails `dubbogw validate`, not the
// first handshake.
func (t *Config) Validate(at config.At, c *config.Config) {
	if t.Listen == "" {
		if srv := t.Server(); srv.Set() {
			at.Field("listen").Errorf("required: the TLS listener's address, e.g. :8443")
		}
		return
	}
	if _, port, _ := net.SplitHostPort(t.Listen); port != "0" && (t.Listen == c.Listen || t.Listen == c.Admin.Listen) {
		at.Field("listen").Errorf("%q is already the data or admin listener's address", t.Listen)
	}
	at.ValidateServerTLS(t.Server())
	if h := t.ClientSubjectHeader; h != "" {
		if err := config.CheckIdentityHeader(h, c.RequestID.Header); err != nil {
			at.Field("client_subject_header").Errorf("%v", err)
		} else if t.ClientAuth == ClientAuthNone {
			at.Field("client_subject_header").Errorf("needs client_auth request or require: without client certificates there is no subject")
		}
	}
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
