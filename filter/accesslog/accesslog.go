// Package accesslog writes one JSON line per request (log/slog), with the
// route, status, duration, upstream and byte counts. The gateway core calls
// it after every response, including those that matched no route.
package accesslog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/exchange"
)

// Entry is what is known of a request once its response is done.
type Entry struct {
	Request  *http.Request
	Info     *exchange.Info
	Status   int
	BytesIn  int64
	BytesOut int64
	Duration time.Duration
}

// Logger writes access log lines. A nil *Logger logs nothing.
type Logger struct {
	log    *slog.Logger
	closer io.Closer
}

// New opens the configured output. It returns nil (logging off) when the
// access log is disabled.
func New(cfg config.AccessLog) (*Logger, error) {
	if cfg.Enabled != nil && !*cfg.Enabled {
		return nil, nil
	}
	var w io.Writer
	var closer io.Closer
	switch cfg.Output {
	case "", "stdout":
		w = os.Stdout
	case "stderr":
		w = os.Stderr
	default:
		f, err := os.OpenFile(cfg.Output, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening access log: %w", err)
		}
		w, closer = f, f
	}
	return NewWriter(w, closer), nil
}

// NewWriter logs to w; closer (may be nil) is closed by Close.
func NewWriter(w io.Writer, closer io.Closer) *Logger {
	return &Logger{log: slog.New(slog.NewJSONHandler(w, nil)), closer: closer}
}

// Log writes one line for e. The query string is left out: it often carries tokens.
func (l *Logger) Log(ctx context.Context, e *Entry) {
	if l == nil {
		return
	}
	r, info := e.Request, e.Info
	route := info.Route
	if route == "" {
		route = "-"
	}
	attrs := [...]slog.Attr{
		slog.String("request_id", info.RequestID),
		slog.String("route", route),
		slog.String("method", r.Method),
		slog.String("host", r.Host),
		slog.String("path", r.URL.Path),
		slog.String("proto", r.Proto),
		slog.Int("status", e.Status),
		slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000),
		slog.String("upstream", info.Upstream),
		slog.Int64("bytes_in", e.BytesIn),
		slog.Int64("bytes_out", e.BytesOut),
		slog.String("client_ip", clientIP(info)),
		slog.String("error_code", info.ErrorCode),
		slog.String("user_agent", r.UserAgent()),
	}
	l.log.LogAttrs(ctx, slog.LevelInfo, "access", attrs[:]...)
}

func clientIP(info *exchange.Info) string {
	if !info.ClientIP.IsValid() {
		return ""
	}
	return info.ClientIP.String()
}

// Close closes a file output.
func (l *Logger) Close() error {
	if l == nil || l.closer == nil {
		return nil
	}
	return l.closer.Close()
}
