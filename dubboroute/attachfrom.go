package dubboroute

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"
)

// headerAttachment is one entry of attachments_from: the request header
// (canonical name) whose value a call carries as attachment key.
type headerAttachment struct {
	header, key string
}

// headerAttachments compiles attachments_from, sorted by header so that
// refusals are the same for the same request.
func headerAttachments(cfg *Config) []headerAttachment {
	var out []headerAttachment
	for _, h := range slices.Sorted(maps.Keys(cfg.AttachmentsFrom)) {
		out = append(out, headerAttachment{header: http.CanonicalHeaderKey(h), key: cfg.AttachmentsFrom[h]})
	}
	return out
}

// checkMappedHeaders says why the request's headers cannot become the
// route's attachments ("" when they can): a mapped header sent twice
// (which one would the provider get?), longer than MaxMappedValue or not
// UTF-8 (hessian strings are text) is refused, never cut or dropped.
func (h *Handler) checkMappedHeaders(r *http.Request) string {
	for _, m := range h.fromHeaders {
		vs := r.Header[m.header]
		switch {
		case len(vs) > 1:
			return "header " + m.header + " is sent " + strconv.Itoa(len(vs)) + " times: send it once"
		case len(vs) == 0:
		case len(vs[0]) > MaxMappedValue:
			return "header " + m.header + " has " + strconv.Itoa(len(vs[0])) + " bytes: at most " + strconv.Itoa(MaxMappedValue)
		case !utf8.ValidString(vs[0]):
			return "header " + m.header + " is not UTF-8 text"
		}
	}
	return ""
}

// addMappedHeaders adds the attachments of the request's mapped headers
// to m (checked by checkMappedHeaders); a header the request lacks adds
// nothing.
func (h *Handler) addMappedHeaders(r *http.Request, m map[string]string) {
	for _, a := range h.fromHeaders {
		if vs := r.Header[a.header]; len(vs) > 0 {
			m[a.key] = vs[0]
		}
	}
}
