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
	if len(o.set) > 0 {
		// One backing array for all set values; each header gets a full
		// slice of it so that a later Add copies instead of overwriting.
		vals := make([]string, len(o.set))
		for i, s := range o.set {
			vals[i] = s.value
			h[s.name] = vals[i : i+1 : i+1]
		}
	}
	for _, a := range o.add {
		h[a.name] = append(h[a.name], a.value)
	}
}
