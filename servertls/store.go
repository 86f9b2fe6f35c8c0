package servertls

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/observe"
)

// Store holds what handshakes are served from: the certificates and the
// client CAs as last loaded, one *tls.Config per load. Run reloads them
// when their files change: new handshakes get the new pair, connections
// already made keep theirs, and a change that does not load (a key that
// does not match, a half-written file) is refused, logged and counted
// while the last good one keeps serving.
type Store struct {
	cfg  Config
	h2   bool
	log  *slog.Logger
	m    *metrics
	cur  atomic.Pointer[loaded]
	base *tls.Config
}

// loaded is one load of the files.
type loaded struct {
	tls *tls.Config
	sum [sha256.Size]byte // of every file's content, to see a change
}

type metrics struct {
	handshakes *prometheus.CounterVec // dubbogw_tls_handshakes_total{result}
	reloads    *prometheus.CounterVec // dubbogw_tls_reloads_total{result}
	notAfter   *prometheus.GaugeVec   // dubbogw_tls_cert_not_after_seconds{cert_file}
}

// NewStore loads cfg's files (they must load: Validate checked them) and
// registers the metrics with reg. h2 offers HTTP/2 by ALPN beside
// HTTP/1.1.
func NewStore(cfg Config, h2 bool, reg prometheus.Registerer, log *slog.Logger) (*Store, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, h2: h2, log: log, m: m}
	l, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur.Store(l)
	s.publishExpiry(l)
	s.base = &tls.Config{
		MinVersion: l.tls.MinVersion,
		NextProtos: l.tls.NextProtos,
		// Every handshake is served from the configuration last loaded.
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return s.cur.Load().tls, nil },
	}
	return s, nil
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_tls_handshakes_total",
			Help: "TLS handshakes on the data plane's TLS listener, by result (ok, error).",
		}, []string{"result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_tls_reloads_total",
			Help: "Changes of the TLS listener's certificate or CA files, by result: loaded, or rejected (the previous files keep serving).",
		}, []string{"result"}),
		notAfter: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_tls_cert_not_after_seconds",
			Help: "Expiry (Unix seconds) of each certificate the TLS listener serves, by file.",
		}, []string{"cert_file"}),
	}
	var err error
	if m.handshakes, err = observe.Register(reg, m.handshakes); err != nil {
		return nil, err
	}
	if m.reloads, err = observe.Register(reg, m.reloads); err != nil {
		return nil, err
	}
	if m.notAfter, err = observe.Register(reg, m.notAfter); err != nil {
		return nil, err
	}
	for _, r := range []string{"ok", "error"} {
		m.handshakes.WithLabelValues(r)
	}
	for _, r := range []string{"loaded", "rejected"} {
		m.reloads.WithLabelValues(r)
	}
	return m, nil
}

// TLSConfig is the configuration the listener's server is given.
func (s *Store) TLSConfig() *tls.Config { return s.base }

// load reads every file and builds the configuration of handshakes.
func (s *Store) load() (*loaded, error) {
	h := sha256.New()
	certs := make([]tls.Certificate, 0, len(s.cfg.Certificates))
	for _, c := range s.cfg.Certificates {
		certPEM, err := os.ReadFile(c.CertFile)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", c.CertFile, err)
		}
		keyPEM, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", c.KeyFile, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading %s and %s: %w", c.CertFile, c.KeyFile, err)
		}
		certs = append(certs, pair)
		h.Write(certPEM)
		h.Write(keyPEM)
	}
	version, err := minVersion(s.cfg.MinVersion)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{
		Certificates: certs, // by SNI among their names; the first when none matches
		MinVersion:   version,
		NextProtos:   []string{"http/1.1"},
		VerifyConnection: func(tls.ConnectionState) error {
			s.m.handshakes.WithLabelValues("ok").Inc()
			return nil
		},
	}
	if s.h2 {
		tc.NextProtos = []string{"h2", "http/1.1"}
	}
	switch s.cfg.ClientAuth {
	case ClientAuthRequest:
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if s.cfg.ClientCAFile != "" {
		caPEM, err := os.ReadFile(s.cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.cfg.ClientCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("%s holds no PEM certificate", s.cfg.ClientCAFile)
		}
		tc.ClientCAs = pool
		h.Write(caPEM)
	}
	l := &loaded{tls: tc}
	h.Sum(l.sum[:0])
	return l, nil
}

// Run checks the files every reload_interval until ctx ends, loading
// them again when their content changed.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.ReloadInterval.D())
	defer t.Stop()
	var refused [sha256.Size]byte // the last content refused: logged once
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, err := s.load()
		cur := s.cur.Load()
		switch {
		case err != nil:
			// Also what a rotation looks like between the writes of the
			// certificate and of its key: the next check loads both.
			sum := sha256.Sum256([]byte(err.Error()))
			if sum != refused {
				refused = sum
				s.m.reloads.WithLabelValues("rejected").Inc()
				s.log.Warn("TLS certificates changed but do not load; the previous ones keep serving", "error", err)
			}
		case l.sum != cur.sum:
			refused = [sha256.Size]byte{}
			s.cur.Store(l)
			s.publishExpiry(l)
			s.m.reloads.WithLabelValues("loaded").Inc()
			s.log.Info("TLS certificates reloaded; new handshakes use them", "certificates", len(l.tls.Certificates))
		}
	}
}

// publishExpiry sets each certificate's expiry gauge.
func (s *Store) publishExpiry(l *loaded) {
	for i, c := range l.tls.Certificates {
		if c.Leaf != nil {
			s.m.notAfter.WithLabelValues(s.cfg.Certificates[i].CertFile).Set(float64(c.Leaf.NotAfter.Unix()))
		}
	}
}

// ErrorLog is the server's error log: net/http reports a failed handshake
// there ("http: TLS handshake error from ..."), which is counted, and
// everything goes to log at debug level (clients choose how many
// handshakes fail).
func (s *Store) ErrorLog(l *slog.Logger) *log.Logger {
	return log.New(&errorWriter{s: s, log: l}, "", 0)
}

type errorWriter struct {
	s   *Store
	log *slog.Logger
}

func (w *errorWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("TLS handshake error")) {
		w.s.m.handshakes.WithLabelValues("error").Inc()
	}
	w.log.Debug(strings.TrimSpace(string(p)), "listener", "tls")
	return len(p), nil
}
