package servertls

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/observe"
)

// Store holds what handshakes are served from: the certificates and the
// client CAs as last loaded, one *tls.Config per load. Run reloads them
// when their files change: new handshakes get the new pair, connections
// already made keep theirs, and a change that does not load (a key that
// does not match, a half-written file) is refused, logged and counted
// while the last good one keeps serving.
type Store struct {
	cfg  config.ServerTLS
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
	ok, failed prometheus.Counter     // its two series, resolved once: counted per handshake
	reloads    *prometheus.CounterVec // dubbogw_tls_reloads_total{result}
	notAfter   *prometheus.GaugeVec   // dubbogw_tls_cert_not_after_seconds{cert_file}
}

// NewStore loads cfg's files (they must load: Validate checked them) and
// registers the metrics with reg (which labels them with the listener:
// prometheus.WrapRegistererWith). h2 offers HTTP/2 by ALPN beside
// HTTP/1.1.
func NewStore(cfg config.ServerTLS, h2 bool, reg prometheus.Registerer, log *slog.Logger) (*Store, error) {
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
			Help: "TLS handshakes, by listener (data, admin) and result (ok, error).",
		}, []string{"result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dubbogw_tls_reloads_total",
			Help: "Changes of a TLS listener's certificate or CA files, by listener and result: loaded, or rejected (the previous files keep serving).",
		}, []string{"result"}),
		notAfter: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dubbogw_tls_cert_not_after_seconds",
			Help: "Expiry (Unix seconds) of each certificate a TLS listener serves, by listener and file.",
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
	m.ok, m.failed = m.handshakes.WithLabelValues("ok"), m.handshakes.WithLabelValues("error")
	for _, r := range []string{"loaded", "rejected"} {
		m.reloads.WithLabelValues(r)
	}
	return m, nil
}

// TLSConfig is the configuration the listener's server is given.
func (s *Store) TLSConfig() *tls.Config { return s.base }

// files are the contents of every file handshakes are served from:
// each certificate and its key, in order, then the client CAs.
type files struct {
	pems [][]byte
	sum  [sha256.Size]byte
}

// read reads the files; their sum says whether anything changed.
func (s *Store) read() (files, error) {
	var f files
	h := sha256.New()
	add := func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		f.pems = append(f.pems, b)
		h.Write(b)
		return nil
	}
	for _, c := range s.cfg.Certificates {
		if err := add(c.CertFile); err != nil {
			return f, err
		}
		if err := add(c.KeyFile); err != nil {
			return f, err
		}
	}
	if s.cfg.ClientCAFile != "" {
		if err := add(s.cfg.ClientCAFile); err != nil {
			return f, err
		}
	}
	h.Sum(f.sum[:0])
	return f, nil
}

// load reads the files and builds the configuration of handshakes.
func (s *Store) load() (*loaded, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return s.build(f)
}

// build parses what read found.
func (s *Store) build(f files) (*loaded, error) {
	certs := make([]tls.Certificate, 0, len(s.cfg.Certificates))
	for i, c := range s.cfg.Certificates {
		pair, err := tls.X509KeyPair(f.pems[2*i], f.pems[2*i+1])
		if err != nil {
			return nil, fmt.Errorf("loading %s and %s: %w", c.CertFile, c.KeyFile, err)
		}
		certs = append(certs, pair)
	}
	version, err := config.TLSMinVersion(s.cfg.MinVersion)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{
		Certificates: certs, // by SNI among their names; the first when none matches
		MinVersion:   version,
		NextProtos:   []string{"http/1.1"},
		VerifyConnection: func(tls.ConnectionState) error {
			s.m.ok.Inc()
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
		if tc.ClientCAs, err = config.ParseCertPool(f.pems[len(f.pems)-1], s.cfg.ClientCAFile); err != nil {
			return nil, err
		}
	}
	return &loaded{tls: tc, sum: f.sum}, nil
}

// Run checks the files every reload_interval until ctx ends, and builds
// the configuration again when their content changed: an unchanged file
// costs a read and a hash, never a parse.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.ReloadInterval.D())
	defer t.Stop()
	var refused [sha256.Size]byte // the content last refused: logged and counted once
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f, err := s.read()
		if err == nil && (f.sum == s.cur.Load().sum || f.sum == refused) {
			continue
		}
		var l *loaded
		if err == nil {
			l, err = s.build(f)
		}
		if err != nil {
			// Also what a rotation looks like between the writes of the
			// certificate and of its key: the next check loads both.
			sum := f.sum
			if sum == ([sha256.Size]byte{}) { // a file could not be read: the error tells it apart
				sum = sha256.Sum256([]byte(err.Error()))
			}
			if sum != refused {
				refused = sum
				s.m.reloads.WithLabelValues("rejected").Inc()
				s.log.Warn("TLS certificates changed but do not load; the previous ones keep serving", "error", err)
			}
			continue
		}
		refused = [sha256.Size]byte{}
		s.cur.Store(l)
		s.publishExpiry(l)
		s.m.reloads.WithLabelValues("loaded").Inc()
		s.log.Info("TLS certificates reloaded; new handshakes use them", "certificates", len(l.tls.Certificates))
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
		w.s.m.failed.Inc()
	}
	w.log.Debug(strings.TrimSpace(string(p)), "listener", "tls")
	return len(p), nil
}

// HandshakeFailed counts a failed handshake and logs it at debug level,
// for a server that reports handshakes itself (internal/h1's
// TLSHandshakeFailed) rather than through ErrorLog.
func (s *Store) HandshakeFailed(l *slog.Logger) func(remote string, err error) {
	return func(remote string, err error) {
		s.m.failed.Inc()
		l.Debug("TLS handshake error", "listener", "tls", "remote", remote, "error", err)
	}
}
