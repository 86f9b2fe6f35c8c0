package ipfilter

import (
	"net/http"
	"net/netip"

	"github.com/dubbogw/dubbogw/exchange"
)

// Wrap returns the ip filter handler in front of next.
func (l *lists) Wrap(next http.Handler) http.Handler {
	return &handler{lists: l, next: next}
}

type handler struct {
	*lists
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.admits(clientAddr(r)) {
		exchange.Fail(w, r, exchange.CodeForbidden, "client address is not allowed")
		return
	}
	h.next.ServeHTTP(w, r)
}

// admits checks deny first, then allow when it is not empty. An address
// that cannot be known (RemoteAddr of a unix socket) is refused: the filter
// cannot tell it is not on the deny list.
func (l *lists) admits(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, p := range l.deny {
		if p.Contains(a) {
			return false
		}
	}
	if len(l.allow) == 0 {
		return true
	}
	for _, p := range l.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the address the gateway core resolved (honouring trusted
// proxies and X-Forwarded-For), or else (no gateway core: a test) the
// connection's peer. When the core found the client unknown (a trusted
// proxy relayed a malformed X-Forwarded-For), the answer is the zero Addr,
// which admits refuses: never the proxy's own address.
func clientAddr(r *http.Request) netip.Addr {
	if info := exchange.From(r.Context()); info != nil {
		return info.ClientIP
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr()
	}
	a, _ := netip.ParseAddr(r.RemoteAddr) // a zero Addr when it is not an address either
	return a
}
