package filter_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/filter"
)

// hookLog records the calls of a hook that stamps the status into X-Hook.
type hookLog struct{ statuses []int }

func (l *hookLog) hook(h http.Header, status int) {
	l.statuses = append(l.statuses, status)
	h.Set("X-Hook", strconv.Itoa(status))
	h.Del("X-Secret")
}

func TestOnWriteHeaderRunsOnceBeforeTheStatusLine(t *testing.T) {
	tests := []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
	}{
		{"WriteHeader", func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated); _, _ = w.Write([]byte("x")) }, http.StatusCreated},
		{"Write alone", func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }, http.StatusOK},
		{"WriteHeader twice", func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted); w.WriteHeader(http.StatusTeapot) }, http.StatusAccepted},
		{"Flush via ResponseController", func(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }, http.StatusOK},
		{"Flush via http.Flusher", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log hookLog
			rec := httptest.NewRecorder()
			w := filter.OnWriteHeader(rec, log.hook)
			w.Header().Set("X-Secret", "upstream")
			tt.write(w)
			filter.FinishHeader(w) // must not run the hook a second time

			if len(log.statuses) != 1 || log.statuses[0] != tt.status {
				t.Fatalf("hook calls = %v, want one with %d", log.statuses, tt.status)
			}
			res := rec.Result() // the header snapshot taken when the status was written
			if res.StatusCode != tt.status || res.Header.Get("X-Hook") != strconv.Itoa(tt.status) || res.Header.Get("X-Secret") != "" {
				t.Errorf("written: %d X-Hook=%q X-Secret=%q", res.StatusCode, res.Header.Get("X-Hook"), res.Header.Get("X-Secret"))
			}
		})
	}
}

func TestFinishHeader(t *testing.T) {
	var log hookLog
	rec := httptest.NewRecorder()
	w := filter.OnWriteHeader(rec, log.hook)
	filter.FinishHeader(w) // the handler wrote nothing: net/http would send an implicit 200
	if len(log.statuses) != 1 || log.statuses[0] != http.StatusOK || rec.Header().Get("X-Hook") != "200" {
		t.Fatalf("hook calls = %v, X-Hook = %q", log.statuses, rec.Header().Get("X-Hook"))
	}
	filter.FinishHeader(rec) // not a hook writer: nothing to do
}

func TestNestedHooksRunInnermostFirst(t *testing.T) {
	var order []string
	rec := httptest.NewRecorder()
	outer := filter.OnWriteHeader(rec, func(h http.Header, _ int) {
		order = append(order, "outer:"+h.Get("X-Layer"))
		h.Set("X-Layer", "outer")
	})
	inner := filter.OnWriteHeader(outer, func(h http.Header, _ int) {
		order = append(order, "inner:"+h.Get("X-Layer"))
		h.Set("X-Layer", "inner")
	})
	inner.WriteHeader(http.StatusOK)
	if len(order) != 2 || order[0] != "inner:" || order[1] != "outer:inner" || rec.Result().Header.Get("X-Layer") != "outer" {
		t.Fatalf("order = %q, final X-Layer = %q", order, rec.Result().Header.Get("X-Layer"))
	}
}

// A writer that cannot flush: the wrapper must report it, not swallow it.
type plainWriter struct{ h http.Header }

func (w *plainWriter) Header() http.Header         { return w.h }
func (w *plainWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *plainWriter) WriteHeader(int)             {}

func TestFlushUnsupportedIsReported(t *testing.T) {
	w := filter.OnWriteHeader(&plainWriter{h: http.Header{}}, func(http.Header, int) {})
	if err := http.NewResponseController(w).Flush(); !errors.Is(err, http.ErrNotSupported) {
		t.Fatalf("Flush error = %v, want ErrNotSupported", err)
	}
}

func TestInterimResponsesPassThrough(t *testing.T) {
	var log hookLog
	handlerDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handlerDone)
		w = filter.OnWriteHeader(w, log.hook)
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	var interim []int
	var interimHook []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			interim = append(interim, code)
			interimHook = append(interimHook, h.Get("X-Hook"))
			return nil
		},
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if len(interim) != 1 || interim[0] != http.StatusEarlyHints || interimHook[0] != "" {
		t.Errorf("interim responses %v with X-Hook %q, want one 103 without", interim, interimHook)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Hook") != "200" {
		t.Errorf("final: %d X-Hook=%q", res.StatusCode, res.Header.Get("X-Hook"))
	}
	select {
	case <-handlerDone:
	case <-ctx.Done():
		t.Fatal("handler did not finish")
	}
	if len(log.statuses) != 1 || log.statuses[0] != http.StatusOK {
		t.Errorf("hook calls = %v, want one with 200", log.statuses)
	}
}

// Flushing through http.ResponseController (as httputil.ReverseProxy does
// for streaming) must reach the connection and run the hook first.
func TestFlushReachesTheClient(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w = filter.OnWriteHeader(w, func(h http.Header, _ int) { h.Set("X-Hook", "ran") })
		_, _ = w.Write([]byte("first"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush: %v", err)
		}
		select {
		case <-release: // the client has read "first" before the handler returned
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte("second"))
	}))
	defer srv.Close()
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("X-Hook") != "ran" {
		t.Errorf("X-Hook = %q", res.Header.Get("X-Hook"))
	}
	first := make([]byte, len("first"))
	if _, err := io.ReadFull(res.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("read %q, %v", first, err)
	}
}

// Hijacking through http.ResponseController (as httputil.ReverseProxy does
// for WebSocket upgrades) must reach the connection through Unwrap.
func TestHijackThroughUnwrap(t *testing.T) {
	handlerDone := make(chan error, 1)
	var log hookLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w = filter.OnWriteHeader(w, log.hook)
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
			handlerDone <- err
			return
		}
		conn, brw, err := rc.Hijack()
		if err != nil {
			handlerDone <- err
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nX-Hijacked: yes\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		handlerDone <- brw.Flush()
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(bufio.NewReader(res.Body))
	_ = res.Body.Close()
	if err != nil || string(body) != "ok" || res.Header.Get("X-Hijacked") != "yes" {
		t.Fatalf("got %q %v, X-Hijacked=%q", body, err, res.Header.Get("X-Hijacked"))
	}
	select {
	case err := <-handlerDone:
		if err != nil {
			t.Fatalf("handler: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("handler did not finish")
	}
	if len(log.statuses) != 0 {
		t.Errorf("hook ran on a hijacked connection: %v", log.statuses)
	}
}

func TestOnWriteHeaderAllocatesOneStruct(t *testing.T) {
	w := &plainWriter{h: http.Header{}}
	hook := func(http.Header, int) {}
	n := testing.AllocsPerRun(100, func() {
		rw := filter.OnWriteHeader(w, hook)
		rw.WriteHeader(http.StatusOK)
		filter.FinishHeader(rw)
	})
	if n > 1 {
		t.Fatalf("%v allocations per request, want at most 1", n)
	}
}
