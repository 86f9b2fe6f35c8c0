package filter

import "net/http"

// OnWriteHeader returns a ResponseWriter that calls hook once, right before
// the final status line is written: on the first WriteHeader with a non-1xx
// status, or on the first Write or Flush (status 200). The hook gets w's header
// map, so a filter can edit headers that the next handler (an upstream proxy
// copying its response) has put there.
//
// Interim 1xx responses (103 Early Hints, ...) pass through untouched; the
// hook still runs for the final status that follows. A handler that writes
// nothing never triggers the hook: call FinishHeader after it returns. A
// hijacked connection (a WebSocket upgrade through httputil.ReverseProxy)
// bypasses the writer and so the hook.
//
// The returned writer implements Unwrap, so http.ResponseController reaches
// w's Hijack, deadlines and full-duplex support, and it forwards Flush.
// Nested writers run their hooks innermost first: the outer filter edits last.
func OnWriteHeader(w http.ResponseWriter, hook func(h http.Header, status int)) http.ResponseWriter {
	return &hookWriter{ResponseWriter: w, hook: hook}
}

// FinishHeader runs the hook of w, a writer made by OnWriteHeader, if it has
// not run yet. Call it after the next handler returns, so a handler that
// wrote nothing (net/http then sends an implicit 200) still gets its headers
// edited. It does nothing on other writers.
func FinishHeader(w http.ResponseWriter) {
	if hw, ok := w.(*hookWriter); ok {
		hw.runHook(http.StatusOK)
	}
}

// hookWriter is the one allocation OnWriteHeader makes per request.
type hookWriter struct {
	http.ResponseWriter
	hook func(h http.Header, status int)
	done bool
}

func (w *hookWriter) runHook(status int) {
	if w.done {
		return
	}
	w.done = true
	w.hook(w.ResponseWriter.Header(), status)
}

// WriteHeader runs the hook before a final status; 1xx interim statuses other
// than 101 Switching Protocols are written as they are.
func (w *hookWriter) WriteHeader(status int) {
	if status < 100 || status > 199 || status == http.StatusSwitchingProtocols {
		w.runHook(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write runs the hook (implicit 200) before the first body bytes.
func (w *hookWriter) Write(b []byte) (int, error) {
	w.runHook(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// FlushError runs the hook (implicit 200) and flushes the underlying writer,
// reporting http.ErrNotSupported when it cannot flush.
func (w *hookWriter) FlushError() error {
	w.runHook(http.StatusOK)
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher.
func (w *hookWriter) Flush() { _ = w.FlushError() }

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *hookWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
