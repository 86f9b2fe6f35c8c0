package headers

import (
	"net/http"

	"github.com/dubbogw/dubbogw/filter"
)

// Wrap returns the headers handler in front of next.
func (e *editor) Wrap(next http.Handler) http.Handler {
	return &handler{editor: e, next: next}
}

type handler struct {
	*editor
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.request.apply(r.Header)
	if h.response.empty() {
		h.next.ServeHTTP(w, r)
		return
	}
	rw := filter.OnWriteHeader(w, h.responseHook)
	h.next.ServeHTTP(rw, r)
	filter.FinishHeader(rw)
}

// apply edits h in the order remove, set, add.
func (o *ops) apply(h http.Header) {
	for _, name := range o.remove {
		delete(h, name)
	}
	for _, s := range o.set {
		h[s.name] = s.values // shared, read-only: see op
	}
	for _, a := range o.add {
		h[a.name] = append(h[a.name], a.value)
	}
}
