package accesslog

import (
	"context"
	"encoding/hex"
	"net/http"

	"go.opentelemetry.io/otel/trace"
)

// appendTraceID appends `,"trace_id":"<32 hex>"` when the request is
// traced: the span in ctx is recording, or the request carried a
// traceparent (whose trace id the server span continues, or, with tracing
// off, which went upstream as it was). Otherwise it appends nothing.
func appendTraceID(b []byte, ctx context.Context, h http.Header) []byte {
	span := trace.SpanFromContext(ctx)
	sc := span.SpanContext()
	incoming := headerTraceID(h)
	switch {
	case sc.IsValid() && (span.IsRecording() || incoming != ""):
		tid := sc.TraceID()
		b = append(b, `,"trace_id":"`...)
		b = hex.AppendEncode(b, tid[:])
		return append(b, '"')
	case incoming != "":
		b = append(b, `,"trace_id":"`...)
		b = append(b, incoming...)
		return append(b, '"')
	}
	return b
}

// headerTraceID is the trace id of a well-formed traceparent header
// ("00-<trace id>-<parent id>-<flags>"), or "".
func headerTraceID(h http.Header) string {
	v := h["Traceparent"]
	if len(v) != 1 {
		return ""
	}
	tp := v[0]
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || tp[:2] == "ff" ||
		!lowerHex(tp[:2]) || !lowerHex(tp[36:52]) || !lowerHex(tp[53:55]) || (tp[:2] == "00" && len(tp) != 55) {
		return ""
	}
	id := tp[3:35]
	if !lowerHex(id) || id == "00000000000000000000000000000000" {
		return ""
	}
	return id
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
