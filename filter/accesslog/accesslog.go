// Package accesslog writes one JSON line per request, with the
// route, status, duration, upstream and byte counts. The gateway core calls
// it after every response, including those that matched no route.
package accesslog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
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
	buf    *flushWriter
	lines  sync.Pool // *[]byte line buffers
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
	l := &Logger{buf: newFlushWriter(w, FlushInterval), closer: closer}
	l.lines.New = func() any { b := make([]byte, 0, 512); return &b }
	return l
}

// Log writes one line for e. The query string is left out: it often carries
// tokens. The trace_id field is there when ctx holds a recording span, or
// the request carried a W3C traceparent; call Log before the span ends. The line is appended by hand into a pooled buffer (the same fields
// log/slog's JSON handler would write): on the request path that is a tenth
// of slog's cost and allocates nothing.
func (l *Logger) Log(ctx context.Context, e *Entry) {
	if l == nil {
		return
	}
	r, info := e.Request, e.Info
	bp := l.lines.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"time":"`...)
	b = time.Now().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"access","request_id":`...)
	b = exchange.AppendJSONString(b, info.RequestID)
	b = appendTraceID(b, ctx, r.Header)
	b = append(b, `,"route":`...)
	if info.Route == "" {
		b = append(b, `"-"`...)
	} else {
		b = exchange.AppendJSONString(b, info.Route)
	}
	b = append(b, `,"method":`...)
	b = exchange.AppendJSONString(b, r.Method)
	b = append(b, `,"host":`...)
	b = exchange.AppendJSONString(b, r.Host)
	b = append(b, `,"path":`...)
	b = exchange.AppendJSONString(b, r.URL.Path)
	b = append(b, `,"proto":`...)
	b = exchange.AppendJSONString(b, r.Proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(e.Duration.Microseconds())/1000, 'f', -1, 64)
	b = append(b, `,"upstream":`...)
	b = exchange.AppendJSONString(b, info.Upstream)
	b = append(b, `,"bytes_in":`...)
	b = strconv.AppendInt(b, e.BytesIn, 10)
	b = append(b, `,"bytes_out":`...)
	b = strconv.AppendInt(b, e.BytesOut, 10)
	b = append(b, `,"client_ip":"`...)
	if info.ClientIP.IsValid() {
		b = info.ClientIP.AppendTo(b)
	}
	b = append(b, `","error_code":`...)
	b = exchange.AppendJSONString(b, info.ErrorCode)
	b = append(b, `,"user_agent":`...)
	b = exchange.AppendJSONString(b, r.UserAgent())
	b = append(b, "}\n"...)
	_, _ = l.buf.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		l.lines.Put(bp)
	}
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

// Write buffers p, one or more whole lines. A line that does not fit in
// what is left of the buffer first writes out the lines before it, so
// every write to the output ends at a line's end: a file the process's
// other output shares (stdout and stderr to one file) never gets half a
// line between two of another writer's.
func (fw *flushWriter) Write(p []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(p) > fw.w.Available() && fw.w.Buffered() > 0 {
		if err := fw.w.Flush(); err != nil {
			return 0, err
		}
	}
	return fw.w.Write(p) // an empty buffer writes a line longer than itself whole
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
