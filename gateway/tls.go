package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/servertls"
)

// startTLS starts the TLS listener of cfg's tls: section, if any: the same
// handler, caps (counted with the plain listener's), timeouts and drain as
// the plain listener, HTTP/1.1 and HTTP/2 by ALPN, certificates reloaded
// on change until Shutdown.
func (g *Gateway) startTLS(ctx context.Context, lc *net.ListenConfig, cfg *config.Config) error {
	tc := servertls.Of(cfg)
	if tc == nil {
		return nil
	}
	store, err := servertls.NewStore(tc.Server(), true, tlsMetrics(g.registry, "data"), g.log)
	if err != nil {
		return fmt.Errorf("tls listener: %w", err)
	}
	ln, err := lc.Listen(ctx, "tcp", tc.Listen)
	if err != nil {
		return fmt.Errorf("tls listener: %w", err)
	}
	g.tlsLn = g.limitConnections(ln, cfg.Server, tlsRefusal)
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	std := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout.D(),
		WriteTimeout:      g.writeTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout.D(),
		MaxHeaderBytes:    int(cfg.Server.MaxHeaderBytes),
		Protocols:         protocols,
		ConnState:         g.conns.track,
		HTTP2:             g.http2Config(cfg.Server),
		TLSConfig:         store.TLSConfig(),
		ErrorLog:          store.ErrorLog(g.log),
	}
	g.runStore(store)
	if cfg.Server.Engine == config.EngineNetHTTP {
		g.dataTLS = std
		g.log.Info("listening", "listener", "tls", "addr", g.tlsLn.Addr().String())
		g.bg.Add(1)
		go func() {
			defer g.bg.Done()
			if err := std.ServeTLS(g.tlsLn, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				g.log.Error("listener failed", "listener", "tls", "error", err)
			}
		}()
		return nil
	}
	// HTTP/1.1 on the loop, which does the handshakes; h2 connections
	// go to net/http's server once ALPN has chosen it.
	loop := g.loopServer(std)
	loop.TLSConfig = std.TLSConfig.Clone() // net/http edits std's when it first serves h2
	loop.H2 = std
	loop.TLSHandshakeFailed = store.HandshakeFailed(g.log)
	g.dataTLS = loop
	g.serveBackground("tls", g.dataTLS, g.tlsLn)
	return nil
}

// adminTLS has the admin listener serve HTTPS when admin.tls lists
// certificates: HTTP/1.1 only, the files reloaded on change until
// Shutdown, handshakes and reloads counted with listener="admin".
func (g *Gateway) adminTLS(cfg *config.Config) error {
	if !cfg.Admin.TLS.Set() {
		return nil
	}
	store, err := servertls.NewStore(cfg.Admin.TLS, false, tlsMetrics(g.registry, "admin"), g.log)
	if err != nil {
		g.adminLn.Close()
		return fmt.Errorf("admin listener: %w", err)
	}
	g.adminLn = tls.NewListener(g.adminLn, store.TLSConfig())
	g.admin.ErrorLog = store.ErrorLog(g.log)
	g.runStore(store)
	return nil
}

// runStore reloads store's files on change until Shutdown closes g.stop.
func (g *Gateway) runStore(store *servertls.Store) {
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-g.stop; cancel() }()
		store.Run(ctx)
	}()
}

// tlsMetrics is where a listener's TLS store registers its metrics:
// labelled listener="data" or "admin", so the two never count together.
func tlsMetrics(reg prometheus.Registerer, listener string) prometheus.Registerer {
	return prometheus.WrapRegistererWith(prometheus.Labels{"listener": listener}, reg)
}

// TLSAddr is the TLS listener's address ("" without one).
func (g *Gateway) TLSAddr() string {
	if g.tlsLn == nil {
		return ""
	}
	return g.tlsLn.Addr().String()
}

// shutdownData drains both data listeners at once.
func (g *Gateway) shutdownData(ctx context.Context) error {
	if g.dataTLS == nil {
		return g.data.Shutdown(ctx)
	}
	var wg sync.WaitGroup
	var tlsErr error
	wg.Go(func() { tlsErr = g.dataTLS.Shutdown(ctx) })
	err := g.data.Shutdown(ctx)
	wg.Wait()
	return errors.Join(err, tlsErr)
}

// clientSubject sets the TLS listener's client subject header (an
// identity header, removed from the request as it entered) from the
// client's verified certificate.
func clientSubject(t *table, r *http.Request) {
	if t.subjectHeader == "" || r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return
	}
	r.Header.Set(t.subjectHeader, subjectOf(r.TLS.VerifiedChains[0][0]))
}

func subjectOf(c *x509.Certificate) string { return c.Subject.String() }

// tlsListener is what of cfg's tls: section is fixed at Start.
func tlsListener(cfg *config.Config) servertls.Config {
	tc := servertls.Of(cfg)
	if tc == nil {
		return servertls.Config{}
	}
	c := *tc
	c.ClientSubjectHeader = ""
	return c
}
