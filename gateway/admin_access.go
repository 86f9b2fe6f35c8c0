package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogw/dubbogw/adminui"
	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/observe"
)

// adminAccess decides who the admin listener answers. It is built from
// the admin settings that follow reloads (token, allowed hosts, public
// metrics) and swapped whole.
type adminAccess struct {
	hasToken      bool
	tokenSum      [32]byte // SHA-256 of the token: compared in constant time, whatever its length
	publicMetrics bool
	listenHost    string          // admin.listen's host, lower case ("" for a wildcard)
	allowed       map[string]bool // admin.allowed_hosts, lower case: "name" (any port) or "name:port"
}

// maxTokenFile bounds what is read of admin.token_file.
const maxTokenFile = 4 << 10

// newAdminAccess builds the admin listener's access rules from cfg,
// reading admin.token_file if set. Its errors never contain the token.
func newAdminAccess(cfg *config.Config) (*adminAccess, error) {
	a := &adminAccess{publicMetrics: cfg.Admin.PublicMetrics, allowed: map[string]bool{}}
	token := cfg.Admin.Token
	if path := cfg.Admin.TokenFile; path != "" {
		var err error
		if token, err = readTokenFile(path); err != nil {
			return nil, fmt.Errorf("admin.token_file %s: %w", path, err)
		}
	}
	if token != "" {
		a.hasToken = true
		a.tokenSum = sha256.Sum256([]byte(token))
	}
	if host, _, err := net.SplitHostPort(cfg.Admin.Listen); err == nil {
		a.listenHost = strings.ToLower(host)
	}
	for _, h := range cfg.Admin.AllowedHosts {
		a.allowed[strings.ToLower(h)] = true
	}
	return a, nil
}

func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w", err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("larger than %d bytes: not a token", maxTokenFile)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", errors.New("the file is empty")
	}
	if err := config.CheckAdminToken(token); err != nil {
		return "", err
	}
	return token, nil
}

// exposedWithoutToken says when the admin listener is reachable from other
// machines and no token guards it.
func exposedWithoutToken(cfg *config.Config, a *adminAccess) bool {
	host, _, err := net.SplitHostPort(cfg.Admin.Listen)
	return err == nil && !a.hasToken && !config.IsLoopbackHost(host)
}

// hostAllowed reports whether the admin listener answers a request with
// this Host. A browser sends the name the page was loaded from: DNS
// rebinding points a name the attacker owns at this listener, so its page
// reads the admin API "same-origin" under that name. IP addresses and
// localhost cannot be rebound, whatever the port (a port forward or a
// Kubernetes probe changes it); other names must be admin.listen's or
// listed in admin.allowed_hosts. No Host (HTTP/1.0) is no browser.
func (a *adminAccess) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return true
	}
	return host == "localhost" || host == a.listenHost && host != "" ||
		a.allowed[host] || a.allowed[strings.ToLower(hostport)]
}

// originAllowed reports whether a state-changing request from a page of
// origin may go to this listener reached as hostport: the page is the
// admin's own (the dashboard) or one admin.allowed_hosts lists.
func (a *adminAccess) originAllowed(origin, hostport string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (sandboxed pages, file:, redirects) included
	}
	h := strings.ToLower(u.Host)
	return h == strings.ToLower(hostport) || a.allowed[h] || a.allowed[strings.ToLower(u.Hostname())]
}

// tokenOK reports whether the Authorization header carries the token.
func (a *adminAccess) tokenOK(authorization string) bool {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

// needsToken reports whether path needs the token (when one is set).
func (a *adminAccess) needsToken(path string) bool {
	switch {
	case path == "/metrics":
		return !a.publicMetrics
	case path == adminui.Path || strings.HasPrefix(path, adminui.Path+"/"):
		return false // the page and its assets: static, no data; the page asks for the token
	}
	return true
}

// jsonOrEmpty reports whether a state-changing request has a body a
// browser cannot send cross-site without a preflight: JSON, or nothing.
func jsonOrEmpty(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return r.ContentLength == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// Reasons of dubbogw_admin_refused_total.
const (
	refusedHost        = "host"
	refusedOrigin      = "origin"
	refusedContentType = "content_type"
	refusedToken       = "token"
)

// adminGuard answers the admin listener's requests that adminAccess
// refuses and passes the others to next. /livez and /readyz always pass:
// probes send whatever Host they like (Kubernetes: the pod IP) and carry
// no token.
type adminGuard struct {
	access  *atomic.Pointer[adminAccess]
	next    http.Handler
	refused *prometheus.CounterVec
	log     *slog.Logger
	logs    observe.LogSampler // refusals are logged at most once a second
}

func (g *adminGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/livez" || r.URL.Path == "/readyz" {
		g.next.ServeHTTP(w, r)
		return
	}
	a := g.access.Load()
	if !a.hostAllowed(r.Host) {
		g.refuse(w, r, refusedHost, exchange.CodeForbidden,
			"this admin listener does not answer to that Host; list the name in admin.allowed_hosts")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
		if o := r.Header.Get("Origin"); o != "" && !a.originAllowed(o, r.Host) {
			g.refuse(w, r, refusedOrigin, exchange.CodeForbidden,
				"cross-origin "+r.Method+" refused: the page's origin is not this admin listener's (admin.allowed_hosts lists others)")
			return
		}
		if !jsonOrEmpty(r) {
			g.refuse(w, r, refusedContentType, exchange.CodeUnsupportedMedia,
				r.Method+" takes an application/json body or none")
			return
		}
	}
	if a.hasToken && a.needsToken(r.URL.Path) && !a.tokenOK(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dubbogw admin"`)
		g.refuse(w, r, refusedToken, exchange.CodeUnauthorized,
			"the admin API needs the admin token: Authorization: Bearer <admin.token>")
		return
	}
	g.next.ServeHTTP(w, r)
}

// refuse answers r with the gateway's JSON error, counts it and logs it
// (at most once a second, with how many went unlogged).
func (g *adminGuard) refuse(w http.ResponseWriter, r *http.Request, reason, code, msg string) {
	g.refused.WithLabelValues(reason).Inc()
	if ok, unlogged := g.logs.Allow(time.Now()); ok {
		g.log.Warn("admin request refused", "reason", reason, "status", exchange.Status(code), "method", r.Method,
			"path", truncate(r.URL.Path, 200), "host", truncate(r.Host, 200), "remote", r.RemoteAddr,
			"unlogged_since_last", unlogged)
	}
	exchange.Fail(w, r, code, msg)
}

func newAdminRefused(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dubbogw_admin_refused_total",
		Help: "Admin listener requests refused, by reason: host (a Host it does not answer to), origin (a cross-site state change), content_type (a state change without a JSON body), token (no or a wrong admin token).",
	}, []string{"reason"})
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("registering admin metrics: %w", err)
	}
	for _, r := range []string{refusedHost, refusedOrigin, refusedContentType, refusedToken} {
		c.WithLabelValues(r)
	}
	return c, nil
}
