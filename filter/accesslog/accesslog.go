// Package accesslog writes one JSON line per request (log/slog), with the
// route, status, duration, upstream and byte counts. The gateway core calls
// it after every response, including those that matched no route.
package accesslog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
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

// FlushInterval is how long a line may wait in the buffer before it is written.
const FlushInterval = time.Second

// Logger writes access log lines. A nil *Logger logs nothing.
//
// Lines are buffered (64 KiB) and written when the buffer fills or at most
// FlushInterval later, as nginx's "buffer=... flush=..." does: a write
// syscall per request would cost more than the rest of the gateway's own
// work on a request. Close flushes.
type Logger struct {
	log    *slog.Logger
	buf    *flushWriter
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
	fw := newFlushWriter(w, FlushInterval)
	return &Logger{log: slog.New(slog.NewJSONHandler(fw, nil)), buf: fw, closer: closer}
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

// Close flushes what is buffered, stops the flusher and closes a file output.
func (l *Logger) Close() error {
	if l == nil {
		return nil
	}
	err := l.buf.close()
	if l.closer != nil {
		err = errors.Join(err, l.closer.Close())
	}
	return err
}

// flushWriter is a locked bufio.Writer whose content a goroutine it owns
// writes out every interval.
type flushWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newFlushWriter(w io.Writer, every time.Duration) *flushWriter {
	fw := &flushWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go fw.loop(every)
	return fw
}

func (fw *flushWriter) Write(p []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.w.Write(p)
}

func (fw *flushWriter) flush() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.w.Flush()
}

func (fw *flushWriter) loop(every time.Duration) {
	defer close(fw.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-fw.stop:
			return
		case <-t.C:
			_ = fw.flush()
		}
	}
}

func (fw *flushWriter) close() error {
	close(fw.stop)
	<-fw.done
	return fw.flush()
}
